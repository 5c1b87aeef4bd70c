//! Messages larger than a frame: splitting them into fragments and, on the
//! receiving side, accounting (or reassembling) whole messages.
//!
//! A receiver keeps a few messages of each flow in progress at once. A
//! fragment of a message it has not seen starts a new one; when no slot is
//! free the oldest unfinished message is given up as lost. Message ids it
//! never saw at all are found as gaps in the id sequence. A fragment whose
//! count or length disagrees with its message's is bad; one received twice
//! is a duplicate; one of a message already finished or given up is stale.
//! None of these is ever taken for a fragment of another message.
//!
//! Senders number each flow's messages from 0, so that a receiver can tell
//! messages lost whole from ones never sent.

pub use crate::header::MAX_MESSAGE;
use crate::{header::Fragment, sequence::SequenceTracker};
/// Messages of one flow that may be in progress at once.
pub const IN_PROGRESS: usize = 4;
/// Finished or abandoned message ids remembered to classify stale fragments.
const RECENT: usize = 64;

/// How a message of a given size is cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fragmentation {
    /// Bytes in the message.
    pub msg_len: usize,
    /// Largest payload of one fragment.
    pub per_fragment: usize,
    /// Fragments per message (at least 1, even for an empty message).
    pub count: usize,
}

/// Why a message cannot be cut.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MessageError {
    /// Message too large.
    #[error("message size {0} is out of range: use 0 to {MAX_MESSAGE} bytes")]
    TooLarge(usize),
    /// No room for payload in a frame.
    #[error("a frame has no room for message bytes (payload per fragment {0})")]
    NoRoom(usize),
}

impl Fragmentation {
    /// Cuts `msg_len` bytes into fragments of at most `per_fragment` bytes.
    pub fn new(msg_len: usize, per_fragment: usize) -> Result<Self, MessageError> {
        if msg_len > MAX_MESSAGE {
            return Err(MessageError::TooLarge(msg_len));
        }
        if per_fragment == 0 {
            return Err(MessageError::NoRoom(per_fragment));
        }
        Ok(Self {
            msg_len,
            per_fragment,
            count: msg_len.div_ceil(per_fragment).max(1),
        })
    }

    /// Offset and length of fragment `i`.
    pub fn piece(&self, i: usize) -> (usize, usize) {
        let off = i * self.per_fragment;
        (
            off,
            self.per_fragment.min(self.msg_len - off.min(self.msg_len)),
        )
    }
}

/// What happened to one fragment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Accounted; the message is not complete yet.
    Partial,
    /// The message is complete.
    Complete {
        /// Its id.
        msg_id: u32,
        /// Its length.
        msg_len: u32,
    },
    /// Received before.
    Duplicate,
    /// Of a message already finished or given up.
    Stale,
    /// Disagrees with its message (count or length).
    Bad,
}

impl Outcome {
    /// Adds the outcome to a worker's counters (messages and their bytes,
    /// bad fragments, duplicates and stale ones); returns the id of the
    /// message it completed, if it did.
    #[inline]
    pub fn count(self, c: &mut linerate_counters::stats::CounterSnapshot) -> Option<u32> {
        match self {
            Self::Complete { msg_id, msg_len } => {
                c.messages += 1;
                c.message_bytes += u64::from(msg_len);
                return Some(msg_id);
            }
            Self::Bad => c.bad += 1,
            Self::Duplicate | Self::Stale => c.duplicates += 1,
            Self::Partial => {}
        }
        None
    }
}

#[derive(Debug, Clone, Default)]
struct InProgress {
    active: bool,
    msg_id: u32,
    count: u32,
    msg_len: u32,
    received: u32,
    bits: Vec<u64>,
    data: Vec<u8>,
}

impl InProgress {
    fn start(&mut self, f: &Fragment, keep_bytes: bool) {
        self.active = true;
        self.msg_id = f.msg_id;
        self.count = f.count;
        self.msg_len = f.msg_len;
        self.received = 0;
        self.bits.clear();
        self.bits.resize((f.count as usize).div_ceil(64), 0);
        if keep_bytes {
            self.data.clear();
            self.data.resize(f.msg_len as usize, 0);
        }
    }
}

/// Message accounting of one flow.
#[derive(Debug, Clone, Default)]
pub struct MessageTracker {
    keep_bytes: bool,
    slots: Vec<InProgress>,
    recent: Vec<u32>,
    recent_next: usize,
    ids: SequenceTracker,
    /// Messages completed.
    pub completed: u64,
    /// Bytes of completed messages.
    pub completed_bytes: u64,
    /// Messages given up with fragments missing.
    pub abandoned: u64,
    /// Fragments received twice.
    pub duplicates: u64,
    /// Fragments of finished or abandoned messages.
    pub stale: u64,
    /// Fragments that disagree with their message.
    pub bad: u64,
}

