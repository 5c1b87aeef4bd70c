//! Kernel busy polling, the wait modes `busy-poll`, `prefer-busy-poll`
//! and `irq-suspend` (the kernel's Documentation/networking/napi.rst):
//! what each sets on a socket, on an epoll instance and on the NAPI, with
//! the values linerate uses. The NAPI settings themselves are set (and
//! put back) by the control program; the raw calls are in [`crate::sys`].

use std::{
    io,
    os::fd::{AsFd, BorrowedFd, RawFd},
};

use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags};

use super::wait::WaitMode;
use crate::{binding::BindMode, sys};

/// Microseconds a receive (or epoll_wait) busy-polls before it sleeps.
pub const BUSY_POLL_USECS: u32 = 50;
/// Microseconds epoll_wait busy-polls with IRQ suspension: 0, one poll of
/// the NAPI per call (prefer_busy_poll turns epoll busy polling on): while
/// calls find events the NAPI's interrupts stay suspended and the
/// application drives it; when one finds none, the interrupts come back
/// under defer-hard-irqs and gro-flush-timeout and the worker sleeps.
pub const IRQ_SUSPEND_EPOLL_USECS: u32 = 0;
/// Packets one busy poll may process (SO_BUSY_POLL_BUDGET, the epoll
/// context's budget; the NAPI weight, 64, needs no CAP_NET_ADMIN).
pub const BUSY_POLL_BUDGET: u16 = 64;
/// The NAPI's `defer-hard-irqs`: empty polls before it unmasks its
/// interrupts again (preferred busy polling, IRQ suspension).
pub const DEFER_HARD_IRQS: u32 = 100;
/// The NAPI's `gro-flush-timeout` in ns: the timer that re-polls while
/// interrupts are deferred, and how long an unkept busy-poll pledge lasts.
pub const GRO_FLUSH_TIMEOUT_NS: u64 = 20_000;
/// The NAPI's `irq-suspend-timeout` in ns: how long interrupts stay
/// suspended while epoll_wait keeps finding events (IRQ suspension).
pub const IRQ_SUSPEND_TIMEOUT_NS: u64 = 20_000_000;

/// The per-NAPI settings a wait mode needs (netdev netlink `napi-set`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NapiSettings {
    /// `defer-hard-irqs`.
    pub defer_hard_irqs: u32,
    /// `gro-flush-timeout`, ns.
    pub gro_flush_timeout_ns: u64,
    /// `irq-suspend-timeout`, ns (None: left as it is).
    pub irq_suspend_timeout_ns: Option<u64>,
}

impl WaitMode {
    /// The name on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Self::Busy => "busy",
            Self::Wait => "wait",
            Self::BusyPoll => "busy-poll",
            Self::PreferBusyPoll => "prefer-busy-poll",
            Self::IrqSuspend => "irq-suspend",
        }
    }

    /// Whether the kernel busy-polls the NAPI for this worker (the three
    /// kernel modes).
    pub fn kernel_polls(self) -> bool {
        matches!(
            self,
            Self::BusyPoll | Self::PreferBusyPoll | Self::IrqSuspend
        )
    }

    /// Whether the worker never sleeps in the kernel's receive: `busy`
    /// spins, `irq-suspend` sleeps in epoll_wait instead.
    pub fn nonblocking_receive(self) -> bool {
        matches!(self, Self::Busy | Self::IrqSuspend)
    }

    /// µs a receive or epoll_wait of the mode busy-polls (None: it does
    /// not busy-poll).
    pub fn busy_poll_usecs(self) -> Option<u32> {
        match self {
            Self::BusyPoll | Self::PreferBusyPoll => Some(BUSY_POLL_USECS),
            Self::IrqSuspend => Some(IRQ_SUSPEND_EPOLL_USECS),
            _ => None,
        }
    }

    /// The NAPI settings the mode needs, if any.
    pub fn napi_settings(self) -> Option<NapiSettings> {
        let preferred = NapiSettings {
            defer_hard_irqs: DEFER_HARD_IRQS,
            gro_flush_timeout_ns: GRO_FLUSH_TIMEOUT_NS,
            irq_suspend_timeout_ns: None,
        };
        match self {
            Self::PreferBusyPoll => Some(preferred),
            Self::IrqSuspend => Some(NapiSettings {
                irq_suspend_timeout_ns: Some(IRQ_SUSPEND_TIMEOUT_NS),
                ..preferred
            }),
            _ => None,
        }
    }
}

