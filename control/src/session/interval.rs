//! `--json-stream`: while a run goes, one JSON line per `--interval` on
//! stdout (iperf3 3.17's `--json-stream` habit): `{"event":"start",...}`
//! once, then `{"event":"interval","data":{...}}` with what each end's
//! workers counted over the interval, and the command ends the stream
//! with `{"event":"end","data":RESULT}`. For long runs and dashboards.

use std::{
    cell::{Cell, RefCell},
    time::{Duration, Instant},
};

use linerate_datapath::stats::CounterSnapshot;
use serde::Serialize;

/// One end's counters over one interval, summed over its workers.
#[derive(Debug, Serialize)]
struct EndInterval {
    /// Every worker counter, the interval's increase.
    counters: CounterSnapshot,
    /// Frames per second over the interval.
    frames_per_s: f64,
    /// Bytes (whole frames) per second, in MB/s (10^6).
    mb_per_s: f64,
}

/// One interval line's data.
#[derive(Debug, Serialize)]
struct Interval {
    /// Seconds since the stream began, at the interval's end.
    end_s: f64,
    /// The interval's length, s.
    seconds: f64,
    /// "warmup" or "window" (the measured window; the final result counts
    /// only its part of the run).
    phase: &'static str,
    /// The tx end (senders, rr clients), when it runs here.
    tx: Option<EndInterval>,
    /// The rx end (receivers, responders), when it runs here.
    rx: Option<EndInterval>,
}

#[derive(Serialize)]
struct Line<T: Serialize> {
    event: &'static str,
    data: T,
}

/// Writes one event line (a full disk or a closed reader: said once on
/// stderr, the run goes on and its result is still printed at the end).
pub fn event(event: &'static str, data: &impl Serialize, warned: &Cell<bool>) {
    let text = match serde_json::to_string(&Line { event, data }) {
        Ok(t) => t + "\n",
        Err(e) => format!("{{\"event\":\"error\",\"data\":{:?}}}\n", e.to_string()),
    };
    if let Err(e) = linerate_host::output::print(&text) {
        if !warned.replace(true) {
            eprintln!("linerate: warning: --json-stream: {e}; the run goes on");
        }
    }
}

/// The interval lines of one run.
pub struct Intervals {
    every: Duration,
    began: Instant,
    last: RefCell<(Instant, CounterSnapshot, CounterSnapshot)>,
    warned: Cell<bool>,
}

fn sum(list: &[CounterSnapshot]) -> CounterSnapshot {
    list.iter()
        .fold(CounterSnapshot::default(), |acc, c| acc.add(c))
}

impl Intervals {
    /// Starts the stream: the start line.
    pub fn start(every: Duration, queues: u32) -> Self {
        #[derive(Serialize)]
        struct Start {
            interval_s: f64,
            queues: u32,
        }
        let warned = Cell::new(false);
        event(
            "start",
            &Start {
                interval_s: every.as_secs_f64(),
                queues,
            },
            &warned,
        );
        let now = Instant::now();
        Self {
            every,
            began: now,
            last: RefCell::new((now, CounterSnapshot::default(), CounterSnapshot::default())),
            warned,
        }
    }

    /// Writes an interval line when one is due; `read` gives each end's
    /// workers' counters (None for an end that does not run here).
    pub fn offer(
        &self,
        in_window: bool,
        read: impl FnOnce() -> (Option<Vec<CounterSnapshot>>, Option<Vec<CounterSnapshot>>),
    ) {
        let now = Instant::now();
        let mut last = self.last.borrow_mut();
        if now.duration_since(last.0) < self.every {
            return;
        }
        let (tx, rx) = read();
        let seconds = now.duration_since(last.0).as_secs_f64();
        let end = |now: Option<CounterSnapshot>, before: &CounterSnapshot| {
            now.map(|n| {
                let counters = n.since(before);
                EndInterval {
                    frames_per_s: counters.frames as f64 / seconds,
                    mb_per_s: counters.bytes as f64 / seconds / 1e6,
                    counters,
                }
            })
        };
        let (tx, rx) = (tx.map(|v| sum(&v)), rx.map(|v| sum(&v)));
        let line = Interval {
            end_s: now.duration_since(self.began).as_secs_f64(),
            seconds,
            phase: if in_window { "window" } else { "warmup" },
            tx: end(tx, &last.1),
            rx: end(rx, &last.2),
        };
        event("interval", &line, &self.warned);
        *last = (now, tx.unwrap_or_default(), rx.unwrap_or_default());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_counts_the_increase_over_its_length() {
        let iv = Intervals::start(Duration::ZERO, 1);
        let snap = |frames, bytes| CounterSnapshot {
            frames,
            bytes,
            ..Default::default()
        };
        // Two workers: summed; the second offer counts what came since.
        iv.offer(false, || (Some(vec![snap(10, 640), snap(5, 320)]), None));
        let before = iv.last.borrow().1;
        assert_eq!((before.frames, before.bytes), (15, 960));
        iv.offer(true, || (Some(vec![snap(20, 1280), snap(5, 320)]), None));
        let after = iv.last.borrow().1;
        assert_eq!((after.frames, after.bytes), (25, 1600));
        assert_eq!(after.since(&before).frames, 10);
    }
}
