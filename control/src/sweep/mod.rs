//! `linerate sweep`: runs every point of a sweep file (or a built-in
//! preset) with warm-up and repeats, appends each result as it finishes,
//! resumes an interrupted sweep, and writes the report.

mod command;
pub mod expand;
pub mod fleet;
mod gates;
pub mod presets;
pub mod report;
mod run;
pub mod saved;
pub mod spec;
pub mod stats;
pub mod store;

pub use command::command;
pub use run::{capture_path, check_capture, estimate};
pub use saved::{create_dir, default_dir, Record, MAX_OPTIONS, RESULTS};
