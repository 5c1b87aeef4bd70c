use std::io;

/// What can go wrong when loading, attaching or talking to the program.
#[derive(Debug, thiserror::Error)]
pub enum EbpfError {
    /// The kernel refused to load the program or create its maps.
    #[error("loading the XDP program failed: {0}; is this run as root with CAP_BPF/CAP_SYS_ADMIN, on a kernel >= 5.18?")]
    Load(String),
    /// The interface does not exist in the current network namespace.
    #[error("interface {0:?} not found in this network namespace; check `ip link` (or the --*-netns option)")]
    NoSuchInterface(String),
    /// Another XDP program is attached to the interface.
    #[error("interface {iface} already has an XDP program attached (id {prog_id}); linerate will not replace it: detach it (`ip link set dev {iface} xdp off`) or pass --force")]
    Busy {
        /// The interface.
        iface: String,
        /// The id of the program found there.
        prog_id: u32,
    },
    /// Neither native nor generic attach worked.
    #[error("attaching XDP to {iface} failed: {reason}")]
    Attach {
        /// The interface.
        iface: String,
        /// Why each mode failed.
        reason: String,
    },
    /// A map operation failed.
    #[error("XDP map {map}: {source}")]
    Map {
        /// The map's name.
        map: &'static str,
        /// The error from libbpf.
        #[source]
        source: io::Error,
    },
    /// The frame generator cannot run as asked.
    #[error("{0}")]
    Generator(String),
    /// A queue id beyond the XSKMAP.
    #[error("queue {0} is beyond the {max} queues the steering program handles", max = crate::MAX_QUEUES)]
    QueueOutOfRange(u32),
}

impl EbpfError {
    pub(crate) fn map(map: &'static str, err: libbpf_rs::Error) -> Self {
        Self::Map {
            map,
            source: io::Error::other(err.to_string()),
        }
    }
}