impl MessageTracker {
    /// A tracker that only counts (`keep_bytes` false) or also rebuilds
    /// each message's bytes.
    pub fn new(keep_bytes: bool) -> Self {
        Self {
            keep_bytes,
            slots: vec![InProgress::default(); IN_PROGRESS],
            ..Default::default()
        }
    }

    /// Messages lost so far: abandoned ones and ids never seen.
    pub fn lost(&self) -> u64 {
        self.abandoned + self.ids.lost
    }

    /// Messages in progress now (lost if the flow has ended).
    pub fn in_progress(&self) -> u64 {
        self.slots.iter().filter(|s| s.active).count() as u64
    }

    /// Accounts one fragment; `data` is its payload (used when keeping bytes).
    pub fn on_fragment(&mut self, f: &Fragment, data: &[u8]) -> Outcome {
        if f.check().is_err() {
            self.bad += 1;
            return Outcome::Bad;
        }
        let slot = match self
            .slots
            .iter()
            .position(|s| s.active && s.msg_id == f.msg_id)
        {
            Some(i) => i,
            None => {
                if self.recent.contains(&f.msg_id) {
                    self.stale += 1;
                    return Outcome::Stale;
                }
                self.ids.record(u64::from(f.msg_id));
                let i = match self.slots.iter().position(|s| !s.active) {
                    Some(i) => i,
                    None => {
                        // Give up the oldest message in progress.
                        let newest = f.msg_id;
                        let i = (0..self.slots.len())
                            .max_by_key(|&i| newest.wrapping_sub(self.slots[i].msg_id))
                            .unwrap_or(0);
                        self.abandoned += 1;
                        let id = self.slots[i].msg_id;
                        self.remember(id);
                        i
                    }
                };
                self.slots[i].start(f, self.keep_bytes);
                i
            }
        };
        let s = &mut self.slots[slot];
        if s.count != f.count || s.msg_len != f.msg_len {
            self.bad += 1;
            return Outcome::Bad;
        }
        let (w, bit) = ((f.index / 64) as usize, 1u64 << (f.index % 64));
        if s.bits[w] & bit != 0 {
            self.duplicates += 1;
            return Outcome::Duplicate;
        }
        if self.keep_bytes {
            let per = if f.count > 1 && f.index + 1 < f.count {
                data.len()
            } else {
                0
            };
            let off = if per > 0 {
                f.index as usize * per
            } else {
                (s.msg_len as usize).saturating_sub(data.len())
            };
            match s.data.get_mut(off..off + data.len()) {
                Some(dst) => dst.copy_from_slice(data),
                None => {
                    self.bad += 1;
                    return Outcome::Bad;
                }
            }
        }
        s.bits[w] |= bit;
        s.received += 1;
        if s.received < s.count {
            return Outcome::Partial;
        }
        s.active = false;
        let (msg_id, msg_len) = (s.msg_id, s.msg_len);
        self.completed += 1;
        self.completed_bytes += u64::from(msg_len);
        self.remember(msg_id);
        Outcome::Complete { msg_id, msg_len }
    }

    /// The bytes of the message just completed (when keeping bytes).
    pub fn last_message(&self, msg_id: u32) -> Option<&[u8]> {
        self.slots
            .iter()
            .find(|s| !s.active && s.msg_id == msg_id)
            .map(|s| s.data.as_slice())
    }

