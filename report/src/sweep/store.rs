//! A sweep directory on disk: files replaced whole (write a temporary
//! file, flush it, rename it), results appended one whole record at a time
//! and flushed, and on reading, a torn last record cut (and kept aside)
//! while a bad record elsewhere is reported with its file and line.

use std::{
    fs::File,
    io::{self, Write},
    path::{Path, PathBuf},
};

use super::saved::Record;
use linerate_host::files;

/// The most of results.jsonl a report or a resume reads (about 200,000
/// records).
pub const MAX_RESULTS: u64 = 1 << 30;

/// A sweep directory that cannot be written or read as it should.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file could not be written.
    #[error("writing {} failed: {error}{}", path.display(), space_hint(error))]
    Write {
        /// The file.
        path: PathBuf,
        /// What the kernel said.
        error: io::Error,
    },
    /// A line of results.jsonl that is not a record of this sweep.
    #[error("{}:{line}: {what}: fix or delete that line (results.jsonl holds one record per line, as the sweep writes them), then run again", path.display())]
    BadRecord {
        /// results.jsonl.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong with it.
        what: String,
    },
    /// A file refused, or one that could not be opened.
    #[error(transparent)]
    File(#[from] files::FileError),
}

fn space_hint(e: &io::Error) -> &'static str {
    if e.raw_os_error() == Some(nix::errno::Errno::ENOSPC as i32) {
        ": free some space"
    } else {
        ""
    }
}

fn write_err(path: &Path) -> impl Fn(io::Error) -> StoreError + '_ {
    move |error| StoreError::Write {
        path: path.to_path_buf(),
        error,
    }
}

/// Replaces `path` with `bytes` whole (mode 0644): a reader (or a crash)
/// sees the old file or the new one, never a part of it; nothing is
/// written through a link (see [`linerate_host::files::write_atomic`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    Ok(files::write_atomic(path, bytes, files::PUBLIC)?)
}

/// results.jsonl, open for appending.
pub struct Results {
    path: PathBuf,
    file: File,
}

impl Results {
    /// Opens (creating) `path` for appending: never through a link, only
    /// a regular file of the user running linerate.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let file = files::open_append(path)?;
        file.sync_all().map_err(write_err(path))?;
        Ok(Self {
            path: path.to_path_buf(),
            file,
        })
    }

    /// Appends one record as one line, whole or not at all: one write of
    /// the line, then a flush to the disk; on a failure the file is cut
    /// back to where it was.
    pub fn append(&mut self, record: &Record) -> Result<(), StoreError> {
        let mut line = serde_json::to_string(record).map_err(|e| StoreError::Write {
            path: self.path.clone(),
            error: io::Error::other(e),
        })?;
        line.push('\n');
        let before = self.file.metadata().map_err(write_err(&self.path))?.len();
        let written = self
            .file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.sync_data());
        if let Err(error) = written {
            // A torn line is worse than none: the point runs again.
            let cut = self
                .file
                .set_len(before)
                .and_then(|()| self.file.sync_data());
            let error = match cut {
                Ok(()) => error,
                Err(c) => io::Error::new(
                    error.kind(),
                    format!(
                        "{error} (and cutting the partial record failed: {c}; --resume cuts it)"
                    ),
                ),
            };
            return Err(StoreError::Write {
                path: self.path.clone(),
                error,
            });
        }
        Ok(())
    }
}

/// What to do with records that do not hold up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Before a sweep resumes: cut a torn last record (kept aside in
    /// results.jsonl.torn-N), refuse any other bad line.
    Resume,
    /// For a report: leave bad lines out, with a warning (nothing is
    /// changed; a sweep may still be writing).
    Report,
}

/// What reading a results file found (its records went to the caller).
#[derive(Debug, Default)]
pub struct Loaded {
    /// Records read.
    pub records: usize,
    /// Warnings for stderr (a cut tail, lines left out).
    pub warnings: Vec<String>,
    /// Lines left out (Mode::Report).
    pub skipped: usize,
}

/// The largest rate a record may hold (per second: frames, messages,
/// transactions; MB/s; Gbit/s): far beyond any link, so that only a
/// number that is not a measurement is refused.
pub const MAX_RATE: f64 = 1e12;

