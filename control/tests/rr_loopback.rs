//! rr on the loopback engine, no root: the AF_XDP engine's client and
//! responder loops joined by an in-memory duplex link. Every transaction
//! counted once (sent = answered, a lost request timed out and sent
//! again), flows over queues, messages cut into frames, gates, repeats and
//! the noise floor; what the kernel alone shows stays in tests/rr.rs.

mod common;

use common::{json, run, run_ok};
use serde_json::Value;

/// `rr --backend loopback --warmup 0s --json` plus `extra`, which must
/// succeed.
fn rr(extra: &[&str]) -> Value {
    let mut a = vec!["rr", "--backend", "loopback", "--warmup", "0s", "--json"];
    a.extend_from_slice(extra);
    let out = run(&a);
    assert!(
        out.status.success(),
        "{:?}: {}",
        extra,
        String::from_utf8_lossy(&out.stderr)
    );
    json(&out)
}

/// A sweep file in `dir` of rr points on the loopback: `count`
/// transactions a flow, the `flows` axis given, a table of `metrics`.
fn rr_sweep(
    dir: &std::path::Path,
    name: &str,
    count: u64,
    flows: &str,
    metrics: &str,
) -> std::path::PathBuf {
    let spec = dir.join("rr.toml");
    std::fs::write(
        &spec,
        format!(
            r#"name = "{name}"
title = "rr on the loopback engine"

[[part]]
name = "flows"
kind = "rr"
[part.fixed]
backend = "loopback"
warmup = "0s"
count = {count}
[[part.axis]]
name = "flows"
values = {flows}
[[part.table]]
title = "Transactions"
rows = "flows"
metrics = {metrics}
"#
        ),
    )
    .unwrap();
    spec
}

/// `count` transactions, each answered once; a timed-out request sent
/// again is answered at most once more; response times only of
/// transactions of the run (the window opens as the clients start: its
/// counters and its timing flag are read a moment apart).
fn accounted(r: &Value, count: u64) {
    let t = &r["transactions"];
    let n = |k: &str| t[k].as_u64().unwrap_or_else(|| panic!("no {k} in {t}"));
    assert_eq!(n("total"), count, "{t}");
    assert!(n("completed") <= count && n("completed") > 0, "{t}");
    assert!(n("late") <= n("timeouts"), "{t}");
    assert!(
        n("answered") >= count && n("answered") <= count + n("timeouts"),
        "each request answered once: {t}"
    );
    let timed = r["latency"]["count"].as_u64().unwrap();
    assert!(
        timed > 0 && timed <= count,
        "{timed} response times of {count}"
    );
    for w in r["workers"].as_array().unwrap() {
        assert_eq!(w["total"]["bad"], 0, "{w}");
        assert_eq!(w["total"]["duplicates"], 0, "{w}");
    }
}

#[test]
fn every_transaction_is_counted_once() {
    let r = rr(&["--count", "300"]);
    accounted(&r, 300);
    assert_eq!(r["params"]["backend"], "loopback");
    assert_eq!(r["setup"]["client_bind_mode"], "in-memory loopback");
    assert_eq!(r["setup"]["responder_bind_mode"], "in-memory loopback");
    let l = &r["latency"];
    let f = |k: &str| l[k].as_f64().unwrap();
    assert!(0.0 < f("min_us") && f("min_us") <= f("p50_us"), "{l}");
    assert!(
        f("p50_us") <= f("p99_us") && f("p99_us") <= f("max_us"),
        "{l}"
    );
}

/// `--inject-loss 10` drops every 10th request as it reaches the
/// responder: at least 30 of 300 time out and are sent again, and the
/// run still completes every transaction once.
#[test]
fn lost_requests_time_out_and_are_sent_again() {
    let r = rr(&["--count", "300", "--inject-loss", "10", "--timeout", "5ms"]);
    accounted(&r, 300);
    let timeouts = r["transactions"]["timeouts"].as_u64().unwrap();
    assert!(timeouts >= 30, "{}", r["transactions"]);
}

