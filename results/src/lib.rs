//! The typed results of linerate, one model for a local run, a two-host
//! run and a sweep.
//!
//! Layers, each importing only those below it:
//! - [`parts`] and [`two_host`]: what every result is made of (interface
//!   counters, worker reports, CPU figures and the service demand formula;
//!   the agents and per-host CPU of a two-host run), over the system
//!   readers (`cpu`, `iface`, `environment`) whose types they hold;
//!   [`envelope`]: what a result of either test holds alike (host, window,
//!   how it ended, workers, interfaces, agents);
//! - [`stream`] and [`rr`]: the result of each test, built by pure
//!   functions over those parts (a local run and the two-host merge call
//!   the same ones), and [`stream_table`], [`rr_table`]: their text tables;
//! - [`run`]: a result of either test, as `--json` prints it, an agent
//!   returns it and a sweep stores it; its table comes from
//!   [`stream_table`] or [`rr_table`];
//! - [`threads`]: linerate's own threads' CPU over a window (the
//!   kernel's schedstat of each), and [`softirq`]: the network softirq
//!   time of each core over a window; the arithmetic only; [`own`]:
//!   linerate's own CPU on a set of cores from those two, beside the
//!   interference and steal there; [`placement`]: whether repeats of a
//!   point ran on the same cores (shares below a floor ignored);
//! - [`latency`]: latency statistics of a histogram (rr's response
//!   times, a stream's one-way latencies); [`noise`]: the machine's noise
//!   floor between a run's cores, measured before its window;
//! - [`metrics`]: the one list of metric names (sweep files, the report,
//!   /metrics, docs/metrics.md), each with its unit, meaning and how it is
//!   read from a typed result.

pub mod confidence;
pub mod envelope;
pub mod expect;
pub mod fit;
pub mod fleet;
pub mod latency;
pub mod merge;
pub mod metrics;
pub mod noise;
pub mod own;
pub mod parts;
pub mod placement;
pub mod rr;
pub mod rr_table;
pub mod run;
pub mod softirq;
pub mod stats;
pub mod stream;
pub mod stream_table;
pub mod student;
pub mod system;
pub mod threads;
pub mod two_host;
pub mod wait;
