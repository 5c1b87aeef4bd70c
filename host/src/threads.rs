//! Every thread of this process as the kernel accounts it: for each task
//! in /proc/self/task, `schedstat` (run ns, run-queue wait ns,
//! timeslices), `stat` (the core it last ran on), `status` (involuntary
//! context switches) and, when the kernel has it, `sched`
//! (`se.nr_migrations`). What a window makes of two samples is in
//! `results::threads`. The three formats are parsed here by hand (a few
//! lines each) rather than through the procfs crate, which is not in the
//! tree.

use std::{fs, io, path::Path};

pub use linerate_results::threads::{ThreadTimes, ThreadUse};

/// Why a thread's figures could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ThreadsError {
    /// A file of /proc could not be read.
    #[error("reading {path}: {error}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        error: io::Error,
    },
    /// A file of /proc did not read as expected.
    #[error("{path} does not read as expected: {text:?}")]
    Format {
        /// The file.
        path: String,
        /// Its first line, as read.
        text: String,
    },
}

/// At most this many threads are read (the process has a few dozen).
const MOST: usize = 4096;

/// Every thread of this process now, by task id. A thread that ends
/// between the listing and the reading of its files is left out.
pub fn sample() -> Result<Vec<ThreadTimes>, ThreadsError> {
    sample_of(Path::new("/proc/self/task"))
}

fn sample_of(dir: &Path) -> Result<Vec<ThreadTimes>, ThreadsError> {
    let read_err = |error| ThreadsError::Read {
        path: dir.display().to_string(),
        error,
    };
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).map_err(read_err)?.take(MOST) {
        let entry = entry.map_err(read_err)?;
        let Some(tid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        match read_task(&entry.path(), tid) {
            Ok(t) => out.push(t),
            // The thread ended since the listing.
            Err(_) if !entry.path().exists() => {}
            Err(e) => return Err(e),
        }
    }
    out.sort_by_key(|t| t.tid);
    Ok(out)
}

/// Thread `pid` of another process (a NAPI kernel thread), or none when
/// it is gone.
pub fn sample_kernel_thread(pid: i32) -> Result<Option<ThreadTimes>, ThreadsError> {
    let dir = Path::new("/proc").join(pid.to_string());
    match read_task(&dir, pid) {
        Ok(t) => Ok(Some(t)),
        Err(_) if !dir.exists() => Ok(None),
        Err(e) => Err(e),
    }
}

/// Whether this kernel keeps softirq time out of the interrupted task's
/// run time (CONFIG_IRQ_TIME_ACCOUNTING), from /boot/config-RELEASE;
/// none when that file cannot be read.
pub fn irq_time_accounted() -> Option<bool> {
    // The running kernel's configuration: read once per process (a result
    // asks for each set of cores it counts).
    static ACCOUNTED: std::sync::OnceLock<Option<bool>> = std::sync::OnceLock::new();
    *ACCOUNTED.get_or_init(|| {
        let release = fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
        let config = fs::read_to_string(format!("/boot/config-{}", release.trim())).ok()?;
        Some(config_says_irq_time(&config))
    })
}

fn config_says_irq_time(config: &str) -> bool {
    config
        .lines()
        .any(|l| l.trim() == "CONFIG_IRQ_TIME_ACCOUNTING=y")
}

/// One thread's figures from its directory under /proc/PID/task.
pub fn read_task(dir: &Path, tid: i32) -> Result<ThreadTimes, ThreadsError> {
    let read = |name: &str| {
        let path = dir.join(name);
        fs::read_to_string(&path).map_err(|error| ThreadsError::Read {
            path: path.display().to_string(),
            error,
        })
    };
    let bad = |name: &str, text: &str| ThreadsError::Format {
        path: dir.join(name).display().to_string(),
        text: text.lines().next().unwrap_or("").to_owned(),
    };
    let schedstat = read("schedstat")?;
    let (run_ns, wait_ns, slices) =
        parse_schedstat(&schedstat).ok_or_else(|| bad("schedstat", &schedstat))?;
    let stat = read("stat")?;
    let (name, core, (user_ticks, system_ticks)) =
        parse_stat(&stat).ok_or_else(|| bad("stat", &stat))?;
    let status = read("status")?;
    let nonvoluntary =
        field(&status, "nonvoluntary_ctxt_switches:").ok_or_else(|| bad("status", &status))?;
    // sched is there only with CONFIG_SCHED_DEBUG; its absence is no error.
    let migrations = read("sched")
        .ok()
        .and_then(|s| field(&s, "se.nr_migrations"));
    Ok(ThreadTimes {
        tid,
        name,
        run_ns,
        wait_ns,
        slices,
        core,
        nonvoluntary,
        migrations,
        user_ticks,
        system_ticks,
    })
}

