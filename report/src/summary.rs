//! The summary a report opens with: which of the document's figures
//! (the references with a number) linerate passed, by how much, and at
//! what CPU, in a few lines; and which value of an axis (a wait mode) wins
//! where, in words, from the medians (the parts' `[[winner]]`s).

use std::fmt::Write as _;

use super::{
    data::Data,
    md,
    reference::{ours, point_label, points, statistic},
    scale::tick_label,
    tables::fmt_num,
};
use crate::sweep::spec::{Take, WinnerSpec};
use linerate_results::stats::{Spread, Verdict};

/// The CPU figure each line names: linerate's own time (the busy share
/// in results before it).
const CPU: &str = "cpu.total.cpu_pct";

/// The cores' busy share from /proc/stat, named beside it when it differs.
const BUSY: &str = "cpu.total.busy_pct";

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
            let busy = d.spread(point, BUSY).map(|b| b.median);
            let cpu = d
                .spread(point, CPU)
                .map(|c| match busy {
                    // linerate's own time, the busy share beside it.
                    Some(b) if (b - c.median).abs() >= 0.05 => format!(
                        ", at {} % CPU (cores busy {} %)",
                        fmt_num(c.median),
                        fmt_num(b)
                    ),
                    _ => format!(", at {} % CPU", fmt_num(c.median)),
                })
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

/// Medians this close (relative) are a tie: no value wins.
const TIE: f64 = 0.005;

/// One value of `over`: the best of `among` there (several when they
/// tie), and the next best.
struct Won {
    /// The `over` value's label.
    at: String,
    /// Indices of the winners among `among`'s values (one, or those
    /// tied), and the best median.
    best: (Vec<usize>, f64),
    /// The next best, when another was measured there, and whether its
    /// repeats' range overlaps the best's (no difference beyond noise).
    next: Option<(usize, f64, bool)>,
}

