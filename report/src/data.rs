//! The runs a report keeps, point by point, and what it reads of them:
//! the medians and spreads of each metric per point ([`Data`]).

use crate::sweep::{
    points::{points, Point},
    saved::Record,
    spec::SweepSpec,
};
use linerate_results::stats::Spread;
use linerate_results::{
    metrics::{Metric, Source},
    run::RunResult,
};
use std::collections::{BTreeMap, HashMap};
use toml::Value as Tv;

/// The figures of points.csv.
pub(super) const COLS: [&str; 10] = [
    "receiver.payload_mb_s",
    "receiver.message_mb_s",
    "receiver.frames_per_s",
    "frames.loss_pct",
    "cpu.total.cpu_pct",
    "cpu.total.service_demand_ms_per_mb",
    "transactions.per_s",
    "latency.mean_us",
    "latency.p99_us",
    "cpu.total.us_per_transaction",
];

/// What the fits read.
pub(super) const PER_MESSAGE: &str = "derived.us_per_message";

/// What the placement section holds beside the placement: the kernel's
/// receive work per frame.
pub(super) const RECEIVE_COST: &str = "receiver.softirq_ns_per_frame";

/// One run as the report keeps it.
pub(super) struct Run {
    pub(super) part: usize,
    pub(super) point: usize,
    pub(super) repeat: u32,
    /// The metrics' values (in `Kept::metrics` order); none: it failed.
    pub(super) values: Option<Box<[Option<f64>]>>,
    /// Its data path.
    pub(super) backend: Option<Box<str>>,
    /// A fleet's run: each pair's values (its index in `Kept::pairs`,
    /// the metrics' values in `Kept::metrics` order).
    pub(super) pairs: Box<[(usize, Values)]>,
    /// Where it ran (`results::placement::signature`; none: not measured).
    pub(super) placement: Option<Box<str>>,
    /// Marked disturbed (other tasks took more than --disturbed-above of
    /// its cores): not counted by `--confidence`.
    pub(super) disturbed: bool,
}

/// The metrics' values of a run (in `Kept::metrics` order).
pub(super) type Values = Box<[Option<f64>]>;

/// What a report of a sweep reads of its records: each run's metrics
/// (read once, through the metric list, from its typed result) and the
/// first result whole (the machine section shows its environment and
/// set-up). A sweep holds its records in memory: 10,000 results whole
/// take hundreds of MB, their figures a few.
pub struct Kept {
    pub(super) metrics: Vec<Metric>,
    pub(super) index: HashMap<String, usize>,
    pub(super) first: Option<RunResult>,
    pub(super) runs: Vec<Run>,
    /// The pairs of a fleet's runs (`sweep --fleet`), in the order met.
    pub(super) pairs: Vec<String>,
}

impl Kept {
    /// For the records of `spec` (its metric names checked by the spec).
    pub fn new(spec: &SweepSpec) -> Self {
        let mut names: Vec<String> = COLS.iter().map(|c| c.to_string()).collect();
        names.push(PER_MESSAGE.into());
        names.push(RECEIVE_COST.into());
        names.extend(spec.metric_names().map(str::to_string));
        let mut metrics = Vec::new();
        let mut index = HashMap::new();
        for n in names {
            if index.contains_key(&n) {
                continue;
            }
            let Some(m) = Metric::find(&n) else {
                continue;
            };
            index.insert(n, metrics.len());
            metrics.push(m);
        }
        Self {
            metrics,
            index,
            first: None,
            runs: Vec::new(),
            pairs: Vec::new(),
        }
    }

