//! Files linerate writes as root follow nothing (issue 22, items 2 to 4):
//! links planted at its temporary names or at its files, dangling links,
//! FIFOs and devices, directories others can write, captures a sweep file
//! or saved options point elsewhere, `ulimit -f`.
//!
//! The sweeps here that need no frames run on interfaces that do not
//! exist: every point fails at once, and the files are written all the
//! same.

mod common;

use std::{
    fs,
    os::unix::{
        fs::{symlink, PermissionsExt},
        process::ExitStatusExt,
    },
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
    sync::mpsc,
    time::Duration,
};

use common::*;

/// A fresh directory of the test's own, mode 0755.
fn fresh(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("linerate-planted-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    fs::set_permissions(&d, fs::Permissions::from_mode(0o755)).unwrap();
    d
}

/// A root-only file holding `text`.
fn victim(dir: &Path, text: &str) -> PathBuf {
    let v = dir.join("victim");
    fs::write(&v, text).unwrap();
    fs::set_permissions(&v, fs::Permissions::from_mode(0o600)).unwrap();
    v
}

/// Runs `program args...`; one that does not end within a minute (it
/// hangs: these runs take a second) is killed and the test fails.
fn guarded(program: &Path, args: &[&str]) -> Output {
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
            panic!("linerate {args:?} hung (killed after a minute)");
        }
    }
}

