//! Bad input gets a one-line error that names the problem and the fix,
//! and a non-zero exit; never a panic.

mod common;

use std::process::Output;

use common::*;

fn fails_with(out: &Output, needles: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "exit status; stderr: {err}");
    assert!(err.starts_with("linerate: error: "), "stderr: {err}");
    assert!(!err.contains("panicked"), "panic: {err}");
    for n in needles {
        assert!(err.contains(n), "{n:?} missing from: {err}");
    }
}

/// A usage error: clap refused the command line, with the same one-line
/// `linerate: error:` start as every other error, and exit 2.
fn usage_error(args: &[&str], needles: &[&str]) {
    let out = run(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{args:?}: exit status; stderr: {err}"
    );
    assert!(
        err.starts_with("linerate: error: "),
        "{args:?}: stderr: {err}"
    );
    assert!(!err.contains("panicked"), "panic: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: {n:?} missing from: {err}");
    }
}

#[test]
fn usage_errors_say_linerate_error_and_exit_2() {
    usage_error(&["stream", "--colour", "3"], &["--colour"]);
    usage_error(&["lab", "sideways"], &["sideways"]);
    // --rate is bounded as its message says: 1 to 1e9.
    for r in ["0.001", "0", "-5", "inf", "NaN", "1e10"] {
        usage_error(
            &["stream", &format!("--rate={r}")],
            &[&format!("'{r}' for '--rate"), "out of range", "1 to 1e9"],
        );
    }
    // Help and version still print as usual, exit 0.
    let out = run(&["stream", "--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Usage: linerate stream"));
    let out = run(&["--version"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("linerate "));
}

#[test]
fn names_that_are_paths_are_refused_at_parse_time() {
    let ns = "is not a network namespace name";
    let ifn = "is not an interface name";
    let cases: &[(&[&str], &str, &str)] = &[
        (
            &["stream", "--tx-netns", "../netns/rp-a"],
            "../netns/rp-a",
            ns,
        ),
        (
            &["stream", "--tx-netns", "/run/netns/rp-a"],
            "/run/netns/rp-a",
            ns,
        ),
        (&["stream", "--rx-netns", ""], "\"\"", ns),
        (&["rr", "--rx-netns", ".."], "\"..\"", ns),
        (&["stream", "--rx-iface", "a/b"], "a/b", ifn),
        (&["doctor", "--iface", ".."], "\"..\"", ifn),
        (&["doctor", "--netns", "../x"], "../x", ns),
        (&["sweep", "rpc", "--tx-netns", "/x"], "/x", ns),
    ];
    for (args, value, what) in cases {
        usage_error(args, &[value, what]);
    }
}

#[test]
fn core_lists_are_checked_before_they_expand() {
    // These used to allocate 800 GB (exit 134) or panic on capacity
    // overflow: now refused by clap, naming the list and the cores.
    for (flag, list) in [
        ("--tx-cores", "0-99999999999"),
        ("--rx-cores", "0-18446744073709551615"),
        ("--tx-cores", "0,99999999999999999999999"),
    ] {
        for cmd in ["stream", "rr"] {
            usage_error(
                &[cmd, flag, list],
                &[
                    &format!("'{list}' for '{flag}"),
                    "does not exist",
                    "this machine has cores 0 to",
                ],
            );
        }
    }
    usage_error(
        &["stream", "--tx-cores", "x"],
        &["not a core number or range"],
    );
    // A core this machine lacks (within what a CPU set holds): refused
    // before anything touches the system.
    let ncpu = std::thread::available_parallelism().unwrap().get();
    if ncpu <= 1023 {
        let list = format!("0-{ncpu}");
        fails_with(
            &run(&["stream", "--rx-cores", &list]),
            &[
                "--rx-cores",
                &format!("core {ncpu} does not exist"),
                &format!("this machine has cores 0 to {}", ncpu - 1),
                &format!("(in the list \"{list}\")"),
            ],
        );
    }
}

#[test]
fn counts_are_bounded_so_products_cannot_overflow() {
    // count x queues used to wrap: the receiver stopped at once, "lost
    // 100 %", exit 0. On an agent's receiving side (--role rx) too.
    for args in [
        &["stream", "--count", "9223372036854775808", "--queues", "2"][..],
        &["rr", "--count", "18446744073709551615"],
        &[
            "stream",
            "--role",
            "rx",
            "--peer-mac",
            "02:00:00:00:00:01",
            "--peer-ip",
            "198.18.0.1",
            "--count",
            "9223372036854775808",
            "--queues",
            "2",
        ],
    ] {
        usage_error(args, &["for '--count", "out of range", "2^48"]);
    }
}

#[test]
fn out_of_range_arguments() {
    // Checked before anything touches the system, so no root needed: what
    // depends on two options (exit 1; one value alone: exit 2, below).
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["stream", "--ring", "64", "--batch", "128"],
            &["--batch 128", "1 to --ring (64)"],
        ),
        (
            &["stream", "--tx-iface", "x0"],
            &["both --tx-iface and --rx-iface"],
        ),
    ];
    for (args, needles) in cases {
        fails_with(&run(args), needles);
    }
}

