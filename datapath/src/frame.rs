//! Test frames: Ethernet + IPv4 (or IPv6) + UDP + linerate header + payload.
//!
//! A frame is built once as a template ([`FrameSpec::template`]); the hot
//! path patches only the header's sequence and send time. Sizes follow
//! RFC 2544: `frame_size` counts the 4-byte FCS, which the NIC adds, so
//! the bytes handed to the socket are `frame_size - 4`.

use std::net::IpAddr;

use etherparse::PacketBuilder;

use crate::header::{Fragment, Header, HeaderError, Kind, HEADER_LEN, MESSAGE_HEADER_LEN};
use linerate_counters::stats::CounterSnapshot;

/// Ethernet header length.
pub const ETH_LEN: usize = 14;
/// IPv4 header length (no options).
pub const IPV4_LEN: usize = 20;
/// IPv6 header length (no extension headers).
pub const IPV6_LEN: usize = 40;
/// UDP header length.
pub const UDP_LEN: usize = 8;
pub use linerate_counters::wire::{FCS_LEN, WIRE_OVERHEAD};
/// Offset of the linerate header in a template frame.
pub const HEADER_OFFSET: usize = ETH_LEN + IPV4_LEN + UDP_LEN;
/// Offset of the linerate header in an IPv6 template frame.
pub const HEADER_OFFSET_V6: usize = ETH_LEN + IPV6_LEN + UDP_LEN;
/// Smallest frame (RFC 2544), FCS included.
pub const MIN_FRAME_SIZE: usize = 64;
/// Ethernet header plus FCS: the difference between frame size and MTU.
pub const L2_OVERHEAD: usize = ETH_LEN + FCS_LEN;

/// One end of a test flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint {
    /// MAC address.
    pub mac: [u8; 6],
    /// IPv4 or IPv6 address (both ends of a flow the same version).
    pub ip: IpAddr,
    /// UDP port.
    pub port: u16,
}

/// What a test frame looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameSpec {
    /// Sender.
    pub src: Endpoint,
    /// Receiver.
    pub dst: Endpoint,
    /// Frame size as RFC 2544 counts it (FCS included).
    pub frame_size: usize,
    /// Flow id written in the header.
    pub flow: u16,
    /// What the frames carry.
    pub kind: Kind,
}

