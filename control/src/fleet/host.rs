//! A fleet's pairs on this host: each pair a lab with its own management
//! /30s (from 198.19.0.0/16, indexed by pair), an agent as a daemon in each
//! of its namespaces (token file 0600 in a directory only root writes, its
//! allow-list the pair's interface), and their removal: the processes in
//! the namespaces, the labs, the token files and logs.

use std::{
    fs,
    io::Read,
    net::Ipv4Addr,
    os::unix::{
        fs::{DirBuilderExt, MetadataExt},
        process::CommandExt,
    },
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use anyhow::{bail, Context, Result};

use crate::lab::Lab;
use linerate_host::{
    files,
    inventory::{Pair, Side},
};

/// Where the fleets' token files and agent logs live (one folder a fleet).
pub const STATE_DIR: &str = "/run/linerate/fleet";
/// The port every fleet agent listens on (on its management address).
pub const AGENT_PORT: u16 = 7480;
/// How long `fleet up` waits for every agent to answer.
const AGENT_WAIT: Duration = Duration::from_secs(20);

/// The management addresses of pair `index`: (here, there) for side A and
/// side B, two /30s from 198.19.1.0 on (198.19.255.0/24 stays `lab up
/// --mgmt`'s): pair i takes 198.19.1.0 + 8 i to + 8 i + 7.
pub fn mgmt_addrs(index: u32) -> [(Ipv4Addr, Ipv4Addr); 2] {
    let base = u32::from(Ipv4Addr::new(198, 19, 1, 0)) + 8 * index;
    let ip = |n: u32| Ipv4Addr::from(base + n);
    [(ip(1), ip(2)), (ip(5), ip(6))]
}

/// Refuses the management addresses of `pairs` pairs when one is on an
/// interface of this host already: every fleet on a host takes the same
/// addresses, so two at once would route each other's agents away (their
/// agents would never answer).
pub fn check_addresses_free(pairs: u32) -> Result<()> {
    let on_host: Vec<(Ipv4Addr, String)> = nix::ifaddrs::getifaddrs()
        .context("listing this host's addresses")?
        .filter_map(|a| {
            let ip = a.address?.as_sockaddr_in()?.ip();
            Some((ip, a.interface_name))
        })
        .collect();
    for i in 0..pairs {
        for (here, _) in mgmt_addrs(i) {
            if let Some((_, on)) = on_host.iter().find(|(ip, _)| *ip == here) {
                bail!(
                    "the management address {here} of pair {i} is on {on} already: another fleet is up on this host (one at a time: `linerate fleet status` names it, `linerate fleet down --inventory PATH` removes it)"
                );
            }
        }
    }
    Ok(())
}

/// The folder of a fleet's token files and logs, made (mode 700) if
/// absent; refused unless it and its parents are root's and only root
/// writes them (a token file there is as safe as the folder).
pub fn state_dir(prefix: &str) -> Result<PathBuf> {
    let dir = Path::new(STATE_DIR).join(prefix);
    let mut at = PathBuf::new();
    for part in dir.components() {
        at.push(part);
        if !at.exists() {
            fs::DirBuilder::new()
                .mode(0o700)
                .create(&at)
                .with_context(|| format!("creating {}", at.display()))?;
        }
    }
    check_root_only(&dir)?;
    Ok(dir)
}

/// Refuses `dir` unless it and every folder above it are root's and only
/// root writes them (no link on the way).
fn check_root_only(dir: &Path) -> Result<()> {
    let mut at = PathBuf::new();
    for part in dir.components() {
        at.push(part);
        let m = fs::symlink_metadata(&at).with_context(|| format!("reading {}", at.display()))?;
        if !m.is_dir() || m.uid() != 0 || m.mode() & 0o022 != 0 {
            bail!(
                "{} is not a folder only root writes (owner {}, mode {:o}): the agents' token files would not be safe there; remove it or `chmod go-w` it",
                at.display(),
                m.uid(),
                m.mode() & 0o7777
            );
        }
    }
    Ok(())
}

/// The file in a fleet's folder where `fleet up` records what it made.
const RECORD: &str = "made.json";

/// What `fleet up` made, recorded in the fleet's folder: `fleet down`
/// removes what this names and nothing else (an inventory is anyone's
/// text; its token files' folder and lab names choose nothing).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    /// The inventory written, an absolute path.
    pub inventory: PathBuf,
    /// The labs made (each with its agents, token files and logs).
    pub labs: Vec<String>,
}

