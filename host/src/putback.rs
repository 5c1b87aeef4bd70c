//! Putting back what the journals of runs that ended without cleaning up
//! (SIGKILL, a crash) say they changed: each entry checked against the
//! kernel as it is now (a NAPI thread only if napi-get still gives that
//! pid for that NAPI of that interface: never a thread found by name),
//! newest first, each journal removed once every entry of it is back or
//! gone with its interface. Called at the start of every run, by `lab
//! up|down`, `fleet down` and `doctor`, which report what they put back.

use std::path::Path;

use linerate_datapath::{netdev, priority};

use crate::journal::{self, Entry, Journal, JournalError};

/// What a run changed in the kernel: each setting written down in the
/// run's journal before it is changed ([`Changes::record`]), put back when
/// dropped (at the end of the run, on every error path, after a signal,
/// on a panic), newest first; the journal goes once everything is back.
#[derive(Debug, Default)]
pub struct Changes {
    journal: Option<Journal>,
    entries: Vec<Entry>,
}

impl Changes {
    /// Writes down `before`, the setting as it is, before it is changed;
    /// an error means it must not be changed.
    pub fn record(&mut self, before: Entry) -> Result<(), JournalError> {
        let journal = match &mut self.journal {
            Some(j) => j,
            None => self
                .journal
                .insert(Journal::create(Path::new(journal::DIR))?),
        };
        journal.record(&before)?;
        self.entries.push(before);
        Ok(())
    }
}

impl Drop for Changes {
    fn drop(&mut self) {
        let mut failed = false;
        for e in self.entries.drain(..).rev() {
            if let Err(why) = put_back(&e) {
                failed = true;
                let (netns, iface) = e.iface();
                eprintln!(
                    "linerate: warning: could not put back a setting of {}: {why}",
                    on(netns, iface)
                );
            }
        }
        match self.journal.take() {
            Some(j) if failed => eprintln!(
                "linerate: warning: what was not put back stays in {}: the next run, `linerate lab up` or `linerate doctor` tries again",
                j.path().display()
            ),
            Some(j) => j.remove(),
            None => {}
        }
    }
}

/// Whether writing `threaded` failed because the interface has no NAPI
/// (the kernel says EOPNOTSUPP, or EIO on some versions).
pub fn no_napi(error: &anyhow::Error) -> bool {
    error
        .chain()
        .filter_map(|c| c.downcast_ref::<std::io::Error>())
        .any(|io| {
            matches!(
                io.raw_os_error(),
                Some(nix::libc::EIO | nix::libc::EOPNOTSUPP)
            )
        })
}

/// What a replay put back and what it could not.
#[derive(Debug, Default)]
pub struct Report {
    /// Settings put back, in words.
    pub restored: Vec<String>,
    /// Journals or entries refused or not put back, in words.
    pub problems: Vec<String>,
}

impl Report {
    /// Whether there is nothing to say.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.restored.is_empty() && self.problems.is_empty()
    }

    /// Prints what was put back and what was not, as warnings.
    pub fn warn(&self) {
        for r in &self.restored {
            eprintln!("linerate: warning: put back what a run that did not end cleanly left: {r}");
        }
        for p in &self.problems {
            eprintln!("linerate: warning: a run's journal: {p}");
        }
    }
}

/// Replays the journals left in [`journal::DIR`] (root only: no one else
/// changes the kernel).
pub fn replay_all() -> Report {
    if !nix::unistd::geteuid().is_root() {
        return Report::default();
    }
    replay(Path::new(journal::DIR), &mut |e| put_back(e))
}

/// Replays the journals left in `dir` through `apply` (Ok: what was done,
/// if anything; Err: why not).
pub fn replay(
    dir: &Path,
    apply: &mut dyn FnMut(&Entry) -> Result<Option<String>, String>,
) -> Report {
    let mut report = Report::default();
    let (left, refused) = journal::left(dir);
    report
        .problems
        .extend(refused.into_iter().map(|e| e.to_string()));
    for l in left {
        let mut failed = false;
        for why in &l.refused {
            report
                .problems
                .push(format!("{}: {why}: left out", l.path.display()));
        }
        for e in l.entries.iter().rev() {
            match apply(e) {
                Ok(Some(done)) => report.restored.push(done),
                Ok(None) => {}
                Err(why) => {
                    failed = true;
                    report.problems.push(format!(
                        "{}: could not put back {:?}: {why}",
                        l.path.display(),
                        e.line()
                    ));
                }
            }
        }
        if !failed {
            l.remove();
        }
    }
    report
}

fn on(netns: Option<&str>, iface: &str) -> String {
    match netns {
        Some(ns) => format!("{iface} (namespace {ns})"),
        None => iface.to_string(),
    }
}