fn lr(args: &[&str]) -> Output {
    guarded(&linerate(), args)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

const SWEEP: &str = r#"name = "planted"
kind = "stream"
repeats = 1

[fixed]
warmup = "0s"
duration = "0.3s"

[[axis]]
name = "size"
values = [64, 128]
"#;

/// Interfaces that do not exist: each point fails at once.
const NOWHERE: [&str; 4] = ["--tx-iface", "nosuch-tx0", "--rx-iface", "nosuch-rx0"];

fn sweep_file(dir: &Path, extra: &str) -> PathBuf {
    let f = dir.join("sweep.toml");
    fs::write(&f, format!("{SWEEP}{extra}")).unwrap();
    f
}

fn sweep(file: &Path, out: &Path) -> Output {
    let mut a = vec![
        "sweep",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    a.extend(NOWHERE);
    lr(&a)
}

fn is_regular(p: &Path) -> bool {
    fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_file())
}

#[test]
#[ignore = "needs root: what linerate does as root with planted links"]
fn links_planted_at_the_temporary_names_are_not_followed() {
    require_root("planted temporary names");
    let d = fresh("tmpnames");
    let v = victim(&d, "root's file");
    let plant = |dir: &Path, names: &[&str]| {
        fs::create_dir_all(dir).unwrap();
        for n in names {
            symlink(&v, dir.join(n)).unwrap();
        }
    };
    // A sweep.
    let out = d.join("sweep");
    plant(
        &out,
        &[
            ".options.json.tmp",
            ".spec.toml.tmp",
            ".report.html.tmp",
            ".report.md.tmp",
            ".points.csv.tmp",
        ],
    );
    let o = sweep(&sweep_file(&d, ""), &out);
    assert!(is_regular(&out.join("report.html")), "{}", stderr(&o));
    assert!(is_regular(&out.join("options.json")), "{}", stderr(&o));
    assert_eq!(fs::read_to_string(&v).unwrap(), "root's file", "sweep");
    // An rfc2544 run.
    let out = d.join("rfc");
    plant(
        &out,
        &[
            ".report.md.tmp",
            ".rfc2544.json.tmp",
            ".rfc2544.csv.tmp",
            ".rfc2544.svg.tmp",
        ],
    );
    let mut a = vec![
        "rfc2544",
        "--size",
        "64",
        "--quick",
        "--out",
        out.to_str().unwrap(),
    ];
    a.extend(NOWHERE);
    let o = lr(&a);
    assert!(is_regular(&out.join("report.md")), "{}", stderr(&o));
    assert_eq!(fs::read_to_string(&v).unwrap(), "root's file", "rfc2544");
    // `report --compare`.
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sweep-small");
    let (a, b) = (d.join("a"), d.join("b"));
    for dir in [&a, &b] {
        fs::create_dir_all(dir).unwrap();
        for f in ["spec.toml", "options.json", "results.jsonl"] {
            fs::copy(fixture.join(f), dir.join(f)).unwrap();
        }
    }
    plant(&a, &[".compare.json.tmp", ".compare.md.tmp"]);
    let o = lr(&[
        "report",
        a.to_str().unwrap(),
        "--compare",
        b.to_str().unwrap(),
    ]);
    assert!(is_regular(&a.join("compare.json")), "{}", stderr(&o));
    assert_eq!(
        fs::read_to_string(&v).unwrap(),
        "root's file",
        "report --compare"
    );
    let _ = fs::remove_dir_all(d);
}

#[test]
#[ignore = "needs root: what linerate does as root with planted links"]
fn a_dangling_results_link_is_a_run_there() {
    require_root("dangling results.jsonl");
    let d = fresh("dangling");
    let file = sweep_file(&d, "");
    for (cmd, holds) in [
        ("sweep", "already holds a sweep (results.jsonl)"),
        ("rfc2544", "already holds a run"),
    ] {
        let out = d.join(cmd);
        fs::create_dir_all(&out).unwrap();
        let target = d.join(format!("{cmd}-target"));
        symlink(&target, out.join("results.jsonl")).unwrap();
        let o = if cmd == "sweep" {
            sweep(&file, &out)
        } else {
            let mut a = vec![
                "rfc2544",
                "--size",
                "64",
                "--quick",
                "--out",
                out.to_str().unwrap(),
            ];
            a.extend(NOWHERE);
            lr(&a)
        };
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{cmd}: {err}");
        assert!(err.contains(holds), "{cmd}: {err}");
        assert!(!target.exists(), "{cmd} created the link's target");
    }
    let _ = fs::remove_dir_all(d);
}

#[test]
#[ignore = "needs root: what linerate does as root with planted links"]
fn resume_takes_no_file_through_a_link_or_of_another_user() {
    require_root("--resume of a prepared directory");
    let d = fresh("resume");
    let out = d.join("out");
    let o = sweep(&sweep_file(&d, ""), &out);
    assert!(is_regular(&out.join("spec.toml")), "{}", stderr(&o));
    let resume = || lr(&["sweep", "--resume", out.to_str().unwrap()]);
    // results.jsonl linked to a root-only file with a "torn" last line.
    let v = victim(&d, "root's secret");
    fs::remove_file(out.join("results.jsonl")).unwrap();
    symlink(&v, out.join("results.jsonl")).unwrap();
    let o = resume();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("results.jsonl: is a symbolic link"), "{err}");
    assert_eq!(fs::read_to_string(&v).unwrap(), "root's secret");
    assert!(!out.join("results.jsonl.torn-1").exists());
    fs::remove_file(out.join("results.jsonl")).unwrap();
    // options.json as a link.
    let options = out.join("options.json");
    let saved = fs::read_to_string(&options).unwrap();
    let elsewhere = d.join("options-elsewhere.json");
    fs::write(&elsewhere, &saved).unwrap();
    fs::remove_file(&options).unwrap();
    symlink(&elsewhere, &options).unwrap();
    let err = stderr(&resume());
    assert!(err.contains("options.json: is a symbolic link"), "{err}");
    fs::remove_file(&options).unwrap();
    fs::write(&options, &saved).unwrap();
    // A sweep file of another user.
    let spec = out.join("spec.toml");
    nix::unistd::chown(&spec, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
    let o = resume();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("spec.toml: belongs to uid 65534"), "{err}");
    nix::unistd::chown(&spec, Some(nix::unistd::Uid::from_raw(0)), None).unwrap();
    // Saved options that capture elsewhere.
    let target = d.join("elsewhere.pcapng");
    let mut o: serde_json::Value = serde_json::from_str(&saved).unwrap();
    o["extra"]
        .as_array_mut()
        .unwrap()
        .extend(["--pcap".into(), target.to_str().unwrap().into()]);
    fs::write(&options, o.to_string()).unwrap();
    let o = resume();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("go into its own directory"), "{err}");
    assert!(!target.exists());
    let _ = fs::remove_dir_all(d);
}

