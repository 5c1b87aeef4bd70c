//! points.csv: every point's medians, one line a point.

use super::data::{Data, COLS};
use std::fmt::Write as _;

pub(super) fn csv(d: &Data) -> String {
    let mut o = format!("part,point,values,repeats,{}\n", COLS.join(","));
    for (pi, points) in d.points.iter().enumerate() {
        for p in points {
            let n = d.results(p).len();
            let cells: Vec<String> = COLS
                .iter()
                .map(|c| {
                    d.spread(p, c)
                        .map_or(String::new(), |s| format!("{:.6}", s.median))
                })
                .collect();
            let _ = writeln!(
                o,
                "{},{},\"{}\",{n},{}",
                pi,
                p.index,
                p.describe().replace('"', "'"),
                cells.join(",")
            );
        }
    }
    o
}
