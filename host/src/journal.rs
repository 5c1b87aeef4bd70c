//! The journal of what a run changes in the kernel: each setting's value
//! before is written down (and synced) before it is changed, one file per
//! run under [`DIR`] (root's, 0700; each file 0600), held locked by the
//! run for its life. The run removes its file once it has put everything
//! back; a run that could not (SIGKILL, a crash) leaves it, unlocked, and
//! whoever comes next (any run, `lab up|down`, `fleet down`, `doctor`)
//! replays it (`putback`). A journal is only ever read if it is a regular
//! file of the user reading it that no one else may write, in a directory
//! likewise; every entry is validated again as it is read (names as the
//! kernel checks them, values in range): a planted journal makes root
//! write nothing.
//!
//! The format, one entry a line, fields split by one space, `-` for no
//! namespace:
//!
//! ```text
//! linerate-journal 1
//! threaded NETNS IFACE 0|1|2
//! napi NETNS IFACE ID DEFER_HARD_IRQS GRO_FLUSH_TIMEOUT_NS IRQ_SUSPEND_TIMEOUT_NS|-
//! sched NETNS IFACE ID PID POLICY RT_PRIORITY NICE
//! affinity NETNS IFACE ID PID CORE,CORE,...
//! ```
//!
//! A last line without its newline was torn by the crash and is left out.

use std::{
    fs::{self, File, OpenOptions},
    io::{self, Read, Write},
    os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt},
    path::{Path, PathBuf},
};

use linerate_datapath::{names, netdev::NapiConfig, priority::Sched};

/// Where the journals are.
pub const DIR: &str = "/run/linerate/journal";

/// The first line of every journal.
const HEADER: &str = "linerate-journal 1";

/// The most of a journal that is read.
const CAP: u64 = 1 << 20;

/// The highest core a CPU set holds.
const MAX_CORE: usize = 1023;

/// One setting as it was before a run changed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// An interface's NAPI mode (`/sys/class/net/IFACE/threaded`).
    Threaded {
        /// The interface's namespace.
        netns: Option<String>,
        /// The interface.
        iface: String,
        /// The mode before, as the file holds it: 0 softirq, 1 threaded,
        /// 2 threaded busy polling (Linux 6.17+).
        mode: u8,
    },
    /// A NAPI's settings (napi-set).
    Napi {
        /// The interface's namespace.
        netns: Option<String>,
        /// The interface.
        iface: String,
        /// The NAPI's id.
        id: u32,
        /// Its settings.
        config: NapiConfig,
    },
    /// A NAPI thread's scheduling.
    Sched {
        /// The interface's namespace.
        netns: Option<String>,
        /// The interface.
        iface: String,
        /// The NAPI's id.
        id: u32,
        /// Its thread, as napi-get gave it.
        pid: i32,
        /// The scheduling.
        sched: Sched,
    },
    /// A NAPI thread's CPU affinity.
    Affinity {
        /// The interface's namespace.
        netns: Option<String>,
        /// The interface.
        iface: String,
        /// The NAPI's id.
        id: u32,
        /// Its thread, as napi-get gave it.
        pid: i32,
        /// The cores it could run on.
        cores: Vec<usize>,
    },
}

impl Entry {
    /// The interface the entry is about, with its namespace.
    pub fn iface(&self) -> (Option<&str>, &str) {
        match self {
            Entry::Threaded { netns, iface, .. }
            | Entry::Napi { netns, iface, .. }
            | Entry::Sched { netns, iface, .. }
            | Entry::Affinity { netns, iface, .. } => (netns.as_deref(), iface),
        }
    }

