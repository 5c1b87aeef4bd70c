//! How a worker waits when its ring has nothing for it.

/// How a worker waits when its ring has nothing for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WaitMode {
    /// Spin on the rings (non-blocking, burns the core).
    Busy,
    /// Sleep in poll() on the socket (blocking).
    #[default]
    Wait,
    /// Kernel busy polling (SO_BUSY_POLL): a blocking receive polls the
    /// device queue's NAPI before it sleeps. See [`super::busy_poll`].
    BusyPoll,
    /// Preferred busy polling (SO_PREFER_BUSY_POLL, SO_BUSY_POLL_BUDGET,
    /// the NAPI's defer-hard-irqs and gro-flush-timeout).
    PreferBusyPoll,
    /// IRQ suspension: epoll busy polling (EPIOCSPARAMS) with the NAPI's
    /// irq-suspend-timeout (Linux 6.13+).
    IrqSuspend,
}
