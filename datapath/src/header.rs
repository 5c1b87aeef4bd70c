//! The linerate header, carried right after the UDP header of every test
//! frame. 18 bytes, so that it fits the smallest Ethernet frame (64 bytes
//! with FCS: 14 Ethernet + 20 IPv4 + 8 UDP + 18).
//!
//! ```text
//! 0      2   3   4      6            12           18
//! +------+---+---+------+------------+------------+
//! |magic |ver|knd| flow | seq (48 b) | send ns 48 |
//! +------+---+---+------+------------+------------+
//! ```
//! All fields are big-endian. The send time is the low 48 bits of
//! CLOCK_MONOTONIC in nanoseconds (wraps after 78 hours); sequence numbers
//! are 48 bits (wraps after 2.8e14 frames).
//!
//! Frames that carry a piece of a message (every kind but `Stream`) add a
//! 16-byte fragment header right after it:
//!
//! ```text
//! 18         22           26           30           34
//! +----------+------------+------------+------------+
//! | msg id   | frag index | frag count | msg length |
//! +----------+------------+------------+------------+
//! ```

/// "LR".
pub const MAGIC: u16 = 0x4c52;
/// Version of the header layout described above.
pub const VERSION: u8 = 1;
/// Length of the header in bytes.
pub const HEADER_LEN: usize = 18;
/// Mask of the 48-bit fields.
pub const MASK48: u64 = (1 << 48) - 1;

/// Offset of the sequence number within the header.
pub const SEQ_OFFSET: usize = 6;
/// Offset of the send timestamp within the header.
pub const TIME_OFFSET: usize = 12;

/// Largest message a fragment header may announce: 256 MiB. The wire
/// format's limit, which senders, receivers and the parser share.
pub const MAX_MESSAGE: usize = 256 << 20;

/// Length of the fragment header that follows the base header.
pub const FRAGMENT_LEN: usize = 16;
/// Base header plus fragment header.
pub const MESSAGE_HEADER_LEN: usize = HEADER_LEN + FRAGMENT_LEN;

/// What a frame carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// A frame of a one-way stream.
    Stream = 0,
    /// A fragment of a one-way message.
    Message = 1,
    /// A fragment of a request (rr).
    Request = 2,
    /// A fragment of a response (rr).
    Response = 3,
}

impl Kind {
    fn from_u8(v: u8) -> Option<Self> {
        match v {
            0 => Some(Self::Stream),
            1 => Some(Self::Message),
            2 => Some(Self::Request),
            3 => Some(Self::Response),
            _ => None,
        }
    }

    /// Whether a fragment header follows the base header.
    pub fn has_fragment(self) -> bool {
        self != Self::Stream
    }
}

/// Where a frame's bytes belong in a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Fragment {
    /// Message id, counted per flow by the sender.
    pub msg_id: u32,
    /// Index of this fragment.
    pub index: u32,
    /// Fragments in the message.
    pub count: u32,
    /// Bytes in the whole message.
    pub msg_len: u32,
}

impl Fragment {
    /// Writes the fragment header into the first [`FRAGMENT_LEN`] bytes.
    pub fn write(&self, out: &mut [u8]) {
        out[0..4].copy_from_slice(&self.msg_id.to_be_bytes());
        out[4..8].copy_from_slice(&self.index.to_be_bytes());
        out[8..12].copy_from_slice(&self.count.to_be_bytes());
        out[12..16].copy_from_slice(&self.msg_len.to_be_bytes());
    }

    /// Reads a fragment header and [`check`](Self::check)s it.
    pub fn read(b: &[u8]) -> Result<Self, HeaderError> {
        if b.len() < FRAGMENT_LEN {
            return Err(HeaderError::Truncated(b.len()));
        }
        let w = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let f = Self {
            msg_id: w(0),
            index: w(4),
            count: w(8),
            msg_len: w(12),
        };
        f.check()?;
        Ok(f)
    }