/// Why a frame cannot be built or parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// Frame size outside what the link carries.
    #[error("frame size {size} is out of range: it must be between {min} and {max} bytes (MTU {mtu} + {L2_OVERHEAD})")]
    SizeOutOfRange {
        /// Requested size.
        size: usize,
        /// Smallest allowed.
        min: usize,
        /// Largest allowed.
        max: usize,
        /// The MTU that sets the maximum.
        mtu: usize,
    },
    /// Not Ethernet/IP/UDP, or cut short.
    #[error("not a UDP frame: {0}")]
    NotUdp(&'static str),
    /// UDP, but no linerate header.
    #[error(transparent)]
    Header(#[from] HeaderError),
    /// A linerate frame whose IPv4 header or UDP checksum is wrong.
    #[error("wrong {0} checksum")]
    Checksum(&'static str),
}

impl FrameError {
    /// Counts a received frame refused for this reason: every refused
    /// frame is `bad`; a reason with a counter of its own counts there too.
    #[inline]
    pub fn count(&self, c: &mut CounterSnapshot) {
        c.bad += 1;
        if let Self::Checksum(_) = self {
            c.bad_checksum += 1;
        }
    }
}

impl FrameSpec {
    /// Checks the frame size against the link's MTU.
    pub fn check_size(frame_size: usize, mtu: usize) -> Result<(), FrameError> {
        let max = mtu + L2_OVERHEAD;
        if frame_size < MIN_FRAME_SIZE || frame_size > max {
            return Err(FrameError::SizeOutOfRange {
                size: frame_size,
                min: MIN_FRAME_SIZE,
                max,
                mtu,
            });
        }
        Ok(())
    }

    /// Whether the frames are IPv6 (else IPv4).
    pub fn ipv6(&self) -> bool {
        self.src.ip.is_ipv6()
    }

    /// Offset of the linerate header.
    pub fn header_offset(&self) -> usize {
        if self.ipv6() {
            HEADER_OFFSET_V6
        } else {
            HEADER_OFFSET
        }
    }

    /// Bytes in the descriptor(s): the frame without FCS.
    pub fn len(&self) -> usize {
        self.frame_size - FCS_LEN
    }

    /// Always false: a frame has at least its headers.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// UDP payload bytes (linerate header included): what an application
    /// on a socket would count.
    pub fn payload_len(&self) -> usize {
        self.len() - self.header_offset()
    }

    /// Bytes the frame occupies on the wire: frame + preamble + gap.
    pub fn wire_len(&self) -> usize {
        self.frame_size + WIRE_OVERHEAD
    }

    /// The frame with sequence 0 and send time 0.
    pub fn template(&self) -> Result<Vec<u8>, FrameError> {
        if self.frame_size < MIN_FRAME_SIZE {
            return Err(FrameError::SizeOutOfRange {
                size: self.frame_size,
                min: MIN_FRAME_SIZE,
                max: usize::MAX,
                mtu: 0,
            });
        }
        let mut payload = vec![0u8; self.len().saturating_sub(self.header_offset())];
        let hlen = if self.kind.has_fragment() {
            MESSAGE_HEADER_LEN
        } else {
            HEADER_LEN
        };
        if self.len() < self.header_offset() + hlen {
            return Err(FrameError::SizeOutOfRange {
                size: self.frame_size,
                min: self.header_offset() + hlen + FCS_LEN,
                max: usize::MAX,
                mtu: 0,
            });
        }
        Header {
            kind: self.kind,
            flow: self.flow,
            seq: 0,
            send_ns: 0,
        }
        .write(&mut payload[..HEADER_LEN]);
        if self.kind.has_fragment() {
            Fragment {
                msg_id: 0,
                index: 0,
                count: 1,
                msg_len: 0,
            }
            .write(&mut payload[HEADER_LEN..hlen]);
        }
        for (i, b) in payload[hlen..].iter_mut().enumerate() {
            *b = i as u8;
        }
        let eth = PacketBuilder::ethernet2(self.src.mac, self.dst.mac);
        let mut frame = Vec::with_capacity(self.len());
        let built = match (self.src.ip, self.dst.ip) {
            (IpAddr::V4(src), IpAddr::V4(dst)) => {
                let b = eth.ipv4(src.octets(), dst.octets(), 64);
                b.udp(self.src.port, self.dst.port)
                    .write(&mut frame, &payload)
            }
            (IpAddr::V6(src), IpAddr::V6(dst)) => {
                let b = eth.ipv6(src.octets(), dst.octets(), 64);
                b.udp(self.src.port, self.dst.port)
                    .write(&mut frame, &payload)
            }
            _ => return Err(FrameError::NotUdp("one end IPv4, the other IPv6")),
        };
        built.map_err(|_| FrameError::NotUdp("etherparse could not build the frame"))?;
        if !self.ipv6() {
            // The hot path changes header bytes without recomputing the UDP
            // checksum, so send none (allowed for UDP over IPv4). IPv6
            // keeps etherparse's, which [`Stamp`] updates per frame.
            frame[ETH_LEN + IPV4_LEN + 6..HEADER_OFFSET].fill(0);
        }
        debug_assert_eq!(frame.len(), self.len());
        Ok(frame)
    }
}

/// Smallest frame handed to a socket (64 bytes on the wire with FCS);
/// shorter frames are padded, their IP and UDP lengths say what counts.
pub const MIN_LEN: usize = MIN_FRAME_SIZE - FCS_LEN;

/// Sets the IPv4 total length (and header checksum) and the UDP length of
/// a template frame (no VLAN tag, no IP options) to those of a frame whose
/// headers and payload take `len` bytes. Returns the bytes to hand to the
/// socket: `len`, padded up to [`MIN_LEN`].
pub fn set_lengths(frame: &mut [u8], len: usize) -> usize {
    let ip = ETH_LEN;
    if is_ipv6(frame) {
        // IPv6: the payload length (no header checksum); the UDP checksum
        // is the caller's ([`Stamp`]).
        let payload = (len - ETH_LEN - IPV6_LEN) as u16;
        frame[ip + 4..ip + 6].copy_from_slice(&payload.to_be_bytes());
        frame[ip + IPV6_LEN + 4..ip + IPV6_LEN + 6].copy_from_slice(&payload.to_be_bytes());
        return len.max(MIN_LEN);
    }
    let ip_len = (len - ETH_LEN) as u16;
    let old_len = u16::from_be_bytes([frame[ip + 2], frame[ip + 3]]);
    frame[ip + 2..ip + 4].copy_from_slice(&ip_len.to_be_bytes());
    // Only the total length changed under the header checksum: update it
    // (RFC 1624) instead of summing the header again.
    let check = u16::from_be_bytes([frame[ip + 10], frame[ip + 11]]);
    let check = checksum_update(check, old_len, ip_len);
    frame[ip + 10..ip + 12].copy_from_slice(&check.to_be_bytes());
    let udp_len = (len - ETH_LEN - IPV4_LEN) as u16;
    frame[ip + IPV4_LEN + 4..ip + IPV4_LEN + 6].copy_from_slice(&udp_len.to_be_bytes());
    len.max(MIN_LEN)
}

/// Whether a template frame (no VLAN tag) is IPv6.
#[inline]
pub fn is_ipv6(frame: &[u8]) -> bool {
    frame[12..14] == ETHERTYPE_IPV6.to_be_bytes()
}

/// Offset of the linerate header in a template frame (no VLAN tag).
#[inline]
pub fn header_offset(frame: &[u8]) -> usize {
    if is_ipv6(frame) {
        HEADER_OFFSET_V6
    } else {
        HEADER_OFFSET
    }
}

/// How a sender stamps a frame's sequence and send time and keeps its UDP
/// checksum valid: IPv4 frames carry none (zero), IPv6 frames must, so it
/// is updated from the checksum of the same frame with sequence and time 0
/// (RFC 1624): six 16-bit words added, not the whole payload summed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    offset: usize,
    /// The UDP checksum of the frame with sequence and time 0 (IPv6).
    base: Option<u16>,
}

impl Stamp {
    /// For frames built from `template` (sequence and time 0, the lengths
    /// of the frames to stamp).
    pub fn for_template(template: &[u8]) -> Self {
        let offset = header_offset(template);
        let base = is_ipv6(template)
            .then(|| u16::from_be_bytes([template[offset - 2], template[offset - 1]]));
        Self { offset, base }
    }

    /// Offset of the linerate header.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Writes sequence and time into a frame's first buffer (whose other
    /// bytes under the checksum are the template's) and its checksum.
    #[inline]
    pub fn apply(&self, head: &mut [u8], seq: u64, send_ns: u64) {
        let h = &mut head[self.offset..];
        Header::patch(h, seq, send_ns);
        if let Some(base) = self.base {
            let added = ones_sum(&h[crate::header::SEQ_OFFSET..HEADER_LEN]);
            let mut check = !fold(u32::from(!base) + added);
            if check == 0 {
                check = 0xffff;
            }
            head[self.offset - 2..self.offset].copy_from_slice(&check.to_be_bytes());
        }
    }
}

/// Writes the UDP checksum of an IPv6 frame (no VLAN tag, no extension
/// headers) whose bytes up to `len` lie in `frame`: summed whole, for
/// frames whose payload differs beyond what [`Stamp`] updates (rr's
/// message fragments). IPv4 frames are left as they are (no checksum).
pub fn set_udp6_checksum(frame: &mut [u8], len: usize) {
    if !is_ipv6(frame) {
        return;
    }
    let udp = ETH_LEN + IPV6_LEN;
    frame[udp + 6..udp + 8].fill(0);
    let udp_len = (len - udp) as u32;
    // The pseudo-header: addresses, upper-layer length, next header.
    let sum = ones_sum(&frame[ETH_LEN + 8..udp])
        + udp_len
        + u32::from(IPPROTO_UDP)
        + ones_sum(&frame[udp..len]);
    let mut check = !fold(sum);
    if check == 0 {
        check = 0xffff;
    }
    frame[udp + 6..udp + 8].copy_from_slice(&check.to_be_bytes());
}

/// The Internet checksum's one's-complement sum of `b` as big-endian 16-bit
/// words (an odd last byte padded with zero), folded to 16 bits or not:
/// add such sums and [`fold`] them. Summed as native-endian 32-bit words
/// and swapped once at the end (RFC 1071: the sum is independent of byte
/// order, and 2^16 is 1 modulo 0xffff), which the compiler vectorizes: a
/// receiver checks a 1500-byte datagram with it.
pub fn ones_sum(b: &[u8]) -> u32 {
    let mut words = b.chunks_exact(4);
    let mut sum: u64 = words
        .by_ref()
        .map(|w| u64::from(u32::from_ne_bytes([w[0], w[1], w[2], w[3]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    let sum = if cfg!(target_endian = "little") {
        (sum as u16).swap_bytes()
    } else {
        sum as u16
    };
    let tail = match *words.remainder() {
        [a, b, c] => u32::from(u16::from_be_bytes([a, b])) + (u32::from(c) << 8),
        [a, b] => u32::from(u16::from_be_bytes([a, b])),
        [a] => u32::from(a) << 8,
        _ => 0,
    };
    u32::from(sum) + tail
}

/// Folds a one's-complement sum into 16 bits.
#[inline]
pub fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// A checksum after one 16-bit word under it changed from `old` to `new`:
/// RFC 1624, eqn. 3 (HC' = ~(~HC + ~m + m')).
#[inline]
pub fn checksum_update(check: u16, old: u16, new: u16) -> u16 {
    !fold(u32::from(!check) + u32::from(!old) + u32::from(new))
}

/// What a receiver learns from the first buffer of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parsed {
    /// The linerate header.
    pub header: Header,
    /// The fragment header, for frames that carry part of a message.
    pub fragment: Option<Fragment>,
    /// Offset of the message bytes (after all headers) in the frame.
    pub data_offset: usize,
    /// UDP source port.
    pub src_port: u16,
    /// UDP destination port.
    pub dst_port: u16,
    /// UDP payload length from the UDP header.
    pub udp_payload_len: usize,
}

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const ETHERTYPE_VLAN: u16 = 0x8100;
const ETHERTYPE_QINQ: u16 = 0x88a8;
const IPPROTO_UDP: u8 = 17;

/// How much of each received frame a receiver verifies (`--verify`),
/// chosen before its loop starts: one monomorphic loop per level
/// ([`verify`]'s constants).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Verify {
    /// No checksum: headers parsed only.
    Off,
    /// The IPv4 header's checksum.
    Header,
    /// The IPv4 header's and the UDP checksum, over every buffer of the
    /// frame.
    #[default]
    Full,
    /// One frame in N (N >= 2) verified in full, the others' IPv4 header
    /// only (`1/N`): the UDP checksum's cost (13 % of a core at 10 GbE of
    /// 1518-byte frames) divided by N, and a corrupt payload still found
    /// as often as it is sampled.
    Sampled(u32),
}

/// Its name on the command line and in the results: `off`, `header`,
/// `full` or `1/N`.
impl std::fmt::Display for Verify {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Off => f.write_str("off"),
            Self::Header => f.write_str("header"),
            Self::Full => f.write_str("full"),
            Self::Sampled(n) => write!(f, "1/{n}"),
        }
    }
}

impl Verify {
    /// Whether any checksum is verified (so that `bad_checksum` is a
    /// measurement).
    pub fn checks(self) -> bool {
        self != Self::Off
    }
}

/// How much of a received frame's checksums a receiver verifies, chosen
/// before its loop: the loop is compiled for one level (a const generic of
/// [`parse_verified`]), so no level is decided per frame.
pub mod verify {
    /// No checksum verified: headers parsed only.
    pub const OFF: u8 = 0;
    /// The IPv4 header's checksum (20 bytes; IPv6 has none): what a
    /// corrupt header of linerate's own frames gets wrong (its IPv4 frames
    /// carry no UDP checksum).
    pub const HEADER: u8 = 1;
    /// The IPv4 header's and the UDP checksum where the frame carries one
    /// (IPv4: nonzero; IPv6: always), over all the frame's buffers.
    pub const FULL: u8 = 2;
    /// One frame in N at [`FULL`], the others at [`HEADER`]: the receiving
    /// loop keeps the count (`Verify::Sampled`).
    pub const SAMPLED: u8 = 3;
}

/// Whether the checksums of a frame's IP (`ip`: offset of its header, IPv6
/// when `v6`) and UDP (`udp`: offset of its header, `udp_len` its length
/// field) headers verify: the IPv4 header's always; the UDP checksum where
/// the frame carries one (IPv4: nonzero; IPv6: always), over the datagram's
/// bytes in `b` (the frame's first buffer) and then in `tail` (its other
/// buffers, in order). A datagram whose bytes are not all there (a
/// truncated frame) has its UDP checksum unchecked. Summed as senders sum
/// it ([`ones_sum`]); a valid sum folds to 0xffff. `V` ([`verify`]) says
/// how much is checked.
#[inline]
fn verify_checksums<'t, const V: u8>(
    (b, tail): (&[u8], impl IntoIterator<Item = &'t [u8]>),
    v6: bool,
    ip: usize,
    udp: usize,
    udp_len: usize,
) -> Result<(), FrameError> {
    if V == verify::OFF {
        return Ok(());
    }
    if !v6 && fold(ones_sum(&b[ip..udp])) != 0xffff {
        return Err(FrameError::Checksum("IPv4 header"));
    }
    if V == verify::HEADER {
        return Ok(());
    }
    let carried = v6 || b[udp + 6..udp + 8] != [0, 0];
    if !carried || udp_len < UDP_LEN {
        return Ok(());
    }
    // The pseudo-header: addresses, protocol, UDP length.
    let addresses = if v6 {
        ip + 8..ip + 40
    } else {
        ip + 12..ip + 20
    };
    let in_head = udp_len.min(b.len() - udp);
    let mut sum = ones_sum(&b[addresses])
        + u32::from(IPPROTO_UDP)
        + udp_len as u32
        + ones_sum(&b[udp..udp + in_head]);
    let mut left = udp_len - in_head;
    // A buffer that starts at an odd offset of the datagram sums to the
    // byte-swapped sum of its words (RFC 1071, byte order independence).
    let mut odd = in_head % 2 == 1;
    for buf in tail {
        if left == 0 {
            break;
        }
        let take = left.min(buf.len());
        let part = fold(ones_sum(&buf[..take]));
        sum += u32::from(if odd { part.swap_bytes() } else { part });
        odd ^= take % 2 == 1;
        left -= take;
    }
    if left > 0 {
        return Ok(());
    }
    if fold(sum) != 0xffff {
        return Err(FrameError::Checksum("UDP"));
    }
    Ok(())
}

/// Parses Ethernet (optionally one VLAN tag), IPv4 or IPv6, UDP and the
/// linerate header from the first buffer of a received frame, and verifies
/// its checksums (`verify_checksums`: a linerate frame whose checksum is
/// wrong is [`FrameError::Checksum`]). Never panics, whatever the bytes.
#[inline]
pub fn parse(b: &[u8]) -> Result<Parsed, FrameError> {
    parse_verified::<{ verify::FULL }>(b)
}

/// [`parse`], verifying the checksums level `V` ([`verify`]) asks for.
#[inline]
pub fn parse_verified<const V: u8>(b: &[u8]) -> Result<Parsed, FrameError> {
    parse_buffers::<V>(b, [])
}

/// [`parse_verified`] of a frame in several buffers: `b` the first (all
/// headers are there), `tail` the others in order, read only at
/// [`verify::FULL`] for the UDP checksum of a datagram longer than `b`.
#[inline]
pub fn parse_buffers<'t, const V: u8>(
    b: &[u8],
    tail: impl IntoIterator<Item = &'t [u8]>,
) -> Result<Parsed, FrameError> {
    let be16 = |o: usize| -> Option<u16> { Some(u16::from_be_bytes([*b.get(o)?, *b.get(o + 1)?])) };
    let mut off = 12;
    let mut ethertype = be16(off).ok_or(FrameError::NotUdp("short Ethernet header"))?;
    off += 2;
    if ethertype == ETHERTYPE_VLAN || ethertype == ETHERTYPE_QINQ {
        ethertype = be16(off + 2).ok_or(FrameError::NotUdp("short VLAN tag"))?;
        off += 4;
    }
    let ip = off;
    let proto = match ethertype {
        ETHERTYPE_IPV4 => {
            let vihl = *b.get(off).ok_or(FrameError::NotUdp("short IPv4 header"))?;
            let ihl = usize::from(vihl & 0x0f) * 4;
            if vihl >> 4 != 4 || ihl < IPV4_LEN || b.len() < off + ihl {
                return Err(FrameError::NotUdp("bad IPv4 header"));
            }
            let frag = be16(off + 6).unwrap_or(0);
            if frag & 0x1fff != 0 {
                return Err(FrameError::NotUdp("IPv4 fragment"));
            }
            let proto = b[off + 9];
            off += ihl;
            proto
        }
        ETHERTYPE_IPV6 => {
            if b.len() < off + 40 {
                return Err(FrameError::NotUdp("short IPv6 header"));
            }
            let next = b[off + 6];
            off += 40;
            next
        }
        _ => return Err(FrameError::NotUdp("not IP")),
    };
    if proto != IPPROTO_UDP {
        return Err(FrameError::NotUdp("not UDP"));
    }
    if b.len() < off + UDP_LEN {
        return Err(FrameError::NotUdp("short UDP header"));
    }
    let src_port = be16(off).unwrap_or(0);
    let dst_port = be16(off + 2).unwrap_or(0);
    let udp_len = usize::from(be16(off + 4).unwrap_or(0));
    let lr = off + UDP_LEN;
    let header = Header::read(&b[lr..])?;
    let (fragment, data_offset) = if header.kind.has_fragment() {
        let f = Fragment::read(b.get(lr + HEADER_LEN..).unwrap_or(&[]))?;
        (Some(f), lr + crate::header::MESSAGE_HEADER_LEN)
    } else {
        (None, lr + HEADER_LEN)
    };
    verify_checksums::<V>((b, tail), ethertype == ETHERTYPE_IPV6, ip, off, udp_len)?;
    Ok(Parsed {
        header,
        fragment,
        data_offset,
        src_port,
        dst_port,
        udp_payload_len: udp_len.saturating_sub(UDP_LEN),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::{SlicedPacket, TransportSlice};
    use proptest::prelude::*;

    fn spec(frame_size: usize, flow: u16) -> FrameSpec {
        FrameSpec {
            src: Endpoint {
                mac: [2, 0, 0, 0, 0, 1],
                ip: std::net::Ipv4Addr::new(198, 18, 0, 1).into(),
                port: 40000u16.wrapping_add(flow),
            },
            dst: Endpoint {
                mac: [2, 0, 0, 0, 0, 2],
                ip: std::net::Ipv4Addr::new(198, 18, 0, 2).into(),
                port: 7000,
            },
            frame_size,
            flow,
            kind: Kind::Stream,
        }
    }

    fn spec6(frame_size: usize, flow: u16) -> FrameSpec {
        let mut s = spec(frame_size, flow);
        s.src.ip = "2001:2::1".parse().unwrap();
        s.dst.ip = "2001:2::2".parse().unwrap();
        s
    }

    /// `f` cut into buffers at `cuts` (offsets, any order, past the
    /// headers), as a multi-buffer frame arrives.
    fn buffers(f: &[u8], cuts: &[usize]) -> (Vec<u8>, Vec<Vec<u8>>) {
        let mut at: Vec<usize> = cuts.iter().map(|c| (*c).clamp(100, f.len())).collect();
        at.sort_unstable();
        at.dedup();
        let mut bufs = Vec::new();
        let mut from = 0;
        for to in at.into_iter().chain([f.len()]) {
            bufs.push(f[from..to].to_vec());
            from = to;
        }
        let head = bufs.remove(0);
        bufs.retain(|b| !b.is_empty());
        (head, bufs)
    }

    proptest! {
        /// The UDP checksum over a frame's buffers, whatever their lengths
        /// (odd ones too): valid as sent, wrong when any byte of any buffer
        /// changes, and unchecked when a buffer is missing (not all the
        /// datagram at hand) or the level is `header`.
        #[test]
        fn full_checks_the_datagram_across_buffers(
            size in 200usize..=9018,
            cuts in proptest::collection::vec(0usize..9018, 1..5),
            flip in 0usize..9018,
        ) {
            use super::verify::{FULL, HEADER};
            let f = spec6(size, 1).template().unwrap();
            let (head, tail) = buffers(&f, &cuts);
            prop_assert!(parse_buffers::<FULL>(&head, tail.iter().map(Vec::as_slice)).is_ok());
            // A byte of the payload, past the headers (the linerate header
            // is read from the first buffer, so flip past it).
            let at = 100 + flip % (f.len() - 100);
            let mut bad = f.clone();
            bad[at] ^= 0x5a;
            let (bhead, btail) = buffers(&bad, &cuts);
            prop_assert!(matches!(
                parse_buffers::<FULL>(&bhead, btail.iter().map(Vec::as_slice)),
                Err(FrameError::Checksum("UDP"))
            ));
            prop_assert!(parse_buffers::<HEADER>(&bhead, btail.iter().map(Vec::as_slice)).is_ok());
            if let Some((_, first)) = btail.split_last() {
                // The last buffer missing: the datagram is not all here.
                prop_assert!(parse_buffers::<FULL>(&bhead, first.iter().map(Vec::as_slice)).is_ok());
            }
        }
    }

    #[test]
    fn each_verify_level_checks_what_it_says() {
        use super::verify::{FULL, HEADER, OFF};
        let checks = |f: &[u8]| {
            [
                parse_verified::<OFF>(f).is_ok(),
                parse_verified::<HEADER>(f).is_ok(),
                parse_verified::<FULL>(f).is_ok(),
            ]
        };
        // IPv4 header checksum wrong: only `off` lets it through.
        let mut f = spec(64, 1).template().unwrap();
        f[14 + 10] ^= 0x55;
        assert_eq!(checks(&f), [true, false, false]);
        // IPv6 payload byte flipped: the UDP checksum is wrong, which only
        // `full` sees.
        let mut f = spec6(200, 1).template().unwrap();
        assert_eq!(checks(&f), [true, true, true]);
        let last = f.len() - 1;
        f[last] ^= 0x55;
        assert_eq!(checks(&f), [true, true, false]);
        assert!(matches!(parse(&f), Err(FrameError::Checksum("UDP"))));
    }

    #[test]
    fn ipv6_frames_start_at_84_bytes_and_one_version_per_flow() {
        assert!(spec6(83, 1).template().is_err());
        let f = spec6(84, 1).template().unwrap();
        assert!(is_ipv6(&f) && header_offset(&f) == HEADER_OFFSET_V6);
        let mut mixed = spec(100, 1);
        mixed.dst.ip = "2001:2::2".parse().unwrap();
        assert!(matches!(mixed.template(), Err(FrameError::NotUdp(_))));
    }

    proptest! {
        #[test]
        fn template_is_valid_udp_and_parses(size in 64usize..=9018, flow: u16, seq in 0..=crate::header::MASK48, t in 0..=crate::header::MASK48) {
            let s = spec(size, flow);
            let mut f = s.template().unwrap();
            prop_assert_eq!(f.len(), size - 4);
            Header::patch(&mut f[HEADER_OFFSET..], seq, t);
            // etherparse is the oracle for the headers...
            let sliced = SlicedPacket::from_ethernet(&f).unwrap();
            let Some(TransportSlice::Udp(udp)) = sliced.transport else { panic!("not udp") };
            prop_assert_eq!(udp.destination_port(), 7000);
            prop_assert_eq!(udp.payload().len(), s.payload_len());
            // ...and our parser agrees with it.
            let p = parse(&f).unwrap();
            prop_assert_eq!(p.header, Header { kind: Kind::Stream, flow, seq, send_ns: t });
            prop_assert_eq!(p.dst_port, 7000);
            prop_assert_eq!(p.src_port, 40000u16.wrapping_add(flow));
            prop_assert_eq!(p.udp_payload_len, s.payload_len());
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..128)) {
            let _ = parse(&b);
        }

        #[test]
        fn parse_survives_truncation(size in 64usize..200, cut in 0usize..200) {
            let f = spec(size, 1).template().unwrap();
            let cut = cut.min(f.len());
            let r = parse(&f[..cut]);
            if cut >= HEADER_OFFSET + HEADER_LEN { prop_assert!(r.is_ok()); } else { prop_assert!(r.is_err()); }
        }
    }

    /// Whether a frame's checksums are what a decoder (Wireshark) expects:
    /// a valid IPv4 header checksum, and a valid UDP checksum or (IPv4
    /// only) none. etherparse computes them.
    pub(crate) fn checksums_valid(f: &[u8]) -> Result<(), String> {
        let sliced = SlicedPacket::from_ethernet(f).map_err(|e| e.to_string())?;
        let Some(TransportSlice::Udp(udp)) = &sliced.transport else {
            return Err("not UDP".into());
        };
        let header = udp.to_header();
        let want = match &sliced.net {
            Some(etherparse::NetSlice::Ipv4(ip)) => {
                let h = ip.header().to_header();
                if h.header_checksum != h.calc_header_checksum() {
                    return Err(format!("IPv4 header checksum {:#06x}", h.header_checksum));
                }
                if header.checksum == 0 {
                    return Ok(());
                }
                header.calc_checksum_ipv4(&h, udp.payload())
            }
            Some(etherparse::NetSlice::Ipv6(ip)) => {
                header.calc_checksum_ipv6(&ip.header().to_header(), udp.payload())
            }
            _ => return Err("not IP".into()),
        }
        .map_err(|e| e.to_string())?;
        if header.checksum != want {
            return Err(format!(
                "UDP checksum {:#06x}, want {want:#06x}",
                header.checksum
            ));
        }
        Ok(())
    }

    proptest! {
        /// Every frame a sender builds, stamped with any sequence and time,
        /// or cut to any fragment length, carries valid checksums.
        #[test]
        fn built_frames_carry_valid_checksums(size in 64usize..=9018, flow: u16, seq in 0..=crate::header::MASK48, t in 0..=crate::header::MASK48, cut in 0usize..9000) {
            let s = spec(size, flow);
            let mut f = s.template().unwrap();
            prop_assert_eq!(checksums_valid(&f), Ok(()));
            Header::patch(&mut f[HEADER_OFFSET..], seq, t);
            prop_assert_eq!(checksums_valid(&f), Ok(()));
            // A message frame holds 34 bytes of headers after UDP: 80 at least.
            let size = size.max(HEADER_OFFSET + MESSAGE_HEADER_LEN + 4);
            let len = HEADER_OFFSET + MESSAGE_HEADER_LEN + cut % (size - 4 - HEADER_OFFSET - MESSAGE_HEADER_LEN + 1);
            let mut m = FrameSpec { kind: Kind::Message, frame_size: size, ..s }.template().unwrap();
            let wire = set_lengths(&mut m, len);
            prop_assert_eq!(checksums_valid(&m[..wire]), Ok(()));
        }

        /// IPv6 frames always carry a valid UDP checksum: the template's,
        /// and after [`Stamp`] writes any sequence and time, also into a
        /// frame cut from a larger template (a traffic mix).
        #[test]
        fn ipv6_frames_carry_valid_udp_checksums(size in 84usize..=9018, smaller in 84usize..=9018, flow: u16, seq in 0..=crate::header::MASK48, t in 0..=crate::header::MASK48) {
            let s = spec6(size, flow);
            let mut f = s.template().unwrap();
            prop_assert_eq!(f.len(), size - 4);
            prop_assert_eq!(checksums_valid(&f), Ok(()));
            let stamp = Stamp::for_template(&f);
            prop_assert_eq!(stamp.offset(), HEADER_OFFSET_V6);
            stamp.apply(&mut f, seq, t);
            prop_assert_eq!(checksums_valid(&f), Ok(()));
            let p = parse(&f).unwrap();
            prop_assert_eq!(p.header, Header { kind: Kind::Stream, flow, seq, send_ns: t });
            prop_assert_eq!(p.udp_payload_len, size - 4 - HEADER_OFFSET_V6);
            // A mix: the largest template, cut to a smaller frame.
            let small = smaller.min(size);
            let stamp = Stamp::for_template(&FrameSpec { frame_size: small, ..s }.template().unwrap());
            let len = small - 4;
            let wire = set_lengths(&mut f, len);
            stamp.apply(&mut f, seq, t);
            prop_assert_eq!(checksums_valid(&f[..wire]), Ok(()));
        }

        /// A message fragment of any length, its headers written after
        /// its lengths, carries a valid checksum once summed whole.
        #[test]
        fn ipv6_fragments_carry_valid_checksums(cut in 0usize..1500, seq in 0..=crate::header::MASK48, port: u16) {
            let mut s = spec6(1518, 3);
            s.kind = Kind::Request;
            let mut f = s.template().unwrap();
            let len = HEADER_OFFSET_V6 + MESSAGE_HEADER_LEN + cut % (1514 - HEADER_OFFSET_V6 - MESSAGE_HEADER_LEN + 1);
            let wire = set_lengths(&mut f, len);
            f[HEADER_OFFSET_V6 - 8..HEADER_OFFSET_V6 - 6].copy_from_slice(&port.to_be_bytes());
            Header::patch(&mut f[HEADER_OFFSET_V6..], seq, seq / 3);
            set_udp6_checksum(&mut f, len);
            prop_assert_eq!(checksums_valid(&f[..wire]), Ok(()));
            prop_assert_eq!(parse(&f[..wire]).unwrap().udp_payload_len, len - HEADER_OFFSET_V6);
        }

        /// IPv4 frames stamped the same way keep no UDP checksum (zero).
        #[test]
        fn ipv4_stamps_leave_the_udp_checksum_zero(size in 64usize..=1518, seq in 0..=crate::header::MASK48, t in 0..=crate::header::MASK48) {
            let mut f = spec(size, 1).template().unwrap();
            Stamp::for_template(&f).apply(&mut f, seq, t);
            prop_assert_eq!(&f[HEADER_OFFSET - 2..HEADER_OFFSET], &[0u8, 0][..]);
            prop_assert_eq!(checksums_valid(&f), Ok(()));
            prop_assert_eq!(parse(&f).unwrap().header.seq, seq);
        }

        /// Summed 32 bits at a time, the sum is the 16-bit words' sum.
        #[test]
        fn ones_sum_is_the_sum_of_16_bit_words(b in proptest::collection::vec(any::<u8>(), 0..3000)) {
            let words: u64 = b
                .chunks(2)
                .map(|w| u64::from(u16::from_be_bytes([w[0], w.get(1).copied().unwrap_or(0)])))
                .sum();
            let want = fold((words & 0xffff_ffff) as u32) as u64 + (words >> 32);
            prop_assert_eq!(u64::from(fold(ones_sum(&b))), u64::from(fold(want as u32)));
        }

        #[test]
        fn checksum_update_agrees_with_a_full_sum(b in proptest::collection::vec(any::<u8>(), 2..64), at: usize, new: u16) {
            let b = if b.len() % 2 == 1 { &b[1..] } else { &b[..] };
            let i = at % (b.len() / 2) * 2;
            let before = !fold(ones_sum(b));
            let old = u16::from_be_bytes([b[i], b[i + 1]]);
            let mut c = b.to_vec();
            c[i..i + 2].copy_from_slice(&new.to_be_bytes());
            let after = !fold(ones_sum(&c));
            let updated = checksum_update(before, old, new);
            // 0x0000 and 0xffff are the same number in one's complement.
            prop_assert!(updated == after || (updated ^ after) == 0xffff && (after == 0 || after == 0xffff), "{updated:#x} vs {after:#x}");
        }
    }

    #[test]
    fn size_limits_follow_rfc2544() {
        assert!(FrameSpec::check_size(64, 1500).is_ok());
        assert!(FrameSpec::check_size(1518, 1500).is_ok());
        assert!(FrameSpec::check_size(9018, 9000).is_ok());
        assert!(matches!(
            FrameSpec::check_size(1519, 1500),
            Err(FrameError::SizeOutOfRange { max: 1518, .. })
        ));
        assert!(FrameSpec::check_size(63, 1500).is_err());
    }

    proptest! {
        /// A message frame cut to any length still has valid IPv4 and UDP
        /// headers (etherparse checks lengths and the IP checksum).
        #[test]
        fn set_lengths_keeps_headers_valid(len in HEADER_OFFSET + MESSAGE_HEADER_LEN..1514) {
            let mut s = spec(1518, 2);
            s.kind = Kind::Message;
            let mut f = s.template().unwrap();
            let wire = set_lengths(&mut f, len);
            prop_assert_eq!(wire, len.max(MIN_LEN));
            let f = &f[..wire];
            let sliced = SlicedPacket::from_ethernet(f).unwrap();
            let Some(etherparse::NetSlice::Ipv4(ip)) = sliced.net else { panic!("not ipv4") };
            prop_assert_eq!(usize::from(ip.header().total_len()), len - ETH_LEN);
            let h = ip.header().to_header();
            prop_assert_eq!(h.header_checksum, h.calc_header_checksum());
            let p = parse(f).unwrap();
            prop_assert_eq!(p.udp_payload_len, len - HEADER_OFFSET);
            prop_assert!(p.fragment.is_some());
            prop_assert_eq!(p.data_offset, HEADER_OFFSET + MESSAGE_HEADER_LEN);
        }
    }

    #[test]
    fn vlan_tagged_frames_parse() {
        let f = spec(100, 3).template().unwrap();
        let mut tagged = f[..12].to_vec();
        tagged.extend_from_slice(&[0x81, 0x00, 0x00, 0x05]);
        tagged.extend_from_slice(&f[12..]);
        assert_eq!(parse(&tagged).unwrap().header.flow, 3);
    }

    /// An IPv4 frame that carries a UDP checksum (linerate's senders send
    /// none over IPv4; other senders may).
    fn with_udp4_checksum(mut f: Vec<u8>) -> Vec<u8> {
        let sliced = SlicedPacket::from_ethernet(&f).unwrap();
        let Some(etherparse::NetSlice::Ipv4(ip)) = &sliced.net else {
            panic!("not ipv4")
        };
        let Some(TransportSlice::Udp(udp)) = &sliced.transport else {
            panic!("not udp")
        };
        let check = udp
            .to_header()
            .calc_checksum_ipv4(&ip.header().to_header(), udp.payload())
            .unwrap();
        f[HEADER_OFFSET - 2..HEADER_OFFSET].copy_from_slice(&check.to_be_bytes());
        f
    }

    /// One received frame through a receiver's accounting: (frames, bad,
    /// bad_checksum) it counted.
    fn received(f: &[u8]) -> (u64, u64, u64) {
        let mut c = CounterSnapshot::default();
        crate::worker::FlowTable::default().account_frame(&mut c, f, f.len() as u64);
        (c.frames, c.bad, c.bad_checksum)
    }

    #[test]
    fn good_frames_pass_the_checksum_checks() {
        let v4 = spec(1518, 1).template().unwrap();
        assert_eq!(received(&v4), (1, 0, 0), "IPv4, no UDP checksum");
        assert_eq!(
            received(&with_udp4_checksum(v4)),
            (1, 0, 0),
            "IPv4 with one"
        );
        assert_eq!(
            received(&spec6(1518, 1).template().unwrap()),
            (1, 0, 0),
            "IPv6"
        );
    }

    #[test]
    fn one_flipped_bit_is_one_bad_checksum() {
        // In the IPv4 header (the TTL, a source address bit).
        for at in [ETH_LEN + 8, ETH_LEN + 13] {
            let mut f = spec(1518, 1).template().unwrap();
            f[at] ^= 0x10;
            assert_eq!(parse(&f), Err(FrameError::Checksum("IPv4 header")));
            assert_eq!(received(&f), (0, 1, 1), "IPv4 header byte {at}");
        }
        // In the payload, of frames that carry a UDP checksum.
        let mut v4 = with_udp4_checksum(spec(1518, 1).template().unwrap());
        let mut v6 = spec6(1518, 1).template().unwrap();
        for f in [&mut v4, &mut v6] {
            f[1000] ^= 1;
            assert_eq!(parse(f), Err(FrameError::Checksum("UDP")));
            assert_eq!(received(f), (0, 1, 1));
        }
        // A message's fragment (cut short by set_lengths) as well.
        let mut m = FrameSpec {
            kind: Kind::Message,
            ..spec6(1518, 2)
        }
        .template()
        .unwrap();
        let wire = set_lengths(&mut m, 300);
        set_udp6_checksum(&mut m, 300);
        assert_eq!(received(&m[..wire]), (1, 0, 0));
        m[200] ^= 0x80;
        assert_eq!(received(&m[..wire]), (0, 1, 1));
        // Without a UDP checksum (IPv4), the payload is not checked.
        let mut f = spec(1518, 1).template().unwrap();
        f[1000] ^= 1;
        assert_eq!(received(&f), (1, 0, 0));
    }

    #[test]
    fn checksums_across_buffers_are_not_checked() {
        // A jumbo IPv6 frame's first 4096-byte buffer: the UDP checksum
        // covers bytes in the next buffer, so only the headers are read.
        let f = spec6(9018, 1).template().unwrap();
        assert_eq!(received(&f[..4096]), (1, 0, 0));
        let mut f = f;
        f[ETH_LEN + 8] ^= 1;
        assert_eq!(
            received(&f[..4096]),
            (1, 0, 0),
            "IPv6 has no header checksum"
        );
    }

    proptest! {
        /// Every frame a sender of this crate builds passes the receive
        /// checks: IPv4 and IPv6, streams and messages, any size, stamped
        /// with any sequence and time, and every fragment length of a
        /// message; one flipped payload bit of an IPv6 frame fails them.
        #[test]
        fn built_frames_pass_the_checksum_checks(v6: bool, message: bool, size in 100usize..=1518, seq in 0..=crate::header::MASK48, t in 0..=crate::header::MASK48, cut: usize, bit in 0usize..8) {
            let mut s = if v6 { spec6(size, 5) } else { spec(size, 5) };
            if message {
                s.kind = Kind::Message;
            }
            let mut f = s.template().unwrap();
            Stamp::for_template(&f).apply(&mut f, seq, t);
            prop_assert_eq!(parse(&f).map(|p| p.header.seq), Ok(seq));
            let off = s.header_offset();
            let min = off + MESSAGE_HEADER_LEN;
            if message && f.len() >= min {
                // A fragment of any length, as the sender cuts it.
                let len = min + cut % (f.len() - min + 1);
                let wire = set_lengths(&mut f, len);
                Header::patch(&mut f[off..], seq, t);
                set_udp6_checksum(&mut f, len);
                prop_assert!(parse(&f[..wire]).is_ok());
                if v6 && len > min {
                    f[min + cut % (len - min)] ^= 1 << bit;
                    prop_assert_eq!(parse(&f[..wire]), Err(FrameError::Checksum("UDP")));
                }
            } else if v6 {
                let at = off + HEADER_LEN + cut % (f.len() - off - HEADER_LEN);
                f[at] ^= 1 << bit;
                prop_assert_eq!(parse(&f), Err(FrameError::Checksum("UDP")));
            }
        }
    }
}