    /// The entry as its line (without the newline).
    pub fn line(&self) -> String {
        let (ns, iface) = self.iface();
        let ns = ns.unwrap_or("-");
        match self {
            Entry::Threaded { mode, .. } => format!("threaded {ns} {iface} {mode}"),
            Entry::Napi { id, config, .. } => format!(
                "napi {ns} {iface} {id} {} {} {}",
                config.defer_hard_irqs,
                config.gro_flush_timeout_ns,
                config
                    .irq_suspend_timeout_ns
                    .map_or("-".to_string(), |t| t.to_string())
            ),
            Entry::Sched { id, pid, sched, .. } => format!(
                "sched {ns} {iface} {id} {pid} {} {} {} {}",
                sched.policy,
                sched.rt_priority,
                sched.nice,
                sched.slice_ns.map_or("-".to_string(), |s| s.to_string())
            ),
            Entry::Affinity { id, pid, cores, .. } => {
                let cores: Vec<String> = cores.iter().map(usize::to_string).collect();
                format!("affinity {ns} {iface} {id} {pid} {}", cores.join(","))
            }
        }
    }

    /// Parses and validates one line.
    pub fn parse(line: &str) -> Result<Entry, String> {
        let f: Vec<&str> = line.split(' ').collect();
        let want = |n: usize| {
            if f.len() == n {
                Ok(())
            } else {
                Err(format!("{} fields where {n} belong", f.len()))
            }
        };
        let (netns, iface) = match (f.get(1), f.get(2)) {
            (Some(ns), Some(iface)) => (netns(ns)?, name(iface)?),
            _ => return Err("too few fields".into()),
        };
        let id = || number::<u32>(f[3], "NAPI id", 1, u64::from(u32::MAX));
        let pid = || number::<i32>(f[4], "pid", 1, i32::MAX as u64);
        match f[0] {
            "threaded" => {
                want(4)?;
                Ok(Entry::Threaded {
                    netns,
                    iface,
                    mode: number(f[3], "NAPI mode", 0, 2)?,
                })
            }
            "napi" => {
                want(7)?;
                let config = NapiConfig {
                    defer_hard_irqs: number(f[4], "defer-hard-irqs", 0, i32::MAX as u64)?,
                    gro_flush_timeout_ns: number(f[5], "gro-flush-timeout", 0, u64::MAX)?,
                    irq_suspend_timeout_ns: match f[6] {
                        "-" => None,
                        v => Some(number(v, "irq-suspend-timeout", 0, u64::MAX)?),
                    },
                };
                Ok(Entry::Napi {
                    netns,
                    iface,
                    id: id()?,
                    config,
                })
            }
            "sched" => {
                // A line written before the slice was kept has 8 fields.
                if f.len() != 8 {
                    want(9)?;
                }
                let policy = number::<u32>(f[5], "policy", 0, 5)?;
                if policy == 4 {
                    return Err("policy 4 does not exist".into());
                }
                let rt_max = if matches!(policy, 1 | 2) { 99 } else { 0 };
                let rt_min = if matches!(policy, 1 | 2) { 1 } else { 0 };
                let nice = f[7]
                    .parse::<i32>()
                    .ok()
                    .filter(|n| (-20..=19).contains(n))
                    .ok_or_else(|| format!("nice {:?} is not from -20 to 19", f[7]))?;
                Ok(Entry::Sched {
                    netns,
                    iface,
                    id: id()?,
                    pid: pid()?,
                    sched: Sched {
                        policy,
                        rt_priority: number(f[6], "real-time priority", rt_min, rt_max)?,
                        nice,
                        slice_ns: match f.get(8).copied() {
                            None | Some("-") => None,
                            Some(v) => Some(number(v, "slice", 1, u64::MAX)?),
                        },
                    },
                })
            }
            "affinity" => {
                want(6)?;
                let cores = f[5]
                    .split(',')
                    .map(|c| number::<usize>(c, "core", 0, MAX_CORE as u64))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Entry::Affinity {
                    netns,
                    iface,
                    id: id()?,
                    pid: pid()?,
                    cores,
                })
            }
            kind => Err(format!("{kind:?} is not a kind of entry")),
        }
    }
}

fn netns(s: &str) -> Result<Option<String>, String> {
    if s == "-" {
        return Ok(None);
    }
    names::check_netns(s).map_err(|e| e.to_string())?;
    Ok(Some(s.to_string()))
}

fn name(s: &str) -> Result<String, String> {
    names::check_iface(s).map_err(|e| e.to_string())?;
    Ok(s.to_string())
}