/// Records in `dir` (a fleet's folder) that `fleet up` made `labs` and
/// writes `inventory`: root's, mode 600, replaced whole.
pub fn write_record(dir: &Path, inventory: &Path, labs: &[String]) -> Result<()> {
    let record = Record {
        inventory: std::path::absolute(inventory)
            .with_context(|| format!("finding {}", inventory.display()))?,
        labs: labs.to_vec(),
    };
    files::write_atomic(
        &dir.join(RECORD),
        &serde_json::to_vec_pretty(&record)?,
        files::PRIVATE,
    )?;
    Ok(())
}

/// The record of the fleet whose folder is `dir`: refused unless `dir` is
/// a fleet's folder (directly under [`STATE_DIR`], root's alone) holding a
/// record root wrote.
pub fn read_record(dir: &Path) -> Result<Record> {
    if dir.parent() != Some(Path::new(STATE_DIR)) {
        bail!(
            "{} is not a fleet's folder (those are in {STATE_DIR}): `fleet up` made nothing there",
            dir.display()
        );
    }
    check_root_only(dir)?;
    let path = dir.join(RECORD);
    let text = files::read_input_text(&path, 1 << 20, files::Trust::Mine)?;
    let record: Record = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a record `fleet up` wrote", path.display()))?;
    for lab in &record.labs {
        linerate_host::limits::check_name(lab)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    }
    Ok(record)
}

/// Whether the fleet folder `dir` holds a record (a fleet up, finished
/// or killed, that `fleet down` has not removed).
pub fn has_record(dir: &Path) -> bool {
    dir.join(RECORD).exists()
}

/// The records of every fleet folder that name `inventory` (an absolute
/// path): a fleet up killed before it wrote its inventory is found so.
pub fn records_naming(inventory: &Path) -> Vec<(PathBuf, Record)> {
    let Ok(entries) = fs::read_dir(STATE_DIR) else {
        return Vec::new();
    };
    let mut found: Vec<(PathBuf, Record)> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join(RECORD).exists())
        .filter_map(|e| Some((e.path(), read_record(&e.path()).ok()?)))
        .filter(|(_, r)| r.inventory == inventory)
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

/// Whether either namespace of lab `lab` exists.
pub fn lab_exists(lab: &str) -> bool {
    Lab::new(lab).is_ok_and(|l| {
        [&l.ns_a, &l.ns_b]
            .iter()
            .any(|ns| linerate_datapath::netns::exists(ns))
    })
}

/// Refuses labs whose namespaces exist already (before anything is made
/// or recorded: a record names only labs its fleet up made).
pub fn check_labs_free(labs: &[String]) -> Result<()> {
    for lab in labs {
        let l = Lab::new(lab)?;
        for ns in [&l.ns_a, &l.ns_b] {
            if linerate_datapath::netns::exists(ns) {
                bail!(
                    "namespace {ns} exists already: remove it (`linerate lab down --lab {lab}`, or `linerate fleet down` for the fleet that made it) or choose another --name"
                );
            }
        }
    }
    Ok(())
}

/// Removes the record of the fleet whose folder is `dir`.
pub fn forget(dir: &Path) {
    let _ = fs::remove_file(dir.join(RECORD));
}