/// Puts one setting back as the kernel is now; Ok(None) when it is back
/// already or its interface, NAPI or thread is gone.
pub fn put_back(entry: &Entry) -> Result<Option<String>, String> {
    use crate::sysfs::{read, write, Attr};
    let (netns, iface) = entry.iface();
    let (ns, name) = (netns.map(str::to_string), iface.to_string());
    let at = on(netns, iface);
    match entry.clone() {
        Entry::Threaded { mode, .. } => {
            if !crate::iface::exists(netns, iface) {
                return Ok(None);
            }
            let want = mode.to_string();
            let now = read(netns, iface, Attr::Threaded).map_err(|e| format!("{e:#}"))?;
            if now == want {
                return Ok(None);
            }
            match write(netns, iface, Attr::Threaded, &want) {
                Ok(()) => {}
                // NAPI went with the XDP program: softirq is all there is.
                Err(e) if mode == 0 && no_napi(&e) => return Ok(None),
                Err(e) => return Err(format!("{e:#}")),
            }
            Ok(Some(format!(
                "{at}: NAPI {}",
                ["in softirq", "threaded", "threaded busy polling"][usize::from(mode)]
            )))
        }
        Entry::Napi { id, config, .. } => netdev::in_netns(ns.as_deref(), move |nd| {
            let Ok(index) = netdev::ifindex(&name) else {
                return Ok(None);
            };
            let napis = nd.napis(index)?;
            match napis.iter().find(|n| n.id == id) {
                Some(n) if n.config != config => {
                    nd.set(id, &config)?;
                    Ok(Some(format!(
                        "{at}: NAPI {id} defer-hard-irqs {}, gro-flush-timeout {} ns{}",
                        config.defer_hard_irqs,
                        config.gro_flush_timeout_ns,
                        config
                            .irq_suspend_timeout_ns
                            .map_or(String::new(), |t| format!(", irq-suspend-timeout {t} ns"))
                    )))
                }
                _ => Ok(None),
            }
        })
        .map_err(|e| e.to_string()),
        Entry::Sched { id, pid, sched, .. } => {
            if !is_thread_of(ns, name, id, pid)? {
                return Ok(None);
            }
            let now = priority::read(pid).map_err(|e| e.to_string())?;
            let slice_as_was = sched.slice_ns.is_none() || now.slice_ns == sched.slice_ns;
            if (now.policy, now.rt_priority, now.nice)
                == (sched.policy, sched.rt_priority, sched.nice)
                && slice_as_was
            {
                return Ok(None);
            }
            priority::restore(pid, &sched).map_err(|e| e.to_string())?;
            Ok(Some(format!(
                "{at}: NAPI {id}'s thread {pid} from {now} back to {sched}"
            )))
        }
        Entry::Affinity { id, pid, cores, .. } => {
            if !is_thread_of(ns, name, id, pid)? {
                return Ok(None);
            }
            let now = crate::napi::affinity(pid).map(|s| crate::napi::cores_of(&s));
            if now.as_deref() == Some(&cores[..]) || now.is_none() {
                return Ok(None);
            }
            if !crate::napi::set_cores(pid, &cores) {
                return Err(format!("setting thread {pid}'s CPU affinity failed"));
            }
            Ok(Some(format!(
                "{at}: NAPI {id}'s thread {pid} back on cores {cores:?}"
            )))
        }
    }
}

/// Whether napi-get gives `pid` as the thread of NAPI `id` of `iface`.
fn is_thread_of(netns: Option<String>, iface: String, id: u32, pid: i32) -> Result<bool, String> {
    netdev::in_netns(netns.as_deref(), move |nd| {
        let Ok(index) = netdev::ifindex(&iface) else {
            return Ok(false);
        };
        Ok(nd
            .napis(index)?
            .iter()
            .any(|n| n.id == id && n.pid.and_then(|p| i32::try_from(p).ok()) == Some(pid)))
    })
    .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::Journal;
    use std::os::unix::fs::PermissionsExt;

    fn entry(iface: &str) -> Entry {
        Entry::Threaded {
            netns: None,
            iface: iface.into(),
            mode: 0,
        }
    }

    #[test]
    fn a_replay_puts_back_newest_first_once_and_keeps_what_failed() {
        let d = tempfile::tempdir().unwrap();
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let dir = d.path().join("j");
        let mut j = Journal::create(&dir).unwrap();
        for name in ["a0", "b0", "c0"] {
            j.record(&entry(name)).unwrap();
        }
        drop(j);
        let mut seen = Vec::new();
        let report = replay(&dir, &mut |e| {
            let (_, iface) = e.iface();
            seen.push(iface.to_string());
            Ok((iface != "b0").then(|| format!("{iface} back")))
        });
        assert_eq!(seen, ["c0", "b0", "a0"]);
        assert_eq!(report.restored, ["c0 back", "a0 back"]);
        assert!(report.problems.is_empty(), "{:?}", report.problems);
        // Idempotent: replayed once, the journal is gone.
        let again = replay(&dir, &mut |_| panic!("replayed twice"));
        assert!(again.is_empty());

        // One entry that cannot be put back keeps its journal for the next.
        let mut j = Journal::create(&dir).unwrap();
        j.record(&entry("d0")).unwrap();
        drop(j);
        let report = replay(&dir, &mut |_| Err("EPERM".into()));
        assert_eq!(report.problems.len(), 1);
        assert!(report.problems[0].ends_with("could not put back \"threaded - d0 0\": EPERM"));
        let report = replay(&dir, &mut |_| Ok(Some("d0 back".into())));
        assert_eq!(report.restored, ["d0 back"]);
        assert!(replay(&dir, &mut |_| panic!("replayed twice")).is_empty());
    }

    #[test]
    fn a_live_runs_journal_is_not_replayed() {
        let d = tempfile::tempdir().unwrap();
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let dir = d.path().join("j");
        let mut j = Journal::create(&dir).unwrap();
        j.record(&entry("a0")).unwrap();
        assert!(replay(&dir, &mut |_| panic!("a live run's")).is_empty());
        j.remove();
    }
}
