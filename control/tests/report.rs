//! Reports of sweep directories (no lab, no root: rendering only reads
//! files): figures as SVG and PNG with axes, legends and the documents'
//! points; `report --compare` of two sweeps; the one-page HTML report,
//! rendered in a real headless Chromium, with every figure loaded.

mod common;

use std::{
    fs,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use common::*;
use serde_json::Value;

/// The fixture sweep: 6 points x 2 repeats of a small stream sweep.
fn sweep() -> PathBuf {
    fixture("sweep-small")
}

/// A copy of the fixture sweep (6 points x 2 repeats), its sweep file
/// with `extra` added.
fn sweep_copy(name: &str, extra: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("linerate-rp-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    for f in ["results.jsonl", "options.json"] {
        fs::copy(sweep().join(f), dir.join(f)).unwrap();
    }
    let spec = fs::read_to_string(sweep().join("spec.toml")).unwrap();
    fs::write(dir.join("spec.toml"), spec + extra).unwrap();
    dir
}

fn report(dir: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["report", dir.to_str().unwrap()];
    args.extend(extra);
    run(&args)
}

fn ok(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A second figure and the document's own points for the fixture.
const MORE: &str = r#"
[[figure]]
title = "CPU vs size"
x = "message"
y = "cpu.total.cpu_pct"
y_label = "total CPU"
series = "mode"

[[reference]]
source = "doc 9"
case = "one flow"
value = "250 / 925 MB/s"
ours = "receiver.message_mb_s"
at = { mode = { tx_wait = "busy", rx_wait = "wait" } }
[[reference.point]]
at = { message = 8192 }
value = "250 MB/s"
number = 250
[[reference.point]]
at = { message = 65536 }
value = "925 MB/s"
number = 925
"#;

/// The texts of an SVG figure.
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let body = &t[t.find('>')? + 1..];
            Some(body[..body.find("</text>")?].trim().to_string())
        })
        .collect()
}

/// (width, height) of a PNG file, from its header.
fn png_size(p: &Path) -> (u32, u32) {
    let b = fs::read(p).unwrap();
    assert_eq!(
        &b[..8],
        b"\x89PNG\r\n\x1a\n",
        "{} is not a PNG",
        p.display()
    );
    assert_eq!(&b[12..16], b"IHDR");
    let n = |i: usize| u32::from_be_bytes(b[i..i + 4].try_into().unwrap());
    (n(16), n(20))
}

#[test]
fn figures_show_the_documents_points_readable_axes_and_a_png() {
    let dir = sweep_copy("fig", MORE);
    ok(&report(&dir, &[]));
    let svg = fs::read_to_string(dir.join("figure-1.svg")).unwrap();
    let text = texts(&svg);
    // Ticks at the sizes, as sizes; no decimals on counts.
    for t in ["1 KB", "8 KB", "64 KB", "1,000", "0"] {
        assert!(text.iter().any(|x| x == t), "{t} missing from {text:?}");
    }
    assert!(
        !text.iter().any(|t| t.contains(".0") || t.contains("8192")),
        "{text:?}"
    );
    // The y axis names its unit; the legend the lines and the document.
    for t in [
        "receiver.message_mb_s (MB/s)",
        "message length",
        "busy sender",
        "blocking sender",
        "doc 9 (document)",
    ] {
        assert!(text.iter().any(|x| x == t), "{t} missing from {text:?}");
    }
    // Its marks are drawn: a filled triangle per point (and the legend's).
    assert_eq!(svg.matches("<polygon").count(), 3, "{svg}");
    let text2 = texts(&fs::read_to_string(dir.join("figure-2.svg")).unwrap());
    assert!(text2.iter().any(|x| x == "total CPU (%)"), "{text2:?}");
    assert!(
        !text2.iter().any(|x| x.contains("(document)")),
        "no reference of CPU"
    );
    // The same figures as PNG, of the same size.
    for i in [1, 2] {
        assert_eq!(png_size(&dir.join(format!("figure-{i}.png"))), (960, 560));
    }
    let md = fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("[figure-2.png](figure-2.png)"), "{md}");
    // The reference at two points shows ours at each of them.
    assert!(
        md.contains("| doc 9 | one flow: 8 KB | 250 MB/s | 1057 (965.8–1147) MB/s — "),
        "{md}"
    );
    assert!(
        md.contains("| doc 9 | one flow: 64 KB | 925 MB/s | 999.5 (877.2–1122) MB/s — "),
        "{md}"
    );
    let _ = fs::remove_dir_all(dir);
}