/// Whether the numbers of a result are measurements: rates, durations and
/// service demands finite, from 0 to [`MAX_RATE`]; percentages (loss, CPU
/// busy, which is per core or a mean over cores) from 0 to 100. Names the
/// first field that is not.
pub fn plausible(result: &serde_json::Value) -> Result<(), String> {
    fn walk(v: &serde_json::Value, path: &mut String) -> Result<(), String> {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    let len = path.len();
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(k);
                    if let Some(n) = x.as_f64() {
                        check(k, n, path)?;
                    }
                    walk(x, path)?;
                    path.truncate(len);
                }
            }
            serde_json::Value::Array(a) => {
                for x in a {
                    walk(x, path)?;
                }
            }
            _ => {}
        }
        Ok(())
    }
    fn check(key: &str, n: f64, path: &str) -> Result<(), String> {
        let percent = key.ends_with("_pct")
            || matches!(
                key,
                "user" | "system" | "softirq" | "irq" | "steal" | "busy"
            );
        let rate = key.ends_with("per_s")
            || key.ends_with("_mb_s")
            || key.ends_with("_gbit_s")
            || key.ends_with("window_s")
            || key.ends_with("_per_mb");
        let range = if percent {
            (0.0, 100.0, "a percentage from 0 to 100")
        } else if rate {
            (0.0, MAX_RATE, "a rate or a duration from 0 to 1e12")
        } else {
            return Ok(());
        };
        if n.is_finite() && (range.0..=range.1).contains(&n) {
            Ok(())
        } else {
            Err(format!(
                "{path} = {n:e} is not a measurement (it is {}): a record edited or written by something else",
                range.2
            ))
        }
    }
    walk(result, &mut String::new())
}

/// Checks a line against the sweep: `points[part]` points in each part,
/// the numbers of its result measurements, and `check` (its point's
/// values).
fn record(
    line: &str,
    points: &[u64],
    check: &impl Fn(&Record) -> Result<(), String>,
) -> Result<Record, String> {
    let v: serde_json::Value =
        serde_json::from_str(line).map_err(|e| format!("not a sweep record ({e})"))?;
    for key in ["result", "fleet"] {
        if let Some(result) = v.get(key) {
            plausible(result).map_err(|e| format!("{key}.{e}"))?;
        }
    }
    let r: Record = serde_json::from_value(v).map_err(|e| format!("not a sweep record ({e})"))?;
    let Some(n) = points.get(r.part) else {
        return Err(format!(
            "a record of part {} but the sweep has {} part(s)",
            r.part + 1,
            points.len()
        ));
    };
    if r.point as u64 >= *n {
        return Err(format!(
            "a record of point {} of part {} but that part has {n} point(s)",
            r.point,
            r.part + 1
        ));
    }
    if r.repeat >= super::spec::MAX_REPEATS {
        return Err(format!("a record of repeat {}", r.repeat));
    }
    check(&r)?;
    // A fleet's pairs are named as an inventory names them (the report
    // shows their names in tables, legends and pairs.csv).
    if let Some(f) = &r.fleet {
        for p in &f.pairs {
            linerate_host::inventory::check_pair_name(&p.pair)?;
        }
    }
    match (&r.result, &r.fleet, &r.error) {
        (Some(_), None, None) | (None, Some(_), None) | (None, None, Some(_)) => Ok(r),
        _ => {
            Err("a record with neither a result nor an error (or more than one of a result, a fleet's results and an error)".into())
        }
    }
}