    /// Whether the fields describe a fragment a sender makes: the index
    /// lies inside the count, every fragment carries at least one byte (a
    /// 0-byte message is one fragment), and the message is no larger than
    /// [`MAX_MESSAGE`]. A forged header must
    /// not make a receiver allocate for billions of fragments.
    pub fn check(&self) -> Result<(), HeaderError> {
        if self.count == 0 || self.index >= self.count {
            return Err(HeaderError::BadFragment {
                index: self.index,
                count: self.count,
            });
        }
        if self.msg_len as usize > MAX_MESSAGE || self.count > self.msg_len.max(1) {
            return Err(HeaderError::BadMessage {
                count: self.count,
                msg_len: self.msg_len,
            });
        }
        Ok(())
    }
}

/// A decoded linerate header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// What the frame carries.
    pub kind: Kind,
    /// Flow the frame belongs to.
    pub flow: u16,
    /// Sequence number within the flow (48 bits).
    pub seq: u64,
    /// Send time, low 48 bits of CLOCK_MONOTONIC ns.
    pub send_ns: u64,
}

/// Why bytes are not a linerate header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    /// Fewer than [`HEADER_LEN`] bytes.
    #[error("truncated linerate header ({0} bytes)")]
    Truncated(usize),
    /// Not our magic.
    #[error("bad magic {0:#06x}")]
    BadMagic(u16),
    /// A version this build does not read.
    #[error("unsupported header version {0}")]
    BadVersion(u8),
    /// An unknown frame kind.
    #[error("unknown frame kind {0}")]
    BadKind(u8),
    /// A fragment index outside its message.
    #[error("fragment {index} of {count}")]
    BadFragment {
        /// Claimed index.
        index: u32,
        /// Claimed count.
        count: u32,
    },
    /// A message no sender makes: larger than the largest message, or cut
    /// into more fragments than it has bytes.
    #[error("message of {msg_len} bytes in {count} fragments")]
    BadMessage {
        /// Claimed count.
        count: u32,
        /// Claimed length.
        msg_len: u32,
    },
}

fn get48(b: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w[2..].copy_from_slice(&b[..6]);
    u64::from_be_bytes(w)
}

fn put48(b: &mut [u8], v: u64) {
    b[..6].copy_from_slice(&(v & MASK48).to_be_bytes()[2..]);
}

impl Header {
    /// Writes the header into the first [`HEADER_LEN`] bytes of `out`.
    ///
    /// # Panics
    /// If `out` is shorter than [`HEADER_LEN`].
    pub fn write(&self, out: &mut [u8]) {
        out[0..2].copy_from_slice(&MAGIC.to_be_bytes());
        out[2] = VERSION;
        out[3] = self.kind as u8;
        out[4..6].copy_from_slice(&self.flow.to_be_bytes());
        put48(&mut out[SEQ_OFFSET..], self.seq);
        put48(&mut out[TIME_OFFSET..], self.send_ns);
    }

    /// Reads a header from the start of `b`.
    pub fn read(b: &[u8]) -> Result<Self, HeaderError> {
        if b.len() < HEADER_LEN {
            return Err(HeaderError::Truncated(b.len()));
        }
        let magic = u16::from_be_bytes([b[0], b[1]]);
        if magic != MAGIC {
            return Err(HeaderError::BadMagic(magic));
        }
        if b[2] != VERSION {
            return Err(HeaderError::BadVersion(b[2]));
        }
        let kind = Kind::from_u8(b[3]).ok_or(HeaderError::BadKind(b[3]))?;
        Ok(Self {
            kind,
            flow: u16::from_be_bytes([b[4], b[5]]),
            seq: get48(&b[SEQ_OFFSET..]),
            send_ns: get48(&b[TIME_OFFSET..]),
        })
    }

    /// Patches sequence and send time of an encoded header in place: all
    /// the hot path changes from one frame to the next.
    #[inline]
    pub fn patch(encoded: &mut [u8], seq: u64, send_ns: u64) {
        put48(&mut encoded[SEQ_OFFSET..], seq);
        put48(&mut encoded[TIME_OFFSET..], send_ns);
    }
}

