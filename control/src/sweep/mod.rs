//! `linerate sweep`: runs every point of a sweep file (or a built-in
//! preset) with warm-up and repeats, appends each result as it finishes,
//! resumes an interrupted sweep, and writes the report. What a sweep is
//! and keeps, and its report, are `linerate_report`'s.

mod command;
pub mod expand;
pub mod fleet;
mod gates;
mod rounds;
mod run;

pub use command::command;
pub use run::{capture_path, check_capture, estimate};
