//! What a sweep is and keeps: its file (`spec`), its points (`points`),
//! the built-in sweep files (`presets`), what its directory holds (`saved`:
//! the options, the records, their size) and the records appended and read
//! back (`store`), a fleet run's record (`fleet`).

pub mod fleet;
pub mod points;
pub mod presets;
pub mod saved;
pub mod spec;
pub mod store;

pub use saved::{create_dir, default_dir, Record, MAX_OPTIONS, RESULTS};
