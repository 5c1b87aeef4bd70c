//! The built-in lab: two network namespaces joined by a veth pair, with
//! addresses from 198.18.0.0/15 (RFC 2544's benchmarking range):
//! `topology` makes and checks it, `command` is `linerate lab`.

pub mod command;
mod topology;

pub use topology::Lab;
