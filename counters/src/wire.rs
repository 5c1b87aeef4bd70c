//! What a frame costs on the wire beyond the bytes its descriptor holds,
//! and the figures a result derives from frame and byte counts.

/// Frame check sequence, counted in frame sizes but not in descriptors.
pub const FCS_LEN: usize = 4;
/// Preamble, start delimiter and inter-frame gap: what a frame costs on
/// the wire beyond its own bytes.
pub const WIRE_OVERHEAD: usize = 20;

/// Wire bytes of `frames` frames whose descriptors held `bytes` bytes:
/// FCS, preamble and inter-frame gap added per frame.
pub fn wire_bytes(bytes: u64, frames: u64) -> u64 {
    bytes + frames * (FCS_LEN + WIRE_OVERHEAD) as u64
}

/// The mean frame size (FCS included) of `frames` frames whose
/// descriptors held `bytes` bytes; None without frames.
pub fn mean_frame_size(bytes: u64, frames: u64) -> Option<f64> {
    (frames > 0).then(|| bytes as f64 / frames as f64 + FCS_LEN as f64)
}