/// A decimal number from `lo` to `hi` (digits only: no sign, no space).
fn number<T: TryFrom<u64>>(s: &str, what: &str, lo: u64, hi: u64) -> Result<T, String> {
    let bad = || format!("{what} {s:?} is not a number from {lo} to {hi}");
    if s.is_empty() || s.len() > 20 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let n: u64 = s.parse().map_err(|_| bad())?;
    if !(lo..=hi).contains(&n) {
        return Err(bad());
    }
    T::try_from(n).map_err(|_| bad())
}

/// What went wrong with a journal.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// The journal could not be written, so nothing was changed.
    #[error("writing the journal {} failed (nothing was changed): {error}", path.display())]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// What the kernel said.
        error: io::Error,
    },
    /// A journal or its directory that is not trusted.
    #[error("{}: {why}", path.display())]
    Refused {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        why: String,
    },
}

fn euid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// Refuses metadata of something not ours or that others may write.
fn trusted(path: &Path, m: &fs::Metadata, dir: bool) -> Result<(), JournalError> {
    let refused = |why: String| JournalError::Refused {
        path: path.to_path_buf(),
        why,
    };
    let kind_ok = if dir {
        m.file_type().is_dir()
    } else {
        m.file_type().is_file()
    };
    if !kind_ok {
        return Err(refused(format!(
            "is not a {}: left alone",
            if dir { "directory" } else { "regular file" }
        )));
    }
    if m.uid() != euid() {
        return Err(refused(format!(
            "belongs to uid {}, not {}: left alone (remove it if it is not yours)",
            m.uid(),
            euid()
        )));
    }
    if m.mode() & 0o022 != 0 {
        return Err(refused(format!(
            "is writable by others (mode {:o}): left alone (remove it)",
            m.mode() & 0o7777
        )));
    }
    if !dir && m.nlink() != 1 {
        return Err(refused(
            "has other names (hard links): left alone (remove it)".into(),
        ));
    }
    Ok(())
}

/// Checks the journal directory `dir`, made (0700) if absent.
fn open_dir(dir: &Path, create: bool) -> Result<bool, JournalError> {
    let write_error = |error| JournalError::Write {
        path: dir.to_path_buf(),
        error,
    };
    if create {
        if let Some(parent) = dir.parent() {
            fs::create_dir_all(parent).map_err(write_error)?;
        }
        match fs::DirBuilder::new().mode(0o700).create(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(write_error(e)),
        }
    }
    match fs::symlink_metadata(dir) {
        Ok(m) => trusted(dir, &m, true).map(|()| true),
        Err(e) if e.kind() == io::ErrorKind::NotFound && !create => Ok(false),
        Err(e) => Err(write_error(e)),
    }
}

/// Takes `f`'s exclusive lock (held by the open file, so until it is
/// closed, however the process ends); with `now`, false if another holds
/// it.
fn flock(f: &File, now: bool) -> io::Result<bool> {
    if !now {
        return f.lock().map(|()| true);
    }
    match f.try_lock() {
        Ok(()) => Ok(true),
        Err(fs::TryLockError::WouldBlock) => Ok(false),
        Err(fs::TryLockError::Error(e)) => Err(e),
    }
}

/// One run's journal, locked while the run lives.
#[derive(Debug)]
pub struct Journal {
    file: File,
    path: PathBuf,
}

impl Journal {
    /// Starts this run's journal in `dir` (made 0700 if absent).
    pub fn create(dir: &Path) -> Result<Self, JournalError> {
        open_dir(dir, true)?;
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let name = format!("{}-{stamp}", std::process::id());
        // Made under a name replays skip, locked, then given its name.
        let hidden = dir.join(format!(".{name}"));
        let path = dir.join(format!("{name}.journal"));
        let write_error = |error| JournalError::Write {
            path: path.clone(),
            error,
        };
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&hidden)
            .map_err(write_error)?;
        flock(&file, false).map_err(write_error)?;
        writeln!(file, "{HEADER}")
            .and_then(|()| file.sync_data())
            .and_then(|()| fs::rename(&hidden, &path))
            .map_err(write_error)?;
        Ok(Journal { file, path })
    }

    /// Writes `entry` down, synced, before the setting is changed.
    pub fn record(&mut self, entry: &Entry) -> Result<(), JournalError> {
        writeln!(self.file, "{}", entry.line())
            .and_then(|()| self.file.sync_data())
            .map_err(|error| JournalError::Write {
                path: self.path.clone(),
                error,
            })
    }

    /// Everything was put back: the journal goes.
    pub fn remove(self) {
        let _ = fs::remove_file(&self.path);
    }

    /// The file, for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// One journal left by a run that ended without putting things back.
