//! What an inventory may make root do (issue 32, group 3): an inventory or
//! a token file another user wrote (or could write) sends nothing, a
//! token file is read only up to its cap, and `fleet down` removes only
//! what `fleet up` recorded it made.

mod common;

use std::{
    fs,
    net::TcpListener,
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use common::*;

fn fresh(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lr-trust-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    fs::set_permissions(&d, fs::Permissions::from_mode(0o755)).unwrap();
    d
}

fn chown(p: &Path, uid: u32) {
    nix::unistd::chown(p, Some(nix::unistd::Uid::from_raw(uid)), None).unwrap();
}

fn chmod(p: &Path, mode: u32) {
    fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
}

/// An inventory of one pair whose agents are `agent`, with `token`.
fn inventory(path: &Path, agent: &str, token: &Path) {
    let side = |iface: &str| {
        format!(
            "agent = \"{agent}\"\niface = \"{iface}\"\ntoken_file = \"{}\"\n",
            token.display()
        )
    };
    fs::write(
        path,
        format!(
            "version = 1\n[[pair]]\nname = \"p0\"\n[pair.tx]\n{}[pair.rx]\n{}",
            side("eth1"),
            side("eth2")
        ),
    )
    .unwrap();
    chmod(path, 0o644);
}

/// Whether anything connected to `l` within `wait`.
fn connected(l: &TcpListener, wait: Duration) -> bool {
    let end = Instant::now() + wait;
    loop {
        match l.accept() {
            Ok(_) => return true,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => panic!("accept: {e}"),
        }
        if Instant::now() > end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
#[ignore = "needs root: what an inventory may make root do"]
fn a_foreign_inventory_or_token_file_sends_nothing() {
    require_root("a_foreign_inventory_or_token_file_sends_nothing");
    let d = fresh("foreign");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let agent = format!("http://{}", listener.local_addr().unwrap());
    // Root's secret, mode 600.
    let token = d.join("root.token");
    fs::write(&token, "0123456789abcdef0123456789abcdef\n").unwrap();
    chmod(&token, 0o600);
    let inv = d.join("fleet.toml");
    inventory(&inv, &agent, &token);
    let i = inv.to_str().unwrap();
    let out = d.join("sweep");
    let commands: [&[&str]; 3] = [
        &["fleet", "status", "--inventory", i],
        &["stream", "--fleet", i, "--duration", "1"],
        &[
            "sweep",
            "service-demand",
            "--fleet",
            i,
            "--out",
            out.to_str().unwrap(),
        ],
    ];
    let refused = |why: &str| {
        for args in commands {
            let out = run(args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
            assert!(err.contains(why), "{args:?}: {why:?} not in {err}");
            assert!(
                !connected(&listener, Duration::ZERO),
                "{args:?} sent a request: {err}"
            );
        }
    };
    // Written by uid 65534 (nobody), naming root's token file.
    chown(&inv, 65534);
    refused(
        "fleet.toml: belongs to uid 65534, not to the user running linerate (uid 0) nor to root",
    );
    chown(&inv, 0);
    // Root's, but others may write it.
    chmod(&inv, 0o666);
    refused("fleet.toml: can be written by its group or by others (mode 666)");
    chmod(&inv, 0o644);
    // The token file another user's (mode 600 all the same).
    chown(&token, 65534);
    refused("root.token: belongs to uid 65534");
    chown(&token, 0);
    // A sparse 1 GiB token file: refused from its size, not read.
    let big = d.join("big.token");
    fs::File::create(&big).unwrap().set_len(1 << 30).unwrap();
    chmod(&big, 0o600);
    inventory(&inv, &agent, &big);
    refused("big.token: is larger than the 4096 bytes linerate reads of it");
    // The agent's own token file likewise.
    let out = bounded(&[
        "agent",
        "--listen",
        "127.0.0.1:0",
        "--token-file",
        big.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("big.token: is larger than the 4096 bytes linerate reads of it"),
        "{err}"
    );
    // The control: root's inventory and token file are sent (the listener
    // would have seen the requests above).
    inventory(&inv, &agent, &token);
    let child = spawn(&["fleet", "status", "--inventory", i]);
    assert!(connected(&listener, Duration::from_secs(20)));
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let _ = fs::remove_dir_all(d);
}

#[test]
#[ignore = "needs root: what an inventory may make root do"]
fn fleet_down_removes_only_what_fleet_up_recorded() {
    require_root("fleet_down_removes_only_what_fleet_up_recorded");
    let d = fresh("down");
    // Files and a folder fleet up never made, named as it names its own.
    let victims = d.join("victims");
    fs::create_dir(&victims).unwrap();
    let files: Vec<PathBuf> = ["tx", "rx"]
        .iter()
        .flat_map(|r| ["token", "log"].map(|e| victims.join(format!("lrtd0-{r}.{e}"))))
        .collect();
    for f in &files {
        fs::write(f, "keep").unwrap();
        chmod(f, 0o600);
    }
    let mut text = String::from("version = 1\n[[pair]]\nname = \"lrtd0\"\nlab = \"lrtd0\"\n");
    for (role, iface) in [("tx", "lrtd0-a0"), ("rx", "lrtd0-b0")] {
        text += &format!(
            "[pair.{role}]\nagent = \"http://198.19.1.2:7480\"\niface = \"{iface}\"\ntoken_file = \"{}\"\n",
            victims.join(format!("lrtd0-{role}.token")).display()
        );
    }
    let inv = d.join("fleet.toml");
    fs::write(&inv, text).unwrap();
    let out = run(&["fleet", "down", "--inventory", inv.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("was not written by `linerate fleet up` (no record in /run/linerate/fleet names it): nothing was removed"),
        "{err}"
    );
    assert!(
        err.contains(&format!("{} is not a fleet's folder", victims.display())),
        "{err}"
    );
    for f in &files {
        assert_eq!(fs::read_to_string(f).unwrap(), "keep", "{}", f.display());
    }
    assert!(victims.is_dir() && inv.is_file());
    let _ = fs::remove_dir_all(d);
}

/// Runs `linerate args...`, killed (and failed) if still running after
/// 60 s: a FIFO read waits for a writer forever.
fn bounded(args: &[&str]) -> std::process::Output {
    let mut child = spawn(args);
    let end = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?} still ran after 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn fifos_and_devices_are_refused_as_sweep_files_and_overhead_inputs() {
    let d = fresh("fifo");
    let fifo = d.join("sweep.toml");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let f = fifo.to_str().unwrap();
    for (args, why) in [
        (["sweep", f], "sweep.toml: is a FIFO"),
        (["overhead", f], "sweep.toml: is a FIFO"),
        (["sweep", "/dev/zero"], "/dev/zero: is a character device"),
        (
            ["overhead", "/dev/zero"],
            "/dev/zero: is a character device",
        ),
    ] {
        let out = bounded(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(why), "{args:?}: {err}");
    }
    let _ = fs::remove_dir_all(d);
}
