//! The report of an RFC 2544 run, in the sweep format, from its
//! results.jsonl alone: report.md with the tables section 26 asks for (one
//! row per frame size for each test, then each size's trials), a figure
//! (rfc2544.svg: frames/s and Gbit/s against frame size beside the 10 GbE
//! and 25 GbE line rates) and rfc2544.csv.

use std::{fmt::Write as _, path::Path};

use anyhow::Result;
use serde::Serialize;
use serde_json::Value;

use super::trials::{BackToBack, FrameLoss, LatencyAt, Throughput, Trial};
use crate::stream::mlrsearch::Found;
use linerate_report::{
    self as figure, md,
    sweep::{
        store::{self, write_atomic},
        Record, RESULTS,
    },
    Plot, Series,
};

/// The figure.
pub const FIGURE: &str = "rfc2544.svg";
/// The figure as PNG.
pub const PNG: &str = "rfc2544.png";
/// The Gbit/s figure (.svg and .png).
pub const GBIT: &str = "rfc2544-gbit";
/// The per-size figures.
pub const TABLE: &str = "rfc2544.csv";

/// The tests, in the order they run at each size (a record's point).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Test {
    /// 26.1.
    Throughput,
    /// 26.2.
    Latency,
    /// 26.3.
    FrameLoss,
    /// 26.4.
    BackToBack,
}

impl Test {
    /// Every test, in order.
    pub const ALL: [Test; 4] = [
        Test::Throughput,
        Test::Latency,
        Test::FrameLoss,
        Test::BackToBack,
    ];

    /// Its name in records and reports.
    pub fn name(self) -> &'static str {
        match self {
            Test::Throughput => "throughput",
            Test::Latency => "latency",
            Test::FrameLoss => "frame loss",
            Test::BackToBack => "back-to-back",
        }
    }
}

/// Checks that a record holds the frame size and the test of its place
/// (part: the size, point: the test): one of another run is refused.
pub fn check_values(sizes: &[usize], r: &Record) -> std::result::Result<(), String> {
    let (Some(&size), Some(test)) = (sizes.get(r.part), Test::ALL.get(r.point)) else {
        return Err(format!(
            "a record of test {} of size {}, which this run does not have",
            r.point,
            r.part + 1
        ));
    };
    let (got_size, got_test) = (r.values.get("frame_size"), r.values.get("test"));
    if got_size != Some(&Value::from(size)) || got_test != Some(&Value::from(test.name())) {
        return Err(format!(
            "a record of part {} point {} (the {} test at {size} B) that holds frame_size {} and test {}: a record of another run",
            r.part + 1,
            r.point,
            test.name(),
            got_size.map_or("none".into(), Value::to_string),
            got_test.map_or("none".into(), Value::to_string),
        ));
    }
    Ok(())
}

/// What the tests found at one frame size.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SizeReport {
    /// Frame size, FCS included.
    pub frame_size: usize,
    /// Throughput.
    pub throughput: Option<Throughput>,
    /// Latency at the throughput rate.
    pub latency: Option<LatencyAt>,
    /// Frame loss rate.
    pub frame_loss: Option<FrameLoss>,
    /// Back-to-back frames.
    pub back_to_back: Option<BackToBack>,
    /// Tests that failed, with why.
    pub errors: Vec<(String, String)>,
}

/// Bits per second of a frame rate: the frames' own bits (FCS included).
pub fn gbit_s(frame_size: usize, fps: f64) -> f64 {
    fps * frame_size as f64 * 8.0 / 1e9
}

/// Frames per second a link of `gbit` Gbit/s carries at most: each frame
/// costs its bytes plus 20 of preamble, start delimiter and gap.
pub fn line_rate_fps(gbit: f64, frame_size: usize) -> f64 {
    gbit * 1e9 / ((frame_size + linerate_datapath::frame::WIRE_OVERHEAD) as f64 * 8.0)
}