#[derive(Debug)]
pub struct Left {
    /// The file.
    pub path: PathBuf,
    /// Its entries, in the order they were written.
    pub entries: Vec<Entry>,
    /// Lines refused, with why.
    pub refused: Vec<String>,
    file: File,
}

impl Left {
    /// Replayed: the journal goes (still locked, so no one replays it
    /// twice).
    pub fn remove(self) {
        let _ = fs::remove_file(&self.path);
        drop(self.file);
    }
}

/// Reads a journal's text: the header, then entries; a torn last line is
/// left out.
pub fn parse(text: &str) -> Result<(Vec<Entry>, Vec<String>), String> {
    let mut lines = text.split_inclusive('\n');
    match lines.next() {
        Some(h) if h == format!("{HEADER}\n") => {}
        Some(h) => {
            return Err(format!(
                "does not start with {HEADER:?} (found {:?}): not a journal of this version, left alone",
                h.trim_end().chars().take(40).collect::<String>()
            ))
        }
        None => return Ok((Vec::new(), Vec::new())),
    }
    let (mut entries, mut refused) = (Vec::new(), Vec::new());
    for (n, line) in lines.enumerate() {
        let Some(line) = line.strip_suffix('\n') else {
            break; // torn
        };
        match Entry::parse(line) {
            Ok(e) => entries.push(e),
            Err(why) => refused.push(format!("line {}: {why}", n + 2)),
        }
    }
    Ok((entries, refused))
}

/// The journals in `dir` whose run is gone (their lock free), each
/// locked for the caller; journals refused (not ours, writable by others,
/// not of this version), with why.
pub fn left(dir: &Path) -> (Vec<Left>, Vec<JournalError>) {
    let (mut found, mut refused) = (Vec::new(), Vec::new());
    match open_dir(dir, false) {
        Ok(true) => {}
        Ok(false) => return (found, refused),
        Err(e) => return (found, vec![e]),
    }
    let Ok(list) = fs::read_dir(dir) else {
        return (found, refused);
    };
    let mut paths: Vec<PathBuf> = list
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "journal"))
        .collect();
    paths.sort();
    for path in paths {
        match open_left(&path) {
            Ok(Some(l)) => found.push(l),
            Ok(None) => {}
            Err(e) => refused.push(e),
        }
    }
    (found, refused)
}

