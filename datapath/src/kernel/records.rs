//! Records: what the kernel backends put in a datagram or on a byte
//! stream. A record is a linerate header (with its fragment header for
//! messages) followed by the record's share of message bytes, exactly the
//! UDP payload of an AF_XDP frame. Pure code, no I/O.

use crate::header::{Fragment, Header, Kind, HEADER_LEN, MESSAGE_HEADER_LEN};
use crate::message::Fragmentation;

/// Writes consecutive records of one flow.
#[derive(Debug, Clone)]
pub struct RecordCutter {
    kind: Kind,
    flow: u16,
    cut: Fragmentation,
    frames: bool,
    seq: u64,
}

impl RecordCutter {
    /// Records of messages cut by `cut`; with `frames`, plain stream frames
    /// (18-byte header, no fragment header) of `cut.msg_len` payload bytes.
    pub fn new(kind: Kind, flow: u16, cut: Fragmentation, frames: bool) -> Self {
        Self {
            kind: if frames { Kind::Stream } else { kind },
            flow,
            cut,
            frames,
            seq: 0,
        }
    }

    /// Header bytes of each record.
    pub fn header_len(&self) -> usize {
        if self.frames {
            HEADER_LEN
        } else {
            MESSAGE_HEADER_LEN
        }
    }

    /// The longest record.
    pub fn max_len(&self) -> usize {
        self.header_len() + self.cut.per_fragment.min(self.cut.msg_len)
    }

    /// Records per message.
    pub fn per_message(&self) -> u64 {
        if self.frames {
            1
        } else {
            self.cut.count as u64
        }
    }

    /// Records written so far.
    pub fn written(&self) -> u64 {
        self.seq
    }

    /// Takes back the last `n` records written (they were not sent).
    pub fn rewind(&mut self, n: u64) {
        self.seq -= n.min(self.seq);
    }

    /// Whether the next record starts a message.
    pub fn at_message_start(&self) -> bool {
        self.seq.is_multiple_of(self.per_message())
    }

    /// Records left to write of the message under way (0 at a message's
    /// start): what a sender told to stop still sends.
    pub fn left_in_message(&self) -> u64 {
        let per = self.per_message();
        (per - self.seq % per) % per
    }

    /// The length of the next record.
    pub fn next_len(&self) -> usize {
        if self.frames {
            return self.header_len() + self.cut.msg_len;
        }
        let (_, piece) = self.cut.piece((self.seq % self.per_message()) as usize);
        MESSAGE_HEADER_LEN + piece
    }

    /// Writes the next record's headers into `buf` (whose payload bytes
    /// the caller filled once) and returns its length.
    pub fn write_next(&mut self, buf: &mut [u8], now_ns: u64) -> usize {
        let len = self.next_len();
        let per = self.per_message();
        Header {
            kind: self.kind,
            flow: self.flow,
            seq: self.seq,
            send_ns: now_ns,
        }
        .write(buf);
        if !self.frames {
            Fragment {
                msg_id: (self.seq / per) as u32,
                index: (self.seq % per) as u32,
                count: per as u32,
                msg_len: self.cut.msg_len as u32,
            }
            .write(&mut buf[HEADER_LEN..]);
        }
        self.seq += 1;
        len
    }
}

/// What a record's headers say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordHead {
    /// The base header.
    pub header: Header,
    /// The fragment header, for message records.
    pub fragment: Option<Fragment>,
}

/// Reads records back out of a byte stream (TCP), wherever the reads cut
/// it: headers are gathered, message bytes skipped without copying.
#[derive(Debug, Clone)]
pub struct RecordParser {
    head: [u8; MESSAGE_HEADER_LEN],
    have: usize,
    skip: usize,
    /// Records whose headers made no sense; the stream cannot be followed
    /// after one, so parsing stops.
    pub broken: bool,
}

impl Default for RecordParser {
    fn default() -> Self {
        Self {
            head: [0; MESSAGE_HEADER_LEN],
            have: 0,
            skip: 0,
            broken: false,
        }
    }
}

