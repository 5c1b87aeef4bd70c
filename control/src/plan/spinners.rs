//! Real-time spinners: a thread at a real-time policy (`fifo`, `rr`) that
//! never sleeps holds its core against every normal thread (the kernel's
//! own workers, the other end, linerate's timer) but for the kernel's
//! real-time throttling. On every core at once they stall the machine
//! (measured: ~955 ms stalls, a 5 s run taking 17 s). Refused before
//! anything changes: one core stays for the system, or the spinner sleeps.

use anyhow::{bail, Result};
use linerate_datapath::priority::Priority;

/// Threads of one kind a run starts: on these cores, at this priority,
/// spinning or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Threads {
    /// The option that sets their priority, as it is written.
    pub option: &'static str,
    /// Why they spin (e.g. `--rx-wait busy`), for the message.
    pub why: String,
    /// Their cores.
    pub cores: Vec<usize>,
    /// Their priority, if one is asked for.
    pub priority: Option<Priority>,
    /// Whether they spin (never sleep while they wait).
    pub spins: bool,
}

impl Threads {
    fn real_time_spinner(&self) -> Option<Priority> {
        self.priority
            .filter(|p| matches!(p, Priority::Fifo(_) | Priority::Rr(_)) && self.spins)
    }
}

/// Refuses real-time spinners on every one of the `online` cores.
pub fn check(online: usize, threads: &[Threads]) -> Result<()> {
    let spinners: Vec<(&Threads, Priority)> = threads
        .iter()
        .filter_map(|t| Some((t, t.real_time_spinner()?)))
        .collect();
    let held = |c: usize| spinners.iter().any(|(t, _)| t.cores.contains(&c));
    if spinners.is_empty() || !(0..online).all(held) {
        return Ok(());
    }
    let named: Vec<String> = spinners
        .iter()
        .map(|(t, p)| format!("{} {p} with {} (cores {:?})", t.option, t.why, t.cores))
        .collect();
    bail!(
        "{}: real-time threads that never sleep would hold every core of this machine ({online}), starving the system (the kernel's own threads, the other end, the run's timer) for as long as the run: leave one core free of them (--rx-cores/--tx-cores), let them sleep (--rx-wait wait), or give them a normal priority (other)",
        named.join(", ")
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rx(cores: &[usize], priority: Option<Priority>, spins: bool) -> Threads {
        Threads {
            option: "--rx-priority",
            why: "--rx-wait busy".into(),
            cores: cores.to_vec(),
            priority,
            spins,
        }
    }

    #[test]
    fn real_time_spinners_on_every_core_are_refused() {
        // The run: two queues on two cores, fifo:99, busy.
        let e = check(2, &[rx(&[1, 0], Some(Priority::Fifo(99)), true)]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--rx-priority fifo:99 with --rx-wait busy (cores [1, 0]): real-time threads that never sleep would hold every core of this machine (2), starving the system (the kernel's own threads, the other end, the run's timer) for as long as the run: leave one core free of them (--rx-cores/--tx-cores), let them sleep (--rx-wait wait), or give them a normal priority (other)"
        );
        assert!(check(1, &[rx(&[0], Some(Priority::Rr(1)), true)]).is_err());
        // Two kinds of spinners sharing the machine between them.
        let generator = Threads {
            option: "--gen-priority",
            why: "the generator".into(),
            cores: vec![0],
            priority: Some(Priority::Rr(10)),
            spins: true,
        };
        let both = [rx(&[1], Some(Priority::Fifo(5)), true), generator.clone()];
        let e = check(2, &both).unwrap_err().to_string();
        assert!(e.starts_with("--rx-priority fifo:5 with --rx-wait busy (cores [1]), --gen-priority rr:10 with the generator (cores [0]): "), "{e}");
        assert!(check(3, &both).is_ok(), "core 2 stays for the system");
    }

    #[test]
    fn a_free_core_a_sleeping_or_normal_thread_passes() {
        let fifo = Some(Priority::Fifo(99));
        // One core stays free.
        assert!(check(2, &[rx(&[1, 1], fifo, true)]).is_ok());
        assert!(check(4, &[rx(&[0, 1, 2], fifo, true)]).is_ok());
        // The spinner sleeps.
        assert!(check(2, &[rx(&[0, 1], fifo, false)]).is_ok());
        // Normal policy, or none asked.
        assert!(check(2, &[rx(&[0, 1], Some(Priority::Other(-20)), true)]).is_ok());
        assert!(check(2, &[rx(&[0, 1], None, true)]).is_ok());
        assert!(check(2, &[]).is_ok());
    }
}
