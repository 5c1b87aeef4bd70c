//! The loopback engine (`--backend loopback`) through the binary, with
//! no root and no network: a stream's frames accounted exactly, loss
//! injected on the link counted as such, messages and mixes whole, the
//! gates' exit status, and what the engine cannot do refused before
//! anything runs.

mod common;

use common::{json, run, run_ok};

/// Every frame the senders completed is received or was dropped on
/// purpose: `sent = received + injected`, exactly. The frames dropped on
/// purpose are the loss asked for: the run exits 0 (one short of its count
/// by anything else exits 4, naming how many did not arrive).
#[test]
fn a_counted_stream_with_injected_loss_accounts_for_every_frame() {
    let out = run(&[
        "stream",
        "--backend",
        "loopback",
        "--count",
        "100000",
        "--inject-loss",
        "1",
        "--json",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("did not arrive"), "{err}");
    let r = json(&out);
    let f = &r["frames"];
    assert_eq!(f["sent"], 100_000, "{f:#}");
    // Every 100th frame of what the link carried.
    assert_eq!(f["injected"], 1000, "{f:#}");
    assert_eq!(f["received"], 99_000, "{f:#}");
    assert_eq!(f["lost"], 1000, "{f:#}");
    // Gaps the receiver saw: the last frame dropped (the 100,000th) has
    // none after it.
    assert_eq!(f["seq_gaps"], 999, "{f:#}");
    // The receivers check checksums: none bad, a measurement.
    assert_eq!(f["bad_checksum"], 0, "{f:#}");
    assert_eq!(r["params"]["backend"], "loopback");
    assert_eq!(r["setup"]["rx_bind_mode"], "in-memory loopback");
    // The workers' own counts agree with the accounting.
    let total = |role: &str| -> u64 {
        r["workers"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|w| w["role"] == role)
            .map(|w| w["total"]["frames"].as_u64().unwrap())
            .sum()
    };
    assert_eq!((total("tx"), total("rx")), (100_000, 99_000));
}

/// Without injected loss nothing is lost, over two queues, for frames,
/// messages and a mix alike; no `injected` where none was asked for.
#[test]
fn streams_of_frames_messages_and_mixes_lose_nothing() {
    for shape in [
        &["--size", "64"][..],
        &["--message", "9000"][..],
        &["--size", "imix"][..],
    ] {
        let mut args = vec![
            "stream",
            "--backend",
            "loopback",
            "--queues",
            "2",
            "--count",
            "20000",
            "--json",
        ];
        args.extend_from_slice(shape);
        let out = run(&args);
        assert!(
            out.status.success(),
            "{shape:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r = json(&out);
        let f = &r["frames"];
        assert_eq!(f["sent"], f["received"], "{shape:?}: {f:#}");
        assert_eq!(f["lost"], 0, "{shape:?}: {f:#}");
        assert!(f.get("injected").is_none(), "{shape:?}: {f:#}");
        if shape[0] == "--message" {
            let m = &f["messages"];
            // 20000 messages a queue, each cut into frames.
            assert_eq!(m["sent"], 40_000, "{m:#}");
            assert_eq!(m["received"], 40_000, "{m:#}");
        } else {
            assert_eq!(f["sent"], 40_000, "{shape:?}: {f:#}");
        }
    }
}

/// A gate that holds exits 0, one that fails exits 4, on the loopback as
/// on any path.
#[test]
fn gates_hold_against_a_loopback_run() {
    let base = [
        "stream",
        "--backend",
        "loopback",
        "--count",
        "10000",
        "--inject-loss",
        "10",
        "-q",
    ];
    let mut met = base.to_vec();
    met.extend(["--expect", "frames.injected == 1000"]);
    let out = run(&met);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut unmet = base.to_vec();
    unmet.extend(["--expect", "frames.loss_pct == 0"]);
    let out = run(&unmet);
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// What the loopback cannot do is refused before anything runs, naming
/// why: kernel busy polling (no NAPI), IPv6, interfaces, XDP options.
#[test]
fn what_the_loopback_cannot_do_is_refused() {
    for (args, says) in [
        (
            &["stream", "--backend", "loopback", "--rx-wait", "busy-poll"][..],
            "no NAPI for the kernel to busy-poll",
        ),
        (
            &["stream", "--backend", "loopback", "--ipv6"][..],
            "IPv4 test traffic only",
        ),
        (
            &["stream", "--backend", "loopback", "--tx-only"][..],
            "--tx-only: the loopback engine runs both ends of the stream in this process's memory",
        ),
        (
            &[
                "stream",
                "--backend",
                "loopback",
                "--tx-iface",
                "a0",
                "--rx-iface",
                "b0",
            ][..],
            "--tx-iface: the loopback engine",
        ),
    ] {
        let out = run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} ran");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// `--json-stream` on the loopback: a start event, interval events whose
/// receivers' frames add up to no more than the window's, and the result
/// last, with every frame accounted.
#[test]
fn json_stream_reports_intervals_then_the_result() {
    let out = run(&[
        "stream",
        "--backend",
        "loopback",
        "--rate",
        "10000",
        "--warmup",
        "0s",
        "--duration",
        "1s",
        "--json-stream",
        "--interval",
        "250ms",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.first().unwrap()["event"], "start");
    let last = events.last().unwrap();
    assert_eq!(last["event"], "end", "{last:#}");
    let intervals: Vec<_> = events.iter().filter(|e| e["event"] == "interval").collect();
    assert!(intervals.len() >= 2, "{} intervals", intervals.len());
    let rx: u64 = intervals
        .iter()
        .map(|e| e["data"]["rx"]["counters"]["frames"].as_u64().unwrap())
        .sum();
    let r = &last["data"];
    assert!(
        rx <= r["receiver"]["frames"].as_u64().unwrap(),
        "{rx} {r:#}"
    );
    assert_eq!(
        r["frames"]["sent"], r["frames"]["received"],
        "{:#}",
        r["frames"]
    );
    assert_eq!(r["frames"]["lost"], 0);
}

/// `--verify` chooses the receivers' loop: the result says which level
/// ran, and `bad_checksum` is a measurement (0) unless nothing was
/// checked (absent); the default is `header` over IPv4.
#[test]
fn the_verify_level_is_chosen_and_said() {
    for (given, level) in [
        (None, "header"),
        (Some("off"), "off"),
        (Some("header"), "header"),
        (Some("full"), "full"),
        (Some("1/16"), "1/16"),
    ] {
        let mut args = vec![
            "stream",
            "--backend",
            "loopback",
            "--count",
            "5000",
            "--json",
        ];
        if let Some(v) = given {
            args.extend(["--verify", v]);
        }
        let out = run(&args);
        assert!(
            out.status.success(),
            "{given:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r = json(&out);
        assert_eq!(r["setup"]["verify"], level, "{given:?}");
        let f = &r["frames"];
        assert_eq!(f["received"], 5000, "{f:#}");
        match level {
            "off" => assert!(f.get("bad_checksum").is_none(), "{f:#}"),
            _ => assert_eq!(f["bad_checksum"], 0, "{f:#}"),
        }
    }
}

/// A counted run that sends its count within the warm-up has the whole
/// run as its window (every frame in it, a rate from it), and says so; a
/// run without a warm-up keeps its window as it was.
#[test]
fn a_count_sent_within_the_warmup_is_measured_over_the_whole_run() {
    // 2,000 frames at 20,000 a second: 0.1 s, inside the 1 s warm-up.
    let counted = |extra: &[&str]| {
        let mut args = vec![
            "stream",
            "--backend",
            "loopback",
            "--count",
            "2000",
            "--rate",
            "20000",
        ];
        args.extend_from_slice(extra);
        run_ok(&args)
    };
    let r = json(&counted(&["--json"]));
    assert_eq!(r["window_whole_run"], true, "{r:#}");
    assert_eq!(r["sender"]["frames"], 2000, "{r:#}");
    assert_eq!(r["receiver"]["frames"], 2000, "{r:#}");
    assert!(
        r["receiver"]["frames_per_s"].as_f64().unwrap() > 0.0,
        "{r:#}"
    );
    let table = String::from_utf8(counted(&[]).stdout).unwrap();
    assert!(
        table.contains(", the whole run (its count went out within the 1.0 s warm-up)"),
        "{table}"
    );
    // Without a warm-up the window opens once every worker runs, as
    // before, unmarked; the whole run's count is whole either way.
    let r = json(&counted(&["--warmup", "0s", "--json"]));
    assert!(r.get("window_whole_run").is_none(), "{r:#}");
    assert!(r["receiver"]["frames"].as_u64().unwrap() <= 2000, "{r:#}");
    assert_eq!(r["frames"]["received"], 2000, "{r:#}");
}

/// The noise floor (issue 34, item 3): a run with latency measures it just
/// before its window between its sender's and receiver's cores, and says
/// so in its table; `--no-floor` leaves the figures out and says why.
#[test]
fn a_run_with_latency_measures_the_noise_floor_unless_told_not_to() {
    let base = [
        "stream",
        "--backend",
        "loopback",
        "--count",
        "2000",
        "--rate",
        "20000",
        "--warmup",
        "0s",
    ];
    let out = run(&[&base[..], &["--json"]].concat());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = json(&out);
    let n = &r["noise"];
    let f = |k: &str| n[k].as_f64().unwrap_or_else(|| panic!("no {k} in {n}"));
    assert_eq!(n["from_core"], r["params"]["tx_cores"][0], "{n}");
    assert_eq!(n["to_core"], r["params"]["rx_cores"][0], "{n}");
    assert_ne!(n["from_core"], n["to_core"], "{n}");
    assert_eq!(n["budget_ms"], 250, "{n}");
    assert!(n["stamps"].as_u64().unwrap() > 0, "{n}");
    for way in ["spin", "wake"] {
        let (p50, p99, p999, max) = (
            f(&format!("{way}_p50_us")),
            f(&format!("{way}_p99_us")),
            f(&format!("{way}_p99_9_us")),
            f(&format!("{way}_max_us")),
        );
        assert!(
            0.0 < p50 && p50 <= p99 && p99 <= p999 && p999 <= max,
            "{way}: {n}"
        );
    }
    assert!((0.0..=100.0).contains(&f("gap_pct")), "{n}");
    assert!(n.get("not_measured").is_none(), "{r}");
    // The table's line.
    let out = run(&base);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("  noise floor (core ") && text.contains("the wake floor"),
        "{text}"
    );
    // --no-floor: no figures, the reason in the result and the table.
    let out = run(&[&base[..], &["--json", "--no-floor"]].concat());
    let r = json(&out);
    assert!(r["noise"].get("spin_p99_us").is_none(), "{r}");
    assert_eq!(r["noise"]["not_measured"], "--no-floor");
    let out = run(&[&base[..], &["--no-floor"]].concat());
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("  noise floor: not measured (--no-floor)"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
