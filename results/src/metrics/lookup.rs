//! Metric names: looked up, listed and refused with the names that exist.

use super::super::run::RunResult;
use crate::{fleet::Aggregate, parts::BAD_CHECKSUM, system::Host, system::IfCounters};
/// A counter of a family: a field of its snapshot, declared with the
/// worker counters in `datapath::stats` (that family is declared there).
use linerate_counters::stats::Counter;
use linerate_counters::steer::SteerStats;
use linerate_counters::{socket::XskStats, stats::CounterSnapshot};

use super::lists::{
    figures, refused_counters, Figure, Read, SteeringAt, Tests, INTERFACE, STEERING,
    WORKER_COUNTERS, XSK_EVENTS,
};
use super::measured::{of_samples, Measured};

/// What a metric is read from, by the same names: a run's result, or a
/// fleet's aggregate (a result of its test; its figures only: the
/// counters of a side's workers, sockets, steering programs and
/// interfaces are each pair's, not summed there).
#[derive(Clone, Copy)]
pub enum Source<'a> {
    /// A local or two-host run's result.
    Run(&'a RunResult),
    /// A fleet run's aggregate.
    Fleet(&'a Aggregate),
}

impl<'a> From<&'a RunResult> for Source<'a> {
    fn from(r: &'a RunResult) -> Self {
        Self::Run(r)
    }
}

impl<'a> From<&'a Aggregate> for Source<'a> {
    fn from(a: &'a Aggregate) -> Self {
        Self::Fleet(a)
    }
}

