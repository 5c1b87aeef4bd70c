//! The presets' reports complete on the loopback engine, with no root:
//! every part, table, figure, fit, winner, reference and goal of a preset
//! filled from runs in memory (one run a point, short, paced). The
//! root package's tests/sweep.rs runs on real frames the presets the
//! loopback cannot run: the udp and tcp backends as an axis
//! (service-demand, wait-modes) and NAPI placement and busy-polling
//! (wait-modes).

mod common;

use std::{fs, path::Path};

use serde_json::Value;

use common::*;

/// A preset's text on the loopback engine: its `[fixed]` settings (each
/// part's `[part.fixed]`) with short runs, `backend = "loopback"` and,
/// for streams, a paced rate (an unpaced busy sender on a loaded machine
/// can leave a short window empty).
fn on_loopback(preset: &str) -> String {
    let text = fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../report/presets/{preset}.toml")),
    )
    .unwrap();
    assert!(!text.contains("backend = "), "{preset} names a backend");
    assert!(!text.contains("\nrate = "), "{preset} sets a rate");
    let mut chunks = text.split("\n[[part]]\n");
    let head = chunks.next().unwrap();
    let parts: Vec<&str> = chunks.collect();
    if parts.is_empty() {
        return settings_on_loopback(preset, head, "\n[fixed]\n");
    }
    let mut out = head.to_string();
    for part in parts {
        out.push_str("\n[[part]]\n");
        out.push_str(&settings_on_loopback(preset, part, "\n[part.fixed]\n"));
    }
    out
}

/// One preset's (or part's) settings under `fixed` rewritten for the
/// loopback: each names its kind and its 1 s warm-up and 3 s window.
fn settings_on_loopback(preset: &str, text: &str, fixed: &str) -> String {
    for (from, n) in [
        (fixed, 1),
        ("\nwarmup = \"1s\"\n", 1),
        ("\nduration = \"3s\"\n", 1),
    ] {
        assert_eq!(text.matches(from).count(), n, "{preset}: {from:?}");
    }
    let text = text.replace("\nwarmup = \"1s\"\n", "\nwarmup = \"50ms\"\n");
    if text.contains("\nkind = \"rr\"\n") {
        // Transactions pace themselves; a 1 MB request (700 frames) gets
        // time to be answered on a loaded machine.
        return text
            .replace(
                "\nduration = \"3s\"\n",
                "\nduration = \"300ms\"\nbackend = \"loopback\"\n",
            )
            .replace("\ntimeout = \"100ms\"\n", "\ntimeout = \"1s\"\n");
    }
    assert!(text.contains("\nkind = \"stream\"\n"), "{preset}: a kind");
    text.replace(
        "\nduration = \"3s\"\n",
        "\nduration = \"150ms\"\nbackend = \"loopback\"\nrate = 20000\n",
    )
}

