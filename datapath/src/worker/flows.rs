//! A receiver's accounting of every flow it sees: frame sequences and
//! messages, summed into the worker's counters. Shared by the AF_XDP and
//! kernel-socket receivers.

use crate::{
    binding::XskStats,
    frame::{parse_buffers, verify},
    header::{Fragment, Header},
    latency::OneWay,
    message::{MessageTracker, Outcome},
    sequence::SequenceTracker,
};
use linerate_counters::stats::CounterSnapshot;

/// Flows a receiver keeps sequence accounting for.
pub const MAX_FLOWS: usize = 4096;

/// What a receiver reports when it ends.
#[derive(Debug, Clone, Default)]
pub struct RxSummary {
    /// Final counters.
    pub counters: CounterSnapshot,
    /// The socket's XDP_STATISTICS.
    pub xsk: XskStats,
    /// Per-flow accounting of the flows seen.
    pub flows: Vec<(u16, FlowAccounting)>,
    /// One-way latency of every frame accounted (not of frames counted
    /// bad).
    pub latency: OneWay,
    /// The first frames received (`--pcap`).
    pub capture: Option<crate::capture::Capture>,
}

/// Frame and message accounting of one flow.
#[derive(Debug, Clone, Default)]
pub struct FlowAccounting {
    /// Frame sequence accounting.
    pub frames: SequenceTracker,
    /// Message accounting (messages streams only).
    pub messages: MessageTracker,
}

impl FlowAccounting {
    /// Accounting of a flow not seen yet.
    pub fn new() -> Self {
        Self {
            frames: SequenceTracker::default(),
            messages: MessageTracker::new(false),
        }
    }
}

/// How far ahead of its flow a sequence number may jump (2^32 frames).
pub(crate) const MAX_JUMP: u64 = 1 << 32;

/// A flow's loss-related counts, to update the worker's totals by the
/// difference one frame made.
#[derive(Clone, Copy)]
struct Totals {
    lost: u64,
    reordered: u64,
    duplicates: u64,
    messages_lost: u64,
}

impl Totals {
    fn of(t: &FlowAccounting) -> Self {
        Self {
            lost: t.frames.lost,
            reordered: t.frames.reordered,
            duplicates: t.frames.duplicates + t.messages.duplicates,
            messages_lost: t.messages.lost(),
        }
    }

    /// Adds what changed since `before` (a loss can be taken back when the
    /// late frame arrives, hence the wrapping arithmetic).
    fn apply_since(self, before: &Self, c: &mut CounterSnapshot) {
        c.lost = c.lost.wrapping_add(self.lost.wrapping_sub(before.lost));
        c.reordered = c
            .reordered
            .wrapping_add(self.reordered.wrapping_sub(before.reordered));
        c.duplicates = c
            .duplicates
            .wrapping_add(self.duplicates.wrapping_sub(before.duplicates));
        c.messages_lost = c
            .messages_lost
            .wrapping_add(self.messages_lost.wrapping_sub(before.messages_lost));
    }
}

/// Flows seen by one receiver.
#[derive(Debug, Default)]
pub struct FlowTable {
    flows: Vec<Option<FlowAccounting>>,
    latency: OneWay,
}

impl FlowTable {
    /// Begins a receive batch: its frames share one receive time (one
    /// clock read, at the first frame accounted).
    #[inline]
    pub fn start_batch(&mut self) {
        self.latency.start_batch();
    }

    /// Accounts one received frame (or datagram): `bytes` as the frame
    /// counts them, `payload` its UDP payload. A frame without a fragment
    /// header is a whole message of `message_len` bytes when that is given.
    ///
    /// A frame whose sequence number jumps more than `MAX_JUMP` ahead of
    /// its flow (or starts a flow that far from 0) is counted bad and not
    /// accounted: a forged or corrupt header must not wreck the flow's loss
    /// figures. Loss, reordering and duplicate totals are kept up to date
    /// here, so no per-batch pass over the flows is needed.
    #[inline(always)]
    pub fn record(
        &mut self,
        c: &mut CounterSnapshot,
        header: &Header,
        fragment: Option<Fragment>,
        bytes: u64,
        payload: u64,
        message_len: Option<u64>,
    ) {
        let flow = usize::from(header.flow);
        if flow >= MAX_FLOWS {
            c.bad += 1;
            return;
        }
        if flow >= self.flows.len() {
            self.flows.resize(flow + 1, None);
        }
        let limit = self.flows[flow].as_ref().map_or(MAX_JUMP, |t| {
            t.frames.next_expected().saturating_add(MAX_JUMP)
        });
        if header.seq >= limit {
            c.bad += 1;
            return;
        }
        let t = self.flows[flow].get_or_insert_with(FlowAccounting::new);
        let before = Totals::of(t);
        t.frames.record(header.seq);
        self.latency.record(header.send_ns);
        c.frames += 1;
        c.bytes += bytes;
        c.payload_bytes += payload;
        match (fragment, message_len) {
            (Some(f), _) => match t.messages.on_fragment(&f, &[]) {
                Outcome::Complete { msg_len, .. } => {
                    c.messages += 1;
                    c.message_bytes += u64::from(msg_len);
                }
                Outcome::Bad => c.bad += 1,
                _ => {}
            },
            (None, Some(len)) => {
                c.messages += 1;
                c.message_bytes += len;
            }
            (None, None) => {}
        }
        Totals::of(t).apply_since(&before, c);
    }

