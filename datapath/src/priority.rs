//! Scheduling policy and priority of a thread: what `--napi-priority`,
//! `--gen-priority` and `--rx-priority` ask for, set with
//! `sched_setscheduler` (the `scheduler` crate), `setpriority` (rustix) or
//! `sched_setattr` (a slice of its own: [`crate::sys::set_fair_slice`]),
//! read back from `/proc/<tid>/stat` (and `sched`), and put back as it was.

use std::{fmt, io, str::FromStr};

use rustix::process::Pid;

/// A thread's scheduling: a real-time policy at a priority (1-99), above
/// every normal thread, or the normal policy at a nice value (-20-19).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Priority {
    /// SCHED_OTHER at this nice value.
    Other(i32),
    /// SCHED_FIFO: runs until it blocks, never time-sliced behind a normal
    /// thread.
    Fifo(u8),
    /// SCHED_RR: as FIFO, time-sliced among its equals.
    Rr(u8),
    /// SCHED_OTHER at nice 0 with a slice of its own, in us (100 to
    /// 100,000; Linux 6.12+): a shorter slice than the default (some
    /// 3 ms here) lets a thread that wakes preempt sooner, with no
    /// real-time priority.
    Slice(u32),
}

/// The slices a `slice:US` may ask for, us (EEVDF clamps to these).
pub const SLICE_US: std::ops::RangeInclusive<u32> = 100..=100_000;

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Priority::Other(n) => write!(f, "other:{n}"),
            Priority::Fifo(p) => write!(f, "fifo:{p}"),
            Priority::Rr(p) => write!(f, "rr:{p}"),
            Priority::Slice(us) => write!(f, "slice:{us}"),
        }
    }
}

impl FromStr for Priority {
    type Err = String;

    /// `fifo:N` or `rr:N` (N 1 to 99), `other` or `other:NICE` (-20 to
    /// 19), `slice:US` (100 to 100,000).
    fn from_str(s: &str) -> Result<Self, String> {
        let (policy, value) = match s.split_once(':') {
            Some((p, v)) => (p, Some(v)),
            None => (s, None),
        };
        let rt = |v: Option<&str>| -> Result<u8, String> {
            match v.map(str::parse::<u8>) {
                Some(Ok(p)) if (1..=99).contains(&p) => Ok(p),
                _ => Err(format!(
                    "{s:?}: a real-time priority is 1 to 99, e.g. fifo:50"
                )),
            }
        };
        match policy {
            "fifo" => rt(value).map(Priority::Fifo),
            "rr" => rt(value).map(Priority::Rr),
            "other" => match value.map(str::parse::<i32>) {
                None => Ok(Priority::Other(0)),
                Some(Ok(n)) if (-20..=19).contains(&n) => Ok(Priority::Other(n)),
                _ => Err(format!("{s:?}: a nice value is -20 to 19, e.g. other:-5")),
            },
            "slice" => match value.map(str::parse::<u32>) {
                Some(Ok(us)) if SLICE_US.contains(&us) => Ok(Priority::Slice(us)),
                _ => Err(format!(
                    "{s:?}: a slice is 100 to 100000 us (Linux clamps it to 0.1-100 ms), e.g. slice:200"
                )),
            },
            _ => Err(format!(
                "{s:?}: give fifo:PRIO or rr:PRIO (PRIO 1 to 99), other[:NICE] (NICE -20 to 19), or slice:US (US 100 to 100000)"
            )),
        }
    }
}

/// Why a thread's scheduling could not be read or set.
#[derive(Debug, thiserror::Error)]
pub enum PriorityError {
    /// The thread is gone, or its stat file is not as expected.
    #[error("reading the scheduling of thread {pid}: {source}")]
    Read {
        /// The thread.
        pid: i32,
        /// Why.
        source: io::Error,
    },
    /// The kernel refused.
    #[error("setting thread {pid} to {priority}: {source}{hint}")]
    Set {
        /// The thread.
        pid: i32,
        /// What was asked.
        priority: String,
        /// The kernel's reason.
        source: io::Error,
        /// What to do about it.
        hint: &'static str,
    },
}

/// A thread's scheduling as the kernel reports it (`/proc/<tid>/stat`):
/// what is put back after a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sched {
    /// The policy's number (0 SCHED_OTHER, 1 FIFO, 2 RR, 3 BATCH, 5 IDLE,
    /// 6 DEADLINE, 7 EXT).
    pub policy: u32,
    /// Real-time priority (0 for the normal policies).
    pub rt_priority: u32,
    /// Nice value.
    pub nice: i32,
    /// Its slice, ns (`se.slice` of `/proc/<tid>/sched`; none where the
    /// kernel does not report it, or as read from a journal written before
    /// it was kept).
    pub slice_ns: Option<u64>,
}