/// schedstat: "RUN_NS WAIT_NS SLICES".
fn parse_schedstat(text: &str) -> Option<(u64, u64, u64)> {
    let mut f = text.split_whitespace().map(|x| x.parse::<u64>().ok());
    Some((f.next()??, f.next()??, f.next()??))
}

/// stat: "TID (COMM) STATE ..." where COMM may hold spaces and
/// parentheses; `utime` and `stime` are the 14th and 15th fields (the
/// 12th and 13th after COMM), `processor` the 39th (the 37th after COMM).
fn parse_stat(text: &str) -> Option<(String, usize, (u64, u64))> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let name = text.get(open + 1..close)?.to_owned();
    let after: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    let number = |i: usize| after.get(i)?.parse::<u64>().ok();
    let core = usize::try_from(number(36)?).ok()?;
    Some((name, core, (number(11)?, number(12)?)))
}

/// The number after `key` on its line (status's "key:\tN", sched's
/// "key   :   N").
fn field(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(key)?;
        rest.trim_start_matches(|c: char| c.is_whitespace() || c == ':')
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "4242 (lr-rx 0) (x)) R 1 2 3 0 -1 4194368 0 0 0 0 10 20 0 0 20 0 3 0 \
        123 0 0 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n";

    #[test]
    fn the_three_formats() {
        assert_eq!(parse_schedstat("123456 789 42\n"), Some((123_456, 789, 42)));
        assert_eq!(parse_schedstat("1 2\n"), None);
        assert_eq!(
            parse_stat(STAT),
            Some(("lr-rx 0) (x)".to_owned(), 1, (10, 20)))
        );
        assert_eq!(parse_stat("1 (a) R 1\n"), None);
        let status =
            "Name:\tlr-rx0\nvoluntary_ctxt_switches:\t7\nnonvoluntary_ctxt_switches:\t31\n";
        assert_eq!(field(status, "nonvoluntary_ctxt_switches:"), Some(31));
        let sched = "lr-rx0 (4242, #threads: 3)\n---\nse.exec_start   :   1.5\n\
            se.nr_migrations                             :                    9\n";
        assert_eq!(field(sched, "se.nr_migrations"), Some(9));
        assert_eq!(field(sched, "nr_switches"), None);
    }

    #[test]
    fn the_kernel_config_line() {
        assert!(config_says_irq_time("# x\nCONFIG_IRQ_TIME_ACCOUNTING=y\n"));
        assert!(!config_says_irq_time(
            "# CONFIG_IRQ_TIME_ACCOUNTING is not set\n"
        ));
    }

    #[test]
    fn a_task_directory() {
        let dir = tempfile::tempdir().unwrap();
        let task = dir.path().join("4242");
        fs::create_dir(&task).unwrap();
        fs::write(task.join("schedstat"), "5000 60 7\n").unwrap();
        fs::write(task.join("stat"), STAT).unwrap();
        fs::write(task.join("status"), "nonvoluntary_ctxt_switches:\t3\n").unwrap();
        fs::create_dir(dir.path().join("not-a-tid")).unwrap();
        let got = sample_of(dir.path()).unwrap();
        assert_eq!(
            got,
            vec![ThreadTimes {
                tid: 4242,
                name: "lr-rx 0) (x)".to_owned(),
                run_ns: 5000,
                wait_ns: 60,
                slices: 7,
                core: 1,
                nonvoluntary: 3,
                migrations: None,
                user_ticks: 10,
                system_ticks: 20,
            }]
        );
        fs::write(task.join("schedstat"), "garbage\n").unwrap();
        assert!(matches!(
            sample_of(dir.path()),
            Err(ThreadsError::Format { .. })
        ));
    }

    /// This process's own threads, as the kernel shows them: this one is
    /// among them and has had a timeslice (its run time may still read 0:
    /// the kernel adds a running task's time at ticks and switches).
    #[test]
    fn this_process() {
        let me = nix::unistd::gettid().as_raw();
        let all = sample().unwrap();
        let mine = all.iter().find(|t| t.tid == me).unwrap();
        assert!(mine.slices >= 1);
        assert!(mine.core < 4096);
    }
}
