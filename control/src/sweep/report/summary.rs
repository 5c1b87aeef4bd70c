//! The summary a report opens with: which of the document's figures
//! (the references with a number) linerate passed, by how much, and at
//! what CPU, in a few lines.

use std::fmt::Write as _;

use super::{
    data::Data,
    md,
    reference::{ours, point_label, points, statistic},
    tables::fmt_num,
};
use crate::sweep::spec::Take;

/// The CPU figure each line names.
const CPU: &str = "cpu.total.cpu_pct";

/// One of the document's figures against ours.
struct Line {
    /// Source and case.
    what: String,
    /// Passed or not, by how much, ours, the document's, the CPU.
    text: String,
    passed: bool,
}

/// The lines of every reference that states a number in the unit of ours,
/// at the point (or the best over the axis) where the reference reads it.
fn lines(d: &Data) -> (Vec<Line>, usize) {
    let mut out = Vec::new();
    let mut unmeasured = 0;
    for r in &d.spec.references {
        let Some(metric) = &r.ours else { continue };
        for p in points(r) {
            let Some(number) = p.number else { continue };
            let what = if r.points.is_empty() {
                format!("{}, {}", r.source, r.case)
            } else {
                format!("{}, {}: {}", r.source, r.case, point_label(d, r, &p.at))
            };
            let Some((got, at, point)) = ours(d, r, metric, &p.at) else {
                unmeasured += 1;
                continue;
            };
            let got = got.median;
            // A minimum (a response time) passes at or below the
            // document's; everything else at or above it.
            let lower = r.over.is_some() && r.take == Take::Min;
            let passed = if lower { got <= number } else { got >= number };
            let ratio = match (number > 0.0, lower) {
                (true, false) => format!("{:.2}x", got / number),
                (true, true) => format!("{:.2}x, lower is better", got / number),
                (false, _) => "n/a".to_string(),
            };
            let (unit, _) = statistic(metric);
            let unit = if unit.is_empty() {
                String::new()
            } else {
                format!(" {unit}")
            };
            let cpu = d
                .spread(point, CPU)
                .map(|c| format!(", at {} % CPU", fmt_num(c.median)))
                .unwrap_or_default();
            let at = if at.is_empty() {
                String::new()
            } else {
                format!(" ({at})")
            };
            let verdict = if passed { "passed" } else { "not passed" };
            out.push(Line {
                what,
                text: format!(
                    "**{verdict}** ({ratio}): {}{unit}{at} against {}{unit}{cpu}",
                    fmt_num(got),
                    fmt_num(number)
                ),
                passed,
            });
        }
    }
    (out, unmeasured)
}

/// The summary in Markdown ("" when no reference states a number).
pub fn markdown(d: &Data) -> String {
    let (lines, unmeasured) = lines(d);
    if lines.is_empty() && unmeasured == 0 {
        return String::new();
    }
    let passed = lines.iter().filter(|l| l.passed).count();
    let not = if unmeasured > 0 {
        format!(" ({unmeasured} not measured)")
    } else {
        String::new()
    };
    let mut o = format!(
        "linerate passed {passed} of the document's {} figures{not}; medians of the repeats, CPU % of every core of the machine:\n\n",
        lines.len() + unmeasured
    );
    for l in &lines {
        let _ = writeln!(o, "- {}: {}", md::text(&l.what), l.text);
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUSY: &str = "mode = { tx_wait = \"busy\", rx_wait = \"wait\" }";

    /// The fixture's records (busy sender: 988.0, 1057, 999.5 MB/s at 1,
    /// 8 and 64 KB) against a figure at two points, a maximum and a
    /// minimum over the message axis: the exact text.
    #[test]
    fn the_summary_says_what_passed_by_how_much_at_what_cpu() {
        let (spec, kept) = crate::sweep::report::fixture(&format!(
            "[[reference]]\nsource = \"doc\"\ncase = \"one flow\"\nvalue = \"x\"\nours = \"receiver.message_mb_s\"\nat = {{ {BUSY} }}\n\
             [[reference.point]]\nat = {{ message = 1024 }}\nvalue = \"250 MB/s\"\nnumber = 250\n\
             [[reference.point]]\nat = {{ message = 65536 }}\nvalue = \"1200 MB/s\"\nnumber = 1200\n\
             [[reference]]\nsource = \"doc\"\ncase = \"maximum rate\"\nvalue = \"1000 MB/s\"\n\
             ours = \"receiver.message_mb_s\"\nover = \"message\"\nnumber = 1000\nat = {{ {BUSY} }}\n\
             [[reference]]\nsource = \"doc\"\ncase = \"smallest\"\nvalue = \"500 MB/s\"\n\
             ours = \"receiver.message_mb_s\"\nover = \"message\"\ntake = \"min\"\nnumber = 500\nat = {{ {BUSY} }}\n"
        ));
        let d = Data::new(&spec, &kept);
        assert_eq!(
            markdown(&d),
            "linerate passed 2 of the document's 4 figures; medians of the repeats, CPU % of every core of the machine:\n\n\
             - doc, one flow: 1 KB: **passed** (3.95x): 988.0 MB/s against 250.0 MB/s, at 100.0 % CPU\n\
             - doc, one flow: 64 KB: **not passed** (0.83x): 999.5 MB/s against 1200 MB/s, at 100.0 % CPU\n\
             - doc, maximum rate: **passed** (1.06x): 1057 MB/s (message = 8192) against 1000 MB/s, at 99.17 % CPU\n\
             - doc, smallest: **not passed** (1.98x, lower is better): 988.0 MB/s (message = 1024) against 500.0 MB/s, at 100.0 % CPU\n"
        );
    }

    /// References without a number (the fixture's own) make no summary.
    #[test]
    fn no_numbers_no_summary() {
        let (spec, kept) = crate::sweep::report::fixture("");
        assert_eq!(markdown(&Data::new(&spec, &kept)), "");
    }
}