/// A new token: 32 random bytes from the kernel, as hex.
fn new_token() -> Result<String> {
    let mut buf = [0u8; 32];
    fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .context("reading /dev/urandom for a token")?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// One pair as `fleet up` makes it: its lab, agents and files.
pub struct Made {
    /// Its entry in the inventory.
    pub pair: Pair,
    /// The agents' processes (tx, rx), until they are known to answer.
    pub agents: Vec<Child>,
}

/// Brings up pair `index` named `lab`: the lab, its management links, a
/// token and an agent in each namespace. On an error, what was made of it
/// is removed.
pub fn make_pair(dir: &Path, lab: &str, index: u32, mtu: u32, queues: u32) -> Result<Made> {
    let l = Lab::new(lab)?;
    for ns in [&l.ns_a, &l.ns_b] {
        if linerate_datapath::netns::exists(ns) {
            bail!(
                "namespace {ns} exists already: remove it (`linerate lab down --lab {lab}`, or `linerate fleet down` for the fleet that made it) or choose another --name"
            );
        }
    }
    let mut agents = Vec::new();
    let result = (|| -> Result<Made> {
        l.up(mtu, queues)?;
        let [a, b] = mgmt_addrs(index);
        let (a_here, a_there, b_here, b_there) = (
            a.0.to_string(),
            a.1.to_string(),
            b.0.to_string(),
            b.1.to_string(),
        );
        l.add_mgmt_at((&a_here, &a_there), (&b_here, &b_there))?;
        let mut sides = Vec::new();
        for (role, ns, iface, addr) in
            [("tx", &l.ns_a, &l.if_a, a.1), ("rx", &l.ns_b, &l.if_b, b.1)]
        {
            let token_file = dir.join(format!("{lab}-{role}.token"));
            files::write_atomic(&token_file, new_token()?.as_bytes(), 0o600)?;
            let listen = format!("{addr}:{AGENT_PORT}");
            agents.push(start_agent(ns, &listen, iface, &token_file)?);
            sides.push(Side {
                agent: format!("http://{listen}"),
                iface: iface.to_string(),
                token_file,
            });
        }
        let rx = sides.pop().expect("two sides");
        let tx = sides.pop().expect("two sides");
        Ok(Made {
            pair: Pair {
                name: lab.to_string(),
                lab: Some(lab.to_string()),
                tx,
                rx,
                port: None,
            },
            agents: std::mem::take(&mut agents),
        })
    })();
    if result.is_err() {
        end_agents(&mut agents);
        remove_pair(dir, lab);
    }
    result
}

/// Ends agents just started, by their processes: one may not have entered
/// its namespace yet (`ip netns exec` opens it, then joins it), where
/// [`stop_processes`] would not find it and it would live on in the
/// namespace after the namespace's name is removed.
pub fn end_agents(agents: &mut Vec<Child>) {
    for mut a in agents.drain(..) {
        let _ = a.kill();
        let _ = a.wait();
    }
}

/// Starts `linerate agent` in `ns` as a daemon (its own session, so that
/// Ctrl-C at the terminal does not reach it; its output to a log beside
/// its token file).
fn start_agent(ns: &str, listen: &str, iface: &str, token_file: &Path) -> Result<Child> {
    let exe = std::env::current_exe().context("finding this linerate's own path")?;
    let log = token_file.with_extension("log");
    // Never through a link (the folder is root's alone, checked; this too).
    let log = linerate_host::files::open_append(&log)
        .with_context(|| format!("creating the agent's log {}", log.display()))?;
    linerate_datapath::names::check_netns(ns)?;
    Command::new("ip")
        .args(["netns", "exec", ns])
        .arg(exe)
        .args(["agent", "--listen", listen, "--allow-iface", iface])
        .arg("--token-file")
        .arg(token_file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .process_group(0)
        .spawn()
        .with_context(|| format!("starting the agent in {ns}: is `ip` installed?"))
}

/// Waits until every agent answers its token (or one of them exits).
pub fn wait_for_agents(made: &mut [Made]) -> Result<()> {
    let end = Instant::now() + AGENT_WAIT;
    for m in made.iter_mut() {
        for (side, child) in [&m.pair.tx, &m.pair.rx].into_iter().zip(&mut m.agents) {
            let token = linerate_remote::token::read(Some(&side.token_file))?;
            loop {
                let ok =
                    linerate_remote::client::version(&side.agent, &token, Duration::from_secs(2))
                        .is_ok();
                if ok {
                    break;
                }
                if let Ok(Some(status)) = child.try_wait() {
                    bail!(
                        "the agent {} of pair {} exited ({status}): its log is {}",
                        side.agent,
                        m.pair.name,
                        side.token_file.with_extension("log").display()
                    );
                }
                if Instant::now() > end {
                    bail!(
                        "the agent {} of pair {} did not answer within {}s: its log is {}",
                        side.agent,
                        m.pair.name,
                        AGENT_WAIT.as_secs(),
                        side.token_file.with_extension("log").display()
                    );
                }
                thread::sleep(Duration::from_millis(50));
            }
        }
    }
    Ok(())
}

/// Removes pair `lab` whole: the processes in its namespaces (its agents
/// and their runs), the lab with its management links, its token files
/// and logs in `dir`. Quiet: what is not there is not an error.
pub fn remove_pair(dir: &Path, lab: &str) {
    if let Ok(l) = Lab::new(lab) {
        stop_processes(&[&l.ns_a, &l.ns_b]);
        if let Err(e) = l.down() {
            eprintln!("linerate: removing lab {lab}: {e:#}");
        }
    }
    for role in ["tx", "rx"] {
        for ext in ["token", "log"] {
            let _ = fs::remove_file(dir.join(format!("{lab}-{role}.{ext}")));
        }
    }
}

/// The (device, inode) of a namespace file.
fn ns_id(path: &Path) -> Option<(u64, u64)> {
    fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// The processes whose network namespace is one of `namespaces`.
pub fn processes_in(namespaces: &[&str]) -> Vec<i32> {
    let ids: Vec<(u64, u64)> = namespaces
        .iter()
        .filter_map(|n| linerate_datapath::netns::path(n).ok())
        .filter_map(|p| ns_id(&p))
        .collect();
    if ids.is_empty() {
        return Vec::new();
    }
    let Ok(proc_dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    proc_dir
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            ns_id(&Path::new("/proc").join(pid.to_string()).join("ns/net"))
                .is_some_and(|id| ids.contains(&id))
        })
        .collect()
}

/// Ends every process in `namespaces`: SIGTERM, then SIGKILL to what is
/// left after 5 s.
pub fn stop_processes(namespaces: &[&str]) {
    use nix::{sys::signal, unistd::Pid};
    let send = |sig| {
        let pids = processes_in(namespaces);
        for pid in &pids {
            let _ = signal::kill(Pid::from_raw(*pid), sig);
        }
        pids.len()
    };
    if send(signal::Signal::SIGTERM) == 0 {
        return;
    }
    let end = Instant::now() + Duration::from_secs(5);
    while Instant::now() < end {
        if processes_in(namespaces).is_empty() {
            return;
        }
        thread::sleep(Duration::from_millis(50));
    }
    send(signal::Signal::SIGKILL);
    let end = Instant::now() + Duration::from_secs(5);
    while Instant::now() < end && !processes_in(namespaces).is_empty() {
        thread::sleep(Duration::from_millis(50));
    }
}

/// Removes the fleet's folder if nothing is left in it.
pub fn remove_dir_if_empty(dir: &Path) {
    let _ = fs::remove_dir(dir);
    // (The parent too, when this was its last fleet.)
    if let Some(parent) = dir.parent() {
        if parent == Path::new(STATE_DIR) {
            let _ = fs::remove_dir(parent);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pair_has_its_own_management_addresses() {
        assert_eq!(
            mgmt_addrs(0),
            [
                (Ipv4Addr::new(198, 19, 1, 1), Ipv4Addr::new(198, 19, 1, 2)),
                (Ipv4Addr::new(198, 19, 1, 5), Ipv4Addr::new(198, 19, 1, 6))
            ]
        );
        assert_eq!(mgmt_addrs(1)[0].0, Ipv4Addr::new(198, 19, 1, 9));
        // The 64th pair stays below lab up --mgmt's 198.19.255.0/24.
        assert_eq!(mgmt_addrs(63)[1].1, Ipv4Addr::new(198, 19, 2, 254));
        let mut all: Vec<Ipv4Addr> = (0..64)
            .flat_map(|i| mgmt_addrs(i).into_iter().flat_map(|(a, b)| [a, b]))
            .collect();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), 256);
    }
}