/// Reads results.jsonl of `dir` for `sizes`.
pub fn load(dir: &Path, sizes: &[usize]) -> Result<Vec<SizeReport>> {
    let mut out: Vec<SizeReport> = sizes
        .iter()
        .map(|&frame_size| SizeReport {
            frame_size,
            ..Default::default()
        })
        .collect();
    let points = vec![Test::ALL.len() as u64; sizes.len()];
    let mut bad = None;
    let loaded = store::load(
        &dir.join(RESULTS),
        &points,
        store::Mode::Report,
        |r| check_values(sizes, r),
        |r: Record| {
            if let Err(e) = add(&mut out[r.part], &r) {
                bad.get_or_insert(e);
            }
        },
    )?;
    for w in loaded.warnings {
        eprintln!("linerate: warning: {w}");
    }
    if let Some(e) = bad {
        return Err(e);
    }
    Ok(out)
}

fn add(s: &mut SizeReport, r: &Record) -> Result<()> {
    let test = Test::ALL[r.point];
    // The last record of a test holds: a failure a resumed run ran again
    // is gone.
    s.errors.retain(|(t, _)| t != test.name());
    let Some(v) = r.values.get("outcome").cloned() else {
        if let Some(e) = &r.error {
            s.errors.push((test.name().into(), e.clone()));
        }
        return Ok(());
    };
    let bad = |e: serde_json::Error| {
        anyhow::anyhow!(
            "{}: the {} record of {} B does not hold up: {e}",
            RESULTS,
            test.name(),
            s.frame_size
        )
    };
    match test {
        Test::Throughput => s.throughput = Some(serde_json::from_value(v).map_err(bad)?),
        Test::Latency => s.latency = Some(serde_json::from_value(v).map_err(bad)?),
        Test::FrameLoss => s.frame_loss = Some(serde_json::from_value(v).map_err(bad)?),
        Test::BackToBack => s.back_to_back = Some(serde_json::from_value(v).map_err(bad)?),
    }
    Ok(())
}

fn num(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |x| format!("{x:.digits$}"))
}

fn trial_row(o: &mut String, first: &str, t: &Trial) {
    let _ = writeln!(
        o,
        "| {first} | {} | {} | {} | {:.0} | {:.0} | {:.4} |",
        t.offered_pps
            .map_or("unpaced".into(), |p| format!("{p:.0}")),
        t.sent,
        t.received,
        t.sent_fps,
        t.received_fps,
        t.loss_pct
    );
}

const TRIAL_HEAD: &str = "offered/s per queue | sent | received | sent/s | received/s | loss % |\n";

