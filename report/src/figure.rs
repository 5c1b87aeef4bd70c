//! The figures of a report: what a figure shows (its lines, the
//! document's own points, axes and legends), worked out once as a
//! [`Plot`], then drawn by plotters as SVG and as PNG (into a buffer,
//! encoded by the png crate) with a font built into the binary, so text
//! renders on a machine without fonts.

use std::{path::Path, sync::OnceLock};

use anyhow::{anyhow, Result};
use plotters::{prelude::*, style::register_font};

use super::{
    data::{num, Data, Series},
    reference,
    scale::{axis_title, count, series_name, tick, tick_label},
};
use crate::sweep::{spec::FigureSpec, store::write_atomic};
use linerate_results::metrics::Metric;

/// DejaVu Sans (its licence: report/assets/DejaVuSans.LICENSE).
static FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");
/// The family every text of a figure is set in.
const FAMILY: &str = "sans-serif";
/// Pixels of a figure, SVG and PNG alike.
const SIZE: (u32, u32) = (960, 560);
/// Sizes spanning this factor or more go on a log axis.
const DECADES: f64 = 100.0;

/// What a figure shows, before it is drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct Plot {
    /// Caption.
    pub title: String,
    /// x axis' name.
    pub x_desc: String,
    /// y axis' name, with its unit.
    pub y_desc: String,
    /// Logarithmic x axis.
    pub log_x: bool,
    /// Logarithmic y axis (asked for, with a positive value to draw).
    pub log_y: bool,
    /// Ticks of the x axis: at the axis' values, labelled as its table is.
    pub ticks: Vec<(f64, String)>,
    /// linerate's medians, a line per series.
    pub lines: Vec<Series>,
    /// The document's own points, a set of marks per reference.
    pub marks: Vec<Series>,
    /// The document's figures that hold over the whole x axis (a maximum
    /// over it): a level each.
    pub levels: Vec<(String, f64)>,
    /// Labels of x values measured but not drawn (0 on a log axis).
    pub left_out: Vec<String>,
    /// y ticks as counts in SI units ("1 M"), not grouped digits.
    pub y_counts: bool,
}

/// The y axis' name with the metric's unit.
fn y_desc(f: &FigureSpec) -> String {
    let unit = match Metric::find(&f.y) {
        Some(Metric::Figure(m)) => m.unit,
        _ => "",
    };
    let name = if f.y_label.is_empty() {
        f.y.as_str()
    } else {
        f.y_label.as_str()
    };
    if unit.is_empty() || name.contains(unit) {
        name.to_string()
    } else {
        format!("{name} ({unit})")
    }
}

/// Whether x values go on a log axis: asked for, or spanning a factor of
/// `DECADES` (a 0 is then left out); never without a positive value.
fn log_axis(xs: &[f64], asked: bool) -> bool {
    let (lo, hi) = xs
        .iter()
        .filter(|x| **x > 0.0)
        .fold((f64::MAX, f64::MIN), |a, x| (a.0.min(*x), a.1.max(*x)));
    hi >= lo && (asked || hi / lo >= DECADES)
}

