//! points.csv: every point's medians, one line a point.

use super::data::{Data, COLS};
use crate::sweep::points::Point;
use std::fmt::Write as _;

/// The medians of [`COLS`] at point `p`, as CSV cells (empty: none).
pub(super) fn medians(d: &Data, p: &Point) -> String {
    COLS.iter()
        .map(|c| {
            d.spread(p, c)
                .map_or(String::new(), |s| format!("{:.6}", s.median))
        })
        .collect::<Vec<_>>()
        .join(",")
}

pub(super) fn csv(d: &Data) -> String {
    let mut o = format!("part,point,values,repeats,{}\n", COLS.join(","));
    for (pi, points) in d.points.iter().enumerate() {
        for p in points {
            let n = d.results(p).len();
            let _ = writeln!(
                o,
                "{},{},\"{}\",{n},{}",
                pi,
                p.index,
                p.describe().replace('"', "'"),
                medians(d, p)
            );
        }
    }
    o
}