impl Sched {
    /// As `--napi-priority` writes it, where it is one of those.
    pub fn as_priority(&self) -> Option<Priority> {
        let rt = u8::try_from(self.rt_priority).ok();
        match self.policy {
            0 => Some(Priority::Other(self.nice)),
            1 => rt.map(Priority::Fifo),
            2 => rt.map(Priority::Rr),
            _ => None,
        }
    }
}

impl fmt::Display for Sched {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.as_priority() {
            Some(p) => p.fmt(f)?,
            None => write!(f, "policy {} priority {}", self.policy, self.rt_priority)?,
        }
        match self.slice_ns {
            Some(ns) => write!(f, " (slice {} us)", ns / 1000),
            None => Ok(()),
        }
    }
}

/// Parses `/proc/<tid>/stat`: nice is field 19, rt_priority 40, policy 41
/// (fields counted from 1; the command name, field 2, may hold spaces and
/// parentheses, so fields are counted after its last `)`).
pub fn parse_stat(stat: &str) -> Option<Sched> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3.
    let field = |n: usize| fields.get(n - 3).copied();
    Some(Sched {
        nice: field(19)?.parse().ok()?,
        rt_priority: field(40)?.parse().ok()?,
        policy: field(41)?.parse().ok()?,
        slice_ns: None,
    })
}

/// The scheduling of thread `pid` (0: the calling thread).
pub fn read(pid: i32) -> Result<Sched, PriorityError> {
    let path = if pid == 0 {
        "/proc/thread-self/stat".to_string()
    } else {
        format!("/proc/{pid}/stat")
    };
    let stat =
        std::fs::read_to_string(path).map_err(|source| PriorityError::Read { pid, source })?;
    let sched = parse_stat(&stat).ok_or_else(|| PriorityError::Read {
        pid,
        source: io::Error::new(io::ErrorKind::InvalidData, "unexpected stat format"),
    })?;
    Ok(Sched {
        slice_ns: slice_ns(pid),
        ..sched
    })
}

/// Sets thread `pid` (0: the calling thread) to `priority`.
pub fn set(pid: i32, priority: Priority) -> Result<(), PriorityError> {
    let failed = |source: io::Error| PriorityError::Set {
        pid,
        priority: priority.to_string(),
        hint: if source.raw_os_error() == Some(libc::EPERM) {
            " (real-time policies and negative nice values need root or CAP_SYS_NICE)"
        } else {
            ""
        },
        source,
    };
    let rt = |policy, p: u8| {
        scheduler::set_policy(pid, policy, i32::from(p)).map_err(|()| io::Error::last_os_error())
    };
    match priority {
        Priority::Slice(us) => set_slice(pid, us),
        // sched_setattr, not sched_setscheduler: it also gives back the
        // default slice of a thread that had one of its own.
        Priority::Other(nice) => crate::sys::set_fair_slice(pid, nice, 0),
        Priority::Fifo(p) => rt(scheduler::Policy::Fifo, p),
        Priority::Rr(p) => rt(scheduler::Policy::RoundRobin, p),
    }
    .map_err(failed)
}

/// Gives thread `pid` a slice of `us` and checks that the kernel kept it
/// (`se.slice` of `/proc/<tid>/sched`): a kernel before 6.12 ignores
/// sched_runtime for SCHED_OTHER.
fn set_slice(pid: i32, us: u32) -> io::Result<()> {
    crate::sys::set_fair_slice(pid, 0, u64::from(us) * 1000)?;
    match slice_ns(pid) {
        Some(ns) if ns == u64::from(us) * 1000 => Ok(()),
        Some(ns) => Err(io::Error::other(format!(
            "the kernel kept a slice of {} us (a slice of a thread's own needs Linux 6.12+)",
            ns / 1000
        ))),
        None => Err(io::Error::other(
            "no se.slice in /proc/<tid>/sched to check it (a slice of a thread's own needs Linux 6.12+)",
        )),
    }
}

/// The slice of thread `pid` (0: the calling thread), ns, as
/// `/proc/<tid>/sched` reports it (`se.slice`).
pub fn slice_ns(pid: i32) -> Option<u64> {
    let path = if pid == 0 {
        "/proc/thread-self/sched".to_string()
    } else {
        format!("/proc/{pid}/sched")
    };
    let text = std::fs::read_to_string(path).ok()?;
    parse_slice(&text)
}

/// `se.slice` of a `/proc/<tid>/sched` text.
fn parse_slice(sched: &str) -> Option<u64> {
    sched.lines().find_map(|l| {
        let (key, value) = l.split_once(':')?;
        (key.trim() == "se.slice").then(|| value.trim().parse().ok())?
    })
}

