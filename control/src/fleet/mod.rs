//! `linerate fleet`: many host pairs from one controller (docs/fleet.md).

pub mod prometheus;
