//! A receiver's accounting of every flow it sees: frame sequences and
//! messages, summed into the worker's counters. Shared by the AF_XDP and
//! kernel-socket receivers.

use super::rx::{FlowAccounting, RxSummary, MAX_FLOWS};
use crate::{
    header::{Fragment, Header},
    message::Outcome,
    stats::CounterSnapshot,
    xsk::XskStats,
};

/// Flows seen by one receiver.
#[derive(Debug, Default)]
pub(crate) struct FlowTable {
    flows: Vec<Option<FlowAccounting>>,
}

impl FlowTable {
    /// Accounts one received frame (or datagram): `bytes` as the frame
    /// counts them, `payload` its UDP payload. A frame without a fragment
    /// header is a whole message of `message_len` bytes when that is given.
    #[inline]
    pub(crate) fn record(
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
        let t = self.flows[flow].get_or_insert_with(FlowAccounting::new);
        t.frames.record(header.seq);
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
    }

    /// Copies the flows' loss, reordering and duplicate counts into `c`.
    pub(crate) fn publish(&self, c: &mut CounterSnapshot) {
        let (mut lost, mut reordered, mut dups, mut mlost) = (0, 0, 0, 0);
        for t in self.flows.iter().flatten() {
            lost += t.frames.lost;
            reordered += t.frames.reordered;
            dups += t.frames.duplicates + t.messages.duplicates;
            mlost += t.messages.lost();
        }
        c.lost = lost;
        c.reordered = reordered;
        c.duplicates = dups;
        c.messages_lost = mlost;
    }

    /// The summary at the end of the run: messages still incomplete are lost.
    pub(crate) fn finish(self, mut c: CounterSnapshot, xsk: XskStats) -> RxSummary {
        self.publish(&mut c);
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
        }
    }
}
