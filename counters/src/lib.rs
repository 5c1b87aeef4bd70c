//! The counters and figures every layer of linerate shares, as plain data:
//! a worker's counters and their snapshot (`stats`), an AF_XDP socket's
//! (`socket`), the steering program's (`steer`), the latency histograms'
//! bounds (`latency`) and what a frame costs on the wire (`wire`). No I/O:
//! the data path fills them, the results hold them.

pub mod latency;
pub mod socket;
pub mod stats;
pub mod steer;
pub mod wire;