/// Reads results.jsonl at `path` (none yet: no records) for a sweep whose
/// parts have `points` points each; `check` refuses a record that is not
/// of its point (other axis values); `each` gets every record (its result
/// typed), in file order, to keep what it needs of it.
pub fn load(
    path: &Path,
    points: &[u64],
    mode: Mode,
    check: impl Fn(&Record) -> Result<(), String>,
    mut each: impl FnMut(Record),
) -> Result<Loaded, StoreError> {
    // A resume appends to it: only the user's own file.
    let Some(bytes) = files::read_regular(path, MAX_RESULTS, mode == Mode::Resume)? else {
        return Ok(Loaded::default());
    };
    let mut out = Loaded::default();
    // (start offset, line) of every line, the last one maybe without '\n'.
    let mut lines = Vec::new();
    let mut start = 0;
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'\n' {
            lines.push((start, &bytes[start..i], true));
            start = i + 1;
        }
    }
    if start < bytes.len() {
        lines.push((start, &bytes[start..], false));
    }
    let count = lines.len();
    // The line of each finished run: a second result for it is not a
    // record the sweep wrote.
    let mut finished = std::collections::HashMap::new();
    for (n, (offset, raw, ended)) in lines.into_iter().enumerate() {
        let text = std::str::from_utf8(raw).map_err(|e| e.to_string());
        let parsed = text.and_then(|t| record(t, points, &check)).and_then(|r| {
            match finished.get(&(r.part, r.point, r.repeat)) {
                Some(first) if r.measured() => Err(format!(
                    "a second result for repeat {} of point {} of part {} (line {first} has the first)",
                    r.repeat,
                    r.point,
                    r.part + 1
                )),
                _ => Ok(r),
            }
        });
        let last = n + 1 == count;
        // A whole record ends in '\n': only a last line without one is a
        // write cut short; a whole line that does not hold up is an error.
        let torn = last && !ended;
        match (parsed, mode) {
            (Ok(r), _) if ended => {
                if r.measured() {
                    finished.insert((r.part, r.point, r.repeat), n + 1);
                }
                out.records += 1;
                each(r);
            }
            (_, Mode::Resume) if torn => {
                let aside = cut_tail(path, offset as u64, &bytes[offset..])?;
                out.warnings.push(format!(
                    "{} ends with an incomplete record at byte {offset} (a write cut short by a crash or a full disk): cut, its point runs again; the {} cut byte(s) are in {}",
                    path.display(),
                    bytes.len() - offset,
                    aside.display()
                ));
            }
            (_, Mode::Report) if torn => {
                out.skipped += 1;
                out.warnings.push(format!(
                    "{} ends with an incomplete record at byte {offset} (a sweep still writing, or a write cut short): left out; `linerate sweep --resume` cuts it",
                    path.display()
                ));
            }
            (Ok(_), _) => unreachable!("only the last line can lack its newline"),
            (Err(what), Mode::Resume) => {
                return Err(StoreError::BadRecord {
                    path: path.to_path_buf(),
                    line: n + 1,
                    what,
                })
            }
            (Err(what), Mode::Report) => {
                out.skipped += 1;
                out.warnings.push(format!(
                    "{}:{}: {what}: left out of the report",
                    path.display(),
                    n + 1
                ));
            }
        }
    }
    Ok(out)
}

/// Keeps `tail` aside in results.jsonl.torn-N and cuts `path` at `at`.
fn cut_tail(path: &Path, at: u64, tail: &[u8]) -> Result<PathBuf, StoreError> {
    let name = path.file_name().map_or_else(
        || "results.jsonl".into(),
        |n| n.to_string_lossy().into_owned(),
    );
    // A dangling link is a name taken too.
    let aside = (1..)
        .map(|i| path.with_file_name(format!("{name}.torn-{i}")))
        .find(|p| !files::exists(p))
        .expect("a free name");
    // Its owner's only: it may hold what results.jsonl let no one else read.
    files::write_atomic(&aside, tail, files::PRIVATE)?;
    let f = files::open_existing(path)?;
    f.set_len(at)
        .and_then(|()| f.sync_data())
        .map_err(write_err(path))?;
    Ok(aside)
}

#[cfg(test)]
mod tests {
    use std::fs::{self, OpenOptions};

    use super::*;

    fn rec(point: usize, repeat: u32) -> String {
        let fixture =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/results/stream.json");
        let result = serde_json::from_str(&fs::read_to_string(fixture).unwrap()).unwrap();
        serde_json::to_string(&Record {
            part: 0,
            point,
            repeat,
            values: serde_json::Map::new(),
            result: Some(result),
            fleet: None,
            error: None,
        })
        .unwrap()
    }

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("linerate-store-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_torn_tail_is_cut_and_kept_aside() {
        let d = tmp("torn");
        let p = d.join("results.jsonl");
        let whole = format!("{}\n{}\n", rec(0, 0), rec(1, 0));
        let torn = &rec(2, 0)[..20];
        fs::write(&p, format!("{whole}{torn}")).unwrap();
        // A report leaves it out and changes nothing.
        let l = load(&p, &[3], Mode::Report, |_| Ok(()), |_| {}).unwrap();
        assert_eq!((l.records, l.skipped), (2, 1));
        assert_eq!(fs::read_to_string(&p).unwrap(), format!("{whole}{torn}"));
        // Resuming cuts it, names the byte, keeps the bytes.
        let l = load(&p, &[3], Mode::Resume, |_| Ok(()), |_| {}).unwrap();
        assert_eq!(l.records, 2);
        assert!(
            l.warnings[0].contains(&format!("at byte {}", whole.len())),
            "{:?}",
            l.warnings
        );
        assert_eq!(fs::read_to_string(&p).unwrap(), whole);
        assert_eq!(
            fs::read_to_string(d.join("results.jsonl.torn-1")).unwrap(),
            torn
        );
        let _ = fs::remove_dir_all(d);
    }