/// Why a busy-poll mode cannot run, or a call that failed.
#[derive(Debug, thiserror::Error)]
pub enum BusyPollError {
    /// An AF_XDP socket that reports no NAPI after bind
    /// (SO_INCOMING_NAPI_ID 0): the kernel never busy-polls it.
    #[error(
        "--{side}-wait {mode}: the AF_XDP socket reports no NAPI after bind (SO_INCOMING_NAPI_ID 0; it is bound in {bound} mode: {why}), so the kernel would never busy-poll it: a socket gets its NAPI at bind in zero-copy mode, and since Linux 6.15 in copy mode on drivers that link their queues to a NAPI (commit b95ed5517354); use --backend udp for kernel busy polling, or a driver that does"
    )]
    NoNapi {
        /// "rx" or "tx".
        side: &'static str,
        /// The mode asked for.
        mode: &'static str,
        /// "zero-copy" or "copy".
        bound: &'static str,
        /// Why the socket has no NAPI.
        why: String,
    },
    /// A socket option or ioctl failed.
    #[error("{what}: {source}")]
    Io {
        /// The call.
        what: &'static str,
        /// The kernel's error.
        source: io::Error,
    },
}

fn io_err(what: &'static str) -> impl Fn(io::Error) -> BusyPollError {
    move |source| BusyPollError::Io { what, source }
}

/// The refusal of a busy-poll mode for an AF_XDP socket with no NAPI,
/// bound in `bound` mode; `why`: the reason it has none.
pub fn no_napi_refusal(
    side: &'static str,
    wait: WaitMode,
    bound: BindMode,
    why: &str,
) -> BusyPollError {
    BusyPollError::NoNapi {
        side,
        mode: wait.name(),
        bound: match bound {
            BindMode::ZeroCopy => "zero-copy",
            _ => "copy",
        },
        why: why.to_string(),
    }
}

/// Sets the socket options of the mode on a kernel socket: `busy-poll`
/// SO_BUSY_POLL; `prefer-busy-poll` SO_PREFER_BUSY_POLL,
/// SO_BUSY_POLL_BUDGET and SO_BUSY_POLL; the others nothing (`irq-suspend`
/// sets its parameters on the epoll instance, [`EpollWait`]).
pub fn setup_socket(fd: BorrowedFd<'_>, wait: WaitMode) -> Result<(), BusyPollError> {
    match wait {
        WaitMode::BusyPoll => {
            sys::set_busy_poll(fd, BUSY_POLL_USECS).map_err(io_err("SO_BUSY_POLL"))
        }
        WaitMode::PreferBusyPoll => preferred(fd, BUSY_POLL_BUDGET),
        _ => Ok(()),
    }
}

/// Preferred busy polling on a socket (xdpsock's `-B`).
fn preferred(fd: BorrowedFd<'_>, budget: u16) -> Result<(), BusyPollError> {
    sys::set_prefer_busy_poll(fd, true).map_err(io_err("SO_PREFER_BUSY_POLL"))?;
    sys::set_busy_poll(fd, BUSY_POLL_USECS).map_err(io_err("SO_BUSY_POLL"))?;
    sys::set_busy_poll_budget(fd, budget).map_err(io_err("SO_BUSY_POLL_BUDGET"))
}

