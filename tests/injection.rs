//! Names are names: an interface whose name is a shell command line is
//! only ever a name, and no part of linerate runs a shell.

mod common;

use std::{
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
    process::Command,
};

use common::*;

/// The interface name from the report: `sh -c "echo N > .../{iface}/threaded"`
/// ran `id` into `pw`.
const HOSTILE: &str = "q;id>pw;#";

fn ip(args: &[&str]) {
    let st = Command::new("ip").args(args).status().unwrap();
    assert!(st.success(), "ip {args:?}");
}

/// A directory of its own, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(what: &str) -> Self {
        let d = std::env::temp_dir().join(format!("linerate-{what}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Self(d)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A PATH whose `sh`, `bash` and `dash` come first and leave a mark when
/// run, then do what the real one would.
fn trap_path(dir: &Path, mark: &Path) -> String {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for shell in ["sh", "bash", "dash"] {
        let p = bin.join(shell);
        std::fs::write(
            &p,
            format!(
                "#!/bin/dash\necho \"{shell} $*\" >> '{}'\nexec /bin/{shell} \"$@\"\n",
                mark.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

#[test]
#[ignore = "needs root: interfaces and namespaces named like commands"]
fn a_hostile_interface_name_is_only_a_name() {
    require_root("hostile interface name");
    let _turn = serial();
    let lab = Lab::up("hxi", 1500);
    // The hostile end in the lab's A namespace, its peer in B.
    ip(&[
        "-n",
        &lab.ns_a(),
        "link",
        "add",
        HOSTILE,
        "type",
        "veth",
        "peer",
        "name",
        "hxi-q",
        "netns",
        &lab.ns_b(),
    ]);
    ip(&[
        "-n",
        &lab.ns_a(),
        "addr",
        "add",
        "198.18.2.1/30",
        "dev",
        HOSTILE,
    ]);
    ip(&[
        "-n",
        &lab.ns_b(),
        "addr",
        "add",
        "198.18.2.2/30",
        "dev",
        "hxi-q",
    ]);
    ip(&["-n", &lab.ns_a(), "link", "set", HOSTILE, "up"]);
    ip(&["-n", &lab.ns_b(), "link", "set", "hxi-q", "up"]);
    let cwd = TempDir::new("hxi-cwd");
    let mark = cwd.0.join("shell-ran");
    let path = trap_path(&cwd.0, &mark);
    let stream = |napi: &str| {
        let out = Command::new(linerate())
            .args([
                "stream",
                "--tx-iface",
                HOSTILE,
                "--tx-netns",
                &lab.ns_a(),
                "--rx-iface",
                "hxi-q",
                "--rx-netns",
                &lab.ns_b(),
                "--napi",
                napi,
                "--count",
                "1",
                "--warmup",
                "0s",
                "--duration",
                "20s",
                "--json",
            ])
            .current_dir(&cwd.0)
            .env("PATH", &path)
            .output()
            .unwrap();
        assert!(!cwd.0.join("pw").exists(), "`id` ran: pw in the cwd");
        assert!(!Path::new("/pw").exists(), "`id` ran: /pw");
        out
    };
    // Without GRO the hostile veth has no NAPI to make threaded: a clear
    // error naming it (the report's run exited 0 having run `id`).
    let out = stream("threaded");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with(&format!("linerate: error: interface {HOSTILE} has no NAPI")),
        "{err}"
    );
    // With GRO on it has: the mode is written to its sysfs file, by name.
    let st = Command::new("ip")
        .args([
            "netns",
            "exec",
            &lab.ns_a(),
            "ethtool",
            "-K",
            HOSTILE,
            "gro",
            "on",
        ])
        .status()
        .unwrap();
    assert!(st.success());
    for napi in ["threaded", "softirq"] {
        let out = stream(napi);
        assert!(
            out.status.success(),
            "{napi}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r = json(&out);
        assert_eq!(r["frames"]["received"], 1, "{napi}");
        assert_eq!(r["setup"]["napi"], napi);
    }
    assert!(
        !mark.exists(),
        "a shell ran: {}",
        std::fs::read_to_string(&mark).unwrap_or_default()
    );
}

#[test]
#[ignore = "needs root: interfaces and namespaces named like commands"]
fn lab_up_and_runs_start_no_shell() {
    require_root("no shell");
    let _turn = serial();
    let dir = TempDir::new("hxsh");
    let mark = dir.0.join("shell-ran");
    let path = trap_path(&dir.0, &mark);
    let linerate_with_trap = |args: &[&str]| {
        let out = Command::new(linerate())
            .args(args)
            .current_dir(&dir.0)
            .env("PATH", &path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    };
    let _ = run(&["lab", "down", "--lab", "hxsh"]);
    // `lab up` sets sysctls, NAPI, GRO, qdiscs; a run sets NAPI both ways.
    linerate_with_trap(&[
        "lab", "up", "--lab", "hxsh", "--mtu", "9000", "--queues", "2",
    ]);
    let lab = Lab {
        name: "hxsh".into(),
    };
    for napi in ["softirq", "threaded"] {
        linerate_with_trap(&[
            "stream",
            "--lab",
            &lab.name,
            "--napi",
            napi,
            "--count",
            "100",
            "--rate",
            "10000",
            "--warmup",
            "0s",
            "--duration",
            "20s",
        ]);
    }
    linerate_with_trap(&[
        "rr",
        "--lab",
        &lab.name,
        "--count",
        "100",
        "--duration",
        "20s",
    ]);
    linerate_with_trap(&["lab", "down", "--lab", "hxsh"]);
    assert!(
        !mark.exists(),
        "a shell ran: {}",
        std::fs::read_to_string(&mark).unwrap_or_default()
    );
    // The trap works: a shell from this PATH leaves its mark.
    let st = Command::new("sh")
        .args(["-c", "true"])
        .env("PATH", &path)
        .status()
        .unwrap();
    assert!(
        st.success() && mark.exists(),
        "the trap did not catch a shell"
    );
}
