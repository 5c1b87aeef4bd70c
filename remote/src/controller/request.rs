//! What a two-host run needs of its command line, as plain data: the
//! binary fills it from its parsed options (`RunRequest::for_agents` the
//! options each agent is given).

use std::{path::PathBuf, time::Duration};

use crate::api;

/// A two-host run as the controller needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The test both sides run.
    pub test: api::Test,
    /// The options each agent's side is given (the run's own, without the
    /// controller's: agents, interfaces, namespaces, output).
    pub args: Vec<String>,
    /// The agents' URLs (--tx-agent, --rx-agent).
    pub tx_agent: Option<String>,
    pub rx_agent: Option<String>,
    /// Each side's interface (on its agent's host) and namespace.
    pub tx_iface: Option<String>,
    pub rx_iface: Option<String>,
    pub tx_netns: Option<String>,
    pub rx_netns: Option<String>,
    /// --reverse: the rx agent's host sends.
    pub reverse: bool,
    /// The fleet pair the runs are labelled with (--pair).
    pub pair: Option<String>,
    /// The shared token's file (None: LINERATE_TOKEN).
    pub token_file: Option<PathBuf>,
    /// The run's warm-up and measured time (the controller's deadline).
    pub warmup: Duration,
    pub duration: Duration,
}