/// 4 flows with 2 in flight each over 2 queues: a client and a
/// responder per queue, 200 transactions per flow.
#[test]
fn flows_in_flight_over_two_queues() {
    let r = rr(&[
        "--count",
        "200",
        "--flows",
        "4",
        "--concurrency",
        "2",
        "--queues",
        "2",
    ]);
    accounted(&r, 800);
    let roles: Vec<&str> = r["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles.iter().filter(|x| **x == "client").count(),
        2,
        "{roles:?}"
    );
    assert_eq!(
        roles.iter().filter(|x| **x == "responder").count(),
        2,
        "{roles:?}"
    );
}

/// A 4,000-byte request and a 9,000-byte response at MTU 1500 are cut
/// into 3 and 7 frames and counted whole.
#[test]
fn messages_cut_into_frames_are_counted_whole() {
    let r = rr(&["--count", "100", "--request", "4000", "--response", "9000"]);
    accounted(&r, 100);
    assert_eq!(r["setup"]["request_frames"], 3);
    assert_eq!(r["setup"]["response_frames"], 7);
}

#[test]
fn an_unmet_gate_exits_4_and_a_met_one_0() {
    let base = [
        "rr",
        "--backend",
        "loopback",
        "--warmup",
        "0s",
        "--count",
        "100",
    ];
    let out = run(&[&base[..], &["--expect", "transactions.per_s >= 1G"]].concat());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(
        err.contains("expect transactions.per_s >= 1000000000: UNMET (measured "),
        "{err}"
    );
    let out = run(&[&base[..], &["--expect", "transactions.total == 100"]].concat());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("expect transactions.total == 100: met (measured 100)"),
        "{err}"
    );
}

