//! Runs across two hosts: `linerate agent` (an HTTP/JSON control API on
//! each host, running one side of a run as a child process), the
//! controller that drives two agents and merges their figures, and the
//! side of a run a child process plays.

pub mod agent;
pub mod controller;
pub mod role;