// (command, option, value, what the message says of the range)
const OUT_OF_RANGE: &[(&[&str], &str, &str, &str)] = &[
    (&["stream"], "--size", "0", "use 64 to 65553"),
    (&["stream"], "--size", "63", "use 64 to 65553"),
    (&["stream"], "--size", "-64", "is negative"),
    (
        &["stream"],
        "--size",
        "99999999999999999999",
        "is too large",
    ),
    (&["stream"], "--size", "65554", "is too large"),
    (
        &["stream"],
        "--size",
        "64:7,0:1",
        "frame size 0 is out of range",
    ),
    (&["stream"], "--queues", "0", "use 1 to 64"),
    (&["stream"], "--queues", "65", "use 1 to 64"),
    (&["rr"], "--queues", "-1", "is negative"),
    (&["stream"], "--batch", "0", "use 1 to 16384"),
    (&["stream"], "--ring", "3", "a power of two"),
    (&["stream"], "--ring", "100", "is not a power of two"),
    (&["stream"], "--ring", "32768", "use 64 to 16384"),
    (&["stream"], "--rx-ring", "0", "a power of two"),
    (&["stream"], "--port", "0", "use 1 to 64511"),
    (&["stream"], "--port", "65000", "use 1 to 64511"),
    (&["stream"], "--port", "-1", "is negative"),
    (&["stream"], "--inject-loss", "101", "use 0 to 100"),
    (&["stream"], "--inject-loss", "-1", "use 0 to 100"),
    (
        &["rfc2544"],
        "--loss",
        "200",
        "from 0 up to (not including) 100",
    ),
    (
        &["rfc2544"],
        "--loss",
        "100",
        "from 0 up to (not including) 100",
    ),
    (
        &["rfc2544"],
        "--loss",
        "-1",
        "from 0 up to (not including) 100",
    ),
    (&["stream"], "--mtu", "0", "use 576 to 65535"),
    (&["stream"], "--mtu", "70000", "use 576 to 65535"),
    (&["rr"], "--mtu", "-1500", "is negative"),
    (&["lab", "up"], "--mtu", "10000", "use 576 to 9000"),
    (&["lab", "up"], "--mtu", "0", "use 576 to 9000"),
    (&["lab", "up"], "--queues", "0", "use 1 to 64"),
    (&["lab", "up"], "--lab", "this-name-is-too-long", "1 to 8"),
    (&["lab", "down"], "--lab", "a/b", "1 to 8"),
    (&["stream"], "--lab", "a/b", "1 to 8"),
    (&["doctor"], "--lab", "", "1 to 8"),
    (&["sweep", "rpc"], "--lab", "../x", "1 to 8"),
    (&["stream"], "--rate", "0", "1 to 1e9"),
    (&["stream"], "--rate", "-1", "1 to 1e9"),
    (&["stream"], "--count", "0", "from 1 to 2^48"),
    (&["rr"], "--count", "0", "from 1 to 2^48"),
    (&["stream"], "--count", "-5", "from 1 to 2^48"),
    (&["stream"], "--message", "268435457", "use 0 to 268435456"),
    (&["stream"], "--message", "-1", "is negative"),
    (&["rr"], "--request", "-1", "is negative"),
    (&["rr"], "--response", "268435457", "use 0 to 268435456"),
    (&["rr"], "--concurrency", "0", "use 1 to 16384"),
    (&["rr"], "--flows", "0", "use 1 to 4096"),
    (&["rr"], "--flows", "4097", "use 1 to 4096"),
    (&["rr"], "--timeout", "0", "longer than 0"),
    (&["rr"], "--timeout", "-1", "is not a duration"),
    (&["stream"], "--umem-chunk", "1000", "2048 or 4096"),
    (&["stream"], "--tx-cores", "x", "not a core number"),
    (&["rr"], "--rx-cores", "1-", "not a core number"),
    (&["stream"], "--tx-cores", "-1", "not a core number"),
    (
        &["sweep", "rpc"],
        "--max-points",
        "-1",
        "is negative: use 1 to",
    ),
    (
        &["sweep", "rpc"],
        "--max-points",
        "0",
        "out of range: use 1 to",
    ),
    (&["sweep", "rpc"], "--repeats", "0", "1..=100"),
    (&["sweep", "rpc"], "--repeats", "101", "1..=100"),
    (
        &["stream", "--pcap", "f"],
        "--pcap-count",
        "0",
        "1..=100000",
    ),
    (&["stream"], "--duration", "0", "at least 100ms"),
    (&["stream"], "--duration", "0.0000001", "at least 100ms"),
    (&["stream"], "--duration", "99ms", "at least 100ms"),
    (&["rr"], "--duration", "0", "at least 100ms"),
    (&["rfc2544"], "--duration", "0", "at least 100ms"),
    (&["stream"], "--duration", "25h", "at most 24h"),
    (&["stream"], "--duration", "-1", "is not a duration"),
    (&["stream"], "--warmup", "-1", "is not a duration"),
    (&["stream"], "--warmup", "2h", "0 to 1h"),
    (
        &["stream"],
        "--search-rate",
        "-0",
        "from 0 up to (not including) 100",
    ),
    (
        &["stream"],
        "--search-rate",
        "101",
        "from 0 up to (not including) 100",
    ),
    (
        &["stream"],
        "--search-rate",
        "100",
        "from 0 up to (not including) 100",
    ),
];