    /// The values of the metrics in `r`.
    fn values<'a>(&self, from: impl Into<Source<'a>> + Copy) -> Box<[Option<f64>]> {
        self.metrics.iter().map(|m| m.value(from)).collect()
    }

    /// The index of pair `name`, added when new.
    fn pair_index(&mut self, name: &str) -> usize {
        match self.pairs.iter().position(|p| p == name) {
            Some(i) => i,
            None => {
                self.pairs.push(name.to_string());
                self.pairs.len() - 1
            }
        }
    }

    /// Keeps what the report reads of the next record.
    /// A fleet's run is read from its aggregate, by the figures' dotted
    /// names (as `--expect` reads it; the metrics it lacks, such as the
    /// counters of one host, are none), and each pair from its result.
    pub fn add(&mut self, r: Record) {
        let values = match (&r.result, &r.fleet) {
            (Some(res), _) => Some(self.values(res)),
            (None, Some(f)) => Some(self.values(&f.aggregate)),
            (None, None) => None,
        };
        let pairs = match &r.fleet {
            Some(f) => f
                .pairs
                .iter()
                .map(|p| (self.pair_index(&p.pair), self.values(&p.result)))
                .collect(),
            None => Box::default(),
        };
        let backend = r.first_result().map(|res| match res {
            // Which engine sent and received, where not the backend's.
            RunResult::Stream(s)
                if !s.setup.tx_engine.is_empty()
                    && (s.setup.tx_engine != s.params.backend
                        || s.setup.rx_engine != s.params.backend) =>
            {
                format!(
                    "{} (sent by {}, received by {})",
                    s.params.backend, s.setup.tx_engine, s.setup.rx_engine
                )
                .into()
            }
            _ => res.backend().into(),
        });
        let placement = r.first_result().and_then(|res| {
            let c = res.common();
            linerate_results::placement::signature(&c.threads, &c.softirq).map(Into::into)
        });
        if self.first.is_none() {
            self.first = r.first_result().cloned();
        }
        let disturbed = r.result.as_ref().is_some_and(|x| x.common().disturbed);
        self.runs.push(Run {
            part: r.part,
            point: r.point,
            repeat: r.repeat,
            values,
            backend,
            pairs,
            placement,
            disturbed,
        });
    }

    /// Each point's counted headline values (frames/s received, rr:
    /// transactions/s; failed and disturbed runs left out), in the order
    /// of its repeats, by (part, point); how many runs were disturbed.
    pub(super) fn headlines(&self) -> (BTreeMap<(usize, usize), Vec<f64>>, usize) {
        let at = ["receiver.frames_per_s", "transactions.per_s"]
            .iter()
            .find_map(|m| self.index.get(*m).copied());
        let mut runs: Vec<&Run> = self.runs.iter().collect();
        runs.sort_by_key(|r| (r.part, r.point, r.repeat));
        let mut out: BTreeMap<(usize, usize), Vec<f64>> = BTreeMap::new();
        let mut disturbed = 0;
        for r in runs {
            let entry = out.entry((r.part, r.point)).or_default();
            if r.disturbed {
                disturbed += 1;
                continue;
            }
            if let Some(v) = at.and_then(|i| r.values.as_ref().and_then(|v| v[i])) {
                entry.push(v);
            }
        }
        (out, disturbed)
    }

    /// The pairs of a fleet's runs, in the order met (none: no fleet).
    pub fn pairs(&self) -> &[String] {
        &self.pairs
    }

    /// (part, point, repeat) of every finished run.
    pub fn finished(&self) -> impl Iterator<Item = (usize, usize, u32)> + '_ {
        self.runs
            .iter()
            .filter(|r| r.values.is_some())
            .map(|r| (r.part, r.point, r.repeat))
    }
}

pub(super) struct Data<'a> {
    pub(super) spec: &'a SweepSpec,
    pub(super) kept: &'a Kept,
    /// Every point of every part, expanded once.
    pub(super) points: Vec<Vec<Point>>,
    /// The runs of each (part, point): one pass over the records, not
    /// one per cell.
    pub(super) runs: HashMap<(usize, usize), Vec<&'a [Option<f64>]>>,
}

