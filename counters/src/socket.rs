//! What an AF_XDP socket's kernel counters say (XDP_STATISTICS).

/// The socket's XDP_STATISTICS.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct XskStats {
    /// Frames dropped for lack of space or other reasons.
    pub rx_dropped: u64,
    /// Invalid RX descriptors.
    pub rx_invalid_descs: u64,
    /// Frames dropped because the RX ring was full.
    pub rx_ring_full: u64,
    /// Times the fill ring was empty when a frame arrived.
    pub rx_fill_ring_empty: u64,
    /// Invalid TX descriptors.
    pub tx_invalid_descs: u64,
    /// Times the TX ring was empty when the kernel looked.
    pub tx_ring_empty: u64,
}