/// The tables: one row per frame size for each test (RFC 2544 26.1-26.4),
/// then every trial of every size.
pub fn tables(sizes: &[SizeReport]) -> String {
    let mut o = String::new();
    o.push_str("## Throughput (RFC 2544 26.1): NDR and PDR\n\nNDR (Non-Drop Rate): the highest rate whose full-length trials lose nothing (RFC 2544's throughput; loss tolerated as given). PDR (Partial Drop Rate): the highest whose loss stays within the PDR's tolerance. Each is the median of the full-length trials at that rate (the range beside it), found by the search named (mlr: MLRsearch, draft-ietf-bmwg-mlrsearch; binary: MLRsearch in its binary configuration, one full-length trial per load; records before issue 33: two binary searches).\n\n");
    o.push_str("| frame size | NDR frames/s | NDR range | NDR Gbit/s | PDR frames/s | PDR range | PDR Gbit/s | 10 GbE max frames/s | 25 GbE max frames/s | loss tolerated % (NDR, PDR) | search | sender | trials | trial time s |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for s in sizes {
        let t = s.throughput.as_ref();
        let (ndr, pdr) = (
            t.and_then(|t| t.ndr.as_ref()),
            t.and_then(|t| t.pdr.as_ref()),
        );
        let rate = |f: Option<&Found>| {
            (
                num(f.map(|f| f.fps), 0),
                f.map_or("-".into(), |f| {
                    format!("{:.0} to {:.0}", f.fps_min, f.fps_max)
                }),
                num(f.map(|f| gbit_s(s.frame_size, f.fps)), 3),
            )
        };
        let (n, p) = (rate(ndr), rate(pdr));
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {:.0} | {:.0} | {}, {} | {} | {} | {} | {} |",
            s.frame_size,
            n.0,
            n.1,
            n.2,
            p.0,
            p.1,
            p.2,
            line_rate_fps(10.0, s.frame_size),
            line_rate_fps(25.0, s.frame_size),
            num(t.map(|t| t.tolerance_pct), 3),
            num(pdr.map(|p| p.loss_pct), 3),
            t.map_or("-", |t| if t.search.is_empty() {
                "binary"
            } else {
                t.search.as_str()
            }),
            t.map_or("-".into(), |t| md::text(&t.tx_engine)),
            t.map_or(0, |t| t.trials.len()),
            num(t.map(|t| t.trial_time_s), 2),
        );
    }
    o.push_str("\n## Latency at the throughput rate (RFC 2544 26.2)\n\nEvery received frame's one-way latency (not one tagged frame per trial), at the NDR, over several trials; the RFC's figure is the mean of its tagged frames' latencies, here the mean of all, the median over the trials.\n\n");
    o.push_str("| frame size | frames/s | frames | min us | mean us (RFC figure, median of trials) | range of the trials' means us | p50 us | p99 us | p99.9 us | max us |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for s in sizes {
        let l = s.latency.as_ref();
        let h = l.and_then(|l| l.latency.as_ref());
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            s.frame_size,
            num(l.map(|l| l.fps), 0),
            h.map_or("-".into(), |h| h.count.to_string()),
            num(h.map(|h| h.min_us), 1),
            num(l.and_then(|l| l.rfc_us), 1),
            l.and_then(|l| l.range_us)
                .map_or("-".into(), |(a, b)| format!("{a:.1} to {b:.1}")),
            num(h.map(|h| h.p50_us), 1),
            num(h.map(|h| h.p99_us), 1),
            num(h.map(|h| h.p99_9_us), 1),
            num(h.map(|h| h.max_us), 1),
        );
    }
    o.push_str("\n## Frame loss rate (RFC 2544 26.3)\n\nPercent of the highest rate the sender reached (a veth pair has no line rate), down by 10 % until two steps in a row lose nothing.\n\n");
    o.push_str("| frame size | 100 % = frames/s | loss % at 100 %, 90 %, ... |\n|---|---|---|\n");
    for s in sizes {
        let l = s.frame_loss.as_ref();
        let steps = l.map_or("-".into(), |l| {
            l.steps
                .iter()
                .map(|(p, t)| format!("{p:.0} %: {:.4}", t.loss_pct))
                .collect::<Vec<_>>()
                .join("; ")
        });
        let _ = writeln!(
            o,
            "| {} | {} | {steps} |",
            s.frame_size,
            num(l.map(|l| l.base_fps), 0)
        );
    }
    o.push_str("\n## Back-to-back frames (RFC 2544 26.4, RFC 9004)\n\nThe longest burst at the highest rate (unpaced) that arrived whole, searched for several times: the median of the searches, their range, and RFC 9004's implied buffer time (the burst over the rate). When no burst up to the longest tried was lost, the benchmark is not reached (a veth pair queues a burst behind its qdisc rather than drop it).\n\n");
    o.push_str("| frame size | burst frames | range | implied buffer time us | at frames/s | longest tried | searches | trials |\n|---|---|---|---|---|---|---|---|\n");
    for s in sizes {
        let b = s.back_to_back.as_ref();
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            s.frame_size,
            b.map_or("-".into(), |b| md::text(&b.shown())),
            b.and_then(|b| b.range_frames)
                .map_or("-".into(), |(lo, hi)| format!("{lo} to {hi}")),
            num(b.and_then(|b| b.longest_s).map(|s| s * 1e6), 1),
            num(b.map(|b| b.rate_fps), 0),
            b.map_or("-".into(), |b| b.cap_frames.to_string()),
            b.map_or(0, |b| b.searches.len()),
            b.map_or(0, |b| b.bursts.len()),
        );
    }
    trials_tables(&mut o, sizes);
    o
}

/// Every trial of every size, a table a size.
fn trials_tables(o: &mut String, sizes: &[SizeReport]) {
    for s in sizes {
        let _ = writeln!(o, "\n### {} B: trials\n", s.frame_size);
        let _ = writeln!(o, "| test | {TRIAL_HEAD}|---|---|---|---|---|---|---|");
        if let Some(t) = &s.throughput {
            for t in &t.trials {
                trial_row(o, "throughput", t);
            }
        }
        if let Some(l) = &s.frame_loss {
            for (p, t) in &l.steps {
                trial_row(o, &format!("loss at {p:.0} %"), t);
            }
        }
        if let Some(b) = &s.back_to_back {
            for (n, t, whole) in &b.bursts {
                let what = if *whole { "whole" } else { "cut" };
                trial_row(o, &format!("burst of {n}/queue ({what})"), t);
            }
        }
        for (test, e) in &s.errors {
            let _ = writeln!(o, "\n{test} failed: {}", md::text(e));
        }
    }
}