/// A metric of the list, found by its name.
#[derive(Clone, Copy)]
pub enum Metric {
    /// A figure.
    Figure(&'static Figure),
    /// `counters.SIDE.NAME` (whole run, summed over the side's workers) or
    /// `counters.SIDE.NAME_per_s` (over the window).
    Worker {
        /// The counter.
        counter: &'static Counter<CounterSnapshot>,
        /// Whose workers: tx (senders, rr clients) or rx.
        side: Host,
        /// Per second over the window.
        per_s: bool,
    },
    /// `frames.NAME` of a stream: a counter of refused frames
    /// ([`Counter::refused`]) summed over the receivers, whole run.
    Refused(&'static Counter<CounterSnapshot>),
    /// `xsk.SIDE.NAME`: summed over the side's workers.
    Xsk {
        /// The statistic.
        counter: &'static Counter<XskStats>,
        /// Whose workers.
        side: Host,
    },
    /// `xdp.NAME`, `xdp.client.NAME`, `xdp.responder.NAME`.
    Steering {
        /// The counter.
        counter: &'static Counter<SteerStats>,
        /// Which program's.
        at: SteeringAt,
    },
    /// `interfaces.SIDE.NAME`.
    Interface {
        /// The counter.
        counter: &'static Counter<IfCounters>,
        /// Which interface: the sending or the receiving one.
        side: Host,
    },
}

pub(super) fn side_name(h: Host) -> &'static str {
    match h {
        Host::Tx => "tx",
        Host::Rx => "rx",
    }
}

pub(super) fn side_named(s: &str) -> Option<Host> {
    match s {
        "tx" => Some(Host::Tx),
        "rx" => Some(Host::Rx),
        _ => None,
    }
}

pub(super) fn in_list<T>(list: &'static [Counter<T>], name: &str) -> Option<&'static Counter<T>> {
    list.iter().find(|c| c.name == name)
}

/// Sums a field over the workers of `side` (None when it has none).
pub(super) fn over_workers(
    r: &RunResult,
    side: Host,
    read: impl Fn(&super::super::parts::WorkerReport) -> u64,
) -> Option<u64> {
    let mine: Vec<_> = r
        .common()
        .workers
        .iter()
        .filter(|w| w.side() == side)
        .collect();
    (!mine.is_empty()).then(|| mine.iter().map(|w| read(w)).sum())
}

impl Metric {
    /// The metric called `name`, if the list has it.
    pub fn find(name: &str) -> Option<Self> {
        if let Some(f) = figures().find(|f| f.name == name) {
            return Some(Self::Figure(f));
        }
        let parts: Vec<&str> = name.split('.').collect();
        match parts.as_slice() {
            ["counters", side, field] => {
                let side = side_named(side)?;
                match field
                    .strip_suffix("_per_s")
                    .and_then(|f| in_list(WORKER_COUNTERS, f))
                {
                    Some(counter) => Some(Self::Worker {
                        counter,
                        side,
                        per_s: true,
                    }),
                    None => Some(Self::Worker {
                        counter: in_list(WORKER_COUNTERS, field)?,
                        side,
                        per_s: false,
                    }),
                }
            }
            ["frames", field] => refused_counters()
                .find(|c| c.name == *field)
                .map(Self::Refused),
            ["xsk", side, field] => Some(Self::Xsk {
                counter: in_list(XSK_EVENTS, field)?,
                side: side_named(side)?,
            }),
            ["xdp", field] => Some(Self::Steering {
                counter: in_list(STEERING, field)?,
                at: SteeringAt::Stream,
            }),
            ["xdp", at, field] => Some(Self::Steering {
                counter: in_list(STEERING, field)?,
                at: match *at {
                    "client" => SteeringAt::Client,
                    "responder" => SteeringAt::Responder,
                    _ => return None,
                },
            }),
            ["interfaces", side, field] => Some(Self::Interface {
                counter: in_list(INTERFACE, field)?,
                side: side_named(side)?,
            }),
            _ => None,
        }
    }

    /// Its name.
    pub fn name(&self) -> String {
        match self {
            Self::Figure(f) => f.name.to_string(),
            Self::Worker {
                counter,
                side,
                per_s,
            } => format!(
                "counters.{}.{}{}",
                side_name(*side),
                counter.name,
                if *per_s { "_per_s" } else { "" }
            ),
            Self::Refused(counter) => format!("frames.{}", counter.name),
            Self::Xsk { counter, side } => format!("xsk.{}.{}", side_name(*side), counter.name),
            Self::Steering { counter, at } => match at {
                SteeringAt::Stream => format!("xdp.{}", counter.name),
                SteeringAt::Client => format!("xdp.client.{}", counter.name),
                SteeringAt::Responder => format!("xdp.responder.{}", counter.name),
            },
            Self::Interface { counter, side } => {
                format!("interfaces.{}.{}", side_name(*side), counter.name)
            }
        }
    }

    /// The tests whose results have it.
    pub fn tests(&self) -> Tests {
        match self {
            Self::Figure(f) => f.read.tests(),
            Self::Steering {
                at: SteeringAt::Stream,
                ..
            } => Tests {
                stream: true,
                rr: false,
            },
            Self::Steering { .. } => Tests {
                stream: false,
                rr: true,
            },
            Self::Refused(_) => Tests {
                stream: true,
                rr: false,
            },
            _ => Tests::BOTH,
        }
    }

    /// Its value in a result or a fleet's aggregate: the one lookup of a
    /// metric (None: not measured there, such as a loss of a run without
    /// a receiver of ours, or a latency of no sample: see [`Measured`]).
    pub fn value<'a>(&self, from: impl Into<Source<'a>>) -> Option<f64> {
        match from.into() {
            Source::Run(r) => self.in_result(r),
            // A fleet's aggregate is a result of its test: its figures
            // read as any result's; the counters of workers, sockets,
            // steering programs and interfaces are each pair's own.
            Source::Fleet(a) => match self {
                Self::Figure(_) | Self::Refused(_) if a.holds(&self.name()) => {
                    self.in_result(&a.result)
                }
                _ => None,
            },
        }
    }

    fn in_result(&self, r: &RunResult) -> Option<f64> {
        let samples = match r {
            RunResult::Stream(s) => s.latency.as_ref().map_or(0, |l| l.count),
            RunResult::Rr(r) => r.latency.count,
        };
        match (self, r) {
            (Self::Figure(f), _) if !of_samples(f.name, samples) => None,
            (_, RunResult::Stream(s)) if !self.measured_in(&Measured::of(s)) => None,
            // Workers that verify no checksum count no bad one.
            (Self::Worker { counter, side, .. }, _)
                if counter.name == BAD_CHECKSUM && !r.checks_checksums(*side) =>
            {
                None
            }
            _ => self.read(r),
        }
    }

    /// Whether a stream that measured `m` measured this metric (the
    /// workers' counters of a side that did not run are none already).
    fn measured_in(&self, m: &Measured) -> bool {
        match self {
            Self::Figure(f) => m.has(f.name),
            Self::Refused(_)
            | Self::Steering {
                at: SteeringAt::Stream,
                ..
            } => m.receivers,
            _ => true,
        }
    }

    /// Its field in `r`, whether measured or not.
    fn read(&self, r: &RunResult) -> Option<f64> {
        match (self, r) {
            (Self::Figure(f), _) => match (&f.read, r) {
                (Read::Stream(get) | Read::Both(get, _), RunResult::Stream(s)) => get(s),
                (Read::Rr(get) | Read::Both(_, get), RunResult::Rr(s)) => get(s),
                _ => None,
            },
            (
                Self::Worker {
                    counter,
                    side,
                    per_s: false,
                },
                _,
            ) => over_workers(r, *side, |w| (counter.read)(&w.total)).map(|v| v as f64),
            (
                Self::Worker {
                    counter,
                    side,
                    per_s: true,
                },
                _,
            ) => {
                let window_s = match r {
                    RunResult::Stream(s) if *side == Host::Rx => {
                        s.receiver_window_s.unwrap_or(s.common.window_s)
                    }
                    _ => r.common().window_s,
                };
                over_workers(r, *side, |w| (counter.read)(&w.window))
                    .map(|v| super::super::parts::per_second(v, window_s))
            }
            (Self::Refused(counter), RunResult::Stream(s)) => {
                s.frames.refused.get(counter).map(|v| v as f64)
            }
            (Self::Refused(_), RunResult::Rr(_)) => None,
            (Self::Xsk { counter, side }, _) => {
                over_workers(r, *side, |w| (counter.read)(&w.xsk)).map(|v| v as f64)
            }
            (Self::Steering { counter, at }, _) => {
                let stats = match (at, r) {
                    (SteeringAt::Stream, RunResult::Stream(s)) => &s.xdp,
                    (SteeringAt::Client, RunResult::Rr(s)) => &s.xdp.client,
                    (SteeringAt::Responder, RunResult::Rr(s)) => &s.xdp.responder,
                    _ => return None,
                };
                Some((counter.read)(stats) as f64)
            }
            (Self::Interface { counter, side }, _) => {
                let i = &r.common().interfaces;
                let c = match side {
                    Host::Tx => &i.tx,
                    Host::Rx => &i.rx,
                };
                Some((counter.read)(c) as f64)
            }
        }
    }
}

/// Every metric of the list, in its order.
#[cfg(test)]
pub fn all() -> Vec<Metric> {
    let mut out: Vec<Metric> = figures().map(Metric::Figure).collect();
    out.extend(refused_counters().map(Metric::Refused));
    for side in [Host::Tx, Host::Rx] {
        for per_s in [false, true] {
            out.extend(WORKER_COUNTERS.iter().map(|counter| Metric::Worker {
                counter,
                side,
                per_s,
            }));
        }
    }
    for side in [Host::Tx, Host::Rx] {
        out.extend(
            XSK_EVENTS
                .iter()
                .map(|counter| Metric::Xsk { counter, side }),
        );
    }
    for at in [
        SteeringAt::Stream,
        SteeringAt::Client,
        SteeringAt::Responder,
    ] {
        out.extend(
            STEERING
                .iter()
                .map(|counter| Metric::Steering { counter, at }),
        );
    }
    for side in [Host::Tx, Host::Rx] {
        out.extend(
            INTERFACE
                .iter()
                .map(|counter| Metric::Interface { counter, side }),
        );
    }
    out
}

/// An unknown metric's error: the valid names (the counters' families by
/// their pattern).
pub fn unknown(name: &str) -> String {
    let names: Vec<&str> = figures().map(|f| f.name).collect();
    fn names_of<T>(list: &[Counter<T>]) -> String {
        list.iter().map(|c| c.name).collect::<Vec<_>>().join(", ")
    }
    let refused: Vec<String> = refused_counters()
        .map(|c| format!("frames.{}", c.name))
        .collect();
    format!(
        "{name:?} is not a metric linerate knows. Figures: {}, {}. Counters: counters.tx.NAME and counters.rx.NAME (whole run; NAME_per_s over the window) for NAME in {}; xsk.tx.NAME and xsk.rx.NAME for NAME in {}; xdp.NAME (stream), xdp.client.NAME and xdp.responder.NAME (rr) for NAME in {}; interfaces.tx.NAME and interfaces.rx.NAME for NAME in {}. See docs/metrics.md",
        names.join(", "),
        refused.join(", "),
        names_of(WORKER_COUNTERS),
        names_of(XSK_EVENTS),
        names_of(STEERING),
        names_of(INTERFACE),
    )
}