/// The fixture with receiver.message_mb_s doubled in the runs of point 0.
fn doubled(name: &str) -> PathBuf {
    let dir = sweep_copy(name, "");
    let path = dir.join("results.jsonl");
    let text: Vec<String> = fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| {
            let mut r: Value = serde_json::from_str(l).unwrap();
            if r["point"] == 0 {
                let v = &mut r["result"]["receiver"]["message_mb_s"];
                *v = (v.as_f64().unwrap() * 2.0).into();
            }
            r.to_string()
        })
        .collect();
    fs::write(&path, text.join("\n") + "\n").unwrap();
    dir
}

#[test]
fn compare_sets_two_sweeps_side_by_side() {
    let base = sweep_copy("base", "");
    let new = doubled("new");
    let text = ok(&report(&new, &["--compare", base.to_str().unwrap()]));
    // Point 0 (busy sender, 1 KB): 988.0 (987.1–988.9) before, twice that
    // now: beyond the spread. Point 1 unchanged: within it.
    let head = format!(
        "| point | {} | {} | ratio | beyond the spread |",
        base.file_name().unwrap().to_str().unwrap(),
        new.file_name().unwrap().to_str().unwrap()
    );
    assert!(text.contains(&head), "{text}");
    assert!(
        text.contains("| 988.0 (987.1–988.9) | 1976 (1974–1978) | 2.000 | +100.0 % |"),
        "{text}"
    );
    assert!(
        text.contains("| 1057 (965.8–1147) | 1057 (965.8–1147) | 1.000 | ~ |"),
        "{text}"
    );
    assert!(text.contains("1 of "), "{text}");
    assert_eq!(
        fs::read_to_string(new.join("compare.md")).unwrap(),
        text[..text.find("\n1 of ").unwrap()]
    );
    // JSON: every figure of every point, one of them beyond the spread.
    let j = json(&report(
        &new,
        &["--compare", base.to_str().unwrap(), "--json"],
    ));
    let rows = j["rows"].as_array().unwrap();
    let differ: Vec<&Value> = rows.iter().filter(|r| r["verdict"] == "differs").collect();
    assert_eq!(differ.len(), 1, "{j}");
    assert_eq!(differ[0]["metric"], "receiver.message_mb_s");
    assert_eq!(differ[0]["ratio"], 2.0);
    assert_eq!(differ[0]["other"]["n"], 2);
    assert!(rows.len() >= 6 * 3, "{} rows", rows.len());
    assert!(rows
        .iter()
        .all(|r| r["verdict"] == "differs" || r["verdict"] == "same"));
    assert_eq!(
        j,
        serde_json::from_str::<Value>(&fs::read_to_string(new.join("compare.json")).unwrap())
            .unwrap()
    );
    // Two sweeps with no point in common: said, not an empty table.
    let other = sweep_copy("other", "");
    let spec = fs::read_to_string(other.join("spec.toml")).unwrap();
    fs::write(
        other.join("spec.toml"),
        spec.replace("values = [1024, 8192, 65536]", "values = [100, 200, 300]"),
    )
    .unwrap();
    let out = report(&new, &["--compare", other.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("have no point measured in both"), "{err}");
    // --json needs --compare.
    let out = report(&new, &["--json"]);
    assert_eq!(out.status.code(), Some(2));
    for d in [base, new, other] {
        let _ = fs::remove_dir_all(d);
    }
}

/// The browser: `chromium` (Debian's package). None outside CI when it is
/// not installed; under CI its absence is a failure.
fn chromium() -> Option<PathBuf> {
    let found = ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|b| {
            std::env::var_os("PATH")?
                .to_str()?
                .split(':')
                .map(|d| Path::new(d).join(b))
                .find(|p| p.is_file())
        });
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but chromium is not installed: scripts/install-deps installs it"
        );
        eprintln!("skipped: no chromium (install it with scripts/install-deps)");
    }
    found
}