/// One size's figures, as rfc2544.csv and rfc2544.json carry them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Summary {
    /// Frame size, FCS included.
    pub frame_size: usize,
    /// The engine that sent.
    pub tx_engine: String,
    /// The search ("mlr" or "binary").
    pub search: String,
    /// NDR, frames/s received (median of its full-length trials).
    pub ndr_fps: Option<f64>,
    /// NDR, Gbit/s of frame bits.
    pub ndr_gbit_s: Option<f64>,
    /// Frames/s received by each of the NDR's full-length trials.
    pub ndr_trials_fps: Vec<f64>,
    /// PDR, frames/s received (median of its full-length trials).
    pub pdr_fps: Option<f64>,
    /// PDR, Gbit/s.
    pub pdr_gbit_s: Option<f64>,
    /// Frames/s received by each of the PDR's full-length trials.
    pub pdr_trials_fps: Vec<f64>,
    /// Back-to-back frames (median of the searches), or the text of a
    /// benchmark not reached.
    pub back_to_back: String,
}

/// Each size's figures.
pub fn summary(sizes: &[SizeReport]) -> Vec<Summary> {
    sizes
        .iter()
        .map(|s| {
            let t = s.throughput.as_ref();
            let ndr = t.and_then(|t| t.ndr.as_ref());
            let pdr = t.and_then(|t| t.pdr.as_ref());
            let fps = |f: Option<&Found>| f.map(|f| f.fps);
            let trials = |f: Option<&Found>| {
                f.map_or(Vec::new(), |f| {
                    f.trials.iter().map(|t| t.received_fps).collect()
                })
            };
            Summary {
                frame_size: s.frame_size,
                tx_engine: t.map_or(String::new(), |t| t.tx_engine.clone()),
                search: t.map_or(String::new(), |t| t.search.clone()),
                ndr_fps: fps(ndr),
                ndr_gbit_s: fps(ndr).map(|f| gbit_s(s.frame_size, f)),
                ndr_trials_fps: trials(ndr),
                pdr_fps: fps(pdr),
                pdr_gbit_s: fps(pdr).map(|f| gbit_s(s.frame_size, f)),
                pdr_trials_fps: trials(pdr),
                back_to_back: s
                    .back_to_back
                    .as_ref()
                    .map_or(String::new(), BackToBack::shown),
            }
        })
        .collect()
}

fn csv(sizes: &[SizeReport]) -> String {
    let mut o = String::from("frame_size,throughput_fps,throughput_gbit_s,latency_min_us,latency_mean_us,latency_p50_us,latency_p99_us,latency_p99_9_us,latency_max_us,loss_base_fps,loss_at_100_pct,back_to_back_frames,back_to_back_s,ndr_fps,ndr_gbit_s,ndr_trials_fps,pdr_fps,pdr_gbit_s,pdr_trials_fps,back_to_back,tx_engine\n");
    let f = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:.6}"));
    let list = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:.0}"))
            .collect::<Vec<_>>()
            .join(";")
    };
    for (s, sum) in sizes.iter().zip(summary(sizes)) {
        let fps = s.throughput.as_ref().and_then(|t| t.fps);
        let h = s.latency.as_ref().and_then(|l| l.latency.as_ref());
        let b = s.back_to_back.as_ref();
        let cells = [
            f(fps),
            f(fps.map(|x| gbit_s(s.frame_size, x))),
            f(h.map(|h| h.min_us)),
            f(s.latency.as_ref().and_then(|l| l.rfc_us)),
            f(h.map(|h| h.p50_us)),
            f(h.map(|h| h.p99_us)),
            f(h.map(|h| h.p99_9_us)),
            f(h.map(|h| h.max_us)),
            f(s.frame_loss.as_ref().map(|l| l.base_fps)),
            f(s.frame_loss
                .as_ref()
                .and_then(|l| l.steps.first())
                .map(|(_, t)| t.loss_pct)),
            f(b.and_then(|b| b.longest_frames).map(|x| x as f64)),
            f(b.and_then(|b| b.longest_s)),
            f(sum.ndr_fps),
            f(sum.ndr_gbit_s),
            list(&sum.ndr_trials_fps),
            f(sum.pdr_fps),
            f(sum.pdr_gbit_s),
            list(&sum.pdr_trials_fps),
            // Text without commas or quotes: "not reached: no loss up to
            // N frames (T us)", a number, or "none whole".
            sum.back_to_back.replace(',', ";"),
            sum.tx_engine.replace(',', ";"),
        ];
        let _ = writeln!(o, "{},{}", s.frame_size, cells.join(","));
    }
    o
}