#[test]
#[ignore = "needs root: what linerate does as root with planted links"]
fn output_directories_others_can_write_are_refused() {
    require_root("output directory modes");
    let d = fresh("dirmodes");
    let file = sweep_file(&d, "");
    let open = d.join("open");
    fs::create_dir(&open).unwrap();
    fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
    let theirs = d.join("theirs");
    fs::create_dir(&theirs).unwrap();
    nix::unistd::chown(&theirs, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
    for (dir, why) in [
        (&open, "can be written by its group or by others (mode 777)"),
        (
            &theirs,
            "belongs to uid 65534, not to the user running linerate",
        ),
    ] {
        let o = sweep(&file, dir);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains(why), "{err}");
        assert!(
            fs::read_dir(dir).unwrap().next().is_none(),
            "nothing written in {}",
            dir.display()
        );
    }
    let _ = fs::remove_dir_all(d);
}

#[test]
#[ignore = "needs root: what linerate does as root with planted links"]
fn report_reads_regular_files_only() {
    require_root("report of a FIFO");
    let d = fresh("report");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sweep-small");
    for f in ["spec.toml", "options.json"] {
        fs::copy(fixture.join(f), d.join(f)).unwrap();
    }
    let results = d.join("results.jsonl");
    nix::unistd::mkfifo(&results, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let o = lr(&["report", d.to_str().unwrap()]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("results.jsonl: is a FIFO: linerate uses regular files only"),
        "{err}"
    );
    fs::remove_file(&results).unwrap();
    symlink("/dev/zero", &results).unwrap();
    // (Bounded: before the fix this read /dev/zero until memory ran out.)
    let o = guarded(
        Path::new("prlimit"),
        &[
            "--as=2147483648",
            linerate().to_str().unwrap(),
            "report",
            d.to_str().unwrap(),
        ],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("results.jsonl: is a symbolic link"), "{err}");
    let _ = fs::remove_dir_all(d);
}

#[test]
#[ignore = "needs root: what linerate does as root with planted links"]
fn a_sweep_file_cannot_capture_outside_its_directory() {
    require_root("pcap in a sweep file");
    let d = fresh("sweeppcap");
    let target = d.join("elsewhere.pcapng");
    let file = d.join("sweep.toml");
    fs::write(
        &file,
        SWEEP.replace(
            "[fixed]\n",
            &format!("[fixed]\npcap = {:?}\n", target.to_str().unwrap()),
        ),
    )
    .unwrap();
    let out = d.join("out");
    let o = sweep(&file, &out);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("the captures of a sweep or an rfc2544 run go into its own directory"),
        "{err}"
    );
    assert!(!target.exists());
    // rfc2544 --pcap with a path.
    let out = d.join("rfc");
    let mut a = vec![
        "rfc2544",
        "--size",
        "64",
        "--quick",
        "--out",
        out.to_str().unwrap(),
        "--pcap",
        target.to_str().unwrap(),
    ];
    a.extend(NOWHERE);
    let o = lr(&a);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("the captures of a sweep or an rfc2544 run go into its own directory"),
        "{err}"
    );
    assert!(!target.exists() && !out.exists());
    let _ = fs::remove_dir_all(d);
}

#[test]
#[ignore = "needs root: what linerate does as root with planted links"]
fn a_file_size_limit_is_an_error_naming_the_file() {
    require_root("ulimit -f 0");
    let d = fresh("fsize");
    let bin = linerate();
    let bin = bin.to_str().unwrap();
    // The lock file (nothing else is touched: the lab does not exist).
    let o = guarded(
        Path::new("prlimit"),
        &["--fsize=0", bin, "lab", "down", "--lab", "sfwz"],
    );
    let err = stderr(&o);
    assert_eq!(
        (o.status.signal(), o.status.code()),
        (None, Some(1)),
        "{err}"
    );
    assert!(
        err.contains("writing the lock file /run/linerate/lab-sfwz.run: File too large"),
        "{err}"
    );
    // The lab is not there: neither are its lock files, after the error.
    for f in ["lab-sfwz.run", "lab-sfwz.lock"] {
        assert!(
            !Path::new("/run/linerate").join(f).exists(),
            "{f} left behind"
        );
    }
    // A sweep's first file.
    let file = sweep_file(&d, "");
    let out = d.join("out");
    let mut a = vec![
        "--fsize=0",
        bin,
        "sweep",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    a.extend(NOWHERE);
    let o = guarded(Path::new("prlimit"), &a);
    let err = stderr(&o);
    assert_eq!(
        (o.status.signal(), o.status.code()),
        (None, Some(1)),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "writing {} failed: File too large",
            out.join("options.json").display()
        )),
        "{err}"
    );
    let _ = fs::remove_dir_all(d);
}

