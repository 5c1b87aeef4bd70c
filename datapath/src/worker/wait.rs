//! How a worker waits when its ring has nothing for it.

/// How a worker waits when its ring has nothing for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WaitMode {
    /// Spin on the rings (non-blocking, burns the core).
    Busy,
    /// Sleep in poll() on the socket (blocking).
    #[default]
    Wait,
}
