//! The report of an RFC 2544 run, in the sweep format, from its
//! results.jsonl alone: report.md with the tables section 26 asks for (one
//! row per frame size for each test, then each size's trials), a figure
//! (rfc2544.svg: frames/s and Gbit/s against frame size beside the 10 GbE
//! and 25 GbE line rates) and rfc2544.csv.

use std::{fmt::Write as _, path::Path};

use anyhow::Result;
use plotters::prelude::*;
use serde::Serialize;
use serde_json::Value;

use super::trials::{BackToBack, FrameLoss, LatencyAt, Throughput, Trial};
use crate::sweep::{
    report::md,
    store::{self, write_atomic},
    Record, RESULTS,
};

/// The figure.
pub const FIGURE: &str = "rfc2544.svg";
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
    o.push_str("## Throughput (RFC 2544 26.1)\n\n");
    o.push_str("| frame size | frames/s | Gbit/s | 10 GbE max frames/s | 25 GbE max frames/s | loss tolerated % | trials |\n|---|---|---|---|---|---|---|\n");
    for s in sizes {
        let t = s.throughput.as_ref();
        let fps = t.and_then(|t| t.fps);
        let _ = writeln!(
            o,
            "| {} | {} | {} | {:.0} | {:.0} | {} | {} |",
            s.frame_size,
            num(fps, 0),
            num(fps.map(|f| gbit_s(s.frame_size, f)), 3),
            line_rate_fps(10.0, s.frame_size),
            line_rate_fps(25.0, s.frame_size),
            num(t.map(|t| t.tolerance_pct), 3),
            t.map_or(0, |t| t.trials.len()),
        );
    }
    o.push_str("\n## Latency at the throughput rate (RFC 2544 26.2)\n\nEvery received frame's one-way latency (not one tagged frame per trial); the RFC's figure is the mean of its tagged frames' latencies, here the mean of all.\n\n");
    o.push_str("| frame size | frames/s | frames | min us | mean us (RFC figure) | p50 us | p99 us | p99.9 us | max us |\n|---|---|---|---|---|---|---|---|---|\n");
    for s in sizes {
        let l = s.latency.as_ref();
        let h = l.and_then(|l| l.latency.as_ref());
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            s.frame_size,
            num(l.map(|l| l.fps), 0),
            h.map_or("-".into(), |h| h.count.to_string()),
            num(h.map(|h| h.min_us), 1),
            num(l.and_then(|l| l.rfc_us), 1),
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
    for s in sizes {
        let _ = writeln!(o, "\n### {} B: trials\n", s.frame_size);
        let _ = writeln!(o, "| test | {TRIAL_HEAD}|---|---|---|---|---|---|---|");
        if let Some(t) = &s.throughput {
            for t in &t.trials {
                trial_row(&mut o, "throughput", t);
            }
        }
        if let Some(l) = &s.frame_loss {
            for (p, t) in &l.steps {
                trial_row(&mut o, &format!("loss at {p:.0} %"), t);
            }
        }
        if let Some(b) = &s.back_to_back {
            for (n, t, whole) in &b.bursts {
                let what = if *whole { "whole" } else { "cut" };
                trial_row(&mut o, &format!("burst of {n}/queue ({what})"), t);
            }
        }
        for (test, e) in &s.errors {
            let _ = writeln!(o, "\n{test} failed: {}", md::text(e));
        }
    }
    o
}

fn csv(sizes: &[SizeReport]) -> String {
    let mut o = String::from("frame_size,throughput_fps,throughput_gbit_s,latency_min_us,latency_mean_us,latency_p50_us,latency_p99_us,latency_p99_9_us,latency_max_us,loss_base_fps,loss_at_100_pct,back_to_back_frames,back_to_back_s\n");
    let f = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:.6}"));
    for s in sizes {
        let fps = s.throughput.as_ref().and_then(|t| t.fps);
        let h = s.latency.as_ref().and_then(|l| l.latency.as_ref());
        let b = s.back_to_back.as_ref();
        let cells = [
            f(fps),
            f(fps.map(|x| gbit_s(s.frame_size, x))),
            f(h.map(|h| h.min_us)),
            f(h.map(|h| h.mean_us)),
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
        ];
        let _ = writeln!(o, "{},{}", s.frame_size, cells.join(","));
    }
    o
}