/// The page's DOM after its scripts ran, as headless Chromium sees it.
fn dom(browser: &Path, page: &Path) -> String {
    let profile = page.with_extension("profile");
    let _ = fs::remove_dir_all(&profile);
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--virtual-time-budget=10000",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(180);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not render {} in 180 s", page.display());
        }
        thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().unwrap();
    let _ = fs::remove_dir_all(&profile);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_html_report_loads_every_figure_in_a_headless_browser() {
    let dir = sweep_copy("html", MORE);
    ok(&report(&dir, &[]));
    let page = dir.join("report.html");
    let html = fs::read_to_string(&page).unwrap();
    // One file: tables, the machine, the figures inside it.
    assert!(
        html.contains("<td>lr-a0 (lr-a) -&gt; lr-b0 (lr-b)</td>"),
        "{html}"
    );
    assert!(html.contains("<th>busy sender</th>"), "{html}");
    assert_eq!(html.matches("src=\"data:image/svg+xml;base64,").count(), 2);
    let Some(browser) = chromium() else {
        return;
    };
    let d = dom(&browser, &page);
    assert!(d.contains("data-figures=\"2 of 2 loaded\""), "{d}");
    assert_eq!(d.matches("data-loaded=\"yes\"").count(), 2, "{d}");
    // The check sees a figure that does not load.
    let start = html.find("base64,").unwrap() + "base64,".len();
    let broken = format!("{}AAAA{}", &html[..start], &html[start + 40..]);
    let bad = dir.join("broken.html");
    fs::write(&bad, broken).unwrap();
    let d = dom(&browser, &bad);
    assert!(d.contains("data-figures=\"1 of 2 loaded\""), "{d}");
    let _ = fs::remove_dir_all(dir);
}

/// Text from a sweep file or a record that would run as script in
/// report.html if it were HTML: it sets `data-pwn` on the page's body.
fn hostile(place: &str, script: bool) -> String {
    let js = format!("document.body.setAttribute('data-pwn','{place}')");
    if script {
        format!("<script>{js}</script>")
    } else {
        format!("<img src=x onerror=\"{js}\">")
    }
}

/// The page's body tag, as the browser left it.
fn body_tag(dom: &str) -> &str {
    let at = dom.find("<body").expect("a body");
    &dom[at..at + dom[at..].find('>').unwrap()]
}

#[test]
fn text_of_sweep_files_and_records_is_text_in_the_reports() {
    let dir = sweep_copy("hostile", "");
    let t = |s: String| serde_json::to_string(&s).unwrap();
    let spec = fs::read_to_string(dir.join("spec.toml")).unwrap();
    let spec = spec
        .replace(
            "title = \"A small sweep for the tests\"",
            &format!("title = {}", t(hostile("title", false))),
        )
        .replace(
            "labels = [\"busy sender\", \"blocking sender\"]",
            &format!(
                "labels = [{}, {}]",
                t(hostile("label", false)),
                t(hostile("label2", true))
            ),
        )
        .replace(
            "title = \"Message MB/s\"",
            &format!("title = {}", t(hostile("table", true))),
        )
        .replace(
            "title = \"Message MB/s vs size\"",
            &format!("title = {}", t(hostile("figure", false))),
        )
        .replace(
            "source = \"a made-up document\"",
            &format!("source = {}", t(hostile("source", false))),
        );
    fs::write(dir.join("spec.toml"), &spec).unwrap();
    // Records edited (or sent by a rogue agent): the machine they ran on.
    let path = dir.join("results.jsonl");
    let records: Vec<String> = fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| {
            let mut r: Value = serde_json::from_str(l).unwrap();
            r["result"]["environment"]["cpu_model"] = hostile("cpu", false).into();
            r["result"]["setup"]["driver"] = hostile("driver", true).into();
            r.to_string()
        })
        .collect();
    fs::write(&path, records.join("\n") + "\n").unwrap();
    ok(&report(&dir, &[]));
    // report.md: no tag, the text escaped.
    let md = fs::read_to_string(dir.join("report.md")).unwrap();
    for tag in ["<img", "<script", "<IMG", "<SCRIPT"] {
        assert!(!md.contains(tag), "{tag} in report.md:\n{md}");
    }
    assert!(md.contains("&lt;img src=x onerror="), "{md}");
    // The sweep's own figure (an embedded SVG) still shows.
    let page = dir.join("report.html");
    let html = fs::read_to_string(&page).unwrap();
    assert_eq!(html.matches("src=\"data:image/svg+xml;base64,").count(), 1);
    // --compare: the directories' names are text too.
    let named = dir.with_file_name(format!("{}-{}", hostile("dir", false), std::process::id()));
    let _ = fs::remove_dir_all(&named);
    fs::create_dir_all(&named).unwrap();
    for f in ["spec.toml", "results.jsonl", "options.json"] {
        fs::copy(dir.join(f), named.join(f)).unwrap();
    }
    ok(&report(&named, &["--compare", dir.to_str().unwrap()]));
    let cmp = fs::read_to_string(named.join("compare.md")).unwrap();
    assert!(!cmp.contains("<img") && !cmp.contains("<script"), "{cmp}");
    assert!(cmp.contains("# &lt;img src=x onerror="), "{cmp}");
    let Some(browser) = chromium() else {
        let _ = fs::remove_dir_all(named);
        return;
    };
    let d = dom(&browser, &page);
    // The page's own script ran (the figure loaded); none of the text did.
    let body = body_tag(&d);
    assert!(body.contains("data-figures=\"1 of 1 loaded\""), "{body}");
    assert!(!body.contains("data-pwn"), "{body}");
    // Each piece shown as text, as it was written.
    for (place, script) in [
        ("title", false),
        ("label", false),
        ("label2", true),
        ("table", true),
        ("source", false),
        ("cpu", false),
        ("driver", true),
    ] {
        let shown = hostile(place, script)
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        assert!(d.contains(&shown), "{place}: {shown} not shown in\n{d}");
    }
    let _ = fs::remove_dir_all(dir);
    let _ = fs::remove_dir_all(named);
}

