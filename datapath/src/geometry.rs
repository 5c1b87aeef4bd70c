//! Frame geometry: every length rule of a test frame, in one place.
//!
//! Sizes follow RFC 2544: a *frame size* counts the Ethernet header and the
//! 4-byte FCS (which the NIC adds), so a frame of size S hands S - 4 bytes
//! to the socket (its *descriptor length*) and costs S + 20 bytes of wire
//! time (preamble, start delimiter, inter-frame gap). Control asks these
//! questions here instead of adding header lengths itself, as smoltcp's
//! `wire` types own their lengths.

use crate::{
    frame::{
        FrameError, FrameSpec, ETH_LEN, FCS_LEN, HEADER_OFFSET, IPV4_LEN, IPV6_LEN, L2_OVERHEAD,
        MIN_FRAME_SIZE, UDP_LEN,
    },
    header::{HEADER_LEN, MESSAGE_HEADER_LEN},
    message::{Fragmentation, MessageError},
};

/// The largest UMEM chunk. 4096 is the largest the kernel accepts here;
/// frames longer than one chunk travel as several descriptors
/// (multi-buffer).
pub const CHUNK_SIZE: u32 = 4096;
/// Bytes of packet data the largest chunk holds after the kernel's XDP
/// headroom: how multi-buffer frames are cut.
pub const CHUNK_DATA: usize = chunk_data(CHUNK_SIZE);
/// The smallest chunk the kernel accepts, for frames that fit in it.
pub const SMALL_CHUNK_SIZE: u32 = 2048;
const XDP_PACKET_HEADROOM: u32 = 256;

/// Bytes of packet data a chunk of `chunk_size` bytes holds.
pub const fn chunk_data(chunk_size: u32) -> usize {
    chunk_size.saturating_sub(XDP_PACKET_HEADROOM) as usize
}

/// The UMEM chunk for frames of at most `max_frame` bytes (FCS excluded):
/// 2048 when one holds them, 4096 otherwise.
///
/// Small chunks halve the receiver's UMEM (16,384 chunks by default) and
/// put frames at two offsets of each 4 KB page instead of one, so the
/// kernel's copies into the UMEM spread over twice the cache sets
/// (measured on veth in copy mode: docs/benchmarks.md, "Levers studied").
pub fn chunk_size_for(max_frame: usize) -> u32 {
    if max_frame <= chunk_data(SMALL_CHUNK_SIZE) {
        SMALL_CHUNK_SIZE
    } else {
        CHUNK_SIZE
    }
}

/// The UMEM chunk sizes the kernel takes for frames, smallest first; the
/// largest is the one multi-buffer frames are cut for.
pub const UMEM_CHUNKS: [u32; 2] = [SMALL_CHUNK_SIZE, CHUNK_SIZE];

/// The geometry of test frames on a link of a given MTU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    mtu: usize,
    /// IP header length: 20 (IPv4) or 40 (IPv6).
    ip_len: usize,
}

/// Why a UMEM chunk size does not fit a run's frames.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{chunk}-byte UMEM chunks hold frames up to {holds} bytes and this run's are up to \
     {largest}: use {CHUNK_SIZE}-byte chunks, or leave the choice to linerate"
)]
pub struct ChunkError {
    /// The chunk size asked for.
    pub chunk: u32,
    /// The longest descriptor it holds.
    pub holds: usize,
    /// The run's longest descriptor.
    pub largest: usize,
    /// The chunk size that holds them.
    pub instead: u32,
}

impl Geometry {
    /// Frames on a link of `mtu` bytes (the IP MTU, as `ip link` shows it).
    pub fn for_mtu(mtu: u32) -> Self {
        Self {
            mtu: mtu as usize,
            ip_len: IPV4_LEN,
        }
    }

    /// The same link carrying IPv6 test frames (`ipv6`) or IPv4 ones.
    pub fn ipv6(self, ipv6: bool) -> Self {
        Self {
            ip_len: if ipv6 { IPV6_LEN } else { IPV4_LEN },
            ..self
        }
    }

    /// Whether the frames are IPv6.
    pub fn is_ipv6(&self) -> bool {
        self.ip_len == IPV6_LEN
    }

    /// The link's MTU.
    pub fn mtu(&self) -> usize {
        self.mtu
    }

    /// The smallest frame, FCS included: 64 bytes (RFC 2544) over IPv4;
    /// over IPv6 (RFC 5180) the smallest that holds the Ethernet, IPv6 and
    /// UDP headers, linerate's header and the FCS: 84 bytes.
    pub fn min_frame(&self) -> usize {
        MIN_FRAME_SIZE.max(ETH_LEN + self.ip_len + UDP_LEN + HEADER_LEN + FCS_LEN)
    }

    /// The largest frame the link carries, FCS included: MTU + 18.
    pub fn max_frame(&self) -> usize {
        self.mtu + L2_OVERHEAD
    }

    /// The longest descriptor the link carries (the largest frame without
    /// FCS): what a receiver must hold when another tool sends.
    pub fn max_descriptor(&self) -> usize {
        self.mtu + ETH_LEN
    }

