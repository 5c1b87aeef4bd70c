//! A bounded copy of the first frames a worker sends or receives
//! (`--pcap`): taps (tcpdump) see neither AF_XDP copy-mode sends nor
//! XDP-redirected receives, so the workers keep a copy themselves.
//!
//! Everything is allocated before the run: one buffer of `limit` frames
//! of `snaplen` bytes each and the list of their records. The worker
//! copies a frame's first bytes into the next slot until the buffer is
//! full, then copies nothing; the frames are written to a file after the
//! run, from the worker's summary.

/// One captured frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    /// When the frame was sent (stamped) or received: CLOCK_MONOTONIC, ns.
    pub ts_ns: u64,
    /// The frame's whole length (without FCS).
    pub len: u32,
    /// Bytes of it kept (at most the snap length).
    pub kept: u32,
}

/// The first frames of one worker.
#[derive(Debug, Clone, Default)]
pub struct Capture {
    limit: usize,
    snaplen: usize,
    data: Vec<u8>,
    records: Vec<Record>,
}

impl Capture {
    /// Room for `limit` frames of up to `snaplen` bytes, allocated now.
    pub fn new(limit: usize, snaplen: usize) -> Self {
        Self {
            limit,
            snaplen,
            data: vec![0; limit * snaplen],
            records: Vec::with_capacity(limit),
        }
    }

    /// Whether every slot is used.
    #[inline]
    pub fn is_full(&self) -> bool {
        self.records.len() >= self.limit
    }

    /// Copies `bytes` (a frame's first bytes; `len` is its whole length),
    /// taken at `ts_ns`, unless full. Allocates nothing.
    #[inline]
    pub fn record(&mut self, ts_ns: u64, bytes: &[u8], len: usize) {
        if self.is_full() {
            return;
        }
        let kept = bytes.len().min(self.snaplen);
        let at = self.records.len() * self.snaplen;
        self.data[at..at + kept].copy_from_slice(&bytes[..kept]);
        self.records.push(Record {
            ts_ns,
            len: len as u32,
            kept: kept as u32,
        });
    }

    /// The largest number of bytes kept of a frame.
    pub fn snaplen(&self) -> usize {
        self.snaplen
    }

    /// The frames captured, in order: each record with its bytes.
    pub fn frames(&self) -> impl Iterator<Item = (Record, &[u8])> {
        self.records.iter().enumerate().map(|(i, r)| {
            let at = i * self.snaplen;
            (*r, &self.data[at..at + r.kept as usize])
        })
    }

    /// Frames captured.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether none was.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_first_frames_and_no_more() {
        let mut c = Capture::new(2, 4);
        assert!(c.is_empty() && !c.is_full());
        c.record(10, &[1, 2, 3], 3);
        // Longer than the snap length: its first 4 bytes, its whole length.
        c.record(11, &[4, 5, 6, 7, 8, 9], 60);
        assert!(c.is_full());
        c.record(12, &[0xff], 1);
        let got: Vec<_> = c.frames().map(|(r, b)| (r, b.to_vec())).collect();
        assert_eq!(
            got,
            [
                (
                    Record {
                        ts_ns: 10,
                        len: 3,
                        kept: 3
                    },
                    vec![1, 2, 3]
                ),
                (
                    Record {
                        ts_ns: 11,
                        len: 60,
                        kept: 4
                    },
                    vec![4, 5, 6, 7]
                ),
            ]
        );
        assert_eq!((c.len(), c.snaplen()), (2, 4));
        // No room asked for: nothing kept.
        let mut none = Capture::new(0, 64);
        none.record(1, &[1], 1);
        assert!(none.is_empty() && none.is_full());
    }
}
