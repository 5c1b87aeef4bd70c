//! Talking to agents: the HTTP/JSON control API's types (`api`), the
//! bearer token and its file (`token`), the client of one agent (`client`)
//! and the estimate of its clock offset (`clock`), and an agent's
//! Prometheus text (`metrics`, /metrics); the agent's server (`agent`:
//! what a run's options mean is the binary's, given as `agent::Runs`) and
//! the controller's run of two sides (`controller`: the binary gives it a
//! `controller::Request`, plain data, and prints what it returns).

pub mod agent;
pub mod api;
pub mod client;
pub mod clock;
pub mod controller;
pub mod metrics;
pub mod token;