    /// Accounts one received frame as the AF_XDP receiver does: `head` is
    /// its first buffer, `len` its length in all buffers. Frames that are
    /// not linerate test frames are counted bad. Returns the flow its
    /// header names, if it has one.
    #[inline]
    pub fn account_frame(&mut self, c: &mut CounterSnapshot, head: &[u8], len: u64) -> Option<u16> {
        self.account_frame_verified::<{ verify::FULL }>(c, (head, []), len)
    }

    /// [`Self::account_frame`] of a frame whose first buffer is `head` and
    /// whose other buffers `tail` gives, verifying the checksums level `V`
    /// asks for ([`crate::frame::verify`]).
    #[inline]
    pub fn account_frame_verified<'t, const V: u8>(
        &mut self,
        c: &mut CounterSnapshot,
        (head, tail): (&[u8], impl IntoIterator<Item = &'t [u8]>),
        len: u64,
    ) -> Option<u16> {
        match parse_buffers::<V>(head, tail) {
            Ok(p) => {
                self.record(
                    c,
                    &p.header,
                    p.fragment,
                    len,
                    p.udp_payload_len as u64,
                    None,
                );
                Some(p.header.flow)
            }
            Err(e) => {
                e.count(c);
                None
            }
        }
    }

    /// `--verify 1/N`: one frame in `every` verified in full, the others'
    /// IPv4 header only; `left` counts the frames down to the next one in
    /// full (start it at `every`).
    #[inline]
    pub fn account_frame_sampled<'t>(
        &mut self,
        c: &mut CounterSnapshot,
        (head, tail, len): (&[u8], impl IntoIterator<Item = &'t [u8]>, u64),
        left: &mut u32,
        every: u32,
    ) -> Option<u16> {
        use crate::frame::verify::{FULL, HEADER};
        *left = left.saturating_sub(1);
        if *left == 0 {
            *left = every.max(1);
            self.account_frame_verified::<FULL>(c, (head, tail), len)
        } else {
            self.account_frame_verified::<HEADER>(c, (head, []), len)
        }
    }

    /// The summary at the end of the run: messages still incomplete are lost.
    pub fn finish(self, mut c: CounterSnapshot, xsk: XskStats) -> RxSummary {
        c.messages_lost += self
            .flows
            .iter()
            .flatten()
            .map(|t| t.messages.in_progress())
            .sum::<u64>();
        RxSummary {
            counters: c,
            xsk,
            flows: self
                .flows
                .into_iter()
                .enumerate()
                .filter_map(|(i, t)| t.map(|t| (i as u16, t)))
                .collect(),
            latency: self.latency,
            capture: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::Kind;

    fn h(flow: u16, seq: u64) -> Header {
        Header {
            kind: Kind::Stream,
            flow,
            seq,
            send_ns: 0,
        }
    }

    #[test]
    fn forged_sequence_numbers_are_bad_not_accounted() {
        let mut t = FlowTable::default();
        let mut c = CounterSnapshot::default();
        for s in 0..100 {
            t.record(&mut c, &h(0, s), None, 60, 18, None);
        }
        // A forged frame far ahead on our flow, and one starting a flow far from 0.
        t.record(&mut c, &h(0, 1 << 47), None, 60, 18, None);
        t.record(&mut c, &h(9, 1 << 40), None, 60, 18, None);
        for s in 100..200 {
            t.record(&mut c, &h(0, s), None, 60, 18, None);
        }
        assert_eq!((c.frames, c.bad, c.lost, c.reordered), (200, 2, 0, 0));
        let s = t.finish(c, XskStats::default());
        let l = &s.latency;
        assert_eq!(
            l.histogram().len() + l.out_of_range(),
            200,
            "a latency for every frame accounted, none for bad ones"
        );
        assert_eq!(s.flows.len(), 1, "no flow made up by a forged frame");
    }

    #[test]
    fn totals_follow_gaps_and_late_frames() {
        let mut t = FlowTable::default();
        let mut c = CounterSnapshot::default();
        for s in [0, 1, 5, 2, 3, 4, 4] {
            t.record(&mut c, &h(1, s), None, 60, 18, None);
        }
        assert_eq!((c.lost, c.reordered, c.duplicates), (0, 3, 1));
    }
}