/// The figures: NDR and PDR (median, the trials' range) against frame
/// size beside the 10 GbE and 25 GbE line rates, in frames/s and in
/// Gbit/s; the sweep figures' drawing (ticks at the frame sizes, counts
/// as "1 M").
fn plots(sizes: &[SizeReport]) -> [Plot; 2] {
    let ticks: Vec<(f64, String)> = sizes
        .iter()
        .map(|s| (s.frame_size as f64, s.frame_size.to_string()))
        .collect();
    let rate = |name: &str,
                pick: fn(&Throughput) -> Option<&Found>,
                y: &dyn Fn(usize, f64) -> f64| Series {
        name: name.into(),
        points: sizes
            .iter()
            .filter_map(|s| {
                let f = pick(s.throughput.as_ref()?)?;
                let size = s.frame_size;
                Some((
                    size as f64,
                    y(size, f.fps),
                    y(size, f.fps_min),
                    y(size, f.fps_max),
                ))
            })
            .collect(),
    };
    let line = |g: f64, y: &dyn Fn(usize, f64) -> f64| Series {
        name: format!("{g} GbE line rate"),
        points: sizes
            .iter()
            .map(|s| {
                let v = y(s.frame_size, line_rate_fps(g, s.frame_size));
                (s.frame_size as f64, v, v, v)
            })
            .collect(),
    };
    let plot = |title: &str, y_desc: &str, y: &dyn Fn(usize, f64) -> f64, counts: bool| Plot {
        title: title.into(),
        x_desc: "frame size, bytes (FCS included)".into(),
        y_desc: y_desc.into(),
        log_x: false,
        // frames/s over decades (64 B at 25 GbE is 37 M): a log axis.
        log_y: counts,
        ticks: ticks.clone(),
        lines: vec![
            rate("NDR (no loss)", |t| t.ndr.as_ref(), y),
            rate("PDR", |t| t.pdr.as_ref(), y),
            line(10.0, y),
            line(25.0, y),
        ],
        marks: Vec::new(),
        levels: Vec::new(),
        left_out: Vec::new(),
        y_counts: counts,
    };
    [
        plot(
            "RFC 2544 throughput: NDR and PDR, frames/s",
            "frames/s",
            &|_, f| f,
            true,
        ),
        plot(
            "RFC 2544 throughput: NDR and PDR, Gbit/s",
            "Gbit/s (frame bits, FCS included)",
            &gbit_s,
            false,
        ),
    ]
}

/// The head of report.md: the engine that sent the trials.
fn engines(sizes: &[SizeReport]) -> String {
    let mut e: Vec<&str> = sizes
        .iter()
        .filter_map(|s| s.throughput.as_ref())
        .map(|t| t.tx_engine.as_str())
        .filter(|e| !e.is_empty())
        .collect();
    e.sort_unstable();
    e.dedup();
    if e.is_empty() {
        String::new()
    } else {
        format!(
            "Sent by: {} (`--tx-engine` picks another to compare).",
            e.join(", ")
        )
    }
}

