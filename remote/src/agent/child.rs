//! What the binary gives the agent: what a run request's options mean
//! ([`Runs`], the command line's own parsing) and the child it starts
//! ([`Child`]).

use crate::api;

/// The child a run request starts, as the binary's command line makes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Child {
    /// Its command line (after the executable).
    pub argv: Vec<String>,
    /// The interfaces (and namespaces; None: the agent's own) it uses.
    pub sides: Vec<(String, Option<String>)>,
    /// Whether it passes --force.
    pub force: bool,
}

/// What the agent asks of the binary: what a run request's options mean.
pub trait Runs: Send + Sync + 'static {
    /// The child for a request (its pair name and the options the agent
    /// owns already checked): its options parsed and checked with the
    /// command line's own definitions (so that errors read as there), a
    /// controller's options refused; Err is the 400's text.
    fn child(&self, req: &api::RunRequest) -> Result<Child, String>;

    /// The doctor's report on `iface` (in `netns`): its JSON text, as the
    /// report serializes (the answer's body, byte for byte).
    fn doctor(&self, iface: String, netns: Option<String>) -> anyhow::Result<String>;
}