/// Opens one journal if its run is gone (None: a live run holds it).
fn open_left(path: &Path) -> Result<Option<Left>, JournalError> {
    let refused = |why: String| JournalError::Refused {
        path: path.to_path_buf(),
        why,
    };
    let mut file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| refused(format!("cannot be opened: {e}")))?;
    let m = file
        .metadata()
        .map_err(|e| refused(format!("cannot be read: {e}")))?;
    trusted(path, &m, false)?;
    if m.len() > CAP {
        return Err(refused(format!("is larger than {CAP} bytes: left alone")));
    }
    if !flock(&file, true).map_err(|e| refused(format!("cannot be locked: {e}")))? {
        return Ok(None);
    }
    let mut text = String::new();
    (&mut file)
        .take(CAP)
        .read_to_string(&mut text)
        .map_err(|e| refused(format!("cannot be read: {e}")))?;
    let (entries, refused_lines) = parse(&text).map_err(refused)?;
    Ok(Some(Left {
        path: path.to_path_buf(),
        entries,
        refused: refused_lines,
        file,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn entries() -> Vec<Entry> {
        vec![
            Entry::Threaded {
                netns: Some("lr-b".into()),
                iface: "lr-b0".into(),
                mode: 0,
            },
            Entry::Napi {
                netns: None,
                iface: "eth0".into(),
                id: 8193,
                config: NapiConfig {
                    defer_hard_irqs: 0,
                    gro_flush_timeout_ns: 0,
                    irq_suspend_timeout_ns: Some(0),
                },
            },
            Entry::Napi {
                netns: Some("lr-b".into()),
                iface: "lr-b0".into(),
                id: 8194,
                config: NapiConfig::default(),
            },
            Entry::Sched {
                netns: Some("lr-b".into()),
                iface: "lr-b0".into(),
                id: 8193,
                pid: 4242,
                sched: Sched {
                    policy: 0,
                    rt_priority: 0,
                    nice: -5,
                    slice_ns: Some(1_400_000),
                },
            },
            Entry::Affinity {
                netns: Some("lr-b".into()),
                iface: "lr-b0".into(),
                id: 8193,
                pid: 4242,
                cores: vec![0, 1],
            },
        ]
    }

    fn temp() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        fs::set_permissions(d.path(), fs::Permissions::from_mode(0o700)).unwrap();
        d
    }

    #[test]
    fn every_entry_reads_back_as_written() {
        for e in entries() {
            assert_eq!(Entry::parse(&e.line()), Ok(e.clone()), "{}", e.line());
        }
        assert_eq!(
            entries()[1].line(),
            "napi - eth0 8193 0 0 0",
            "the format is the documented one"
        );
        assert_eq!(entries()[4].line(), "affinity lr-b lr-b0 8193 4242 0,1");
        assert_eq!(
            entries()[3].line(),
            "sched lr-b lr-b0 8193 4242 0 0 -5 1400000"
        );
        // A line written before the slice was kept: read, with no slice.
        let Ok(Entry::Sched { sched, .. }) = Entry::parse("sched lr-b lr-b0 8193 4242 0 0 -5")
        else {
            panic!("an earlier sched line is refused")
        };
        assert_eq!((sched.nice, sched.slice_ns), (-5, None));
        assert!(Entry::parse("sched lr-b lr-b0 8193 4242 0 0 -5 0").is_err());
    }

    #[test]
    fn planted_entries_are_refused_at_their_field() {
        for (line, why) in [
            ("threaded - ../../../etc/x 0", "not an interface name"),
            ("threaded /run/netns/x lr-b0 0", "namespace"),
            ("threaded - lr-b0 3", "NAPI mode"),
            ("threaded - lr-b0 1 1", "5 fields where 4 belong"),
            ("napi - lr-b0 0 1 1 -", "NAPI id"),
            ("napi - lr-b0 1 -1 1 -", "defer-hard-irqs"),
            ("napi - lr-b0 1 2147483648 1 -", "defer-hard-irqs"),
            ("sched - lr-b0 1 0 0 0 0", "pid"),
            ("sched - lr-b0 1 7 1 100 0", "real-time priority"),
            ("sched - lr-b0 1 7 0 5 0", "real-time priority"),
            ("sched - lr-b0 1 7 6 0 0", "policy"),
            ("sched - lr-b0 1 7 0 0 20", "nice"),
            ("affinity - lr-b0 1 7 0,1024", "core"),
            ("affinity - lr-b0 1 7 ", "core"),
            ("chmod - lr-b0", "not a kind of entry"),
            ("", "too few fields"),
        ] {
            let e = Entry::parse(line).unwrap_err();
            assert!(e.contains(why), "{line:?}: {e}");
        }
    }

    #[test]
    fn a_torn_last_line_is_left_out_and_a_bad_line_refused_alone() {
        let text = format!(
            "{HEADER}\n{}\nthreaded - ../x 1\n{}\nnapi - lr-b0 81",
            entries()[0].line(),
            entries()[3].line()
        );
        let (got, refused) = parse(&text).unwrap();
        assert_eq!(got, vec![entries()[0].clone(), entries()[3].clone()]);
        assert_eq!(refused.len(), 1);
        assert!(refused[0].starts_with("line 3: "), "{refused:?}");
        assert!(parse("linerate-journal 2\nthreaded - lr-b0 1\n").is_err());
        assert!(parse("#!/bin/sh\n").is_err());
        assert_eq!(parse("").unwrap(), (vec![], vec![]));
    }

    #[test]
    fn written_before_then_found_only_once_the_run_is_gone() {
        let d = temp();
        let dir = d.path().join("journal");
        let mut j = Journal::create(&dir).unwrap();
        for e in entries() {
            j.record(&e).unwrap();
        }
        let m = fs::metadata(j.path()).unwrap();
        assert_eq!(m.mode() & 0o777, 0o600);
        assert_eq!(fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        // A live run's journal is its own: not replayed.
        let (found, refused) = left(&dir);
        assert!(found.is_empty() && refused.is_empty());
        // The run dies: its file stays, its lock goes.
        let path = j.path().to_path_buf();
        drop(j);
        let (found, refused) = left(&dir);
        assert!(refused.is_empty(), "{refused:?}");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].path, path);
        assert_eq!(found[0].entries, entries());
        // Found by one replayer: locked against another.
        assert!(left(&dir).0.is_empty());
        found.into_iter().for_each(Left::remove);
        // Replayed once: gone, nothing more to replay.
        assert!(!path.exists());
        assert!(left(&dir).0.is_empty());
    }

    #[test]
    fn a_run_that_put_everything_back_leaves_no_journal() {
        let d = temp();
        let dir = d.path().join("journal");
        let mut j = Journal::create(&dir).unwrap();
        j.record(&entries()[0]).unwrap();
        j.remove();
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 0);
        let (found, refused) = left(&dir);
        assert!(found.is_empty() && refused.is_empty());
        // No directory at all: nothing to replay, nothing made.
        let none = d.path().join("none");
        assert!(left(&none).0.is_empty() && left(&none).1.is_empty());
        assert!(!none.exists());
    }

    #[test]
    fn foreign_or_writable_journals_are_refused_and_left() {
        let d = temp();
        let dir = d.path().join("journal");
        drop(Journal::create(&dir).unwrap());
        let j = fs::read_dir(&dir).unwrap().next().unwrap().unwrap().path();
        // Writable by others.
        fs::set_permissions(&j, fs::Permissions::from_mode(0o622)).unwrap();
        let (found, refused) = left(&dir);
        assert!(found.is_empty());
        assert!(
            refused[0].to_string().contains("writable by others"),
            "{}",
            refused[0]
        );
        assert!(j.exists(), "a refused journal is left alone");
        fs::set_permissions(&j, fs::Permissions::from_mode(0o600)).unwrap();
        // A link planted in its place.
        let link = dir.join("planted.journal");
        std::os::unix::fs::symlink(&j, &link).unwrap();
        let (found, refused) = left(&dir);
        assert_eq!(found.len(), 1, "the real one");
        assert!(
            refused[0].to_string().contains("planted.journal"),
            "{}",
            refused[0]
        );
        fs::remove_file(&link).unwrap();
        // A hard link to another file.
        fs::hard_link(&j, dir.join("hard.journal")).unwrap();
        let (_, refused) = left(&dir);
        assert!(refused.iter().all(|e| e.to_string().contains("hard links")));
        fs::remove_file(dir.join("hard.journal")).unwrap();
        // Another user's journal (root can plant one to check).
        if nix::unistd::geteuid().is_root() {
            let nobody = nix::unistd::Uid::from_raw(65534);
            nix::unistd::chown(&j, Some(nobody), None).unwrap();
            let (found, refused) = left(&dir);
            assert!(found.is_empty());
            assert!(
                refused[0]
                    .to_string()
                    .contains("belongs to uid 65534, not 0"),
                "{}",
                refused[0]
            );
            nix::unistd::chown(&j, Some(nix::unistd::Uid::from_raw(0)), None).unwrap();
        }
        // A directory others may write: nothing in it is read.
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
        let (found, refused) = left(&dir);
        assert!(found.is_empty());
        assert!(refused[0].to_string().contains("writable by others"));
        assert!(Journal::create(&dir).is_err(), "nor written in");
    }
}