/// Every value out of its option's range is refused where it is parsed:
/// exit 2, the option, the value and the range (or why) named. No root
/// needed: clap refuses them before anything else runs.
#[test]
fn every_out_of_range_value_exits_2_naming_option_and_value() {
    for (command, option, value, range) in OUT_OF_RANGE {
        let mut args = command.to_vec();
        args.extend([*option, *value]);
        usage_error(
            &args,
            &[&format!("invalid value '{value}' for '{option}"), range],
        );
    }
    // The floor and 0 warm-up are values that run.
    for args in [
        &["stream", "--duration", "100ms", "--warmup", "0", "--help"][..],
        &["rr", "--duration", "0.1", "--help"],
    ] {
        assert_eq!(run(args).status.code(), Some(0), "{args:?}");
    }
}

/// Gates that could pass on nothing and options a run would refuse only
/// after it started are command-line errors: exit 2 before anything runs
/// (no root, no lab, no agent needed to say so).
#[test]
fn gates_and_fleet_options_that_cannot_hold_exit_2_before_anything_runs() {
    for interval in ["10ms", "0", "6m"] {
        usage_error(
            &[
                "fleet",
                "prometheus",
                "--inventory",
                "/nonexistent/inventory.toml",
                "--interval",
                interval,
            ],
            &[
                &format!("invalid value '{interval}' for '--interval"),
                "is out of range: use 100ms to 5m",
            ],
        );
    }
    usage_error(
        &["stream", "--expect", "frames.lost <= 1e308G"],
        &["\"1e308G\" is not a finite number"],
    );
    let fleet = ["stream", "--fleet", "/nonexistent/inventory.toml"];
    for (extra, says) in [
        (
            &["--pcap", "run.pcapng"][..],
            "--pcap writes the frames of a run on this host, and a fleet's pairs run on their own hosts",
        ),
        (
            &["--napi-priority", "fifo:50"][..],
            "--napi-priority fifo:50: a fleet's pairs run on interfaces of no lab",
        ),
        (&["--tx-only"][..], "--tx-only runs the senders on this host"),
        (
            &["--tx-iface", "eth0"][..],
            "--fleet takes each pair's interfaces from the inventory",
        ),
    ] {
        let args: Vec<&str> = fleet.iter().chain(extra).copied().collect();
        usage_error(&args, &[says]);
    }
    // A sweep file that sets an option of one run a sweep would ignore.
    let spec = std::fs::read_to_string(fixture("small-sweep.toml")).unwrap();
    let dir = std::env::temp_dir().join(format!("linerate-err-runonly-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (set, says) in [
        (
            "expect = \"frames.lost == 0\"",
            "expect: a sweep file may not set this option of one run: a sweep's gates are held against every point's median: give them to the sweep, `linerate sweep FILE --expect 'METRIC OP VALUE'`",
        ),
        ("json_stream = true", "json_stream: a sweep file may not set this option of one run"),
    ] {
        let file = dir.join("small.toml");
        std::fs::write(&file, spec.replace("mtu = 1500", &format!("mtu = 1500\n{set}"))).unwrap();
        let out = dir.join("out");
        usage_error(
            &[
                "sweep",
                file.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ],
            &["small.toml:", says],
        );
        assert!(!out.exists(), "{set}: the sweep ran");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Without root, a run on real interfaces is refused first, naming what
/// it needs; as root the test drops to nobody (uid 65534, no
/// capabilities) with setpriv. (Moved from the root package's
/// tests/errors.rs.)
#[test]
fn not_root() {
    let mut cmd = if nix::unistd::geteuid().is_root() {
        let mut c = std::process::Command::new("setpriv");
        c.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
        ])
        .arg(linerate());
        c
    } else {
        std::process::Command::new(linerate())
    };
    let out = cmd
        .args(["stream", "--lab", "tenr"])
        .output()
        .expect("running linerate");
    fails_with(
        &out,
        &[
            "linerate stream needs root (CAP_NET_ADMIN, CAP_NET_RAW, CAP_BPF, CAP_SYS_ADMIN)",
            "sudo",
        ],
    );
}

/// Frame sizes against the MTU, the UMEM chunk and cores, on the loopback
/// engine: refused before anything runs. (Moved from the root package's
/// tests/errors.rs, which keeps an MTU out of range on the lab: the
/// loopback refuses a frame that large as multi-buffer first.)
#[test]
fn sizes_and_cores_out_of_range() {
    let lo = |args: &[&str]| {
        let mut all = vec!["stream", "--backend", "loopback", "--duration", "1s"];
        all.extend_from_slice(args);
        run(&all)
    };
    fails_with(
        &lo(&["--size", "1519"]),
        &["frame size 1519 is out of range", "1518", "--mtu"],
    );
    // Below 64 bytes on any link: refused where it is parsed.
    usage_error(
        &[
            "stream",
            "--backend",
            "loopback",
            "--size",
            "63",
            "--duration",
            "1s",
        ],
        &["frame size 63 is out of range", "64"],
    );
    fails_with(
        &lo(&["--umem-chunk", "2048", "--size", "1900", "--mtu", "2000"]),
        &[
            "--umem-chunk 2048 holds frames up to 1792 bytes",
            "--umem-chunk 4096",
        ],
    );
    usage_error(
        &["lab", "up", "--lab", "tesz2", "--mtu", "10000"],
        &["'10000' for '--mtu", "576 to 9000"],
    );
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let past = cores.max(64).to_string();
    fails_with(
        &lo(&["--tx-cores", &past]),
        &[&format!("core {past} does not exist")],
    );
}

/// A count of messages whose frames would wrap the senders' 48-bit frame
/// count is refused before the run. (Moved from the root package's
/// tests/errors.rs.)
#[test]
fn message_frames_times_count_is_bounded() {
    fails_with(
        &run(&[
            "stream",
            "--backend",
            "loopback",
            "--count",
            "281474976710656",
            "--message",
            "100000",
            "--duration",
            "1s",
        ]),
        &["--count 281474976710656", "more than 2^48", "lower --count"],
    );
}

/// A sweep whose second point has an impossible core list is refused
/// before its first point runs: nothing is written. (Moved from the root
/// package's tests/errors.rs.)
#[test]
fn a_sweep_refuses_a_bad_core_list_before_it_runs_anything() {
    let dir = tmp("hxsw");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("cores.toml");
    std::fs::write(
        &file,
        "name = \"cores\"\nkind = \"stream\"\n[fixed]\nbackend = \"loopback\"\ncount = 10\n[[axis]]\nname = \"rx_cores\"\nvalues = [\"0\", \"0-99999999999\"]\n",
    )
    .unwrap();
    let out_dir = dir.join("out");
    let out = run(&[
        "sweep",
        file.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("linerate: error: ")
            && err.contains("'0-99999999999' for '--rx-cores")
            && err.contains("does not exist"),
        "{err}"
    );
    assert!(!out_dir.exists(), "the sweep started");
    let _ = std::fs::remove_dir_all(&dir);
}