/// Writes report.md, rfc2544.svg and rfc2544.csv into `dir`; returns the
/// tables for the terminal.
pub fn write(dir: &Path, head: &str, sizes: &[SizeReport]) -> Result<String> {
    let tables = tables(sizes);
    let head = format!("{head} {}", engines(sizes)).trim_end().to_string();
    let mut md = format!(
        "# RFC 2544\n\n{}\n\n![NDR and PDR in frames/s against frame size]({FIGURE}) ![NDR and PDR in Gbit/s]({GBIT}.svg)\n\nPNG: [{PNG}]({PNG}), [{GBIT}.png]({GBIT}.png)\n\n",
        md::text(&head)
    );
    md.push_str(&tables);
    let _ = write!(
        md,
        "\n## Raw results\n\nEvery test of every size: [{RESULTS}]({RESULTS}) (one record per line, with the trial kept whole). Per size: [{TABLE}]({TABLE}).\n"
    );
    let [fps, gbit] = plots(sizes);
    write_atomic(&dir.join(FIGURE), figure::svg(&fps)?.as_bytes())?;
    write_atomic(&dir.join(PNG), &figure::png(&fps)?)?;
    write_atomic(
        &dir.join(format!("{GBIT}.svg")),
        figure::svg(&gbit)?.as_bytes(),
    )?;
    write_atomic(&dir.join(format!("{GBIT}.png")), &figure::png(&gbit)?)?;
    write_atomic(&dir.join(TABLE), csv(sizes).as_bytes())?;
    write_atomic(&dir.join("report.md"), md.as_bytes())?;
    Ok(format!("{head}\n\n{tables}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_run_again_after_a_failure_reports_its_outcome_alone() {
        let dir = std::env::temp_dir().join(format!("linerate-rfc-load-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut out = store::Results::open(&dir.join(RESULTS)).unwrap();
        let record = |point: usize, outcome: Option<serde_json::Value>, error: Option<&str>| {
            let mut values = serde_json::Map::new();
            values.insert("frame_size".into(), 128.into());
            values.insert("test".into(), Test::ALL[point].name().into());
            if let Some(o) = outcome {
                values.insert("outcome".into(), o);
            }
            Record {
                part: 1,
                point,
                repeat: 0,
                values,
                result: None,
                fleet: None,
                error: error.map(str::to_string),
            }
        };
        let b2b = BackToBack {
            longest_frames: Some(64),
            ..Default::default()
        };
        for r in [
            record(3, None, Some("the lab went away")),
            record(2, None, Some("not run")),
            record(
                3,
                Some(serde_json::to_value(&b2b).unwrap()),
                Some("no trial kept"),
            ),
        ] {
            out.append(&r).unwrap();
        }
        let sizes = load(&dir, &[64, 128]).unwrap();
        assert_eq!(
            sizes[0].errors.len() + sizes[0].back_to_back.iter().count(),
            0
        );
        assert_eq!(sizes[1].back_to_back, Some(b2b));
        assert_eq!(
            sizes[1].errors,
            vec![("frame loss".to_string(), "not run".to_string())]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn errors_and_the_directory_are_text_in_report_md() {
        let dir = std::env::temp_dir().join(format!("linerate-rfc-esc-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let sizes = vec![SizeReport {
            frame_size: 64,
            errors: vec![("throughput".into(), "<script>alert(1)</script> | x".into())],
            ..Default::default()
        }];
        write(&dir, "linerate rfc2544 in /tmp/<img src=x>:", &sizes).unwrap();
        let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
        assert!(!md.contains("<script") && !md.contains("<img"), "{md}");
        assert!(
            md.contains("throughput failed: &lt;script>alert(1)&lt;/script> \\| x"),
            "{md}"
        );
        assert!(md.contains("in /tmp/&lt;img src=x>:"), "{md}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn line_rates_count_preamble_and_gap() {
        // 10 GbE carries 14,880,952 64-byte frames/s and 812,743 of 1518 B.
        assert_eq!(line_rate_fps(10.0, 64).round(), 14_880_952.0);
        assert_eq!(line_rate_fps(10.0, 1518).round(), 812_744.0);
        assert!((gbit_s(64, line_rate_fps(10.0, 64)) - 10.0 * 64.0 / 84.0).abs() < 1e-9);
    }

    /// Three sizes: 64 B with every figure, 128 B whose back-to-back was
    /// not reached, 1518 B with none.
    fn partial_run() -> Vec<SizeReport> {
        let trial = |fps| Trial {
            sent: 10,
            received: 10,
            received_fps: fps,
            duration_s: 1.0,
            ..Default::default()
        };
        let rate = |name: &str, fps: f64, lo: f64, hi: f64| Found {
            name: name.into(),
            fps,
            fps_min: lo,
            fps_max: hi,
            trials: vec![trial(lo), trial(hi)],
            within_width: true,
            ..Default::default()
        };
        vec![
            SizeReport {
                frame_size: 64,
                throughput: Some(Throughput {
                    tolerance_pct: 0.0,
                    search: "mlr".into(),
                    trials: vec![trial(9e5)],
                    highest_fps: 1e6,
                    fps: Some(9e5),
                    offered_pps: Some(9e5),
                    ndr: Some(rate("NDR", 9e5, 8e5, 1e6)),
                    pdr: Some(Found {
                        loss_pct: 0.5,
                        ..rate("PDR", 9.5e5, 9e5, 1e6)
                    }),
                    trial_time_s: 2.5,
                    tx_engine: "generator".into(),
                }),
                back_to_back: Some(BackToBack {
                    rate_fps: 1e6,
                    cap_frames: 1000,
                    bursts: vec![(500, Trial::default(), true)],
                    longest_frames: Some(500),
                    longest_s: Some(5e-4),
                    ..Default::default()
                }),
                ..Default::default()
            },
            SizeReport {
                frame_size: 128,
                back_to_back: Some(BackToBack {
                    rate_fps: 1e6,
                    cap_frames: 300,
                    not_reached: Some(super::super::trials::not_reached(300, 1e6)),
                    searches: vec![Some(300)],
                    ..Default::default()
                }),
                ..Default::default()
            },
            SizeReport {
                frame_size: 1518,
                ..Default::default()
            },
        ]
    }

    #[test]
    fn tables_and_figure_of_a_partial_run() {
        let sizes = partial_run();
        let t = tables(&sizes);
        assert!(
            t.contains("| 64 | 900000 | 800000 to 1000000 | 0.461 | 950000 | 900000 to 1000000 | 0.486 | 14880952 | 37202381 | 0.000, 0.500 | mlr | generator | 1 | 2.50 |"),
            "{t}"
        );
        assert!(
            t.contains("| 64 | 500 | - | 500.0 | 1000000 | 1000 | 0 | 1 |"),
            "{t}"
        );
        assert!(
            t.contains("| 128 | not reached: no loss up to 300 frames (300 us) | - | - | 1000000 | 300 | 1 | 0 |"),
            "{t}"
        );
        assert!(t.contains("| 1518 | - | - |"), "{t}");
        let [fps, gbit] = plots(&sizes);
        let names: Vec<&str> = fps.lines.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "NDR (no loss)",
                "PDR",
                "10 GbE line rate",
                "25 GbE line rate"
            ]
        );
        assert_eq!(fps.lines[0].points, [(64.0, 9e5, 8e5, 1e6)]);
        assert_eq!(
            fps.ticks,
            [
                (64.0, "64".to_string()),
                (128.0, "128".into()),
                (1518.0, "1518".into())
            ]
        );
        assert!(fps.y_counts && !gbit.y_counts);
        let svg = figure::svg(&fps).unwrap();
        assert!(svg.contains("25 GbE line rate") && svg.contains("PDR"));
        // Counts as "1 M", not "1000000.0"; ticks at the frame sizes.
        assert!(svg.contains("\n10 M\n"), "{svg}");
        assert!(!svg.contains("1000000.0"));
        assert!(svg.contains("\n1518\n"), "{svg}");
        let c = csv(&sizes);
        assert_eq!(c.lines().count(), 4);
        let head: Vec<&str> = c.lines().next().unwrap().split(',').collect();
        let row: Vec<&str> = c.lines().nth(1).unwrap().split(',').collect();
        assert_eq!(head.len(), row.len());
        let cell = |name: &str| row[head.iter().position(|h| *h == name).unwrap()];
        assert_eq!(cell("ndr_fps"), "900000.000000");
        assert_eq!(cell("pdr_fps"), "950000.000000");
        assert_eq!(cell("ndr_trials_fps"), "800000;1000000");
        assert_eq!(cell("tx_engine"), "generator");
        assert!(c.lines().nth(1).unwrap().starts_with("64,900000.000000,"));
        let row128 = c.lines().nth(2).unwrap();
        assert!(
            row128.contains(",not reached: no loss up to 300 frames (300 us),"),
            "{row128}"
        );
        assert_eq!(
            engines(&sizes),
            "Sent by: generator (`--tx-engine` picks another to compare)."
        );
    }
}
