//! The plans of a run: the options checked against the engines'
//! capabilities and the path, every length asked of the data path's
//! geometry. `stream` and `rr` each have one; a sweep, RFC 2544 and the
//! typed request check options with them before anything runs. `run`
//! makes the typed parts every run is given (`spec`) once; below the
//! plans nothing reads the parsed options (`once` checks it).

#[cfg(test)]
mod once;
pub mod rr;
pub mod run;
pub mod spinners;
pub mod stream;
