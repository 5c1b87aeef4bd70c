//! `linerate fleet up|status|down`: lab pairs with their agents on this
//! host and their inventory.

use std::{
    path::Path,
    process::ExitCode,
    sync::atomic::{AtomicBool, Ordering},
    time::Duration,
};

use anyhow::{bail, Context, Result};
use serde::Serialize;

use super::host::{self, Made};
use crate::cli::FleetAction;
use linerate_host::{
    inventory::{Inventory, Pair, Side},
    output::{self, emit},
    privilege,
};
use linerate_remote::{api, token};

/// `linerate fleet up|status|down|prometheus`.
pub fn command(action: FleetAction) -> Result<ExitCode> {
    match action {
        FleetAction::Up {
            pairs,
            mtu,
            queues,
            inventory,
            name,
        } => {
            privilege::require_root("linerate fleet up")?;
            let interrupted = crate::session::on_signal()?;
            up(pairs, mtu, queues, &inventory, &name, &interrupted)
        }
        FleetAction::Status { inventory, json } => status(&inventory, json),
        FleetAction::Prometheus(args) => super::prometheus::command(&args),
        FleetAction::Down { inventory } => {
            privilege::require_root("linerate fleet down")?;
            down(&inventory)
        }
    }
}

/// Brings up `pairs` pairs named PREFIX0.. and writes the inventory; on an
/// error or Ctrl-C at any pair, everything made so far is removed.
fn up(
    pairs: u32,
    mtu: u32,
    queues: u32,
    inventory: &Path,
    prefix: &str,
    interrupted: &AtomicBool,
) -> Result<ExitCode> {
    if inventory.exists() {
        bail!(
            "inventory {} exists: a fleet is up (`linerate fleet down --inventory {}` removes it), or give another --inventory",
            inventory.display(),
            inventory.display()
        );
    }
    host::check_addresses_free(pairs)?;
    let labs: Vec<String> = (0..pairs).map(|i| format!("{prefix}{i}")).collect();
    host::check_labs_free(&labs)?;
    let dir = host::state_dir(prefix)?;
    if host::has_record(&dir) {
        bail!(
            "a fleet named {prefix} was brought up and not taken down ({} names its inventory): `linerate fleet down --inventory INVENTORY` removes it first",
            dir.display()
        );
    }
    // Written before anything is made: a fleet up killed half-way
    // (SIGKILL) is removed by `fleet down --inventory` from this record.
    host::write_record(&dir, inventory, &labs)?;
    let mut made: Vec<Made> = Vec::new();
    let result = (|| -> Result<()> {
        for i in 0..pairs {
            if interrupted.load(Ordering::Relaxed) {
                bail!("interrupted");
            }
            let lab = format!("{prefix}{i}");
            made.push(
                host::make_pair(&dir, &lab, i, mtu, queues)
                    .with_context(|| format!("bringing up pair {lab}"))?,
            );
        }
        if interrupted.load(Ordering::Relaxed) {
            bail!("interrupted");
        }
        host::wait_for_agents(&mut made)?;
        let inv = Inventory::new(made.iter().map(|m| m.pair.clone()).collect())
            .map_err(anyhow::Error::msg)?;
        if let Some(parent) = inventory.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        inv.save(inventory)?;
        Ok(())
    })();
    if let Err(e) = result {
        let n = made.len();
        for m in &mut made {
            host::end_agents(&mut m.agents);
            host::remove_pair(&dir, &m.pair.name);
        }
        // The pair being made when it failed removed itself.
        host::forget(&dir);
        host::remove_dir_if_empty(&dir);
        if interrupted.load(Ordering::Relaxed) {
            eprintln!("linerate: fleet up interrupted: the {n} pair(s) made were removed");
            return Ok(output::exit_code(true));
        }
        return Err(e.context(format!(
            "fleet up failed: the {n} pair(s) made before were removed"
        )));
    }
    emit(&format!(
        "fleet up: {pairs} pair(s) {prefix}0..{prefix}{} (MTU {mtu}, {queues} queue(s)), agents answering; inventory {}\n",
        pairs - 1,
        inventory.display()
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// One agent as `fleet status` shows it.
#[derive(Debug, Serialize)]
struct AgentStatus {
    agent: String,
    iface: String,
    up: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// One pair as `fleet status` shows it.
#[derive(Debug, Serialize)]
struct PairStatus {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    lab: Option<String>,
    tx: AgentStatus,
    rx: AgentStatus,
}

/// Asks one agent its version with its token.
fn ask(side: &Side) -> AgentStatus {
    let answer = (|| -> Result<api::Version> {
        let token = token::read(Some(&side.token_file))?;
        linerate_remote::client::version(&side.agent, &token, Duration::from_secs(3))
    })();
    let (up, version, error) = match answer {
        Ok(v) => (true, Some(format!("{} (API {})", v.version, v.api)), None),
        Err(e) => (false, None, Some(format!("{e:#}"))),
    };
    AgentStatus {
        agent: side.agent.clone(),
        iface: side.iface.clone(),
        up,
        version,
        error,
    }
}

/// `fleet status` for the terminal: every text the inventory or an agent
/// gave (names, URLs, versions, errors) shown escaped
/// ([`linerate_host::shown::shown`]).
fn status_text(inventory: &Path, pairs: &[PairStatus], down: usize) -> String {
    use linerate_host::shown::shown;
    let mut text = format!(
        "fleet {}: {} pair(s), {} of {} agents up\n",
        shown(&inventory.display().to_string()),
        pairs.len(),
        2 * pairs.len() - down,
        2 * pairs.len()
    );
    for p in pairs {
        for (role, a) in [("tx", &p.tx), ("rx", &p.rx)] {
            text += &format!(
                "  {} {role} {} ({}): {}\n",
                shown(&p.name),
                shown(&a.agent),
                shown(&a.iface),
                match (&a.version, &a.error) {
                    (Some(v), _) => format!("up, linerate {}", shown(v)),
                    (None, e) => format!("DOWN: {}", shown(e.as_deref().unwrap_or_default())),
                }
            );
        }
    }
    text
}

/// `fleet status`: every agent asked at once; exit 1 when one is down.
fn status(inventory: &Path, json: bool) -> Result<ExitCode> {
    let inv = super::run::load(inventory)?;
    let pairs: Vec<PairStatus> = std::thread::scope(|s| {
        let asked: Vec<_> = inv
            .pairs
            .iter()
            .map(|p: &Pair| {
                s.spawn(move || PairStatus {
                    name: p.name.clone(),
                    lab: p.lab.clone(),
                    tx: ask(&p.tx),
                    rx: ask(&p.rx),
                })
            })
            .collect();
        asked
            .into_iter()
            .map(|h| h.join().expect("a status thread panicked"))
            .collect()
    });
    let down = pairs
        .iter()
        .flat_map(|p| [&p.tx, &p.rx])
        .filter(|a| !a.up)
        .count();
    if json {
        output::emit_json(&serde_json::json!({ "pairs": pairs, "agents_down": down }))?;
    } else {
        emit(&status_text(inventory, &pairs, down))?;
    }
    if down > 0 {
        eprintln!("linerate: error: {down} agent(s) of the fleet do not answer (listed above)");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// `fleet down`: what `fleet up` recorded it made for this inventory
/// (its labs with their agents, token files and logs; then the inventory)
/// removed, and nothing else: the inventory only points at the fleets'
/// folders (its token files'), whose records, root's, name the labs. An
/// inventory no record names (written by hand, a copy) removes nothing.
fn down(inventory: &Path) -> Result<ExitCode> {
    linerate_host::putback::replay_all().warn();
    let me = std::path::absolute(inventory)
        .with_context(|| format!("finding {}", inventory.display()))?;
    if !inventory.exists() {
        return down_unfinished(inventory, &me);
    }
    let inv = Inventory::load(inventory)?;
    let dirs: std::collections::BTreeSet<&Path> = inv
        .pairs
        .iter()
        .filter(|p| p.lab.is_some())
        .filter_map(|p| p.tx.token_file.parent())
        .collect();
    let mut records = Vec::new();
    for dir in dirs {
        match host::read_record(dir) {
            Ok(r) if r.inventory == me => records.push((dir, r)),
            Ok(r) => eprintln!(
                "linerate: {} records the fleet of inventory {}, not of {}: left alone",
                dir.display(),
                r.inventory.display(),
                me.display()
            ),
            Err(e) => eprintln!("linerate: {e:#}: left alone"),
        }
    }
    if records.is_empty() {
        bail!(
            "inventory {} was not written by `linerate fleet up` (no record in {} names it): nothing was removed; an inventory written by hand is yours to remove",
            inventory.display(),
            host::STATE_DIR
        );
    }
    let mut removed = 0;
    for (dir, record) in &records {
        for lab in &record.labs {
            host::remove_pair(dir, lab);
            removed += 1;
        }
        host::forget(dir);
        host::remove_dir_if_empty(dir);
    }
    std::fs::remove_file(inventory)
        .with_context(|| format!("removing the inventory {}", inventory.display()))?;
    emit(&format!(
        "fleet down: {removed} pair(s) removed (agents, labs, token files), inventory {} removed\n",
        inventory.display()
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// `fleet down` of an inventory that does not exist: a fleet up killed
/// before it wrote it. What the record naming that inventory lists (made
/// or being made) is removed; with no such record, nothing.
fn down_unfinished(inventory: &Path, me: &Path) -> Result<ExitCode> {
    let records = host::records_naming(me);
    if records.is_empty() {
        bail!(
            "inventory {} does not exist and no fleet up in {} was bringing it up: nothing to remove",
            inventory.display(),
            host::STATE_DIR
        );
    }
    let mut removed = 0;
    for (dir, record) in &records {
        for lab in &record.labs {
            if host::lab_exists(lab) {
                removed += 1;
            }
            host::remove_pair(dir, lab);
        }
        host::forget(dir);
        host::remove_dir_if_empty(dir);
    }
    emit(&format!(
        "fleet down: a fleet up of inventory {} that did not finish: {removed} pair(s) removed (agents, labs, token files)\n",
        inventory.display()
    ))?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_shows_what_agents_answered_escaped() {
        let agent = |version: Option<&str>, error: Option<&str>| AgentStatus {
            agent: "http://198.18.0.2:7480".into(),
            iface: "hx\u{202e}0".into(),
            up: version.is_some(),
            version: version.map(String::from),
            error: error.map(String::from),
        };
        let pairs = [PairStatus {
            name: "fl0".into(),
            lab: None,
            tx: agent(Some("\u{1b}[2J\u{1b}]0;owned\u{7}\u{202e} (API 1)"), None),
            rx: agent(None, Some("refused\n  fl0 rx forged: up")),
        }];
        let text = status_text(Path::new("/tmp/f\u{1b}[31m.toml"), &pairs, 1);
        assert_eq!(
            text,
            "fleet /tmp/f\\u{1b}[31m.toml: 1 pair(s), 1 of 2 agents up\n\
             \x20 fl0 tx http://198.18.0.2:7480 (hx\\u{202e}0): up, linerate \\u{1b}[2J\\u{1b}]0;owned\\u{7}\\u{202e} (API 1)\n\
             \x20 fl0 rx http://198.18.0.2:7480 (hx\\u{202e}0): DOWN: refused\\u{a}  fl0 rx forged: up\n"
        );
    }
}