impl RecordParser {
    /// Feeds bytes; calls `on_record` with each record's headers once the
    /// whole record has arrived.
    pub fn feed(&mut self, mut bytes: &[u8], mut on_record: impl FnMut(RecordHead)) {
        while !bytes.is_empty() && !self.broken {
            if self.skip > 0 {
                let n = self.skip.min(bytes.len());
                self.skip -= n;
                bytes = &bytes[n..];
                if self.skip == 0 {
                    self.finish(&mut on_record);
                }
                continue;
            }
            let n = (MESSAGE_HEADER_LEN - self.have).min(bytes.len());
            self.head[self.have..self.have + n].copy_from_slice(&bytes[..n]);
            self.have += n;
            bytes = &bytes[n..];
            if self.have < MESSAGE_HEADER_LEN {
                continue;
            }
            match Header::read(&self.head)
                .and_then(|h| Ok((h, Fragment::read(&self.head[HEADER_LEN..])?)))
            {
                Ok((h, f)) if h.kind.has_fragment() && f.count == 1 => {
                    self.skip = f.msg_len as usize;
                    if self.skip == 0 {
                        self.finish(&mut on_record);
                    }
                }
                _ => self.broken = true,
            }
        }
    }

    fn finish(&mut self, on_record: &mut impl FnMut(RecordHead)) {
        // Checked when the headers were gathered.
        if let (Ok(header), Ok(fragment)) = (
            Header::read(&self.head),
            Fragment::read(&self.head[HEADER_LEN..]),
        ) {
            on_record(RecordHead {
                header,
                fragment: Some(fragment),
            });
        }
        self.have = 0;
    }
}

/// Reads a datagram's record headers.
pub fn read_datagram(b: &[u8]) -> Option<RecordHead> {
    let header = Header::read(b).ok()?;
    let fragment = if header.kind.has_fragment() {
        Some(Fragment::read(b.get(HEADER_LEN..)?).ok()?)
    } else {
        None
    };
    Some(RecordHead { header, fragment })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Messages written as single-record messages on a byte stream and
        /// cut anywhere come back whole and in order.
        #[test]
        fn stream_records_survive_any_cuts(len in 0usize..5000, n in 1usize..20, cuts in proptest::collection::vec(1usize..3000, 1..50)) {
            let cut = Fragmentation::new(len, len.max(1)).unwrap();
            let mut w = RecordCutter::new(Kind::Message, 3, cut, false);
            let mut stream = Vec::new();
            for _ in 0..n {
                let mut rec = vec![0xab; w.max_len()];
                let l = w.write_next(&mut rec, 7);
                stream.extend_from_slice(&rec[..l]);
            }
            let mut p = RecordParser::default();
            let mut got = Vec::new();
            let mut rest = &stream[..];
            for c in cuts.iter().cycle() {
                if rest.is_empty() { break; }
                let k = (*c).min(rest.len());
                p.feed(&rest[..k], |r| got.push(r));
                rest = &rest[k..];
            }
            prop_assert!(!p.broken);
            prop_assert_eq!(got.len(), n);
            for (i, r) in got.iter().enumerate() {
                prop_assert_eq!(r.header.seq, i as u64);
                prop_assert_eq!(r.fragment.unwrap().msg_id, i as u32);
                prop_assert_eq!(r.fragment.unwrap().msg_len as usize, len);
            }
        }
    }

    #[test]
    fn datagrams_are_fragments() {
        let cut = Fragmentation::new(3000, 1438).unwrap();
        let mut w = RecordCutter::new(Kind::Message, 1, cut, false);
        let mut buf = vec![0; w.max_len()];
        // What a sender told to stop still sends: the rest of its message.
        let mut left = vec![w.left_in_message()];
        let lens: Vec<usize> = (0..3)
            .map(|_| {
                let len = w.write_next(&mut buf, 0);
                left.push(w.left_in_message());
                len
            })
            .collect();
        assert_eq!(lens, vec![34 + 1438, 34 + 1438, 34 + 124]);
        assert_eq!(left, vec![0, 2, 1, 0]);
        let h = read_datagram(&buf).unwrap();
        assert_eq!(h.fragment.unwrap().index, 2);
        let mut f = RecordCutter::new(
            Kind::Message,
            1,
            Fragmentation::new(1454, 1454).unwrap(),
            true,
        );
        assert_eq!(f.write_next(&mut buf, 0), 18 + 1454);
        assert!(read_datagram(&buf).unwrap().fragment.is_none());
    }

    #[test]
    fn garbage_breaks_the_parser_without_panic() {
        let mut p = RecordParser::default();
        p.feed(&[0xff; 100], |_| panic!("no record in garbage"));
        assert!(p.broken);
    }
}