    #[test]
    fn a_whole_last_line_that_does_not_parse_is_an_error_not_torn() {
        let d = tmp("whole-bad");
        let p = d.join("results.jsonl");
        let whole = format!("{}\n{}\n", rec(0, 0), rec(1, 0));
        // Newline-ended: whole lines as written, which do not hold up.
        let huge = rec(2, 0).replacen("\"frames_per_s\":", "\"frames_per_s\":1e999,\"x\":", 1);
        for last in ["{\"part\":0,".to_string(), huge] {
            let text = format!("{whole}{last}\n");
            fs::write(&p, &text).unwrap();
            let e = load(&p, &[3], Mode::Resume, |_| Ok(()), |_| {})
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with(&format!("{}:3: not a sweep record (", p.display())),
                "{e}"
            );
            // Nothing cut, nothing set aside.
            assert_eq!(fs::read_to_string(&p).unwrap(), text);
            assert!(!d.join("results.jsonl.torn-1").exists());
            let l = load(&p, &[3], Mode::Report, |_| Ok(()), |_| {}).unwrap();
            assert_eq!((l.records, l.skipped), (2, 1));
            assert!(
                l.warnings[0].contains("results.jsonl:3: not a sweep record"),
                "{:?}",
                l.warnings
            );
        }
        let _ = fs::remove_dir_all(d);
    }

    /// A fleet's record is read back whole; one whose pair is not named
    /// as an inventory names it, or that holds a result beside its
    /// fleet's, is refused at its line.
    #[test]
    fn a_fleet_record_is_read_back_and_a_planted_one_refused() {
        let d = tmp("fleet");
        let p = d.join("results.jsonl");
        let fleet = |pair: &str| {
            let mut v: serde_json::Value = serde_json::from_str(&rec(0, 0)).unwrap();
            let result = v.as_object_mut().unwrap().remove("result").unwrap();
            v["fleet"] = serde_json::json!({
                "aggregate": {"test": "stream", "pairs": 1, "pairs_failed": 0, "window_s": 1.0,
                              "cpu": {"hosts": []}, "start_skew_us": 20.0},
                "pairs": [{"pair": pair, "start_skew_us": 20.0, "result": result}],
            });
            v
        };
        fs::write(&p, format!("{}\n", fleet("p0"))).unwrap();
        let mut read = Vec::new();
        load(&p, &[3], Mode::Resume, |_| Ok(()), |r| read.push(r)).unwrap();
        assert_eq!(read.len(), 1);
        assert!(read[0].measured() && read[0].result.is_none());
        assert_eq!(read[0].fleet.as_ref().unwrap().pairs[0].pair, "p0");
        assert!(read[0].first_result().is_some());
        let mut both = fleet("p0");
        both["result"] =
            serde_json::from_str::<serde_json::Value>(&rec(0, 0)).unwrap()["result"].clone();
        for (bad, what) in [
            (fleet("<img src=x>"), "pair name \"<img src=x>\" is invalid"),
            (
                both,
                "a record with neither a result nor an error (or more than one",
            ),
        ] {
            fs::write(&p, format!("{bad}\n")).unwrap();
            let e = load(&p, &[3], Mode::Resume, |_| Ok(()), |_| {})
                .unwrap_err()
                .to_string();
            assert!(e.starts_with(&format!("{}:1: {what}", p.display())), "{e}");
        }
        let _ = fs::remove_dir_all(d);
    }

    #[test]
    fn records_that_are_not_measurements_are_errors_naming_the_field() {
        let d = tmp("implausible");
        let p = d.join("results.jsonl");
        let set = |field: &str, to: &str| {
            let mut v: serde_json::Value = serde_json::from_str(&rec(1, 0)).unwrap();
            let mut at = &mut v["result"];
            for k in field.split('.') {
                at = match k.parse::<usize>() {
                    Ok(i) => &mut at[i],
                    Err(_) => &mut at[k],
                };
            }
            *at = serde_json::from_str(to).unwrap();
            v.to_string()
        };
        for (field, to, what) in [
            ("receiver.frames_per_s", "-1e308", "result.receiver.frames_per_s = -1e308 is not a measurement (it is a rate or a duration from 0 to 1e12)"),
            ("sender.wire_gbit_s", "1e300", "result.sender.wire_gbit_s = 1e300 is not a measurement"),
            ("window_s", "-1", "result.window_s = -1e0 is not a measurement"),
            ("frames.loss_pct", "150", "result.frames.loss_pct = 1.5e2 is not a measurement (it is a percentage from 0 to 100)"),
            ("receiver.cpu.cpu_pct", "-3", "result.receiver.cpu.cpu_pct = -3e0"),
            ("cpu.per_core.0.busy", "250", "result.cpu.per_core.busy = 2.5e2"),
            ("cpu.total.service_demand_ms_per_mb", "-0.5", "result.cpu.total.service_demand_ms_per_mb = -5e-1"),
        ] {
            let text = format!("{}\n{}\n{}\n", rec(0, 0), set(field, to), rec(2, 0));
            fs::write(&p, &text).unwrap();
            let e = load(&p, &[3], Mode::Resume, |_| Ok(()), |_| {})
                .unwrap_err()
                .to_string();
            assert!(e.starts_with(&format!("{}:2: {what}", p.display())), "{field}: {e}");
            let l = load(&p, &[3], Mode::Report, |_| Ok(()), |_| {}).unwrap();
            assert_eq!((l.records, l.skipped), (2, 1), "{field}");
        }
        // The fixture itself holds up.
        let mut v: serde_json::Value = serde_json::from_str(&rec(0, 0)).unwrap();
        plausible(&v["result"]).unwrap();
        v["result"]["receiver"]["frames_per_s"] = 0.0.into();
        plausible(&v["result"]).unwrap();
        let _ = fs::remove_dir_all(d);
    }

    #[test]
    fn a_record_its_point_refuses_is_an_error_at_its_line() {
        let d = tmp("values");
        let p = d.join("results.jsonl");
        fs::write(&p, format!("{}\n{}\n{}\n", rec(0, 0), rec(1, 0), rec(2, 0))).unwrap();
        let check = |r: &Record| {
            if r.point == 1 {
                Err("a record of another sweep".to_string())
            } else {
                Ok(())
            }
        };
        let e = load(&p, &[3], Mode::Resume, check, |_| {})
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!(
                "{}:2: a record of another sweep: fix or delete",
                p.display()
            )),
            "{e}"
        );
        let mut seen = Vec::new();
        let l = load(&p, &[3], Mode::Report, check, |r| seen.push(r.point)).unwrap();
        assert_eq!((l.records, l.skipped, seen), (2, 1, vec![0, 2]));
        let _ = fs::remove_dir_all(d);
    }

    #[test]
    #[ignore = "needs root: another user's file is made by chown"]
    fn a_torn_tail_is_kept_for_its_owner_only_and_links_are_refused() {
        assert!(nix::unistd::geteuid().is_root(), "a_torn_tail_is_kept_for_its_owner_only_and_links_are_refused needs root: another user's file is made by chown");
        use std::os::unix::fs::{symlink, PermissionsExt};
        let d = tmp("private");
        let p = d.join("results.jsonl");
        fs::write(&p, format!("{}\n{}", rec(0, 0), &rec(1, 0)[..20])).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).unwrap();
        load(&p, &[3], Mode::Resume, |_| Ok(()), |_| {}).unwrap();
        let m = fs::metadata(d.join("results.jsonl.torn-1")).unwrap();
        assert_eq!(m.permissions().mode() & 0o777, 0o600);
        // A results.jsonl linked to another file: not read, not cut.
        let victim = d.join("victim");
        fs::write(&victim, format!("{}\n{}", rec(0, 0), &rec(1, 0)[..20])).unwrap();
        let l = d.join("linked.jsonl");
        symlink(&victim, &l).unwrap();
        for mode in [Mode::Resume, Mode::Report] {
            let e = load(&l, &[3], mode, |_| Ok(()), |_| {})
                .unwrap_err()
                .to_string();
            assert!(e.contains("linked.jsonl: is a symbolic link"), "{e}");
        }
        assert!(Results::open(&l).is_err());
        assert_eq!(
            fs::metadata(&victim).unwrap().len(),
            rec(0, 0).len() as u64 + 21
        );
        // Another user's results.jsonl: a report reads it, a resume refuses it.
        nix::unistd::chown(&victim, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
        assert!(load(&victim, &[3], Mode::Report, |_| Ok(()), |_| {}).is_ok());
        let e = load(&victim, &[3], Mode::Resume, |_| Ok(()), |_| {})
            .unwrap_err()
            .to_string();
        assert!(e.contains("victim: belongs to uid 65534"), "{e}");
        assert!(!d.join("victim.torn-1").exists());
        let _ = fs::remove_dir_all(d);
    }

    #[test]
    fn bad_lines_elsewhere_are_reported_with_their_line() {
        let d = tmp("bad");
        let p = d.join("results.jsonl");
        for (middle, what) in [
            ("garbage".to_string(), "not a sweep record"),
            (rec(7, 0), "point 7 of part 1 but that part has 3 point(s)"),
            (String::new(), "not a sweep record"),
            (
                r#"{"part":0,"point":1,"repeat":0,"values":{}}"#.to_string(),
                "neither a result nor an error",
            ),
            (
                r#"{"part":0,"point":1,"repeat":0,"values":{},"result":{"test":"stream"}}"#
                    .to_string(),
                "not a sweep record (a stream result that does not hold up: missing field",
            ),
            (
                rec(0, 0),
                "a second result for repeat 0 of point 0 of part 1 (line 1 has the first)",
            ),
            (
                // A torn record with the next one appended to it.
                format!("{}{}", &rec(1, 0)[..30], rec(1, 1)),
                "not a sweep record",
            ),
        ] {
            fs::write(&p, format!("{}\n{middle}\n{}\n", rec(0, 0), rec(2, 0))).unwrap();
            let e = load(&p, &[3], Mode::Resume, |_| Ok(()), |_| {})
                .unwrap_err()
                .to_string();
            assert!(e.starts_with(&format!("{}:2: ", p.display())), "{e}");
            assert!(e.contains(what), "{what:?} missing from {e}");
            let l = load(&p, &[3], Mode::Report, |_| Ok(()), |_| {}).unwrap();
            assert_eq!((l.records, l.skipped), (2, 1));
            assert!(l.warnings[0].contains(":2: "), "{:?}", l.warnings);
        }
        let _ = fs::remove_dir_all(d);
    }

    #[test]
    fn a_failed_append_leaves_no_partial_line() {
        let d = tmp("append");
        let p = d.join("results.jsonl");
        let mut r = Results::open(&p).unwrap();
        let one = serde_json::from_str::<Record>(&rec(0, 0)).unwrap();
        r.append(&one).unwrap();
        r.append(&one).unwrap();
        assert_eq!(
            fs::read_to_string(&p).unwrap(),
            format!("{}\n{}\n", rec(0, 0), rec(0, 0))
        );
        // /dev/full takes nothing: the error names the file.
        let mut full = Results {
            path: "/dev/full".into(),
            file: OpenOptions::new().write(true).open("/dev/full").unwrap(),
        };
        let e = full.append(&one).unwrap_err().to_string();
        assert!(
            e.starts_with("writing /dev/full failed: No space left"),
            "{e}"
        );
        let _ = fs::remove_dir_all(d);
    }

    #[test]
    fn files_are_replaced_whole() {
        let d = tmp("atomic");
        let p = d.join("spec.toml");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "two");
        assert_eq!(
            fs::read_dir(&d).unwrap().count(),
            1,
            "no temporary file left"
        );
        let e = write_atomic(&d.join("no/such/dir"), b"x").unwrap_err();
        assert!(e.to_string().contains("no/such/dir"), "{e}");
        let _ = fs::remove_dir_all(d);
    }
}