/// The report opens with the summary: which of the document's figures
/// were passed, by how much, at what CPU (report.md before its
/// parameters, and the terminal's first lines).
#[test]
fn the_report_opens_with_a_summary_of_the_documents_figures() {
    let dir = sweep_copy("summary", MORE);
    let term = ok(&report(&dir, &[]));
    let lines = "linerate passed 2 of the document's 2 figures; medians of the repeats; CPU: linerate's own time, mean % of every core of the machine (the cores' busy share in results before own time):\n\n\
                 - doc 9, one flow: 8 KB: **passed** (4.23x): 1057 MB/s against 250.0 MB/s, at 99.17 % CPU\n\
                 - doc 9, one flow: 64 KB: **passed** (1.08x): 999.5 MB/s against 925.0 MB/s, at 100.0 % CPU\n";
    let md = fs::read_to_string(dir.join("report.md")).unwrap();
    let summary = md.find("## Summary\n\n").expect("a summary");
    assert!(summary < md.find("## Parameters").unwrap(), "{md}");
    assert!(
        md[summary..].starts_with(&format!("## Summary\n\n{lines}\n## Parameters")),
        "{md}"
    );
    assert!(term.starts_with(&format!("Summary: {lines}")), "{term}");
    let _ = fs::remove_dir_all(dir);
}

#[test]
fn fail_if_worse_gates_on_figures_worse_beyond_the_spread() {
    let base = sweep_copy("gate-base", "");
    let new = doubled("gate-new");
    let gate = |dir: &Path, other: &Path, pct: &str| {
        report(
            dir,
            &["--compare", other.to_str().unwrap(), "--fail-if-worse", pct],
        )
    };
    // Twice the rate at point 0: better, never worse.
    let out = gate(&new, &base, "10");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("no figure worse by more than 10 %"), "{err}");
    // The other way round: half the rate, beyond the spread.
    let out = gate(&base, &new, "10");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(
        err.contains("receiver.message_mb_s: 1976 (1974–1978) -> 988.0 (987.1–988.9) (-50.0 %), beyond the spread"),
        "{err}"
    );
    assert!(err.contains("1 figure(s) worse by more than 10 %"), "{err}");
    // Half is not worse by more than 60 %.
    let out = gate(&base, &new, "60");
    assert_eq!(out.status.code(), Some(0));
    // The percentage is checked where it is parsed; it needs --compare.
    assert_eq!(
        report(&base, &["--fail-if-worse", "10"]).status.code(),
        Some(2)
    );
    let out = gate(&base, &new, "-5");
    assert_eq!(out.status.code(), Some(2));
    for d in [base, new] {
        let _ = fs::remove_dir_all(d);
    }
}

/// The fixture (6 points x 2 repeats) with the records `keep` refuses
/// left out and the runs `fail` picks turned into failed runs.
fn edited(name: &str, keep: impl Fn(&Value) -> bool, fail: impl Fn(&Value) -> bool) -> PathBuf {
    let dir = sweep_copy(name, "");
    let path = dir.join("results.jsonl");
    let text: Vec<String> = fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| keep(r))
        .map(|mut r| {
            if fail(&r) {
                let o = r.as_object_mut().unwrap();
                o.remove("result");
                o.insert("error".into(), "the lab went away".into());
            }
            r.to_string()
        })
        .collect();
    fs::write(&path, text.join("\n") + "\n").unwrap();
    dir
}

