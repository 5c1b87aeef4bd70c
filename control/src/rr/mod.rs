//! `linerate rr`: request/response transactions between clients and
//! responders (workers of the engine `--backend` names, or with
//! `--responder xdp` the XDP program itself), timed one by one into an
//! HdrHistogram. The session runs the phases every run shares; [`build`]
//! turns what was measured into the result.

mod build;
mod command;
mod run;

pub use command::command;
pub use run::run;
