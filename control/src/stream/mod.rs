//! `linerate stream`: a one-way stream of frames (or messages) from
//! senders to receivers, measured over a window after a warm-up. The
//! engines (`--backend`) start the workers; the session runs the phases
//! every run shares; [`build`] turns what was measured into the result.

mod build;
mod command;
pub mod mlr;
pub mod mlrsearch;
mod run;
pub mod search;

pub use command::command;
pub use run::run;