/// A gate that compares with nothing fails: a point OTHER measured that
/// DIR lacks (left out of its records, every run failed, or DIR holds 1
/// of OTHER's 6 points) is worse, never equal (exit 4, each named).
#[test]
fn fail_if_worse_fails_on_points_that_are_missing() {
    let base = sweep_copy("miss-base", "");
    let gate = |dir: &Path| {
        let out = report(
            dir,
            &["--compare", base.to_str().unwrap(), "--fail-if-worse", "5"],
        );
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        (out.status.code(), err)
    };
    // Every run of point 2 failed.
    let failed = edited("miss-failed", |_| true, |r| r["point"] == 2);
    let (code, err) = gate(&failed);
    assert_eq!(code, Some(4), "{err}");
    let base_name = base.file_name().unwrap().to_string_lossy().into_owned();
    let failed_name = failed.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        err.contains(&format!(
            "linerate: missing: part 1 mode={{ rx_wait = \"wait\", tx_wait = \"busy\" }} message=65536: measured in {base_name}, not in {failed_name} (every run of it failed (2 of 2))\n"
        )),
        "{err}"
    );
    assert_eq!(err.matches("linerate: missing: ").count(), 1, "{err}");
    assert!(
        err.contains(&format!(
            "0 figure(s) worse by more than 5 % beyond the spread, 1 point(s) or figure(s) of {base_name} not measured (exit 4)"
        )),
        "{err}"
    );
    // compare.json lists it.
    let j: Value =
        serde_json::from_str(&fs::read_to_string(failed.join("compare.json")).unwrap()).unwrap();
    assert_eq!(j["missing"].as_array().unwrap().len(), 1, "{j}");
    assert_eq!(j["missing"][0]["why"], serde_json::json!({"failed": 2}));
    // Point 4 left out of the records.
    let lacking = edited("miss-lacking", |r| r["point"] != 4, |_| false);
    let (code, err) = gate(&lacking);
    assert_eq!(code, Some(4), "{err}");
    assert_eq!(err.matches("linerate: missing: ").count(), 1, "{err}");
    assert!(err.contains("(no run of it recorded)"), "{err}");
    // 1 of the 6 points.
    let one = edited("miss-one", |r| r["point"] == 0, |_| false);
    let (code, err) = gate(&one);
    assert_eq!(code, Some(4), "{err}");
    assert_eq!(err.matches("linerate: missing: ").count(), 5, "{err}");
    // Every run of every point failed: no row to compare, still exit 4.
    let none = edited("miss-none", |_| true, |_| true);
    let (code, err) = gate(&none);
    assert_eq!(code, Some(4), "{err}");
    assert_eq!(err.matches("linerate: missing: ").count(), 6, "{err}");
    // The same sweep: nothing missing, nothing worse.
    let (code, err) = gate(&sweep_copy("miss-same", ""));
    assert_eq!(code, Some(0), "{err}");
    // Without the gate the report says what is missing, exit 0.
    let out = report(&one, &["--compare", base.to_str().unwrap()]);
    let text = ok(&out);
    assert!(
        text.contains(&format!(
            "5 point(s) or figure(s) measured in {base_name} are not measured in"
        )),
        "{text}"
    );
    assert!(
        text.contains(
            "| 1 | mode={ rx_wait = \"wait\", tx_wait = \"busy\" } message=8192 | all | no run of it recorded |"
        ),
        "{text}"
    );
    for d in [base, failed, lacking, one, none] {
        let _ = fs::remove_dir_all(d);
    }
    let _ = fs::remove_dir_all(sweep_copy("miss-same", ""));
}

/// A copy of the fixture sweep with each record's result edited by
/// `edit(result, point, repeat)`.
fn edited_copy(name: &str, edit: impl Fn(&mut serde_json::Value, u64, u64)) -> PathBuf {
    let dir = sweep_copy(name, "");
    let lines: Vec<String> = fs::read_to_string(dir.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            let (point, repeat) = (v["point"].as_u64().unwrap(), v["repeat"].as_u64().unwrap());
            edit(&mut v["result"], point, repeat);
            v.to_string()
        })
        .collect();
    fs::write(dir.join("results.jsonl"), lines.join("\n") + "\n").unwrap();
    dir
}

