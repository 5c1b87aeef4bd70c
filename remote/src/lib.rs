//! Talking to agents: the HTTP/JSON control API's types (`api`), the
//! bearer token and its file (`token`), the client of one agent (`client`)
//! and the estimate of its clock offset (`clock`), and an agent's
//! Prometheus text (`metrics`, /metrics). The agent's server and the
//! controller's run of two sides are the binary's (`control/src/remote`):
//! they start runs.

pub mod api;
pub mod client;
pub mod clock;
pub mod metrics;
pub mod token;