    fn remember(&mut self, id: u32) {
        if self.recent.len() < RECENT {
            self.recent.push(id);
        } else {
            self.recent[self.recent_next] = id;
            self.recent_next = (self.recent_next + 1) % RECENT;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn fragments(msg_id: u32, m: &[u8], per: usize) -> Vec<(Fragment, Vec<u8>)> {
        let cut = Fragmentation::new(m.len(), per).unwrap();
        (0..cut.count)
            .map(|i| {
                let (off, len) = cut.piece(i);
                (
                    Fragment {
                        msg_id,
                        index: i as u32,
                        count: cut.count as u32,
                        msg_len: m.len() as u32,
                    },
                    m[off..off + len].to_vec(),
                )
            })
            .collect()
    }

    #[test]
    fn empty_message_is_one_fragment() {
        let c = Fragmentation::new(0, 1438).unwrap();
        assert_eq!(c.count, 1);
        assert_eq!(c.piece(0), (0, 0));
        let c = Fragmentation::new(65500, 1438).unwrap();
        assert_eq!(c.count, 46);
        assert_eq!(c.piece(45), (45 * 1438, 65500 - 45 * 1438));
        assert!(Fragmentation::new(MAX_MESSAGE + 1, 1438).is_err());
    }

    proptest! {
        /// Any message size and MTU: fragments, shuffled, reassemble to the
        /// original bytes.
        #[test]
        fn fragments_reassemble(len in 0usize..20_000, mtu in 576usize..9000, seed: u64) {
            let id = 0;
            let m: Vec<u8> = (0..len).map(|i| (i as u64 ^ seed) as u8).collect();
            let per = mtu - 62;
            let mut frags = fragments(id, &m, per);
            // Deterministic shuffle.
            let n = frags.len();
            for i in 0..n { frags.swap(i, (seed as usize).wrapping_mul(i + 7) % n); }
            let mut t = MessageTracker::new(true);
            let mut done = None;
            for (f, d) in &frags {
                if let Outcome::Complete { msg_id, .. } = t.on_fragment(f, d) { done = Some(msg_id); }
            }
            prop_assert_eq!(done, Some(id));
            prop_assert_eq!(t.last_message(id).unwrap(), &m[..]);
            prop_assert_eq!((t.completed, t.lost(), t.duplicates, t.bad), (1, 0, 0, 0));
        }

        /// Loss, duplication and reordering across many messages are
        /// detected, counted, and never crash: every message is complete
        /// or counted lost, exactly once.
        #[test]
        fn loss_dup_reorder_accounted(
            msgs in 1usize..30,
            frags_per in 1usize..6,
            drops in proptest::collection::vec(any::<bool>(), 200),
            dups in proptest::collection::vec(any::<bool>(), 200),
            swap in proptest::collection::vec(any::<bool>(), 200),
        ) {
            let mut stream = Vec::new();
            let mut dropped_msgs = std::collections::BTreeSet::new();
            let mut k = 0;
            for id in 0..msgs as u32 {
                for i in 0..frags_per as u32 {
                    let f = Fragment { msg_id: id, index: i, count: frags_per as u32, msg_len: 100 };
                    if drops[k % 200] && k % 3 == 0 { dropped_msgs.insert(id); } else {
                        stream.push(f);
                        if dups[k % 200] && k % 5 == 0 { stream.push(f); }
                    }
                    k += 1;
                }
            }
            // Swap neighbours inside a message only (reordering within one
            // message's fragments, as on a multi-queue path).
            for i in 1..stream.len() {
                if swap[i % 200] && stream[i].msg_id == stream[i - 1].msg_id { stream.swap(i, i - 1); }
            }
            let mut t = MessageTracker::new(false);
            for f in &stream { let _ = t.on_fragment(f, &[]); }
            let complete = msgs as u64 - dropped_msgs.len() as u64;
            prop_assert_eq!(t.completed, complete);
            // Every dropped message the receiver can know of is lost:
            // abandoned, a gap in the ids, or still waiting at the end.
            // (Messages dropped whole after the last one seen are known
            // only to the sender.)
            let seen: std::collections::BTreeSet<u32> = stream.iter().map(|f| f.msg_id).collect();
            let last = seen.iter().next_back().copied().unwrap_or(0);
            let knowable = dropped_msgs.iter().filter(|id| seen.contains(id) || **id < last).count();
            prop_assert_eq!(t.lost() + t.in_progress(), knowable as u64);
            prop_assert_eq!(t.bad, 0);
        }

        #[test]
        fn lying_fragments_never_crash(fs in proptest::collection::vec((any::<u32>() , 0u32..8, 1u32..8, any::<u32>()), 0..100), keep: bool) {
            let mut t = MessageTracker::new(keep);
            for (id, index, count, len) in fs {
                let f = Fragment { msg_id: id % 4, index: index % count, count, msg_len: len % 5000 };
                let _ = t.on_fragment(&f, &[1, 2, 3]);
            }
        }
    }

    #[test]
    fn mismatched_fragment_is_bad_not_taken() {
        let mut t = MessageTracker::new(false);
        let f = |index, count, msg_len| Fragment {
            msg_id: 7,
            index,
            count,
            msg_len,
        };
        assert_eq!(t.on_fragment(&f(0, 3, 300), &[]), Outcome::Partial);
        assert_eq!(t.on_fragment(&f(1, 4, 300), &[]), Outcome::Bad);
        assert_eq!(t.on_fragment(&f(1, 3, 301), &[]), Outcome::Bad);
        assert_eq!(t.on_fragment(&f(0, 3, 300), &[]), Outcome::Duplicate);
        assert_eq!(t.on_fragment(&f(1, 3, 300), &[]), Outcome::Partial);
        assert_eq!(
            t.on_fragment(&f(2, 3, 300), &[]),
            Outcome::Complete {
                msg_id: 7,
                msg_len: 300
            }
        );
        assert_eq!(t.on_fragment(&f(2, 3, 300), &[]), Outcome::Stale);
    }
}