/// Runs `preset` (rewritten by [`on_loopback`]) one run a point and
/// checks that its report is complete; returns the number of points.
fn complete_report(preset: &str) -> usize {
    let dir = tmp(&format!("preset-{preset}"));
    fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{preset}.toml"));
    fs::write(&file, on_loopback(preset)).unwrap();
    let out_dir = dir.join("out");
    let out = run(&[
        "sweep",
        file.to_str().unwrap(),
        "--repeats",
        "1",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{preset}: {err}");
    let records: Vec<Value> = fs::read_to_string(out_dir.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for r in &records {
        assert_eq!(r["result"]["params"]["backend"], "loopback", "{r:#}");
        if r["result"]["test"] == "rr" {
            // Every request answered once (a timed-out one at most twice);
            // a timed run ends with those in flight answered, not counted.
            let t = &r["result"]["transactions"];
            let p = &r["result"]["params"];
            let n = |k: &str| t[k].as_u64().unwrap();
            let in_flight = p["flows"].as_u64().unwrap() * p["concurrency"].as_u64().unwrap();
            assert!(n("completed") > 0, "{preset}: {t:#}");
            assert!(n("answered") >= n("total"), "{preset}: {t:#}");
            assert!(
                n("answered") <= n("total") + n("timeouts") + in_flight,
                "{preset}: {t:#}"
            );
            continue;
        }
        let f = &r["result"]["frames"];
        assert!(f["sent"].as_u64().unwrap() > 0, "{preset}: {f:#}");
        assert_eq!(f["sent"], f["received"], "{preset}: {f:#}");
    }
    if records.iter().all(|r| r["result"]["test"] != "rr") {
        check_points_csv(&out_dir.join("points.csv"), &records);
    }
    let report = fs::read_to_string(out_dir.join("report.md")).unwrap();
    let n = records.len();
    assert!(
        report.contains(&format!(
            "Sweep `{preset}`: {n} point(s); {n} run(s) finished, 0 failed."
        )),
        "{preset}: {report}"
    );
    assert!(
        !report.contains("n/a"),
        "{preset} has empty cells:\n{report}"
    );
    assert!(
        !report.contains("no point has finished"),
        "{preset}: {report}"
    );
    let spec = fs::read_to_string(out_dir.join("spec.toml")).unwrap();
    let figures = spec.matches("figure]]").count();
    assert!(figures > 0, "{preset}");
    for i in 1..=figures {
        let svg = out_dir.join(format!("figure-{i}.svg"));
        assert!(svg.exists(), "{preset}: {} missing", svg.display());
        assert!(report.contains(&format!("(figure-{i}.svg)")), "{preset}");
    }
    assert!(!out_dir.join(format!("figure-{}.svg", figures + 1)).exists());
    let tables = spec.matches("table]]").count();
    assert_eq!(
        report.matches("\n**").count() - spec.matches("fit]]").count(),
        tables,
        "{preset}: every table"
    );
    // Every reference has its row, with our figure beside it.
    let sources: Vec<&str> = spec
        .lines()
        .filter(|l| l.starts_with("source = "))
        .collect();
    assert_eq!(
        sources.len(),
        spec.matches("reference]]").count(),
        "{preset}"
    );
    for line in sources {
        let source = line["source = ".len()..].trim_matches('"');
        assert!(
            report.contains(&format!("\n| {source} |")),
            "{preset}: reference {source:?} has no row:\n{report}"
        );
    }
    let _ = fs::remove_dir_all(dir);
    n
}

#[test]
fn rpc_reports_complete_on_the_loopback_engine() {
    // reverse x request: 2 x 6, each point an rr run in memory.
    assert_eq!(complete_report("rpc"), 12);
}

#[test]
fn bs2000_reports_complete_on_the_loopback_engine() {
    // rr by flows (3), 16 x 64 KB by MTU x reverse (4), one flow by MTU
    // x message (6): 9000-byte frames in one buffer of the loopback's link.
    assert_eq!(complete_report("bs2000"), 13);
}

#[test]
fn fc_modes_reports_complete_on_the_loopback_engine() {
    // reverse x mode x message: 2 x 4 x 5.
    assert_eq!(complete_report("fc-modes"), 40);
}

/// points.csv: a row per point, in order, each with the figures of its
/// one run (the median of one): frames/s received and loss, to the
/// digit.
fn check_points_csv(path: &Path, records: &[Value]) {
    let text = fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(head[..4], ["part", "point", "values", "repeats"], "{text}");
    let col = |name: &str| head.iter().position(|h| *h == name).unwrap();
    let rows: Vec<(String, Vec<&str>)> = lines
        .map(|l| {
            // part,point,"values (commas inside)",figures...
            let (start, rest) = l.split_once(",\"").unwrap();
            let (_, figures) = rest.split_once("\",").unwrap();
            let mut cells: Vec<&str> = start.split(',').collect();
            cells.push("values");
            cells.extend(figures.split(','));
            assert_eq!(cells.len(), head.len(), "{l}");
            (start.to_string(), cells)
        })
        .collect();
    assert_eq!(rows.len(), records.len(), "{text}");
    for (i, (start, _)) in rows.iter().enumerate() {
        assert_eq!(*start, format!("0,{i}"), "points in order: {text}");
    }
    for r in records {
        let point = r["point"].as_u64().unwrap() as usize;
        let cells = &rows[point].1;
        assert_eq!(cells[col("repeats")], "1");
        let fps = r["result"]["receiver"]["frames_per_s"].as_f64().unwrap();
        assert_eq!(
            cells[col("receiver.frames_per_s")],
            format!("{fps:.6}"),
            "point {point}"
        );
        assert_eq!(cells[col("frames.loss_pct")], "0.000000", "point {point}");
    }
}

/// `--quick` with `--repeats 1` (how the lab's preset test runs them):
/// each run 0.5 s of warm-up and 1 s measured, one a point, as the report
/// and options.json say.
#[test]
fn quick_with_one_repeat_is_what_runs_and_what_the_report_says() {
    let dir = tmp("preset-quick");
    fs::create_dir_all(&dir).unwrap();
    let file = dir.join("q.toml");
    fs::write(
        &file,
        "name = \"q\"\nkind = \"stream\"\n[fixed]\nbackend = \"loopback\"\nrate = 20000\n[[axis]]\nname = \"size\"\nvalues = [64, 128]\n",
    )
    .unwrap();
    let out_dir = dir.join("out");
    let out = run(&[
        "sweep",
        file.to_str().unwrap(),
        "--quick",
        "--repeats",
        "1",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let records: Vec<Value> = fs::read_to_string(out_dir.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 2);
    for r in &records {
        let p = &r["result"]["params"];
        assert_eq!(
            (p["warmup_s"].as_f64(), p["duration_s"].as_f64()),
            (Some(0.5), Some(1.0)),
            "{p:#}"
        );
    }
    let report = fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(
        report.contains("Repeats per point: 1 (--quick: 0.5 s warm-up, 1 s per run)."),
        "{report}"
    );
    let opts: Value =
        serde_json::from_str(&fs::read_to_string(out_dir.join("options.json")).unwrap()).unwrap();
    assert_eq!(
        (&opts["quick"], &opts["repeats"]),
        (&true.into(), &1.into()),
        "{opts:#}"
    );
    let _ = fs::remove_dir_all(dir);
}