/// The difference `later - earlier` of two 48-bit timestamps, modulo 2^48.
pub fn elapsed48(later: u64, earlier: u64) -> u64 {
    later.wrapping_sub(earlier) & MASK48
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn roundtrip(flow: u16, seq in 0..=MASK48, t in 0..=MASK48) {
            let h = Header { kind: Kind::Stream, flow, seq, send_ns: t };
            let mut b = [0u8; HEADER_LEN];
            h.write(&mut b);
            prop_assert_eq!(Header::read(&b), Ok(h));
        }

        #[test]
        fn patch_changes_only_seq_and_time(flow: u16, seq in 0..=MASK48, t in 0..=MASK48) {
            let mut b = [0u8; HEADER_LEN];
            Header { kind: Kind::Stream, flow, seq: 0, send_ns: 0 }.write(&mut b);
            Header::patch(&mut b, seq, t);
            prop_assert_eq!(Header::read(&b), Ok(Header { kind: Kind::Stream, flow, seq, send_ns: t }));
        }

        #[test]
        fn arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..40)) {
            let _ = Header::read(&b);
        }
    }

    #[test]
    fn rejects_foreign_bytes() {
        assert_eq!(Header::read(&[0; 4]), Err(HeaderError::Truncated(4)));
        assert_eq!(Header::read(&[0; 18]), Err(HeaderError::BadMagic(0)));
        let mut b = [0u8; 18];
        Header {
            kind: Kind::Stream,
            flow: 1,
            seq: 2,
            send_ns: 3,
        }
        .write(&mut b);
        b[2] = 9;
        assert_eq!(Header::read(&b), Err(HeaderError::BadVersion(9)));
        b[2] = VERSION;
        b[3] = 7;
        assert_eq!(Header::read(&b), Err(HeaderError::BadKind(7)));
    }

    proptest! {
        #[test]
        fn fragment_roundtrip(msg_id: u32, msg_len in 0u32..=MAX_MESSAGE as u32, c: u32, i: u32) {
            let count = c % msg_len.max(1) + 1;
            let f = Fragment { msg_id, index: i % count, count, msg_len };
            let mut b = [0u8; FRAGMENT_LEN];
            f.write(&mut b);
            prop_assert_eq!(Fragment::read(&b), Ok(f));
        }
    }

    #[test]
    fn fragment_index_must_lie_inside_the_count() {
        let mut b = [0u8; FRAGMENT_LEN];
        Fragment {
            msg_id: 1,
            index: 3,
            count: 3,
            msg_len: 9,
        }
        .write(&mut b);
        assert_eq!(
            Fragment::read(&b),
            Err(HeaderError::BadFragment { index: 3, count: 3 })
        );
        Fragment {
            msg_id: 1,
            index: 0,
            count: 0,
            msg_len: 9,
        }
        .write(&mut b);
        assert!(Fragment::read(&b).is_err());
        assert!(Fragment::read(&b[..5]).is_err());
    }

    #[test]
    fn fragment_must_describe_a_message_a_sender_makes() {
        let mut b = [0u8; FRAGMENT_LEN];
        let mut check = |count, msg_len, ok: bool| {
            Fragment {
                msg_id: 1,
                index: 0,
                count,
                msg_len,
            }
            .write(&mut b);
            assert_eq!(
                Fragment::read(&b).is_ok(),
                ok,
                "{count} fragments, {msg_len} B"
            );
        };
        check(1, 0, true);
        check(2, 0, false);
        check(9, 9, true);
        check(10, 9, false);
        check(u32::MAX, u32::MAX, false);
        check(1, MAX_MESSAGE as u32, true);
        check(1, MAX_MESSAGE as u32 + 1, false);
    }

    #[test]
    fn elapsed_wraps() {
        assert_eq!(elapsed48(5, MASK48), 6);
        assert_eq!(elapsed48(10, 4), 6);
    }
}