#[test]
#[ignore = "needs root: what linerate does as root with planted links"]
fn pcap_writes_a_new_regular_file_or_dev_null_only() {
    require_root("--pcap planted");
    let _turn = serial();
    let lab = Lab::up("sfw1", 1500);
    let d = fresh("pcap");
    let v = victim(&d, "root's file");
    let pcap = |file: &Path| {
        lr(&[
            "stream",
            "--lab",
            &lab.name,
            "--count",
            "10",
            "--warmup",
            "0",
            "--duration",
            "0.3",
            "--pcap",
            file.to_str().unwrap(),
        ])
    };
    let link = d.join("link.pcapng");
    symlink(&v, &link).unwrap();
    let fifo = d.join("fifo.pcapng");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let existing = d.join("existing.pcapng");
    fs::write(&existing, "keep").unwrap();
    for (file, why) in [
        (&link, "is a symbolic link"),
        (&fifo, "is a FIFO: linerate writes a new regular file only"),
        (&existing, "already exists: linerate does not replace it"),
    ] {
        let o = pcap(file);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(
            err.contains(&format!("--pcap {}: {why}", file.display())),
            "{err}"
        );
    }
    assert_eq!(fs::read_to_string(&v).unwrap(), "root's file");
    assert_eq!(fs::read_to_string(&existing).unwrap(), "keep");
    let o = pcap(Path::new("/dev/null"));
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("warning"), "{err}");
    let _ = fs::remove_dir_all(d);
}

#[test]
#[ignore = "needs root: what linerate does as root with planted links"]
fn a_sweep_captures_each_point_and_repeat_in_its_directory() {
    require_root("sweep captures");
    let _turn = serial();
    let lab = Lab::up("sfw2", 1500);
    let d = fresh("captures");
    let file = d.join("sweep.toml");
    fs::write(
        &file,
        SWEEP.replace(
            "[fixed]\n",
            "[fixed]\npcap = \"cap.pcapng\"\npcap_count = 5\ncount = 20\n",
        ),
    )
    .unwrap();
    let out = d.join("out");
    let o = lr(&[
        "sweep",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--lab",
        &lab.name,
    ]);
    let err = stderr(&o);
    for name in ["cap-1-1-1.pcapng", "cap-1-2-1.pcapng"] {
        let bytes = fs::read(out.join(name)).unwrap_or_else(|e| panic!("{name}: {e}\n{err}"));
        // A pcapng section header block.
        assert_eq!(bytes[..4], [0x0a, 0x0d, 0x0d, 0x0a], "{name}");
    }
    assert!(!d.join("cap.pcapng").exists() && !Path::new("cap.pcapng").exists());
    // rfc2544: one file per test of each size (its last trial).
    let out = d.join("rfc");
    let o = lr(&[
        "rfc2544",
        "--size",
        "64",
        "--quick",
        "--out",
        out.to_str().unwrap(),
        "--lab",
        &lab.name,
        "--pcap",
        "cap.pcapng",
        "--pcap-count",
        "5",
    ]);
    let err = stderr(&o);
    for test in 1..=4 {
        let name = format!("cap-1-{test}-1.pcapng");
        let bytes = fs::read(out.join(&name)).unwrap_or_else(|e| panic!("{name}: {e}\n{err}"));
        assert_eq!(bytes[..4], [0x0a, 0x0d, 0x0d, 0x0a], "{name}");
    }
    assert!(!Path::new("cap.pcapng").exists());
    let _ = fs::remove_dir_all(d);
}