/// The best value of `w.among` at each value of `w.over` of part `pi`
/// (values where nothing was measured are left out).
fn won(d: &Data, pi: usize, w: &WinnerSpec) -> Vec<Won> {
    let part = &d.spec.parts[pi];
    let (Some(over), Some(among)) = (part.axis(&w.over), part.axis(&w.among)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (oi, ov) in over.values.iter().enumerate() {
        let mut got: Vec<(usize, f64, Spread)> = among
            .values
            .iter()
            .enumerate()
            .filter_map(|(ai, av)| {
                let p = d.find(pi, &[(&w.over, ov), (&w.among, av)], &w.filter)?;
                let s = d.spread(p, &w.metric)?;
                Some((ai, s.median, s))
            })
            .filter(|(_, m, _)| m.is_finite())
            .collect();
        // Best first; a tie goes to the value listed first.
        got.sort_by(|a, b| {
            let o = a.1.total_cmp(&b.1);
            let o = if w.take == Take::Max { o.reverse() } else { o };
            o.then(a.0.cmp(&b.0))
        });
        if let Some(&(_, top, ref first)) = got.first() {
            let tied = |m: f64| (m - top).abs() <= TIE * top.abs().max(m.abs());
            let n = got.iter().take_while(|g| tied(g.1)).count();
            let mut who: Vec<usize> = got[..n].iter().map(|g| g.0).collect();
            who.sort_unstable();
            out.push(Won {
                at: tick_label(part, &w.over, oi),
                best: (who, top),
                next: got
                    .get(n)
                    .map(|g| (g.0, g.1, first.compare(&g.2) == Verdict::Same)),
            });
        }
    }
    out
}

/// "a", "a and b", "a, b and c".
fn listed(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// The sentence of one `[[winner]]`: which value wins at which values of
/// its `over` axis, with its median and the next best's ("" when nothing
/// was measured).
pub(super) fn winner_sentence(d: &Data, pi: usize, w: &WinnerSpec) -> String {
    let part = &d.spec.parts[pi];
    let won = won(d, pi, w);
    if won.is_empty() {
        return String::new();
    }
    let (unit, _) = statistic(&w.metric);
    let with_unit = |x: f64| {
        if unit.is_empty() {
            fmt_num(x)
        } else if unit == "%" {
            format!("{} %", fmt_num(x))
        } else {
            format!("{} {unit}", fmt_num(x))
        }
    };
    let name = |i: usize| super::scale::series_name(part, &w.among, i);
    // Neighbouring values of `over` won by the same value go together.
    let mut groups: Vec<(&[usize], Vec<&Won>)> = Vec::new();
    for x in &won {
        match groups.last_mut() {
            Some((who, xs)) if *who == x.best.0.as_slice() => xs.push(x),
            _ => groups.push((&x.best.0, vec![x])),
        }
    }
    let said: Vec<String> = groups
        .iter()
        .map(|(who, xs)| {
            let at: Vec<String> = xs
                .iter()
                .map(|x| {
                    let next = x
                        .next
                        .map(|(ni, nm, same)| {
                            let noise = if same {
                                ", within the repeats' range"
                            } else {
                                ""
                            };
                            format!(", next {} {}{noise}", name(ni), with_unit(nm))
                        })
                        .unwrap_or_default();
                    format!("{} ({}{next})", x.at, with_unit(x.best.1))
                })
                .collect();
            let names: Vec<String> = who
                .iter()
                .map(|i| format!("**{}**", md::text(&name(*i))))
                .collect();
            if names.len() == 1 {
                format!("{} at {}", names[0], listed(&at))
            } else {
                format!("no winner, a tie of {} at {}", listed(&names), listed(&at))
            }
        })
        .collect();
    format!("{}: {}.", md::text(&w.what), said.join("; "))
}

/// Every part's `[[winner]]` sentences, a list item each.
fn winners(d: &Data) -> String {
    let mut o = String::new();
    for (pi, part) in d.spec.parts.iter().enumerate() {
        for w in &part.winners {
            let s = winner_sentence(d, pi, w);
            if !s.is_empty() {
                let _ = writeln!(o, "- {s}");
            }
        }
    }
    o
}

/// The summary in Markdown ("" when no reference states a number and no
/// part names a winner).
pub fn markdown(d: &Data) -> String {
    let won = winners(d);
    let won = if won.is_empty() {
        won
    } else {
        format!("Which wins where (medians of the repeats):\n\n{won}\n")
    };
    let (lines, unmeasured) = lines(d);
    if lines.is_empty() && unmeasured == 0 {
        return won;
    }
    let passed = lines.iter().filter(|l| l.passed).count();
    let not = if unmeasured > 0 {
        format!(" ({unmeasured} not measured)")
    } else {
        String::new()
    };
    let mut o = format!(
        "linerate passed {passed} of the document's {} figures{not}; medians of the repeats; CPU: linerate's own time, mean % of every core of the machine (the cores' busy share in results before own time):\n\n",
        lines.len() + unmeasured
    );
    for l in &lines {
        let _ = writeln!(o, "- {}: {}", md::text(&l.what), l.text);
    }
    if !won.is_empty() {
        o = format!("{won}{o}");
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
        let (spec, kept) = crate::fixture(&format!(
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
            "linerate passed 2 of the document's 4 figures; medians of the repeats; CPU: linerate's own time, mean % of every core of the machine (the cores' busy share in results before own time):\n\n\
             - doc, one flow: 1 KB: **passed** (3.95x): 988.0 MB/s against 250.0 MB/s, at 100.0 % CPU\n\
             - doc, one flow: 64 KB: **not passed** (0.83x): 999.5 MB/s against 1200 MB/s, at 100.0 % CPU\n\
             - doc, maximum rate: **passed** (1.06x): 1057 MB/s (message = 8192) against 1000 MB/s, at 99.17 % CPU\n\
             - doc, smallest: **not passed** (1.98x, lower is better): 988.0 MB/s (message = 1024) against 500.0 MB/s, at 100.0 % CPU\n"
        );
    }

    /// The fixture's medians (busy sender 988.0 / 1057 / 999.5 MB/s,
    /// blocking sender 915.1 / 1084 / 907.8 at 1, 8 and 64 KB): the
    /// sentence names the mode that wins at each size, the largest or the
    /// smallest as asked, with the next best; neighbours won by the same
    /// value go together.
    #[test]
    fn the_sentence_names_the_mode_that_wins_where() {
        let (spec, kept) = crate::fixture(
            "[[winner]]\nwhat = \"Most MB/s\"\nmetric = \"receiver.message_mb_s\"\namong = \"mode\"\nover = \"message\"\n\
             [[winner]]\nwhat = \"Fewest MB/s\"\nmetric = \"receiver.message_mb_s\"\namong = \"mode\"\nover = \"message\"\ntake = \"min\"\n\
             [[winner]]\nwhat = \"Best size\"\nmetric = \"receiver.message_mb_s\"\namong = \"message\"\nover = \"mode\"\n\
             [[winner]]\nwhat = \"At 8 KB\"\nmetric = \"receiver.message_mb_s\"\namong = \"mode\"\nover = \"message\"\nfilter = { message = 8192 }\n",
        );
        let d = Data::new(&spec, &kept);
        let w = &spec.parts[0].winners;
        assert_eq!(
            winner_sentence(&d, 0, &w[0]),
            "Most MB/s: **busy sender** at 1 KB (988.0 MB/s, next blocking sender 915.1 MB/s, within the repeats' range); \
             **blocking sender** at 8 KB (1084 MB/s, next busy sender 1057 MB/s, within the repeats' range); \
             **busy sender** at 64 KB (999.5 MB/s, next blocking sender 907.8 MB/s, within the repeats' range)."
        );
        assert_eq!(
            winner_sentence(&d, 0, &w[1]),
            "Fewest MB/s: **blocking sender** at 1 KB (915.1 MB/s, next busy sender 988.0 MB/s, within the repeats' range); \
             **busy sender** at 8 KB (1057 MB/s, next blocking sender 1084 MB/s, within the repeats' range); \
             **blocking sender** at 64 KB (907.8 MB/s, next busy sender 999.5 MB/s, within the repeats' range)."
        );
        assert_eq!(
            winner_sentence(&d, 0, &w[2]),
            "Best size: **message length 8192** at busy sender (1057 MB/s, next message length 65536 999.5 MB/s, within the repeats' range) \
             and blocking sender (1084 MB/s, next message length 1024 915.1 MB/s)."
        );
        assert_eq!(
            winner_sentence(&d, 0, &w[3]),
            "At 8 KB: **blocking sender** at 8 KB (1084 MB/s, next busy sender 1057 MB/s, within the repeats' range)."
        );
        // Equal medians (within 0.5 %) tie: no winner is named. Loss: 0 %
        // everywhere; receiver CPU: 100.0 % (busy) against 98.33 % at 1 KB
        // is 1.7 % apart, a win, but within the repeats' range.
        let (spec, kept) = crate::fixture(
            "[[winner]]\nwhat = \"Least loss\"\nmetric = \"frames.loss_pct\"\namong = \"mode\"\nover = \"message\"\ntake = \"min\"\n\
             [[winner]]\nwhat = \"Lowest receiver CPU\"\nmetric = \"receiver.cpu.cpu_pct\"\namong = \"mode\"\nover = \"message\"\ntake = \"min\"\nfilter = { message = 1024 }\n\
             [[winner]]\nwhat = \"Lowest sender CPU\"\nmetric = \"sender.cpu.cpu_pct\"\namong = \"mode\"\nover = \"message\"\ntake = \"min\"\nfilter = { message = 1024 }\n",
        );
        let d2 = Data::new(&spec, &kept);
        assert_eq!(
            winner_sentence(&d2, 0, &spec.parts[0].winners[0]),
            "Least loss: no winner, a tie of **busy sender** and **blocking sender** at 1 KB (0.000 %), 8 KB (0.000 %) and 64 KB (0.000 %)."
        );
        assert_eq!(
            winner_sentence(&d2, 0, &spec.parts[0].winners[1]),
            "Lowest receiver CPU: **blocking sender** at 1 KB (98.33 %, next busy sender 100.0 %, within the repeats' range)."
        );
        // Ranges apart (80.77-90.00 % against 100 %): a win beyond noise.
        assert_eq!(
            winner_sentence(&d2, 0, &spec.parts[0].winners[2]),
            "Lowest sender CPU: **blocking sender** at 1 KB (85.38 %, next busy sender 100.0 %)."
        );
        // In the summary, before the document's figures.
        let md = markdown(&d);
        assert!(
            md.starts_with("Which wins where (medians of the repeats):\n\n- Most MB/s: **busy sender** at 1 KB"),
            "{md}"
        );
    }

    /// An axis a winner names must be one of the part's.
    #[test]
    fn a_winner_over_an_unknown_axis_is_refused() {
        let e = crate::sweep::spec::SweepSpec::parse(
            "name = \"t\"\nkind = \"stream\"\n[[axis]]\nname = \"message\"\nvalues = [64]\n[[table]]\ntitle = \"t\"\nrows = \"message\"\nmetrics = [\"receiver.message_mb_s\"]\n[[winner]]\nwhat = \"w\"\nmetric = \"receiver.message_mb_s\"\namong = \"mode\"\nover = \"message\"\n",
            "t.toml",
        )
        .unwrap_err();
        assert!(
            e.message
                .contains("winner \"w\" uses \"mode\", which is not an axis"),
            "{e}"
        );
    }

    /// References without a number (the fixture's own) make no summary.
    #[test]
    fn no_numbers_no_summary() {
        let (spec, kept) = crate::fixture("");
        assert_eq!(markdown(&Data::new(&spec, &kept)), "");
    }
}