    /// Checks a frame size against the link.
    pub fn check_frame(&self, frame_size: usize) -> Result<(), FrameError> {
        FrameSpec::check_size(frame_size, self.mtu)?;
        if frame_size < self.min_frame() {
            return Err(FrameError::SizeOutOfRange {
                size: frame_size,
                min: self.min_frame(),
                max: self.max_frame(),
                mtu: self.mtu,
            });
        }
        Ok(())
    }

    /// Message bytes one fragment carries on this link.
    pub fn payload_per_fragment(&self) -> usize {
        self.mtu - self.ip_len - UDP_LEN - MESSAGE_HEADER_LEN
    }

    /// The largest UDP payload of one frame (linerate header included).
    pub fn max_udp_payload(&self) -> usize {
        self.mtu - self.ip_len - UDP_LEN
    }

    /// UDP payload bytes (linerate header included) of a frame of
    /// `frame_size` on this link's IP version.
    pub fn udp_payload_of(&self, frame_size: usize) -> usize {
        frame_size - FCS_LEN - ETH_LEN - self.ip_len - UDP_LEN
    }

    /// How a message of `msg_len` bytes is cut on this link.
    pub fn fragments(&self, msg_len: usize) -> Result<Fragmentation, MessageError> {
        Fragmentation::new(msg_len, self.payload_per_fragment())
    }

    /// Frame size (FCS included) of the largest fragment of `cut`.
    pub fn fragment_frame(cut: &Fragmentation) -> usize {
        (Self::fragment_len(cut.per_fragment.min(cut.msg_len)) + FCS_LEN).max(MIN_FRAME_SIZE)
    }

    /// [`Self::fragment_frame`] over IPv6 (`ipv6`) or IPv4: IPv6 headers
    /// are 20 bytes longer.
    pub fn fragment_frame_ip(cut: &Fragmentation, ipv6: bool) -> usize {
        Self::fragment_frame(cut) + if ipv6 { IPV6_LEN - IPV4_LEN } else { 0 }
    }

    /// Header and data bytes of the fragment that carries `piece` bytes of
    /// its message (Ethernet header to the end of the data): what its IP
    /// and UDP lengths count.
    #[inline]
    pub const fn fragment_len(piece: usize) -> usize {
        HEADER_OFFSET + MESSAGE_HEADER_LEN + piece
    }

    /// Bytes handed to the socket for a frame of `frame_size`.
    pub fn descriptor_len(frame_size: usize) -> usize {
        frame_size - FCS_LEN
    }

    /// The frame size (FCS included) of a frame whose descriptor holds
    /// `descriptor_len` bytes: the inverse of [`Self::descriptor_len`].
    pub const fn frame_size(descriptor_len: usize) -> usize {
        descriptor_len + FCS_LEN
    }

    /// UDP payload bytes (linerate header included) of a frame: what an
    /// application on a socket would count.
    pub fn udp_payload(frame_size: usize) -> usize {
        frame_size - FCS_LEN - HEADER_OFFSET
    }

    /// Bytes after the linerate header in a frame of `frame_size` (what a
    /// kernel-socket backend sends beside the header to match the frame).
    pub fn data_after_header(frame_size: usize) -> usize {
        Self::udp_payload(frame_size) - HEADER_LEN
    }

    /// Wire bytes of `frames` frames whose descriptors held `bytes` bytes:
    /// FCS, preamble and inter-frame gap added per frame.
    pub fn wire_bytes(bytes: u64, frames: u64) -> u64 {
        linerate_counters::wire::wire_bytes(bytes, frames)
    }

    /// The mean frame size (FCS included) of `frames` frames whose
    /// descriptors held `bytes` bytes; None without frames.
    pub fn mean_frame_size(bytes: u64, frames: u64) -> Option<f64> {
        linerate_counters::wire::mean_frame_size(bytes, frames)
    }

    /// Whether descriptors of `max_descriptor` bytes span several UMEM
    /// chunks (AF_XDP multi-buffer).
    pub fn multi_buffer(max_descriptor: usize) -> bool {
        max_descriptor > CHUNK_DATA
    }

    /// UMEM chunks (descriptors) per frame of `frame_size` in the largest
    /// chunk: how multi-buffer frames are cut.
    pub fn buffers_per_frame(frame_size: usize) -> usize {
        Self::descriptor_len(frame_size).div_ceil(CHUNK_DATA)
    }

