//! The machine's noise floor as a result holds it (issue 34, item 3): the
//! one-way hand-off latency between the run's sending and receiving cores,
//! spinning and woken, and the time a spinning loop there lost in gaps,
//! measured just before the run's window; and how far the run's own p99
//! lies above it.

use serde::{Deserialize, Serialize};

/// The floor between the run's cores, measured just before its window.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Noise {
    /// The core the stamps left from (the sender's, rr: the client's).
    pub from_core: usize,
    /// The core they arrived on (the receiver's, rr: the responder's).
    pub to_core: usize,
    /// How long the floor took, milliseconds (2/5 spinning, 2/5 woken,
    /// 1/5 gaps).
    pub budget_ms: u64,
    /// Stamps handed over in each of the two hand-offs (received).
    pub stamps: u64,
    /// Both threads spinning on shared memory: one-way median, us.
    pub spin_p50_us: f64,
    /// Spinning: 99th percentile, us: the median of ten consecutive
    /// slices' (a stall of the host, a few ms a few times a second, in one
    /// slice does not make it the floor; p99.9 and max keep it).
    pub spin_p99_us: f64,
    /// Spinning: 99.9th percentile, us.
    pub spin_p99_9_us: f64,
    /// Spinning: the largest, us.
    pub spin_max_us: f64,
    /// The reader asleep until woken (a futex wake-up): median, us.
    pub wake_p50_us: f64,
    /// Woken: 99th percentile, us, the median of ten slices' as spinning.
    pub wake_p99_us: f64,
    /// Woken: 99.9th percentile, us.
    pub wake_p99_9_us: f64,
    /// Woken: the largest, us.
    pub wake_max_us: f64,
    /// Percent of the time a spinning loop lost in gaps over 1 us, the
    /// larger of the two cores' (as sysjitter and osnoise count it).
    pub gap_pct: f64,
    /// Gaps over 1 ms on either core.
    pub gaps_over_1ms: u64,
    /// The largest gap on either core, us.
    pub max_gap_us: f64,
}

/// Which floor a run's latency is held against: a spinning reader's when
/// the receiving side spins, a woken one's when it sleeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    /// The receiving loop spins (`busy`).
    Spinning,
    /// It sleeps until woken (every other wait mode).
    Woken,
}

impl Reader {
    /// From a wait mode's name as results record it (`busy`, `wait`, ...).
    pub fn of_wait(name: &str) -> Self {
        if name == "busy" {
            Self::Spinning
        } else {
            Self::Woken
        }
    }
}

impl Noise {
    /// The p99 of the floor that applies, one way, us.
    pub fn p99_for(&self, reader: Reader) -> f64 {
        match reader {
            Reader::Spinning => self.spin_p99_us,
            Reader::Woken => self.wake_p99_us,
        }
    }

    /// The table's line: the floor, then how far `p99_us` lies above it.
    /// `hops` is how many one-way hand-offs a latency holds (a stream's
    /// one-way latency 1, rr's response time 2).
    pub fn line(&self, p99_us: f64, reader: Reader, hops: u32) -> String {
        let floor = self.p99_for(reader) * f64::from(hops);
        let which = match reader {
            Reader::Spinning => "spin",
            Reader::Woken => "wake",
        };
        let against = if hops == 1 {
            format!("the {which} floor")
        } else {
            format!("{hops} hand-offs at the {which} floor")
        };
        let ratio = if floor > 0.0 {
            format!("{:.1}x {against}", p99_us / floor)
        } else {
            format!("{against} not resolved")
        };
        format!(
            "  noise floor (core {} -> {}, {} stamps each way, just before the window): spin p99 {:.1} us, wake p99 {:.1} us, gaps {:.2} % (max {:.0} us); p99 {:.1} us = {ratio}",
            self.from_core,
            self.to_core,
            self.stamps,
            self.spin_p99_us,
            self.wake_p99_us,
            self.gap_pct,
            self.max_gap_us,
            p99_us,
        )
    }
}

/// Why a run across two hosts has no floor.
pub const ACROSS_HOSTS: &str =
    "across two hosts: the floor is a hand-off between two cores of one host";