/// A copy of the fixture sweep whose runs ran their receiver thread on
/// `core(point, repeat)`.
fn placed_copy(name: &str, core: impl Fn(u64, u64) -> u64) -> PathBuf {
    edited_copy(name, |r, point, repeat| {
        r["threads"] = serde_json::json!([{
            "tid": 7, "name": "lr-rx0", "run_ms": 500.0, "run_pct": 50.0, "wait_pct": 0.0,
            "slices": 10, "nonvoluntary": 0, "cores": [core(point, repeat)]
        }]);
    })
}

/// A repeat that ran elsewhere than its point's others is named in the
/// report, and `report --compare` names the points placed otherwise in
/// the two sweeps.
#[test]
fn repeats_placed_otherwise_are_flagged() {
    let plain = sweep_copy("unplaced", "");
    let term = ok(&report(&plain, &[]));
    assert!(!term.contains("## Placement"), "{term}");
    // Point 3's second repeat ran its receiver on core 0, every other
    // run on core 1.
    let odd = placed_copy("odd", |point, repeat| {
        u64::from(!(point == 2 && repeat == 1))
    });
    let term = ok(&report(&odd, &[]));
    let md = fs::read_to_string(odd.join("report.md")).unwrap();
    let flagged: Vec<&str> = md.lines().filter(|l| l.starts_with("- part ")).collect();
    assert_eq!(flagged.len(), 1, "{md}");
    assert!(
        flagged[0].ends_with(", repeat 2: `lr-rx0@0` (the others: `lr-rx0@1`)"),
        "{md}"
    );
    assert!(term.contains("## Placement"), "{term}");
    // Every run of the other sweep on core 0: every point placed apart,
    // and the odd repeat listed under its sweep.
    let moved = placed_copy("moved", |_, _| 0);
    let out = run(&[
        "report",
        odd.to_str().unwrap(),
        "--compare",
        moved.to_str().unwrap(),
        "--json",
    ]);
    let c: serde_json::Value = serde_json::from_str(&ok(&out)).unwrap();
    let p = &c["placement"];
    // Point 3 is 1-1 in odd (tie: the first seen, core 1).
    assert_eq!(p["between"].as_array().unwrap().len(), 6, "{p:#}");
    assert!(p["between"]
        .as_array()
        .unwrap()
        .iter()
        .all(|x| x["dir"] == "lr-rx0@1" && x["other"] == "lr-rx0@0"));
    assert_eq!(p["dir"].as_array().unwrap().len(), 1, "{p:#}");
    assert_eq!(p["other"].as_array().unwrap().len(), 0, "{p:#}");
    let md = fs::read_to_string(odd.join("compare.md")).unwrap();
    assert!(md.contains("**Placed otherwise in "), "{md}");
    for d in [plain, odd, moved] {
        let _ = fs::remove_dir_all(d);
    }
}

/// A repeat whose kernel receive work per frame (NET_RX softirq time over
/// frames received) lay more than 15 % from its point's median is named
/// in the placement section with both figures; the others are not.
#[test]
fn repeats_whose_receive_work_moved_are_named() {
    let dir = edited_copy("costly", |r, point, repeat| {
        let fps = r["receiver"]["frames_per_s"].as_f64().unwrap();
        // 200 ns a frame; point 3's second repeat 300 ns.
        let ns = if point == 2 && repeat == 1 {
            300.0
        } else {
            200.0
        };
        let pct = fps * ns * 1e-9 * 100.0;
        r["softirq"] = serde_json::json!([{
            "core": 1, "net_rx_pct": pct, "net_tx_pct": 0.0, "all_pct": pct,
            "net_rx_runs": 100, "net_tx_runs": 0
        }]);
    });
    let term = ok(&report(&dir, &[]));
    let md = fs::read_to_string(dir.join("report.md")).unwrap();
    let named: Vec<&str> = md.lines().filter(|l| l.starts_with("- part ")).collect();
    // Two repeats a point: each held against the other, both named.
    assert_eq!(named.len(), 2, "{md}");
    assert!(
        named[0].ends_with(", repeat 1: 200 ns a frame (the other repeat: 300 ns)")
            && named[1].ends_with(", repeat 2: 300 ns a frame (the other repeat: 200 ns)"),
        "{md}"
    );
    assert!(term.contains("kernel receive work per frame"), "{term}");
    let _ = fs::remove_dir_all(dir);
}