/// The figure: frames/s (log scale) and Gbit/s against frame size, the
/// throughput found beside the 10 GbE and 25 GbE line rates.
fn figure(sizes: &[SizeReport]) -> Result<String> {
    let measured: Vec<(f64, f64)> = sizes
        .iter()
        .filter_map(|s| {
            let fps = s.throughput.as_ref()?.fps?;
            Some((s.frame_size as f64, fps))
        })
        .collect();
    let largest = sizes.iter().map(|s| s.frame_size).max().unwrap_or(1518);
    let xs: Vec<usize> = (64..=largest)
        .step_by(((largest - 64) / 200).max(1))
        .collect();
    let lines = [(10.0, RED), (25.0, GREEN)];
    let gbit: Vec<(f64, f64)> = measured
        .iter()
        .map(|&(x, f)| (x, gbit_s(x as usize, f)))
        .collect();
    crate::sweep::report::font()?;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (800, 900)).into_drawing_area();
        root.fill(&WHITE)?;
        let (top, bottom) = root.split_vertically(450);
        let x1 = largest as f64 * 1.05;
        let fps_top = lines
            .iter()
            .map(|(g, _)| line_rate_fps(*g, 64))
            .chain(measured.iter().map(|m| m.1))
            .fold(1.0f64, f64::max)
            * 2.0;
        let fps_bottom = measured
            .iter()
            .map(|m| m.1)
            .chain(lines.iter().map(|(g, _)| line_rate_fps(*g, largest)))
            .fold(f64::MAX, f64::min)
            .max(1.0)
            / 2.0;
        let top_gbit = gbit.iter().map(|g| g.1).fold(25.0f64, f64::max) * 1.1;
        // One chart: the line rates' curves (`y` of a frame size at a line
        // rate), the measured points, the legend.
        macro_rules! chart {
            ($area:expr, $caption:expr, $y_desc:expr, $y_range:expr, $points:expr, $y:expr) => {{
                let mut c = ChartBuilder::on($area)
                    .caption($caption, ("sans-serif", 20))
                    .margin(12)
                    .x_label_area_size(40)
                    .y_label_area_size(70)
                    .build_cartesian_2d(0.0..x1, $y_range)?;
                c.configure_mesh()
                    .x_desc("frame size, bytes")
                    .y_desc($y_desc)
                    .draw()?;
                for (g, color) in lines {
                    c.draw_series(LineSeries::new(
                        xs.iter().map(|&x| (x as f64, $y(x, line_rate_fps(g, x)))),
                        color.stroke_width(2),
                    ))?
                    .label(format!("{g} GbE line rate"))
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color));
                }
                c.draw_series(LineSeries::new(
                    $points.iter().copied(),
                    BLUE.stroke_width(2),
                ))?
                .label("measured")
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLUE));
                c.draw_series($points.iter().map(|p| Circle::new(*p, 3, BLUE.filled())))?;
                c.configure_series_labels()
                    .background_style(WHITE.mix(0.8))
                    .border_style(BLACK)
                    .draw()?;
            }};
        }
        chart!(
            &top,
            "RFC 2544 throughput: frames/s",
            "frames/s",
            (fps_bottom..fps_top).log_scale(),
            measured,
            |_, fps| fps
        );
        chart!(
            &bottom,
            "RFC 2544 throughput: Gbit/s",
            "Gbit/s (frame bits, FCS included)",
            0.0..top_gbit,
            gbit,
            gbit_s
        );
        root.present()?;
    }
    Ok(svg)
}

/// Writes report.md, rfc2544.svg and rfc2544.csv into `dir`; returns the
/// tables for the terminal.
pub fn write(dir: &Path, head: &str, sizes: &[SizeReport]) -> Result<String> {
    let tables = tables(sizes);
    let mut md = format!(
        "# RFC 2544\n\n{}\n\n![frames/s and Gbit/s against frame size]({FIGURE})\n\n",
        md::text(head)
    );
    md.push_str(&tables);
    let _ = write!(
        md,
        "\n## Raw results\n\nEvery test of every size: [{RESULTS}]({RESULTS}) (one record per line, with the trial kept whole). Per size: [{TABLE}]({TABLE}).\n"
    );
    write_atomic(&dir.join(FIGURE), figure(sizes)?.as_bytes())?;
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

    #[test]
    fn tables_and_figure_of_a_partial_run() {
        let sizes = vec![
            SizeReport {
                frame_size: 64,
                throughput: Some(Throughput {
                    tolerance_pct: 0.0,
                    trials: vec![Trial {
                        sent: 10,
                        received: 10,
                        ..Default::default()
                    }],
                    highest_fps: 1e6,
                    fps: Some(9e5),
                    offered_pps: Some(9e5),
                    ..Default::default()
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
                frame_size: 1518,
                ..Default::default()
            },
        ];
        let t = tables(&sizes);
        assert!(t.contains("| 64 | 900000 | 0.461 | 14880952 |"), "{t}");
        assert!(
            t.contains("| 64 | 500 | - | 500.0 | 1000000 | 1000 | 0 | 1 |"),
            "{t}"
        );
        assert!(t.contains("| 1518 | - | - |"), "{t}");
        let svg = figure(&sizes).unwrap();
        assert!(svg.contains("25 GbE line rate") && svg.contains("measured"));
        let c = csv(&sizes);
        assert_eq!(c.lines().count(), 3);
        assert!(c.lines().nth(1).unwrap().starts_with("64,900000.000000,"));
    }
}