/// A result's `noise`: the floor measured, or why it was not (as
/// `doctor`'s `noise_floor` says it: `{"not_measured": WHY}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Floor {
    /// Measured just before the window.
    Measured(Noise),
    /// Not measured (`--no-floor`, one core for both ends, two hosts).
    NotMeasured {
        /// Why.
        not_measured: String,
    },
}

impl Floor {
    /// Not measured, because `why`.
    pub fn not_measured(why: impl Into<String>) -> Self {
        Self::NotMeasured {
            not_measured: why.into(),
        }
    }

    /// The figures, when measured.
    pub fn measured(&self) -> Option<&Noise> {
        match self {
            Self::Measured(n) => Some(n),
            Self::NotMeasured { .. } => None,
        }
    }

    /// The table's line: the floor and the run's p99 against it, or why
    /// there is none.
    pub fn line(&self, p99_us: f64, reader: Reader, hops: u32) -> String {
        match self {
            Self::Measured(n) => n.line(p99_us, reader, hops),
            Self::NotMeasured { not_measured } => {
                format!("  noise floor: not measured ({not_measured})")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn floor() -> Noise {
        Noise {
            from_core: 0,
            to_core: 1,
            budget_ms: 250,
            stamps: 10_000,
            spin_p99_us: 2.0,
            wake_p99_us: 40.0,
            gap_pct: 1.25,
            max_gap_us: 70.0,
            ..Noise::default()
        }
    }

    #[test]
    fn a_spinning_reader_is_held_against_the_spin_floor_a_sleeping_one_the_wake_floor() {
        assert_eq!(Reader::of_wait("busy"), Reader::Spinning);
        for w in ["wait", "busy-poll", "prefer-busy-poll", "irq-suspend"] {
            assert_eq!(Reader::of_wait(w), Reader::Woken, "{w}");
        }
        let n = floor();
        assert!(n
            .line(7.0, Reader::Spinning, 1)
            .ends_with("p99 7.0 us = 3.5x the spin floor"));
        assert!(n
            .line(100.0, Reader::Woken, 1)
            .ends_with("p99 100.0 us = 2.5x the wake floor"));
        // rr's response time crosses twice.
        assert!(n
            .line(8.0, Reader::Spinning, 2)
            .ends_with("p99 8.0 us = 2.0x 2 hand-offs at the spin floor"));
        assert!(n.line(8.0, Reader::Spinning, 1).contains(
            "noise floor (core 0 -> 1, 10000 stamps each way, just before the window): spin p99 2.0 us, wake p99 40.0 us, gaps 1.25 % (max 70 us)"
        ));
    }

    #[test]
    fn an_unresolved_floor_gives_no_ratio() {
        let n = Noise {
            spin_p99_us: 0.0,
            ..floor()
        };
        assert!(n
            .line(5.0, Reader::Spinning, 1)
            .ends_with("p99 5.0 us = the spin floor not resolved"));
    }

    #[test]
    fn a_result_without_a_floor_reads_as_none() {
        #[derive(Deserialize)]
        struct R {
            #[serde(default)]
            noise: Option<Floor>,
        }
        let r: R = serde_json::from_str("{}").unwrap();
        assert!(r.noise.is_none());
        let measured = Floor::Measured(floor());
        let back: Floor = serde_json::from_str(&serde_json::to_string(&measured).unwrap()).unwrap();
        assert_eq!(back, measured);
        assert_eq!(back.measured(), Some(&floor()));
        // Not measured: `{"not_measured": WHY}`, as doctor's floor says it.
        let not = Floor::not_measured("--no-floor");
        let text = serde_json::to_string(&not).unwrap();
        assert_eq!(text, r#"{"not_measured":"--no-floor"}"#);
        let back: Floor = serde_json::from_str(&text).unwrap();
        assert_eq!((back.measured(), &back), (None, &not));
        assert_eq!(
            not.line(5.0, Reader::Woken, 1),
            "  noise floor: not measured (--no-floor)"
        );
    }
}
