//! Messages waiting to be sent as frames: a FIFO of (flow, message) that
//! a request/response worker pumps into its TX slots as they free up.

use std::collections::VecDeque;

use crate::{
    frame::{header_offset, set_lengths, set_udp6_checksum, HEADER_OFFSET, MIN_LEN},
    geometry::Geometry,
    header::{Fragment, Header, Kind, HEADER_LEN},
    message::Fragmentation,
    port::{FrameMut, Transmit},
};

#[derive(Debug, Clone, Copy)]
struct Pending {
    flow: u16,
    msg_id: u32,
    src_port: u16,
    dst_port: u16,
    next: u32,
}

/// Messages to send, one kind and size.
#[derive(Debug)]
pub(super) struct Outbox {
    kind: Kind,
    cut: Fragmentation,
    queue: VecDeque<Pending>,
    /// Fragments still to send over the whole queue.
    remaining: usize,
    /// Next frame sequence number per flow.
    seq: Vec<u64>,
}

impl Outbox {
    pub(super) fn new(kind: Kind, cut: Fragmentation, flows: usize, capacity: usize) -> Self {
        Self {
            kind,
            cut,
            queue: VecDeque::with_capacity(capacity),
            remaining: 0,
            seq: vec![0; flows],
        }
    }

    /// Queues message `msg_id` of `flow`.
    pub(super) fn push(&mut self, flow: u16, msg_id: u32, src_port: u16, dst_port: u16) {
        self.queue.push_back(Pending {
            flow,
            msg_id,
            src_port,
            dst_port,
            next: 0,
        });
        self.remaining += self.cut.count;
    }

    /// Whether nothing waits.
    pub(super) fn is_empty(&self) -> bool {
        self.remaining == 0
    }

    /// Sends up to `max` frames; returns (frames, wire bytes).
    pub(super) fn pump(&mut self, port: &mut impl Transmit, max: usize, now_ns: u64) -> (u64, u64) {
        let n = max.min(self.remaining);
        if n == 0 {
            return (0, 0);
        }
        let (kind, cut) = (self.kind, self.cut);
        let count = cut.count as u32;
        let mut wire_bytes = 0u64;
        let queue = &mut self.queue;
        let seqs = &mut self.seq;
        let sent = port.send(n, |f| {
            let Some(p) = queue.front_mut() else { return };
            let (_, piece) = cut.piece(p.next as usize);
            let h = f.head();
            // IPv6 headers are 20 bytes longer than IPv4's.
            let lr = header_offset(h);
            let len = Geometry::fragment_len(piece) + lr - HEADER_OFFSET;
            let wire = len.max(MIN_LEN);
            if f.len() != wire {
                f.set_len(wire);
            }
            let h = f.head();
            set_lengths(h, len);
            let ports = lr - 8;
            h[ports..ports + 2].copy_from_slice(&p.src_port.to_be_bytes());
            h[ports + 2..ports + 4].copy_from_slice(&p.dst_port.to_be_bytes());
            let flow = usize::from(p.flow);
            if flow >= seqs.len() {
                seqs.resize(flow + 1, 0);
            }
            Header {
                kind,
                flow: p.flow,
                seq: seqs[flow],
                send_ns: now_ns,
            }
            .write(&mut h[lr..]);
            seqs[flow] += 1;
            Fragment {
                msg_id: p.msg_id,
                index: p.next,
                count,
                msg_len: cut.msg_len as u32,
            }
            .write(&mut h[lr + HEADER_LEN..]);
            // IPv6 frames need their UDP checksum (rr's frames fit one
            // UMEM chunk over IPv6: the plan checks it).
            set_udp6_checksum(h, len);
            wire_bytes += wire as u64;
            p.next += 1;
            if p.next == count {
                queue.pop_front();
            }
        });
        self.remaining -= sent;
        (sent as u64, wire_bytes)
    }
}