impl<'a> Data<'a> {
    pub(super) fn new(spec: &'a SweepSpec, kept: &'a Kept) -> Self {
        let mut runs: HashMap<(usize, usize), Vec<&[Option<f64>]>> = HashMap::new();
        for r in &kept.runs {
            if let Some(v) = &r.values {
                runs.entry((r.part, r.point)).or_default().push(v);
            }
        }
        Self {
            spec,
            kept,
            points: spec
                .parts
                .iter()
                .enumerate()
                .map(|(i, p)| points(i, p))
                .collect(),
            runs,
        }
    }

    pub(super) fn results(&self, p: &Point) -> &[&[Option<f64>]] {
        self.runs.get(&(p.part, p.index)).map_or(&[], Vec::as_slice)
    }

    pub(super) fn spread(&self, p: &Point, metric: &str) -> Option<Spread> {
        let i = *self.kept.index.get(metric)?;
        let v: Vec<f64> = self.results(p).iter().filter_map(|r| r[i]).collect();
        Spread::of(&v)
    }

    pub(super) fn find(
        &self,
        part: usize,
        want: &[(&str, &Tv)],
        filter: &toml::Table,
    ) -> Option<&Point> {
        // Every axis given a value: the point's index, without a search
        // (a table of a 10,000-point sweep looks up 10,000 cells).
        let axes = &self.spec.parts[part].axes;
        if want.iter().all(|(a, _)| axes.iter().any(|x| x.name == *a)) {
            let mut index = Some(0usize);
            for axis in axes {
                let w = want.iter().find(|(a, _)| *a == axis.name).map(|(_, v)| *v);
                let f = filter.get(&axis.name);
                let v = match (w, f) {
                    (Some(w), Some(f)) if w != f => return None,
                    (w, f) => w.or(f),
                };
                index = index
                    .zip(v.and_then(|v| axis.values.iter().position(|x| x == v)))
                    .map(|(i, pos)| i * axis.values.len() + pos);
            }
            if let Some(i) = index {
                return self.points[part].get(i);
            }
        }
        self.points[part].iter().find(|p| {
            want.iter().all(|(a, v)| p.value(a) == Some(v))
                && filter
                    .iter()
                    .all(|(a, v)| p.value(a).is_none_or(|x| x == v))
        })
    }

    /// The spread of `metric` at each numeric value of axis `x`, one line
    /// per value of axis `series` (one line without), the other axes as
    /// `filter` says: what a figure draws and a fit reads.
    pub(super) fn lines(
        &self,
        pi: usize,
        x: &str,
        series: Option<&str>,
        filter: &toml::Table,
        metric: &str,
    ) -> Vec<Line> {
        let part = &self.spec.parts[pi];
        let xs = part.axis(x).expect("checked");
        let axis = series.map(|s| part.axis(s).expect("checked"));
        let series: Vec<Option<usize>> = match axis {
            Some(a) => (0..a.values.len()).map(Some).collect(),
            None => vec![None],
        };
        series
            .into_iter()
            .map(|s| {
                let mut points = Vec::new();
                for xv in &xs.values {
                    let Some(xn) = num(xv) else { continue };
                    let mut want = vec![(x, xv)];
                    if let (Some(si), Some(a)) = (s, axis) {
                        want.push((a.name.as_str(), &a.values[si]));
                    }
                    if let Some(y) = self
                        .find(pi, &want, filter)
                        .and_then(|p| self.spread(p, metric))
                    {
                        points.push((xn, y));
                    }
                }
                Line { series: s, points }
            })
            .collect()
    }
}

/// One line or set of marks, with its legend.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Its legend entry.
    pub name: String,
    /// (x, y, y's smallest and largest over the repeats).
    pub points: Vec<(f64, f64, f64, f64)>,
}

/// One line of a figure or a fit.
pub(super) struct Line {
    /// The value (index) of the series axis it is drawn for.
    pub(super) series: Option<usize>,
    /// (x, the spread of the metric there).
    pub(super) points: Vec<(f64, Spread)>,
}

pub(super) fn num(v: &Tv) -> Option<f64> {
    match v {
        Tv::Integer(i) => Some(*i as f64),
        Tv::Float(f) => Some(*f),
        _ => None,
    }
}
