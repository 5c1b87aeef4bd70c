//! Runs across two hosts, the command line's part: `linerate agent` (the
//! server is `linerate_remote::agent`; here what a run request's options
//! mean), a two-host run (run by `linerate_remote::controller`; here its
//! options made plain data and its outcome printed), and the side of a run
//! a child process of an agent plays.

pub mod agent;
pub mod controller;
pub mod role;
