//! Scheduling policy and priority of a thread: what `--napi-priority` and
//! `--gen-priority` ask for, set with `sched_setscheduler` (the `scheduler`
//! crate) and `setpriority` (rustix), read back from `/proc/<tid>/stat`,
//! and put back as it was.

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
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Priority::Other(n) => write!(f, "other:{n}"),
            Priority::Fifo(p) => write!(f, "fifo:{p}"),
            Priority::Rr(p) => write!(f, "rr:{p}"),
        }
    }
}

impl FromStr for Priority {
    type Err = String;

    /// `fifo:N` or `rr:N` (N 1 to 99), `other` or `other:NICE` (-20 to 19).
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
            _ => Err(format!(
                "{s:?}: give fifo:PRIO or rr:PRIO (PRIO 1 to 99), or other[:NICE] (NICE -20 to 19)"
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
            Some(p) => p.fmt(f),
            None => write!(f, "policy {} priority {}", self.policy, self.rt_priority),
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
    parse_stat(&stat).ok_or_else(|| PriorityError::Read {
        pid,
        source: io::Error::new(io::ErrorKind::InvalidData, "unexpected stat format"),
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
    let (policy, rt) = match priority {
        Priority::Other(_) => (scheduler::Policy::Other, 0),
        Priority::Fifo(p) => (scheduler::Policy::Fifo, i32::from(p)),
        Priority::Rr(p) => (scheduler::Policy::RoundRobin, i32::from(p)),
    };
    scheduler::set_policy(pid, policy, rt).map_err(|()| failed(io::Error::last_os_error()))?;
    if let Priority::Other(nice) = priority {
        let who = Pid::from_raw(pid);
        rustix::process::setpriority_process(who, nice)
            .map_err(|e| failed(io::Error::from_raw_os_error(e.raw_os_error())))?;
    }
    Ok(())
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
    if scheduler::set_policy(pid, policy, before.rt_priority as i32).is_err() {
        let e = io::Error::last_os_error();
        return if gone(&e) { Ok(()) } else { Err(failed(e)) };
    }
    if matches!(before.policy, 0 | 3) {
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
                nice: 5
            }
        );
        assert_eq!(s.as_priority(), Some(Priority::Fifo(50)));
        assert_eq!(parse_stat("42 (x) S 1"), None);
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