impl Plot {
    /// What figure `f` of part `pi` shows.
    pub(super) fn of(d: &Data, pi: usize, f: &FigureSpec) -> Self {
        let part = &d.spec.parts[pi];
        let xs = part.axis(&f.x).expect("checked");
        let values: Vec<(usize, f64)> = xs
            .values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| num(v).map(|x| (i, x)))
            .collect();
        let all: Vec<f64> = values.iter().map(|v| v.1).collect();
        let log_x = log_axis(&all, f.log_x);
        let shown = |x: f64| !log_x || x > 0.0;
        let raw = d.lines(pi, &f.x, f.series.as_deref(), &f.filter, &f.y);
        let log_y = f.log_y && raw.iter().flat_map(|l| &l.points).any(|p| p.1.median > 0.0);
        // On a log y axis a median of 0 has no place: left out.
        let drawn = |x: f64, y: f64| shown(x) && (!log_y || y > 0.0);
        let measured: Vec<f64> = raw
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.0))
            .collect();
        let lines: Vec<Series> = raw
            .into_iter()
            .map(|l| Series {
                name: match (l.series, &f.series) {
                    (Some(i), Some(ax)) => series_name(part, ax, i),
                    _ => "linerate".into(),
                },
                points: l
                    .points
                    .iter()
                    .filter(|(x, s)| drawn(*x, s.median))
                    .map(|(x, s)| (*x, s.median, s.min, s.max))
                    .collect(),
            })
            .collect();
        let left_out = values
            .iter()
            .filter(|(_, x)| !shown(*x) && measured.contains(x))
            .map(|(i, _)| tick_label(part, &f.x, *i))
            .collect();
        let (marks, levels) = reference::on_figure(d, pi, f);
        Self {
            title: f.title.clone(),
            x_desc: axis_title(&f.x),
            y_desc: y_desc(f),
            log_x,
            log_y,
            ticks: values
                .iter()
                .filter(|(_, x)| shown(*x))
                .map(|(i, x)| (*x, tick_label(part, &f.x, *i)))
                .collect(),
            lines,
            marks: marks
                .into_iter()
                .map(|mut m| {
                    m.points.retain(|p| drawn(p.0, p.1));
                    m
                })
                .filter(|m| !m.points.is_empty())
                .collect(),
            levels: levels.into_iter().filter(|l| !log_y || l.1 > 0.0).collect(),
            left_out,
            y_counts: false,
        }
    }

    /// Whether it has anything of linerate's to draw.
    pub fn is_empty(&self) -> bool {
        self.lines.iter().all(|l| l.points.is_empty())
    }

    /// The x range drawn.
    fn x_range(&self) -> (f64, f64) {
        let xs = self
            .lines
            .iter()
            .chain(&self.marks)
            .flat_map(|l| l.points.iter().map(|p| p.0))
            .chain(self.ticks.iter().map(|t| t.0));
        let (x0, x1) = xs.fold((f64::MAX, f64::MIN), |a, x| (a.0.min(x), a.1.max(x)));
        if self.log_x {
            (x0 / 1.4, x1 * 1.4)
        } else {
            let pad = ((x1 - x0) * 0.05).max(0.5);
            (x0 - pad, x1 + pad)
        }
    }

    /// The top of the y axis: room above every point and mark.
    fn y_top(&self) -> f64 {
        let top = self
            .lines
            .iter()
            .chain(&self.marks)
            .flat_map(|l| l.points.iter().map(|p| p.1.max(p.3)))
            .chain(self.levels.iter().map(|l| l.1))
            .fold(0.0f64, f64::max);
        // The legend sits in the top left corner: the points stay below
        // it (a row of about 18 px per entry of a plot about 440 px high).
        let entries = self.lines.len() + self.marks.len() + self.levels.len();
        let legend = ((entries as f64 * 18.0 + 24.0) / 440.0).min(0.6);
        if self.log_y {
            // The legend's share of the decades drawn.
            let bottom = self.y_bottom();
            let span = (top.max(bottom * 10.0) / bottom).ln();
            bottom * (span / (1.0 - legend)).exp()
        } else if top > 0.0 {
            top * 1.05 / (1.0 - legend)
        } else {
            // All zero (no loss, say): an axis to 1, not to nothing.
            1.0
        }
    }

    /// The bottom of the y axis: 0, or on a log axis below the smallest
    /// positive point.
    fn y_bottom(&self) -> f64 {
        if !self.log_y {
            return 0.0;
        }
        let low = self
            .lines
            .iter()
            .chain(&self.marks)
            .flat_map(|l| l.points.iter().map(|p| if p.2 > 0.0 { p.2 } else { p.1 }))
            .chain(self.levels.iter().map(|l| l.1))
            .filter(|y| *y > 0.0)
            .fold(f64::MAX, f64::min);
        if low == f64::MAX {
            1.0
        } else {
            // Down to a power of ten, so the axis has a labelled tick
            // below the lowest point.
            10f64.powf((low / 1.05).log10().floor())
        }
    }
}

/// An x axis with its ticks at given points (the axis' values): plotters'
/// own `WithKeyPoints` has no formatter for a linear f64 axis.
struct Keyed<R> {
    inner: R,
    keys: Vec<f64>,
}

impl<R: Ranged<ValueType = f64>> Ranged for Keyed<R> {
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }

    fn key_points<Hint: plotters::coord::ranged1d::KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.keys.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.inner.range()
    }
}

const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
];

/// The documents' marks: dark, apart from the lines' colours.
const MARKS: [RGBColor; 4] = [
    RGBColor(0, 0, 0),
    RGBColor(130, 130, 130),
    RGBColor(140, 86, 75),
    RGBColor(150, 150, 20),
];

/// Registers the built-in font once (every figure, also rfc2544's, sets
/// its text in it).
fn font() -> Result<()> {
    static DONE: OnceLock<bool> = OnceLock::new();
    if *DONE.get_or_init(|| register_font(FAMILY, FontStyle::Normal, FONT).is_ok()) {
        Ok(())
    } else {
        Err(anyhow!("the built-in font of the figures does not load"))
    }
}