    /// The UMEM chunk for descriptors of at most `max_descriptor` bytes:
    /// `asked`, when it holds them (or is the largest chunk, which
    /// multi-buffer cuts frames for), else the better one for that size.
    pub fn umem_chunk(max_descriptor: usize, asked: Option<u32>) -> Result<u32, ChunkError> {
        match asked {
            None => Ok(chunk_size_for(max_descriptor)),
            Some(c) if c != CHUNK_SIZE && max_descriptor > chunk_data(c) => Err(ChunkError {
                chunk: c,
                holds: chunk_data(c),
                largest: max_descriptor,
                instead: CHUNK_SIZE,
            }),
            Some(c) => Ok(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_at_standard_and_jumbo_mtus() {
        let g = Geometry::for_mtu(1500);
        assert_eq!(g.max_frame(), 1518);
        assert_eq!(g.min_frame(), 64);
        assert_eq!(g.max_descriptor(), 1514);
        assert_eq!(g.max_udp_payload(), 1472);
        assert_eq!(g.payload_per_fragment(), 1472 - MESSAGE_HEADER_LEN);
        assert!(g.check_frame(1518).is_ok());
        assert!(g.check_frame(1519).is_err());
        assert!(g.check_frame(63).is_err());
        let j = Geometry::for_mtu(9000);
        assert_eq!(j.max_frame(), 9018);
        assert_eq!(Geometry::buffers_per_frame(9018), 3);
        assert_eq!(Geometry::buffers_per_frame(1518), 1);
    }

    #[test]
    fn ipv6_frames_follow_rfc5180() {
        let g = Geometry::for_mtu(1500).ipv6(true);
        assert!(g.is_ipv6() && !Geometry::for_mtu(1500).is_ipv6());
        // 14 + 40 + 8 + 18 + 4: the IPv6 header is 20 bytes longer.
        assert_eq!(g.min_frame(), 84);
        assert_eq!(g.max_frame(), 1518);
        assert!(g.check_frame(84).is_ok() && g.check_frame(1518).is_ok());
        let e = g.check_frame(64).unwrap_err().to_string();
        assert!(e.contains("between 84 and 1518"), "{e}");
        assert_eq!(g.max_udp_payload(), 1452);
        assert_eq!(g.udp_payload_of(84), 18);
        assert_eq!(g.payload_per_fragment(), 1452 - MESSAGE_HEADER_LEN);
        let cut = g.fragments(3000).unwrap();
        assert_eq!(Geometry::fragment_frame_ip(&cut, true), 1518);
        assert_eq!(
            Geometry::fragment_frame_ip(&g.fragments(0).unwrap(), true),
            100
        );
    }

    #[test]
    fn lengths_of_one_frame() {
        assert_eq!(Geometry::descriptor_len(64), 60);
        assert_eq!(Geometry::frame_size(60), 64);
        assert_eq!(Geometry::udp_payload(64), 18);
        assert_eq!(Geometry::data_after_header(64), 0);
        assert_eq!(Geometry::udp_payload(1518), 1472);
        // 10 frames of 1514 descriptor bytes: 1538 bytes each on the wire.
        assert_eq!(Geometry::wire_bytes(15_140, 10), 15_380);
        // IMIX: 7 x 60 + 4 x 590 + 1514 bytes in 12 frames.
        assert!((Geometry::mean_frame_size(4294, 12).unwrap() - 4342.0 / 12.0).abs() < 1e-9);
        assert_eq!(Geometry::mean_frame_size(0, 0), None);
    }

    #[test]
    fn fragments_of_messages() {
        let g = Geometry::for_mtu(1500);
        let cut = g.fragments(65_536).unwrap();
        assert_eq!(cut.count, 65_536usize.div_ceil(g.payload_per_fragment()));
        assert_eq!(Geometry::fragment_frame(&cut), 1518);
        // The null RPC's frame carries the headers alone: 42 + 34 + FCS.
        assert_eq!(Geometry::fragment_frame(&g.fragments(0).unwrap()), 80);
        assert_eq!(Geometry::fragment_len(1), 42 + MESSAGE_HEADER_LEN + 1);
        // One byte per fragment: every frame carries the headers and a byte.
        let tiny = Fragmentation::new(3, 1).unwrap();
        assert_eq!((tiny.count, Geometry::fragment_frame(&tiny)), (3, 81));
    }

    #[test]
    fn umem_chunks() {
        assert_eq!(Geometry::umem_chunk(1514, None), Ok(2048));
        assert_eq!(Geometry::umem_chunk(1800, None), Ok(4096));
        assert_eq!(Geometry::umem_chunk(9014, None), Ok(4096));
        assert_eq!(Geometry::umem_chunk(9014, Some(4096)), Ok(4096));
        assert_eq!(Geometry::umem_chunk(1514, Some(4096)), Ok(4096));
        let e = Geometry::umem_chunk(3000, Some(2048)).unwrap_err();
        assert_eq!((e.holds, e.largest, e.instead), (1792, 3000, 4096));
        assert_eq!(UMEM_CHUNKS, [2048, 4096]);
        assert!(e.to_string().contains("use 4096-byte chunks"), "{e}");
        assert!(!Geometry::multi_buffer(3840));
        assert!(Geometry::multi_buffer(3841));
    }

    #[test]
    fn small_chunks_for_frames_that_fit_in_one() {
        assert_eq!(chunk_data(SMALL_CHUNK_SIZE), 1792);
        assert_eq!(chunk_data(CHUNK_SIZE), 3840);
        assert_eq!(chunk_size_for(60), SMALL_CHUNK_SIZE);
        assert_eq!(chunk_size_for(1514), SMALL_CHUNK_SIZE);
        assert_eq!(chunk_size_for(1792), SMALL_CHUNK_SIZE);
        assert_eq!(chunk_size_for(1793), CHUNK_SIZE);
        assert_eq!(chunk_size_for(9014), CHUNK_SIZE);
    }
}