/// An AF_XDP socket in a kernel busy-poll mode: refused when the socket
/// reports no NAPI after bind (the kernel would never poll it; decided by
/// what the socket says, not by its bind mode: copy mode has a NAPI on
/// drivers that link their queues to one, Linux 6.15+), else
/// SO_PREFER_BUSY_POLL, SO_BUSY_POLL and SO_BUSY_POLL_BUDGET = `batch` on
/// the socket, as xdpsock `-B` does; the worker then drives its rings
/// with recvfrom/sendto(MSG_DONTWAIT). `why`: why it is in copy mode.
pub fn setup_xsk(
    fd: RawFd,
    bound: BindMode,
    why: Option<&str>,
    side: &'static str,
    wait: WaitMode,
    batch: usize,
) -> Result<(), BusyPollError> {
    if !wait.kernel_polls() {
        return Ok(());
    }
    let napi = sys::incoming_napi_id(sys::borrow(fd)).map_err(io_err("SO_INCOMING_NAPI_ID"))?;
    if napi == 0 {
        let why = why.unwrap_or(match bound {
            BindMode::ZeroCopy => "its queue has no NAPI",
            _ => "its driver links no NAPI to the queue in copy mode",
        });
        return Err(no_napi_refusal(side, wait, bound, why));
    }
    let budget = batch.clamp(1, usize::from(BUSY_POLL_BUDGET)) as u16;
    preferred(sys::borrow(fd), budget)
}

/// Epoll busy polling: an epoll instance over the worker's sockets with
/// EPIOCSPARAMS set (busy-poll usecs and budget; prefer busy polling in
/// `prefer-busy-poll` and `irq-suspend`). epoll_wait busy-polls the NAPI
/// of the sockets before it sleeps; with IRQ suspension the NAPI's
/// interrupts stay masked while it finds events.
pub struct EpollWait {
    epoll: Epoll,
    events: Vec<EpollEvent>,
}

impl EpollWait {
    /// The waiter of `fds` in `wait` (None: the mode does not busy-poll).
    pub fn new(fds: &[BorrowedFd<'_>], wait: WaitMode) -> Result<Option<Self>, BusyPollError> {
        if !wait.kernel_polls() {
            return Ok(None);
        }
        let epoll = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)
            .map_err(|e| io_err("epoll_create")(e.into()))?;
        for (i, fd) in fds.iter().enumerate() {
            epoll
                .add(fd, EpollEvent::new(EpollFlags::EPOLLIN, i as u64))
                .map_err(|e| io_err("epoll_ctl")(e.into()))?;
        }
        let prefer = wait != WaitMode::BusyPoll;
        let usecs = wait.busy_poll_usecs().unwrap_or(BUSY_POLL_USECS);
        sys::set_epoll_params(epoll.0.as_fd(), usecs, BUSY_POLL_BUDGET, prefer)
            .map_err(io_err("EPIOCSPARAMS (Linux 6.9+)"))?;
        Ok(Some(Self {
            epoll,
            events: vec![EpollEvent::empty(); fds.len().clamp(1, 64)],
        }))
    }

    /// Waits (busy-polling first) until a socket is readable or `ms`
    /// passes; the number of ready sockets.
    pub fn wait(&mut self, ms: u16) -> usize {
        self.epoll.wait(&mut self.events, ms).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_mode_has_its_name_and_settings() {
        let names: Vec<_> = [
            WaitMode::Busy,
            WaitMode::Wait,
            WaitMode::BusyPoll,
            WaitMode::PreferBusyPoll,
            WaitMode::IrqSuspend,
        ]
        .iter()
        .map(|m| (m.name(), m.kernel_polls(), m.napi_settings().is_some()))
        .collect();
        assert_eq!(
            names,
            [
                ("busy", false, false),
                ("wait", false, false),
                ("busy-poll", true, false),
                ("prefer-busy-poll", true, true),
                ("irq-suspend", true, true),
            ]
        );
        assert_eq!(
            WaitMode::IrqSuspend
                .napi_settings()
                .unwrap()
                .irq_suspend_timeout_ns,
            Some(IRQ_SUSPEND_TIMEOUT_NS)
        );
        assert_eq!(WaitMode::IrqSuspend.busy_poll_usecs(), Some(0));
        assert_eq!(WaitMode::BusyPoll.busy_poll_usecs(), Some(BUSY_POLL_USECS));
        assert_eq!(WaitMode::Wait.busy_poll_usecs(), None);
        assert_eq!(
            WaitMode::PreferBusyPoll
                .napi_settings()
                .unwrap()
                .irq_suspend_timeout_ns,
            None
        );
    }
}