/// Draws the chart of `p` on the builder `b` with the x and y coordinates
/// given (a macro: each pair of coordinate types is a chart of its own
/// type); `e` maps plotters' errors, `names` names the x ticks, the
/// y range starts at `y0` (a level runs from `x0` to `x1`).
macro_rules! plot {
    ($b:ident, $p:ident, $e:ident, $names:ident, ($x0:ident, $x1:ident, $y0:ident), $x:expr, $y:expr) => {{
        let mut chart = $b.build_cartesian_2d($x, $y).map_err($e)?;
        chart
            .configure_mesh()
            .x_desc($p.x_desc.clone())
            .y_desc($p.y_desc.clone())
            .x_label_formatter(&$names)
            .y_label_formatter(&|y: &f64| if $p.y_counts { count(*y) } else { tick(*y) })
            .label_style((FAMILY, 15))
            .axis_desc_style((FAMILY, 17))
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err($e)?;
        for (i, l) in $p.lines.iter().enumerate() {
            let c = COLORS[i % COLORS.len()];
            let pts = l.points.iter().map(|q| (q.0, q.1));
            chart
                .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
                .map_err($e)?
                .label(l.name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                });
            chart
                .draw_series(pts.map(|q| Circle::new(q, 4, c.filled())))
                .map_err($e)?;
            // The repeats' range.
            chart
                .draw_series(
                    l.points
                        .iter()
                        .filter(|q| q.3 > q.2)
                        .map(|q| PathElement::new(vec![(q.0, q.2.max($y0)), (q.0, q.3)], c)),
                )
                .map_err($e)?;
        }
        for (i, m) in $p.marks.iter().enumerate() {
            let c = MARKS[i % MARKS.len()];
            chart
                .draw_series(
                    m.points
                        .iter()
                        .map(|q| TriangleMarker::new((q.0, q.1), 9, c.filled())),
                )
                .map_err($e)?
                .label(m.name.clone())
                .legend(move |(x, y)| TriangleMarker::new((x + 10, y), 7, c.filled()));
        }
        for (name, y) in &$p.levels {
            let y = *y;
            chart
                .draw_series(DashedLineSeries::new(
                    vec![($x0, y), ($x1, y)],
                    8,
                    5,
                    BLACK.stroke_width(2),
                ))
                .map_err($e)?
                .label(name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 8, y)], BLACK.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .label_font((FAMILY, 14))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err($e)?;
    }};
}

/// Draws `p` on `root`.
fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, plotters::coord::Shift>, p: &Plot) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("drawing {:?}: {e}", p.title);
    root.fill(&WHITE).map_err(e)?;
    let (x0, x1) = p.x_range();
    let (y0, y1) = (p.y_bottom(), p.y_top());
    let keys: Vec<f64> = p.ticks.iter().map(|t| t.0).collect();
    let names = |x: &f64| {
        p.ticks
            .iter()
            .find(|t| (t.0 - x).abs() <= x.abs() * 1e-9)
            .map_or_else(|| tick(*x), |t| t.1.clone())
    };
    let mut b = ChartBuilder::on(root);
    b.caption(&p.title, (FAMILY, 22))
        .margin(16)
        .x_label_area_size(50)
        .y_label_area_size(90);
    let linear = |a: f64, b: f64| plotters::coord::types::RangedCoordf64::from(a..b);
    match (p.log_x, p.log_y) {
        (true, true) => plot!(
            b,
            p,
            e,
            names,
            (x0, x1, y0),
            Keyed {
                inner: LogCoord::from((x0..x1).log_scale()),
                keys
            },
            LogCoord::from((y0..y1).log_scale())
        ),
        (true, false) => plot!(
            b,
            p,
            e,
            names,
            (x0, x1, y0),
            Keyed {
                inner: LogCoord::from((x0..x1).log_scale()),
                keys
            },
            linear(y0, y1)
        ),
        (false, true) => plot!(
            b,
            p,
            e,
            names,
            (x0, x1, y0),
            Keyed {
                inner: linear(x0, x1),
                keys
            },
            LogCoord::from((y0..y1).log_scale())
        ),
        (false, false) => plot!(
            b,
            p,
            e,
            names,
            (x0, x1, y0),
            Keyed {
                inner: linear(x0, x1),
                keys
            },
            linear(y0, y1)
        ),
    }
    root.present().map_err(e)?;
    Ok(())
}

/// `p` as an SVG document.
pub fn svg(p: &Plot) -> Result<String> {
    font()?;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        draw(&root, p)?;
    }
    Ok(svg)
}

/// `p` as a PNG image.
pub fn png(p: &Plot) -> Result<Vec<u8>> {
    font()?;
    let (w, h) = SIZE;
    let mut rgb = vec![0u8; (w * h * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, SIZE).into_drawing_area();
        draw(&root, p)?;
    }
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut wr = enc.write_header()?;
    wr.write_image_data(&rgb)?;
    wr.finish()?;
    Ok(out)
}

/// Draws figure `f` of part `pi` as `dir/NAME.svg` and `dir/NAME.png`;
/// returns its lines of report.md.
pub fn write(d: &Data, pi: usize, f: &FigureSpec, dir: &Path, name: &str) -> Result<String> {
    write_plot(&Plot::of(d, pi, f), &f.title, dir, name)
}

