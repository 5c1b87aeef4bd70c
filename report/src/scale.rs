//! How an axis' values read on a figure and in a row: sizes as sizes
//! (8 KB, 1 MB), counts without decimals and with their thousands
//! grouped, lines named by their axis ("MTU 1500").

use super::data::num;
use crate::sweep::spec::{show, Part};

/// An axis as an axis title names it.
pub fn axis_title(axis: &str) -> String {
    match axis {
        "mtu" => "MTU".into(),
        "message" => "message length".into(),
        "request" => "request size".into(),
        "response" => "response size".into(),
        "flows" => "parallel flows".into(),
        "queues" => "queues".into(),
        "rate" => "offered load (frames/s per queue)".into(),
        other => other.replace('_', " "),
    }
}

/// Whether an axis' values are sizes in bytes.
fn in_bytes(axis: &str) -> bool {
    matches!(axis, "message" | "request" | "response" | "size")
}

/// A count with its thousands grouped: 272197 -> "272,197".
pub fn grouped(v: i64) -> String {
    let digits = v.unsigned_abs().to_string();
    let mut o = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            o.push(',');
        }
        o.push(c);
    }
    if v < 0 {
        format!("-{o}")
    } else {
        o
    }
}

/// A size in bytes as a tick shows it: multiples of 1024 in KB (as the
/// documents write 64 KB for 65536), multiples of 1000 in kB or MB
/// (10^3, 10^6), others in bytes.
pub fn bytes(v: f64) -> String {
    let b = v.round() as i64;
    if (v - b as f64).abs() > 1e-9 || b <= 0 {
        return format!("{} B", tick(v));
    }
    if b % (1 << 20) == 0 {
        format!("{} MiB", b >> 20)
    } else if b % 1024 == 0 {
        format!("{} KB", b >> 10)
    } else if b % 1_000_000 == 0 {
        format!("{} MB", b / 1_000_000)
    } else if b % 1000 == 0 {
        format!("{} kB", b / 1000)
    } else {
        format!("{} B", grouped(b))
    }
}

/// A number as an axis tick shows it: counts without decimals.
pub fn tick(v: f64) -> String {
    if v.abs() >= 100.0 || (v - v.round()).abs() < 1e-9 {
        return grouped(v.round() as i64);
    }
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A count as a y tick shows it, in SI units: 1 M, 2.5 M, 500 k, 40.
pub fn count(v: f64) -> String {
    for (unit, name) in [(1e9, "G"), (1e6, "M"), (1e3, "k")] {
        if v.abs() >= unit {
            return format!("{} {name}", tick(v / unit));
        }
    }
    tick(v)
}

/// The label of value `i` of `axis` on a tick: its label, or its value
/// (a size in bytes as a size).
pub fn tick_label(part: &Part, axis: &str, i: usize) -> String {
    let a = part.axis(axis).expect("checked axis");
    if let Some(l) = a.labels.get(i) {
        return l.clone();
    }
    match (in_bytes(axis), num(&a.values[i])) {
        (true, Some(v)) => bytes(v),
        (false, Some(v)) => tick(v),
        _ => show(&a.values[i]),
    }
}

/// A line's legend: the series axis' label, or its name and value
/// ("MTU 1500").
pub fn series_name(part: &Part, axis: &str, i: usize) -> String {
    let a = part.axis(axis).expect("checked axis");
    match a.labels.get(i) {
        Some(l) => l.clone(),
        None => format!("{} {}", axis_title(axis), show(&a.values[i])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_read_as_sizes_and_counts() {
        assert_eq!(bytes(8192.0), "8 KB");
        assert_eq!(bytes(65536.0), "64 KB");
        assert_eq!(bytes(100.0), "100 B");
        assert_eq!(bytes(10000.0), "10 kB");
        assert_eq!(bytes(1_000_000.0), "1 MB");
        assert_eq!(bytes(65500.0), "65,500 B");
        assert_eq!(bytes(1048576.0), "1 MiB");
        assert_eq!(tick(10000.0), "10,000");
        assert_eq!(tick(272197.4), "272,197");
        assert_eq!(tick(0.25), "0.25");
        assert_eq!(tick(2.0), "2");
        assert_eq!(grouped(-1234567), "-1,234,567");
        assert_eq!(count(1e6), "1 M");
        assert_eq!(count(2.5e6), "2.5 M");
        assert_eq!(count(14_880_952.0), "14.881 M");
        assert_eq!(count(500_000.0), "500 k");
        assert_eq!(count(3e9), "3 G");
        assert_eq!(count(40.0), "40");
        assert_eq!(count(0.0), "0");
    }
}
