//! Sweeps where the kernel matters, as root: the presets' quick runs
//! producing complete reports on real frames, and a real full disk (a
//! tmpfs) losing no result. What is control's own (bad files and records,
//! resume after a crash, a torn line, failed points, signals, a full
//! file) runs without root in control/tests/sweep*.rs on the loopback
//! engine.

mod common;
#[path = "support/tmpfs.rs"]
mod tmpfs;

use std::{
    fs,
    path::{Path, PathBuf},
};

use common::*;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("linerate-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    d
}

#[test]
#[ignore = "needs root: sweeps run streams on the veth lab (namespaces, XDP, AF_XDP)"]
fn quick_presets_produce_complete_reports() {
    require_root("sweep presets");
    let _turn = serial();
    let _lab = Lab::up("tswp", 1500);
    // wait-modes (57 points; its real run is docs/wait-modes.md) with two
    // of its four offered loads (10 k/s, which the document's figure is
    // read at, and unpaced): 37 points, every part, table, figure, winner
    // and reference of the preset all the same.
    let cut = tmp("wait-modes-cut.toml");
    let text = fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/report/presets/wait-modes.toml"
    ))
    .unwrap();
    let loads = "values = [10000, 100000, 500000, false]";
    assert_eq!(text.matches(loads).count(), 2, "the preset's load axes");
    let labels = r#"labels = ["10 k/s", "100 k/s", "500 k/s", "unpaced"]"#;
    assert_eq!(text.matches(labels).count(), 2, "the preset's load labels");
    let text = text
        .replace(loads, "values = [10000, false]")
        .replace(labels, r#"labels = ["10 k/s", "unpaced"]"#);
    fs::write(&cut, text).unwrap();
    // fc-modes, rpc and bs2000 run on the loopback engine instead, without
    // root (control/tests/presets_loopback.rs); these the loopback cannot
    // run (the udp and tcp backends as an axis, NAPI placement and
    // busy-polling).
    for preset in ["service-demand", "wait-modes"] {
        let dir = tmp(preset);
        let what = if preset == "wait-modes" {
            cut.to_str().unwrap()
        } else {
            preset
        };
        let out = run(&[
            "sweep",
            what,
            "--quick",
            // One run a point: the shortest run of every preset (it is the
            // suite's longest test); the report is complete all the same.
            "--repeats",
            "1",
            "--lab",
            "tswp",
            "--out",
            dir.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "{preset}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report = fs::read_to_string(dir.join("report.md")).unwrap();
        assert!(report.contains(" 0 failed"), "{preset}: {report}");
        assert!(
            report.contains("Repeats per point: 1 (--quick"),
            "{preset}: --repeats 1 in place of --quick's 3: {report}"
        );
        assert!(
            !report.contains("n/a"),
            "{preset} has empty cells:\n{report}"
        );
        assert!(
            !report.contains("no point has finished"),
            "{preset}: {report}"
        );
        let spec = fs::read_to_string(dir.join("spec.toml")).unwrap();
        let figures = spec.matches("figure]]").count();
        for i in 1..=figures {
            let svg = dir.join(format!("figure-{i}.svg"));
            assert!(svg.exists(), "{preset}: {} missing", svg.display());
            assert!(report.contains(&format!("(figure-{i}.svg)")));
        }
        let tables = spec.matches("table]]").count();
        assert_eq!(
            report.matches("\n**").count() - spec.matches("fit]]").count(),
            tables,
            "{preset}: every table"
        );
        let _ = fs::remove_dir_all(dir);
    }
    let _ = fs::remove_file(cut);
}

/// (point, repeat) of every finished run, sorted; every line must parse.
fn finished(results: &Path) -> Vec<(u64, u64)> {
    let text = fs::read_to_string(results).unwrap();
    assert!(text.is_empty() || text.ends_with('\n'), "a torn last line");
    let mut done: Vec<(u64, u64)> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l)
                .unwrap_or_else(|e| panic!("a line that is not JSON ({e}): {l}"))
        })
        .filter(|r| r.get("result").is_some())
        .map(|r| (r["point"].as_u64().unwrap(), r["repeat"].as_u64().unwrap()))
        .collect();
    done.sort();
    done
}

fn all_twelve() -> Vec<(u64, u64)> {
    (0..6).flat_map(|p| (0..2).map(move |r| (p, r))).collect()
}

#[test]
#[ignore = "needs root: mounts a tmpfs to fill (the sweep runs on the loopback engine)"]
fn a_full_disk_loses_no_result_and_resume_completes() {
    require_root("sweep on a full disk");
    // The kernel's ENOSPC from a real full file system; the sweep's points
    // run in memory (control/tests/sweep_full_disk.rs does the same
    // without root, with a file-size limit).
    let spec = fs::read_to_string(fixture("small-sweep.toml")).unwrap();
    assert_eq!(spec.matches("\nmtu = 1500\n").count(), 1, "{spec}");
    let file = tmp("hr4-spec.toml");
    fs::write(
        &file,
        spec.replace(
            "\nmtu = 1500\n",
            "\nmtu = 1500\nbackend = \"loopback\"\nrate = 20000\n",
        ),
    )
    .unwrap();
    // 12 records of 6.7-17 KB each (their latency histograms differ in
    // size; seen 117 KB in all) do not fit in the 64 KB left beside the
    // report's files, and the first two, whichever the shuffled order puts
    // first, do.
    let disk = tmpfs::Tmpfs::mount("hrdisk", 512 * 1024);
    let filler = disk.fill(64 * 1024);
    let dir = disk.path("sweep");
    let results = dir.join("results.jsonl");
    let out = run(&[
        "sweep",
        file.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("6 point(s) x 2 repeat(s) = 12 run(s), about"),
        "the size and time are said first: {err}"
    );
    assert!(
        err.contains(&format!(
            "writing {} failed: No space left on device",
            results.display()
        )),
        "{err}"
    );
    assert!(err.contains("--resume"), "{err}");
    // Whole records only: the file ends with '\n' and every line parses.
    let kept = finished(&results);
    assert!(!kept.is_empty() && kept.len() < 12, "{kept:?}");
    let before = fs::read_to_string(&results).unwrap();
    // Space again: the sweep finishes, every run exactly once.
    fs::remove_file(filler).unwrap();
    let out = run(&["sweep", "--resume", dir.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = fs::read_to_string(&results).unwrap();
    assert!(
        after.starts_with(&before),
        "finished records kept as they were"
    );
    assert_eq!(finished(&results), all_twelve());
    let report = fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("12 run(s) finished"), "{report}");
    let _ = fs::remove_file(file);
}