/// Writes plot `p`, captioned `title`, as `dir/NAME.svg` and `.png`; its
/// Markdown.
pub(super) fn write_plot(p: &Plot, title: &str, dir: &Path, name: &str) -> Result<String> {
    if p.is_empty() {
        return Ok(format!(
            "*{}: no point has finished yet.*\n\n",
            super::md::text(title)
        ));
    }
    write_atomic(&dir.join(format!("{name}.svg")), svg(p)?.as_bytes())?;
    write_atomic(&dir.join(format!("{name}.png")), &png(p)?)?;
    let mut md = format!("![{}]({name}.svg)\n\n", super::md::text(title));
    if !p.left_out.is_empty() {
        md += &format!(
            "*Not on the log axis: {} (in the tables).*\n\n",
            super::md::text(&p.left_out.join(", "))
        );
    }
    md += &format!("PNG: [{name}.png]({name}.png)\n\n");
    Ok(md)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plot_names_its_lines_ticks_and_axes() {
        let (spec, kept) = crate::fixture(
            "[[figure]]\ntitle = \"CPU\"\nx = \"message\"\ny = \"cpu.total.cpu_pct\"\n",
        );
        let d = Data::new(&spec, &kept);
        let p = Plot::of(&d, 0, &spec.parts[0].figures[0]);
        assert!(p.log_x, "log_x = true in the file");
        assert_eq!(
            p.ticks,
            [
                (1024.0, "1 KB".to_string()),
                (8192.0, "8 KB".into()),
                (65536.0, "64 KB".into())
            ]
        );
        assert_eq!(p.x_desc, "message length");
        assert_eq!(p.y_desc, "receiver.message_mb_s (MB/s)");
        let names: Vec<&str> = p.lines.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["busy sender", "blocking sender"]);
        // Busy sender at 1 KB: median 988.0 of 987.1 and 988.9.
        let (x, y, lo, hi) = p.lines[0].points[0];
        assert_eq!(x, 1024.0);
        assert!((y - 988.0).abs() < 0.1 && lo < y && y < hi, "{y} {lo} {hi}");
        assert!(p.marks.is_empty() && p.left_out.is_empty());
        // One line without a series axis; 1 KB to 64 KB is not 100x: linear.
        let p = Plot::of(&d, 0, &spec.parts[0].figures[1]);
        assert!(!p.log_x);
        assert_eq!(p.lines.len(), 1);
        assert_eq!(p.lines[0].name, "linerate");
        assert_eq!(p.y_desc, "cpu.total.cpu_pct (%)");
        assert!(p.y_top() > 100.0);
    }

    /// `log_y = true`: the y axis runs from below the smallest point
    /// (its repeats' range included) to above the largest, both positive,
    /// and the figure draws.
    #[test]
    fn a_log_y_axis_spans_the_points() {
        let (spec, kept) = crate::fixture(
            "[[figure]]\ntitle = \"MB/s, log\"\nx = \"message\"\ny = \"receiver.message_mb_s\"\nseries = \"mode\"\nlog_y = true\n",
        );
        let d = Data::new(&spec, &kept);
        let linear = Plot::of(&d, 0, &spec.parts[0].figures[0]);
        assert!(!linear.log_y);
        assert_eq!(linear.y_bottom(), 0.0);
        let p = Plot::of(&d, 0, &spec.parts[0].figures[1]);
        assert!(p.log_y);
        let pts: Vec<(f64, f64, f64, f64)> =
            p.lines.iter().flat_map(|l| l.points.clone()).collect();
        assert_eq!(pts.len(), 6);
        let low = pts.iter().map(|q| q.2).fold(f64::MAX, f64::min);
        let high = pts.iter().map(|q| q.3).fold(0.0, f64::max);
        assert!(p.y_bottom() > 0.0 && p.y_bottom() < low, "{}", p.y_bottom());
        assert!(p.y_top() > high, "{}", p.y_top());
        assert!(svg(&p).unwrap().contains("MB/s, log"));
    }

    #[test]
    fn sizes_spanning_decades_go_on_a_log_axis() {
        // rpc: 0 B (null RPC) to 1 MB.
        assert!(log_axis(&[0.0, 100.0, 1e3, 1e4, 1e5, 1e6], false));
        // bs2000: 8 to 64 KB, and 1 to 16 flows.
        assert!(!log_axis(&[8192.0, 32768.0, 65536.0], false));
        assert!(!log_axis(&[1.0, 4.0, 16.0], false));
        assert!(log_axis(&[1.0, 4.0, 16.0], true));
        // Nothing positive: never log.
        assert!(!log_axis(&[0.0], true));
        assert!(!log_axis(&[], true));
    }
}