/// Puts thread `pid` back to `before`; a thread that is gone needs
/// nothing. Policies this cannot set (DEADLINE, EXT) are left.
pub fn restore(pid: i32, before: &Sched) -> Result<(), PriorityError> {
    let policy = match before.policy {
        0 => scheduler::Policy::Other,
        1 => scheduler::Policy::Fifo,
        2 => scheduler::Policy::RoundRobin,
        3 => scheduler::Policy::Batch,
        5 => scheduler::Policy::Idle,
        _ => return Ok(()),
    };
    let gone = |e: &io::Error| e.raw_os_error() == Some(libc::ESRCH);
    let failed = |source: io::Error| PriorityError::Set {
        pid,
        priority: before.to_string(),
        hint: "",
        source,
    };
    if before.policy == 0 {
        // SCHED_OTHER at its nice with the default slice (a slice of its
        // own given for the run goes), or the slice it had if that was
        // not the default.
        let mut set = crate::sys::set_fair_slice(pid, before.nice, 0);
        if let (Ok(()), Some(ns)) = (&set, before.slice_ns) {
            if slice_ns(pid).is_some_and(|now| now != ns) {
                set = crate::sys::set_fair_slice(pid, before.nice, ns);
            }
        }
        return match set {
            Err(e) if !gone(&e) => Err(failed(e)),
            _ => Ok(()),
        };
    }
    if scheduler::set_policy(pid, policy, before.rt_priority as i32).is_err() {
        let e = io::Error::last_os_error();
        return if gone(&e) { Ok(()) } else { Err(failed(e)) };
    }
    if before.policy == 3 {
        let who = Pid::from_raw(pid);
        if let Err(e) = rustix::process::setpriority_process(who, before.nice) {
            let e = io::Error::from_raw_os_error(e.raw_os_error());
            if !gone(&e) {
                return Err(failed(e));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_parse_and_print() {
        assert_eq!("fifo:50".parse(), Ok(Priority::Fifo(50)));
        assert_eq!("rr:1".parse(), Ok(Priority::Rr(1)));
        assert_eq!("other".parse(), Ok(Priority::Other(0)));
        assert_eq!("other:-5".parse(), Ok(Priority::Other(-5)));
        assert_eq!(Priority::Fifo(99).to_string(), "fifo:99");
        assert_eq!(Priority::Other(19).to_string(), "other:19");
        assert_eq!("slice:200".parse(), Ok(Priority::Slice(200)));
        assert_eq!(Priority::Slice(100).to_string(), "slice:100");
        for bad in ["fifo", "fifo:0", "fifo:100", "rr:x", "other:20", "idle", ""] {
            assert!(bad.parse::<Priority>().is_err(), "{bad}");
        }
    }

    #[test]
    fn stat_fields_after_the_name() {
        // A name with spaces and a parenthesis; nice 5, rt_priority 50,
        // policy 1.
        let mut f: Vec<String> = (3..=52).map(|n| n.to_string()).collect();
        f[19 - 3] = "5".into();
        f[40 - 3] = "50".into();
        f[41 - 3] = "1".into();
        let stat = format!("42 (napi/a b) c) {}", f.join(" "));
        let s = parse_stat(&stat).unwrap();
        assert_eq!(
            s,
            Sched {
                policy: 1,
                rt_priority: 50,
                nice: 5,
                slice_ns: None,
            }
        );
        assert_eq!(s.as_priority(), Some(Priority::Fifo(50)));
        assert_eq!(parse_stat("42 (x) S 1"), None);
    }

    #[test]
    fn slices_parse_within_what_the_kernel_takes() {
        for bad in ["slice", "slice:99", "slice:100001", "slice:-5", "slice:x"] {
            assert!(bad.parse::<Priority>().is_err(), "{bad}");
        }
        let sched = "x (1, #threads: 1)\n---\nse.exec_start : 1.5\nse.slice                                     :              1400000\nse.nr_migrations : 3\n";
        assert_eq!(parse_slice(sched), Some(1_400_000));
        assert_eq!(parse_slice("se.vruntime : 5\n"), None);
    }

    /// A thread given a slice of its own has it (the kernel's own
    /// report), and back to the default when set to `other` again.
    #[test]
    fn a_thread_given_a_slice_has_it() {
        std::thread::spawn(|| {
            let default = slice_ns(0).expect("Linux 6.12+ reports se.slice");
            set(0, Priority::Slice(250)).unwrap();
            assert_eq!(slice_ns(0), Some(250_000));
            set(0, Priority::Other(0)).unwrap();
            assert_eq!(slice_ns(0), Some(default));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn this_thread_reads_as_set() {
        // Raising nice needs no privilege; a thread of its own, so the
        // test's other threads keep theirs.
        std::thread::spawn(|| {
            set(0, Priority::Other(7)).unwrap();
            assert_eq!(read(0).unwrap().as_priority(), Some(Priority::Other(7)));
        })
        .join()
        .unwrap();
    }
}
