//! From a sweep part to its points, and from a point to the arguments of
//! the command it runs (the binary parses them with the same clap
//! definitions as the command line, so a sweep accepts exactly what the
//! command line does).

use toml::Value;

use super::spec::{show, Part};

/// A quick sweep's durations: long enough that two quick sweeps agree
/// (0.2 s + 0.5 s, one repeat, gave 0.83-1.25x between two runs of a
/// point); with [`super::saved::QUICK_REPEATS`] repeats, medians.
pub const QUICK: [&str; 4] = ["--warmup", "0.5s", "--duration", "1s"];

/// One point of a part: a value for every axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Index of the part.
    pub part: usize,
    /// Index of the point within the part.
    pub index: usize,
    /// (axis, value) for every axis.
    pub values: Vec<(String, Value)>,
}

impl Point {
    /// The value of `axis` at this point.
    pub fn value(&self, axis: &str) -> Option<&Value> {
        self.values.iter().find(|(a, _)| a == axis).map(|(_, v)| v)
    }

    /// A short description: "message=64 tx_wait=busy".
    pub fn describe(&self) -> String {
        self.values
            .iter()
            .map(|(a, v)| format!("{a}={}", show(v)))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Every point of a part, the first axis varying slowest.
pub fn points(part_index: usize, part: &Part) -> Vec<Point> {
    iter(part_index, part).collect()
}

/// The number of points of a part (0 when it does not fit a usize).
pub fn count(part: &Part) -> usize {
    part.axes
        .iter()
        .try_fold(1usize, |n, a| n.checked_mul(a.values.len()))
        .unwrap_or(0)
}

/// Every point of a part, one at a time (nothing else is built: a sweep
/// of millions of points holds one at a time).
pub fn iter(part_index: usize, part: &Part) -> impl Iterator<Item = Point> + '_ {
    (0..count(part)).filter_map(move |i| point(part_index, part, i))
}

/// Point `index` of a part (None past its last), computed from the index:
/// the last axis varies fastest.
pub fn point(part_index: usize, part: &Part, index: usize) -> Option<Point> {
    if index >= count(part) {
        return None;
    }
    let mut rest = index;
    let mut values = Vec::with_capacity(part.axes.len());
    for axis in part.axes.iter().rev() {
        let n = axis.values.len();
        values.push((axis.name.clone(), axis.values[rest % n].clone()));
        rest /= n;
    }
    values.reverse();
    Some(Point {
        part: part_index,
        index,
        values,
    })
}

fn push_option(argv: &mut Vec<String>, key: &str, v: &Value) -> Result<(), String> {
    let flag = format!("--{}", key.replace('_', "-"));
    match v {
        Value::Boolean(true) => argv.push(flag),
        Value::Boolean(false) => {}
        Value::String(s) => argv.extend([flag, s.clone()]),
        Value::Integer(i) => argv.extend([flag, i.to_string()]),
        Value::Float(f) => argv.extend([flag, f.to_string()]),
        Value::Table(t) => {
            for (k, v) in t {
                push_option(argv, k, v)?;
            }
        }
        other => {
            return Err(format!(
                "{key} = {other}: give a number, a string, true/false or an inline table"
            ))
        }
    }
    Ok(())
}

/// The command-line arguments of a point: fixed settings, the point's
/// values, then `extra` (e.g. --lab, --tx-iface), and with `quick` short
/// durations.
pub fn argv(
    part: &Part,
    point: &Point,
    extra: &[String],
    quick: bool,
) -> Result<Vec<String>, String> {
    let mut argv = Vec::new();
    // --quick sets the durations itself.
    let timed = |k: &str| quick && matches!(k, "warmup" | "duration");
    for (k, v) in part
        .fixed
        .iter()
        .chain(point.values.iter().map(|(k, v)| (k, v)))
    {
        if !timed(k) {
            push_option(&mut argv, k, v)?;
        }
    }
    argv.extend(extra.iter().cloned());
    if quick {
        argv.extend(QUICK.map(String::from));
    }
    Ok(argv)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::spec::SweepSpec;

    fn spec(extra: &str) -> SweepSpec {
        SweepSpec::parse(
            &format!(
                "name = \"t\"\nkind = \"stream\"\n[fixed]\nmtu = 1500\nreverse = false\n{extra}\n[[axis]]\nname = \"message\"\nvalues = [64, 1024, 65500]\n[[axis]]\nname = \"mode\"\nvalues = [{{tx_wait = \"busy\", rx_wait = \"busy\"}}, {{tx_wait = \"wait\", rx_wait = \"wait\"}}]\n"
            ),
            "t.toml",
        )
        .unwrap()
    }

    #[test]
    fn expands_the_grid_first_axis_slowest() {
        let s = spec("");
        let p = points(0, &s.parts[0]);
        assert_eq!(p.len(), 6);
        assert_eq!(
            p[0].describe(),
            "message=64 mode={ rx_wait = \"busy\", tx_wait = \"busy\" }"
        );
        assert_eq!(p[1].value("message"), Some(&Value::Integer(64)));
        assert_eq!(p[2].value("message"), Some(&Value::Integer(1024)));
        // Computed from the index alone, as the grid has them.
        for (i, q) in p.iter().enumerate() {
            assert_eq!(point(0, &s.parts[0], i).as_ref(), Some(q));
        }
        assert_eq!(point(0, &s.parts[0], 6), None);
    }
}