/// What an in-memory path has not: interfaces, other hosts, an XDP
/// program to answer in.
#[test]
fn options_the_loopback_cannot_honour_are_refused() {
    for (args, says) in [
        (
            &["--tx-agent", "127.0.0.1:1", "--rx-agent", "127.0.0.1:2"][..],
            "--tx-agent: the loopback engine runs both ends of the transactions in this process's memory",
        ),
        (
            &["--responder", "xdp"],
            "--responder xdp answers in the XDP program: use it with --backend xdp",
        ),
    ] {
        let out = run(&[&["rr", "--backend", "loopback"][..], args].concat());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// `--confidence`/`--iterations` on rr: three counted runs (`3,3`), each
/// of 200 transactions counted exactly, the median one reported.
#[test]
fn a_repeated_rr_reports_its_median_run() {
    let r = rr(&[
        "--count",
        "200",
        "--confidence",
        "99,50",
        "--iterations",
        "3,3",
        "--disturbed-above",
        "100",
    ]);
    accounted(&r, 200);
    let c = &r["confidence"];
    assert_eq!(c["iterations"], 3, "{c}");
    let values: Vec<f64> = c["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    let rate = r["transactions"]["per_s"].as_f64().unwrap();
    assert!(values.contains(&rate), "{rate} {c}");
    let below = values.iter().filter(|&&v| v < rate).count();
    let above = values.iter().filter(|&&v| v > rate).count();
    assert_eq!(below, above, "the median: {rate} {c}");
}

/// The noise floor before the window, client core to responder core;
/// the table holds the response time against it (twice: it crosses
/// twice).
#[test]
fn an_rr_run_measures_the_noise_floor() {
    let r = rr(&["--count", "100"]);
    let n = &r["noise"];
    assert_eq!(n["from_core"], r["params"]["client_cores"][0], "{n}");
    assert_eq!(n["to_core"], r["params"]["responder_cores"][0], "{n}");
    assert!(n["spin_p99_us"].as_f64().unwrap() > 0.0, "{n}");
    let out = run(&[
        "rr",
        "--backend",
        "loopback",
        "--warmup",
        "0s",
        "--count",
        "100",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("2 hand-offs at the spin floor"),
        "both ends spin by default: {text}"
    );
}

/// `--json-stream`: a start line, intervals of the window, then the
/// result as the end event, each line whole JSON.
#[test]
fn json_stream_gives_intervals_then_the_result() {
    let out = run(&[
        "rr",
        "--backend",
        "loopback",
        "--warmup",
        "0s",
        "--duration",
        "600ms",
        "--json-stream",
        "--interval",
        "200ms",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.first().unwrap()["event"], "start");
    let end = lines.last().unwrap();
    assert_eq!(end["event"], "end");
    let intervals: Vec<&Value> = lines[1..lines.len() - 1].iter().collect();
    assert!(!intervals.is_empty(), "{lines:?}");
    for i in &intervals {
        assert_eq!(i["event"], "interval", "{i}");
        assert!(i["data"]["seconds"].as_f64().unwrap() > 0.0, "{i}");
    }
    let t = &end["data"]["transactions"];
    assert!(t["total"].as_u64().unwrap() > 0, "{t}");
}

/// SIGINT during a minute-long run: exit 130, the figures so far printed
/// and marked interrupted.
#[test]
fn sigint_ends_an_rr_run_with_its_figures() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let mut child = Command::new(common::linerate())
        .args([
            "rr",
            "--backend",
            "loopback",
            "--warmup",
            "0s",
            "--duration",
            "60s",
            "--json-stream",
            "--interval",
            "100ms",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    // The first interval of the window: the run is under way.
    let mut line = String::new();
    loop {
        line.clear();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "ended early");
        if line.contains(r#""phase":"window""#) {
            break;
        }
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let end: Value = serde_json::from_str(rest.lines().last().unwrap()).unwrap();
    assert_eq!(end["event"], "end", "{end}");
    assert_eq!(end["data"]["interrupted"], true, "{end}");
    assert!(end["data"]["transactions"]["total"].as_u64().unwrap() > 0);
}

/// A sweep of rr on the loopback: a record per point, each counted
/// exactly, and a report with the table.
#[test]
fn a_sweep_of_rr_points_records_each_counted() {
    let dir = common::tmp("rr-sweep");
    std::fs::create_dir_all(&dir).unwrap();
    let spec = rr_sweep(
        &dir,
        "rr-loopback",
        150,
        "[1, 3]",
        r#"["transactions.total", "transactions.per_s"]"#,
    );
    let out_dir = dir.join("out");
    run_ok(&[
        "sweep",
        spec.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(out_dir.join("results.jsonl")).unwrap();
    let mut totals: Vec<(u64, u64)> = text
        .lines()
        .map(|l| {
            let r: Value = serde_json::from_str(l).unwrap();
            let res = &r["result"];
            (
                res["params"]["flows"].as_u64().unwrap(),
                res["transactions"]["total"].as_u64().unwrap(),
            )
        })
        .collect();
    totals.sort();
    assert_eq!(totals, [(1, 150), (3, 450)], "{text}");
    let report = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(
        report.contains("Transactions") && report.contains(" 0 failed"),
        "{report}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// `overhead` fits time per message to rr results saved at three sizes.
#[test]
fn overhead_fits_rr_results_at_three_sizes() {
    let dir = common::tmp("rr-overhead");
    std::fs::create_dir_all(&dir).unwrap();
    let mut files = Vec::new();
    for size in ["100", "4000", "16000"] {
        let r = rr(&["--count", "200", "--request", size, "--response", size]);
        let f = dir.join(format!("rr-{size}.json"));
        std::fs::write(&f, r.to_string()).unwrap();
        files.push(f.to_str().unwrap().to_string());
    }
    let mut args = vec!["overhead", "--json"];
    args.extend(files.iter().map(String::as_str));
    let out = run(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fit = json(&out);
    assert_eq!(fit["points"], 3, "{fit}");
    let r2 = fit["r_squared"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&r2), "{fit}");
    let _ = std::fs::remove_dir_all(dir);
}

/// IPv6 is refused on the loopback (its frames are IPv4 only), and a
/// stream whose two ends share a core says why it has no noise floor.
#[test]
fn ipv6_is_refused_and_a_shared_core_has_no_floor() {
    let out = run(&["rr", "--backend", "loopback", "--ipv6", "--count", "10"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("--ipv6: the loopback engine carries IPv4 test traffic only"),
        "{err}"
    );
    let out = run(&[
        "stream",
        "--backend",
        "loopback",
        "--tx-cores",
        "0",
        "--rx-cores",
        "0",
        "--count",
        "1000",
        "--warmup",
        "0s",
        "--json",
    ]);
    let r = json(&out);
    assert!(r["noise"].get("spin_p99_us").is_none(), "{r}");
    assert_eq!(
        r["noise"]["not_measured"],
        "the sender and the receiver share core 0: the floor is a hand-off between two cores"
    );
}

/// The response times' whole histogram (HdrHistogram's V2 form, base64)
/// decodes to as many samples as the figures count, with the same p99.
#[test]
fn the_histogram_in_the_result_holds_every_response_time() {
    let r = rr(&["--count", "300"]);
    let l: linerate_results::latency::Latency =
        serde_json::from_value(r["latency"].clone()).unwrap();
    let h = l.histogram().expect("the histogram decodes");
    assert_eq!(h.len(), l.count, "{}", r["latency"]);
    let p99 = h.value_at_quantile(0.99) as f64 / 1000.0;
    assert!((p99 - l.p99_us).abs() < 1e-6, "{p99} {}", l.p99_us);
}

/// Not reached within MAX runs: exit 0 all the same, the record says so
/// and names the (at most three) figures that varied most, widest first.
#[test]
fn a_confidence_not_reached_is_said_with_what_varied() {
    let out = run(&[
        "rr",
        "--backend",
        "loopback",
        "--warmup",
        "0s",
        "--count",
        "50",
        "--confidence",
        "99,0.001",
        "--iterations",
        "2,2",
        "--disturbed-above",
        "100",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let c = json(&out)["confidence"].clone();
    assert_eq!(c["iterations"], 2, "{c}");
    let values = c["values"].as_array().unwrap();
    if values[0] != values[1] {
        assert_eq!(c["reached"], false, "{c}");
        let varied = c["varied"].as_array().unwrap();
        assert!(!varied.is_empty() && varied.len() <= 3, "{c}");
        let spreads: Vec<f64> = varied.iter().map(|v| v[1].as_f64().unwrap()).collect();
        assert!(varied.iter().all(|v| v[0].is_string()), "{c}");
        assert!(
            spreads.windows(2).all(|w| w[0] >= w[1]) && spreads[0] > 0.0,
            "widest first: {c}"
        );
    }
}

/// A gate on a name linerate does not know is refused before anything
/// runs (exit 2), naming it.
#[test]
fn a_gate_on_an_unknown_metric_is_refused_before_the_run() {
    let out = run(&[
        "rr",
        "--backend",
        "loopback",
        "--count",
        "10",
        "--expect",
        "nope >= 1",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(r#"--expect 'nope >= 1': "nope" is not a metric linerate knows"#),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "nothing ran");
}

/// `report --compare` of two rr sweeps on the loopback: every point
/// compared, each side's figures from its own records.
#[test]
fn two_rr_sweeps_compare_point_by_point() {
    let dir = common::tmp("rr-compare");
    std::fs::create_dir_all(&dir).unwrap();
    let spec = rr_sweep(
        &dir,
        "rr-compare",
        100,
        "[1, 2]",
        r#"["transactions.per_s"]"#,
    );
    let (a, b) = (dir.join("a"), dir.join("b"));
    for d in [&a, &b] {
        run_ok(&[
            "sweep",
            spec.to_str().unwrap(),
            "--out",
            d.to_str().unwrap(),
        ]);
    }
    let out = run(&[
        "report",
        a.to_str().unwrap(),
        "--compare",
        b.to_str().unwrap(),
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cmp = json(&out);
    let text = cmp.to_string();
    for p in ["flows=1", "flows=2"] {
        assert!(text.contains(p), "{p}: {text}");
    }
    assert!(a.join("compare.md").exists() && a.join("compare.json").exists());
    let _ = std::fs::remove_dir_all(dir);
}
