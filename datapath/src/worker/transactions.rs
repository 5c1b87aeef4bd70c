//! A client's transactions: `concurrency` slots per flow, each holding the
//! message id and start time of the request in flight. Shared by every
//! backend's client; pure bookkeeping, no I/O.

use std::{
    sync::{atomic::AtomicBool, Arc},
    time::Duration,
};

use hdrhistogram::Histogram;

use crate::latency::MAX_LATENCY_NS;
use linerate_counters::stats::CounterSnapshot;

/// The client's part.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Flows this worker runs (flow f's client port is responder_port + 1 + f).
    pub flows: Vec<u16>,
    /// Transactions in flight per flow.
    pub concurrency: u32,
    /// Unanswered for this long: a timeout, and the transaction is retried.
    pub timeout: Duration,
    /// Transactions per flow, then stop (None: until stopped).
    pub count: Option<u64>,
    /// Set by control for the measured window: latencies are recorded only
    /// while it is set.
    pub measuring: Arc<AtomicBool>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    active: bool,
    timed_out: bool,
    msg_id: u32,
    start_ns: u64,
}

/// Transactions of all the flows a client runs.
#[derive(Debug)]
pub(crate) struct Transactions {
    conc: usize,
    flows: Vec<u16>,
    slots: Vec<Slot>,
    next_id: Vec<u32>,
    issued: Vec<u64>,
    done: Vec<u64>,
    count: Option<u64>,
    timeout_ns: u64,
    retry: bool,
    last_scan: u64,
    /// Response times recorded while measuring, ns.
    pub(crate) hist: Histogram<u64>,
}

impl Transactions {
    /// `retry`: whether a timed-out transaction is retried with a new
    /// message id (datagrams), or only counted (a reliable stream).
    pub(crate) fn new(
        flows: &[u16],
        conc: u32,
        count: Option<u64>,
        timeout_ns: u64,
        retry: bool,
    ) -> Self {
        let conc = conc.max(1) as usize;
        let n = flows.iter().map(|&f| usize::from(f) + 1).max().unwrap_or(1);
        Self {
            conc,
            flows: flows.to_vec(),
            slots: vec![Slot::default(); n * conc],
            next_id: vec![0; n],
            issued: vec![0; n],
            done: vec![0; n],
            count,
            timeout_ns,
            retry,
            last_scan: 0,
            hist: Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3).expect("valid bounds"),
        }
    }

    /// The transactions of a client's flows; `retry` as in [`Self::new`].
    pub(crate) fn for_client(cl: &ClientConfig, retry: bool) -> Self {
        Self::new(
            &cl.flows,
            cl.concurrency,
            cl.count,
            cl.timeout.as_nanos() as u64,
            retry,
        )
    }

    /// For every flow id below [`Self::flow_bound`], its position in the
    /// client's list of flows (usize::MAX for flows it does not run).
    pub(crate) fn positions(&self) -> Vec<usize> {
        let mut at = vec![usize::MAX; self.flow_bound()];
        for (i, &f) in self.flows.iter().enumerate() {
            at[usize::from(f)] = i;
        }
        at
    }

    /// Flow ids are below this.
    pub(crate) fn flow_bound(&self) -> usize {
        self.next_id.len()
    }

    fn begin(&mut self, flow: usize, slot: usize, now: u64, send: &mut impl FnMut(u16, u32)) {
        let id = self.next_id[flow];
        self.slots[flow * self.conc + slot] = Slot {
            active: true,
            timed_out: false,
            msg_id: id,
            start_ns: now,
        };
        self.next_id[flow] = id.wrapping_add(1);
        send(flow as u16, id);
    }

    /// Starts the first `concurrency` transactions of every flow.
    pub(crate) fn start(&mut self, now: u64, send: &mut impl FnMut(u16, u32)) {
        self.last_scan = now;
        for f in self.flows.clone() {
            let fi = usize::from(f);
            for s in 0..self.conc {
                if self.count.is_some_and(|n| self.issued[fi] >= n) {
                    break;
                }
                self.issued[fi] += 1;
                self.begin(fi, s, now, send);
            }
        }
    }

    /// A complete response to `msg_id` on `flow`: times it, and starts the
    /// flow's next transaction in its slot.
    pub(crate) fn on_response(
        &mut self,
        flow: usize,
        msg_id: u32,
        now: u64,
        measuring: bool,
        c: &mut CounterSnapshot,
        send: &mut impl FnMut(u16, u32),
    ) {
        if flow >= self.next_id.len() {
            c.bad += 1;
            return;
        }
        let conc = self.conc;
        let Some(s) = (0..conc).find(|&s| {
            let x = &self.slots[flow * conc + s];
            x.active && x.msg_id == msg_id
        }) else {
            // The answer to a transaction that already timed out.
            c.late += 1;
            return;
        };
        let rt = now
            .saturating_sub(self.slots[flow * conc + s].start_ns)
            .max(1);
        if measuring {
            let _ = self.hist.record(rt.min(MAX_LATENCY_NS));
        }
        c.transactions += 1;
        self.done[flow] += 1;
        if self.count.is_some_and(|n| self.issued[flow] >= n) {
            self.slots[flow * conc + s].active = false;
        } else {
            self.issued[flow] += 1;
            self.begin(flow, s, now, send);
        }
    }

    /// Counts (and with `retry`, restarts) transactions older than the
    /// timeout; looks at most once a millisecond.
    pub(crate) fn scan_timeouts(
        &mut self,
        now: u64,
        c: &mut CounterSnapshot,
        send: &mut impl FnMut(u16, u32),
    ) {
        if now.saturating_sub(self.last_scan) < 1_000_000 {
            return;
        }
        self.last_scan = now;
        for i in 0..self.slots.len() {
            let s = self.slots[i];
            if s.active && !s.timed_out && now.saturating_sub(s.start_ns) > self.timeout_ns {
                c.timeouts += 1;
                if self.retry {
                    // A new message id, so a late answer is not taken for
                    // the retry's.
                    self.begin(i / self.conc, i % self.conc, now, send);
                } else {
                    // Counted once; the answer is still awaited and timed.
                    self.slots[i].timed_out = true;
                }
            }
        }
    }

    /// Whether every flow completed its count.
    pub(crate) fn all_done(&self) -> bool {
        self.count
            .is_some_and(|n| self.flows.iter().all(|&f| self.done[usize::from(f)] >= n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_times_and_retries() {
        let mut t = Transactions::new(&[0, 1], 2, Some(3), 1_000_000, true);
        let sent = std::cell::RefCell::new(Vec::new());
        let mut send = |f: u16, id: u32| sent.borrow_mut().push((f, id));
        t.start(0, &mut send);
        assert_eq!(*sent.borrow(), vec![(0, 0), (0, 1), (1, 0), (1, 1)]);
        let mut c = CounterSnapshot::default();
        t.on_response(0, 0, 500, true, &mut c, &mut send);
        assert_eq!(c.transactions, 1);
        assert_eq!(sent.borrow().last(), Some(&(0, 2)));
        // A stale id is late, not a transaction.
        t.on_response(0, 0, 600, true, &mut c, &mut send);
        assert_eq!(c.late, 1);
        // Flow 1's two requests time out and are retried with new ids.
        t.scan_timeouts(2_000_000, &mut c, &mut send);
        assert_eq!(c.timeouts, 4, "flow 0's two open ones too");
        assert!(sent.borrow().contains(&(1, 2)) && sent.borrow().contains(&(1, 3)));
        assert_eq!(t.hist.len(), 1);
        assert!(!t.all_done());
    }
}
