//! Request/response over UDP: a connected socket per flow on the client,
//! one socket per queue on the responder, messages cut into datagrams
//! sent with sendmmsg.

use crate::kernel::{size_buffer, Buffer};
use std::{
    io::{IoSlice, IoSliceMut},
    net::{SocketAddrV4, UdpSocket},
    os::fd::{AsFd, AsRawFd, BorrowedFd},
    sync::atomic::Ordering,
    time::Instant,
};

use nix::{
    errno::Errno,
    poll::PollFlags,
    sys::socket::{recvmmsg, sendmmsg, setsockopt, sockopt, MsgFlags, MultiHeaders, SockaddrIn},
};

use crate::{
    clock::monotonic_ns,
    header::{Fragment, Header, Kind, HEADER_LEN, MESSAGE_HEADER_LEN},
    kernel::{
        read_datagram,
        rr::{answered, err, idle, nerr, responded, spawn_client_with, wait_any, KernelRrConfig},
        spawn_socket, SOCKET_BUFFER,
    },
    message::{Fragmentation, MessageTracker},
    worker::busy_poll::{self, BusyPollError, EpollWait},
    worker::{
        transactions::Transactions, ClientConfig, RrSummary, StopSignal, WaitMode, Worker,
        WorkerError, MAX_FLOWS,
    },
};
use linerate_counters::stats::{CounterSnapshot, WorkerCounters};

/// Datagram sender of whole messages, in sendmmsg batches.
struct DatagramOut {
    bufs: Vec<Vec<u8>>,
    lens: Vec<usize>,
    headers: MultiHeaders<SockaddrIn>,
    addrs: Vec<Option<SockaddrIn>>,
    seq: Vec<u64>,
}

impl DatagramOut {
    fn new(batch: usize, cut: &Fragmentation) -> Self {
        let len = MESSAGE_HEADER_LEN + cut.per_fragment.min(cut.msg_len);
        let batch = batch.clamp(1, 64);
        Self {
            bufs: (0..batch)
                .map(|_| (0..len).map(|i| i as u8).collect())
                .collect(),
            lens: vec![0; batch],
            headers: MultiHeaders::preallocate(batch, None),
            addrs: vec![None; batch],
            seq: Vec::new(),
        }
    }

    /// Sends message `msg_id` of `flow` on `fd` (to `to` when the socket is
    /// not connected); waits for socket space when the buffer is full.
    #[allow(clippy::too_many_arguments)]
    fn send(
        &mut self,
        fd: BorrowedFd<'_>,
        to: Option<SockaddrIn>,
        kind: Kind,
        flow: u16,
        msg_id: u32,
        cut: &Fragmentation,
        stop: &StopSignal,
        c: &mut CounterSnapshot,
    ) -> Result<(), WorkerError> {
        let f = usize::from(flow);
        if f >= self.seq.len() {
            self.seq.resize(f + 1, 0);
        }
        let mut next = 0;
        while next < cut.count {
            let n = (cut.count - next).min(self.bufs.len());
            let ts = monotonic_ns();
            for k in 0..n {
                let (_, piece) = cut.piece(next + k);
                let b = &mut self.bufs[k];
                Header {
                    kind,
                    flow,
                    seq: self.seq[f] + k as u64,
                    send_ns: ts,
                }
                .write(b);
                Fragment {
                    msg_id,
                    index: (next + k) as u32,
                    count: cut.count as u32,
                    msg_len: cut.msg_len as u32,
                }
                .write(&mut b[HEADER_LEN..]);
                self.lens[k] = MESSAGE_HEADER_LEN + piece;
            }
            let iovs: Vec<[IoSlice<'_>; 1]> = (0..n)
                .map(|k| [IoSlice::new(&self.bufs[k][..self.lens[k]])])
                .collect();
            self.addrs[..n].fill(to);
            let sent = match sendmmsg(
                fd.as_raw_fd(),
                &mut self.headers,
                &iovs,
                &self.addrs[..n],
                [],
                MsgFlags::MSG_DONTWAIT,
            ) {
                Ok(r) => r.count(),
                Err(Errno::EAGAIN | Errno::ENOBUFS | Errno::EINTR) => 0,
                Err(e) => return Err(nerr("sendmmsg")(e)),
            };
            c.syscalls += 1;
            c.queued += sent as u64;
            self.seq[f] += sent as u64;
            next += sent;
            if sent == 0 {
                if stop.should_stop(Instant::now()) {
                    break;
                }
                wait_any(&[fd], PollFlags::POLLOUT, 1);
            }
        }
        Ok(())
    }
}

/// Datagram receiver: recvmmsg into preallocated buffers.
struct DatagramIn {
    bufs: Vec<Vec<u8>>,
    headers: MultiHeaders<SockaddrIn>,
}

impl DatagramIn {
    fn new(batch: usize, max: usize) -> Self {
        let batch = batch.clamp(1, 64);
        Self {
            bufs: (0..batch).map(|_| vec![0u8; max.max(64)]).collect(),
            headers: MultiHeaders::preallocate(batch, None),
        }
    }

    /// Receives what is there (never blocks) and calls `each` with every
    /// datagram and its source. Returns the number received.
    fn recv(
        &mut self,
        fd: BorrowedFd<'_>,
        mut each: impl FnMut(&[u8], Option<SockaddrIn>),
    ) -> Result<usize, WorkerError> {
        let mut iovs: Vec<[IoSliceMut<'_>; 1]> =
            self.bufs.iter_mut().map(|b| [IoSliceMut::new(b)]).collect();
        match recvmmsg(
            fd.as_raw_fd(),
            &mut self.headers,
            iovs.iter_mut(),
            MsgFlags::MSG_DONTWAIT,
            None,
        ) {
            Ok(results) => {
                let mut n = 0;
                for m in results {
                    n += 1;
                    let bytes = m.bytes;
                    let addr = m.address;
                    if let Some(d) = m.iovs().next() {
                        each(&d[..bytes.min(d.len())], addr);
                    }
                }
                Ok(n)
            }
            Err(Errno::EAGAIN | Errno::EINTR) => Ok(0),
            Err(Errno::ECONNREFUSED) => Ok(0),
            Err(e) => Err(nerr("recvmmsg")(e)),
        }
    }
}

fn udp_socket(bind: SocketAddrV4, wait: WaitMode) -> Result<UdpSocket, WorkerError> {
    let s = UdpSocket::bind(bind).map_err(err("UDP bind"))?;
    s.set_nonblocking(true).map_err(err("UDP nonblocking"))?;
    busy_poll::setup_socket(s.as_fd(), wait).map_err(bperr)?;
    let _ = size_buffer(&s, Buffer::Receive);
    let _ = setsockopt(&s, sockopt::SndBufForce, &SOCKET_BUFFER);
    Ok(s)
}

fn bperr(e: BusyPollError) -> WorkerError {
    WorkerError::Hook(format!("UDP socket: {e}"))
}

/// Starts a UDP rr responder: answers every complete request.
pub fn spawn_responder(
    name: String,
    cfg: KernelRrConfig,
) -> Result<Worker<RrSummary>, WorkerError> {
    spawn_socket(
        name,
        cfg,
        |cfg| udp_socket(cfg.responder, cfg.wait),
        respond,
    )
}

fn respond(
    sock: UdpSocket,
    cfg: &KernelRrConfig,
    counters: &WorkerCounters,
) -> Result<RrSummary, WorkerError> {
    let mut input = DatagramIn::new(cfg.batch, MESSAGE_HEADER_LEN + cfg.request.per_fragment);
    let mut out = DatagramOut::new(cfg.batch, &cfg.response);
    let mut trackers: Vec<Option<MessageTracker>> = Vec::new();
    let mut todo: Vec<(u16, u32, Option<SockaddrIn>)> = Vec::with_capacity(1024);
    let mut c = CounterSnapshot::default();
    let mut waiter = EpollWait::new(&[sock.as_fd()], cfg.wait).map_err(bperr)?;
    while !cfg.stop.should_stop(Instant::now()) {
        let got = input.recv(sock.as_fd(), |d, from| {
            c.frames += 1;
            c.bytes += d.len() as u64;
            let Some(r) = read_datagram(d) else {
                c.bad += 1;
                return;
            };
            let (Kind::Request, Some(f), true) = (
                r.header.kind,
                r.fragment,
                usize::from(r.header.flow) < MAX_FLOWS,
            ) else {
                c.bad += 1;
                return;
            };
            let flow = usize::from(r.header.flow);
            if flow >= trackers.len() {
                trackers.resize(flow + 1, None);
            }
            let t = trackers[flow].get_or_insert_with(|| MessageTracker::new(false));
            if let Some(msg_id) = t.on_fragment(&f, &[]).count(&mut c) {
                todo.push((r.header.flow, msg_id, from));
            }
        })?;
        for (flow, msg_id, to) in todo.drain(..) {
            out.send(
                sock.as_fd(),
                to,
                Kind::Response,
                flow,
                msg_id,
                &cfg.response,
                &cfg.stop,
                &mut c,
            )?;
        }
        if got == 0 {
            c.idle_loops += 1;
            match &mut waiter {
                Some(w) => _ = w.wait(1),
                None => idle(cfg.wait, &[sock.as_fd()]),
            }
            crate::worker::publish_idle(counters, &c);
        } else {
            counters.publish(&c);
        }
    }
    Ok(responded(c, counters))
}

/// Starts a UDP rr client for `client.flows`.
pub fn spawn_client(
    name: String,
    cfg: KernelRrConfig,
    client: ClientConfig,
) -> Result<Worker<RrSummary>, WorkerError> {
    let connect = |cfg: &KernelRrConfig| {
        let s = udp_socket(SocketAddrV4::new(cfg.client_ip, 0), cfg.wait)?;
        s.connect(cfg.responder).map_err(err("UDP connect"))?;
        Ok(s)
    };
    spawn_client_with(name, cfg, client, connect, run_client)
}

fn run_client(
    socks: Vec<UdpSocket>,
    cfg: &KernelRrConfig,
    cl: &ClientConfig,
    counters: &WorkerCounters,
) -> Result<RrSummary, WorkerError> {
    let mut tx = Transactions::for_client(cl, true);
    let nflows = tx.flow_bound();
    // Socket of each flow id.
    let sock_of = tx.positions();
    let mut trackers: Vec<MessageTracker> =
        (0..nflows).map(|_| MessageTracker::new(false)).collect();
    let mut out = DatagramOut::new(cfg.batch, &cfg.request);
    let mut input = DatagramIn::new(cfg.batch, MESSAGE_HEADER_LEN + cfg.response.per_fragment);
    let mut todo: Vec<(u16, u32)> = Vec::with_capacity(nflows * cl.concurrency as usize + 16);
    let mut c = CounterSnapshot::default();
    let fds: Vec<BorrowedFd<'_>> = socks.iter().map(|s| s.as_fd()).collect();
    // Kernel busy polling: epoll_wait with the mode's parameters.
    let mut waiter = EpollWait::new(&fds, cfg.wait).map_err(bperr)?;
    tx.start(monotonic_ns(), &mut |f, id| todo.push((f, id)));
    while !cfg.stop.should_stop(Instant::now()) && !tx.all_done() {
        let (sent, timeouts) = (!todo.is_empty(), c.timeouts);
        for (f, id) in todo.drain(..) {
            let fd = fds[sock_of[usize::from(f)]];
            out.send(
                fd,
                None,
                Kind::Request,
                f,
                id,
                &cfg.request,
                &cfg.stop,
                &mut c,
            )?;
        }
        let now = monotonic_ns();
        let measuring = cl.measuring.load(Ordering::Relaxed);
        let mut got = 0;
        for fd in &fds {
            got += input.recv(*fd, |d, _| {
                c.frames += 1;
                c.bytes += d.len() as u64;
                let Some(r) = read_datagram(d) else {
                    c.bad += 1;
                    return;
                };
                let fi = usize::from(r.header.flow);
                let (Kind::Response, Some(f), true) = (r.header.kind, r.fragment, fi < nflows)
                else {
                    c.bad += 1;
                    return;
                };
                if let Some(msg_id) = trackers[fi].on_fragment(&f, &[]).count(&mut c) {
                    tx.on_response(fi, msg_id, now, measuring, &mut c, &mut |f, id| {
                        todo.push((f, id))
                    });
                }
            })?;
        }
        tx.scan_timeouts(now, &mut c, &mut |f, id| todo.push((f, id)));
        if got == 0 && todo.is_empty() {
            c.idle_loops += 1;
            match &mut waiter {
                Some(w) => _ = w.wait(1),
                None => idle(cfg.wait, &fds),
            }
        }
        // Every counter only on turns that moved something.
        if sent || got > 0 || c.timeouts != timeouts {
            counters.publish(&c);
        } else {
            crate::worker::publish_idle(counters, &c);
        }
    }
    Ok(answered(c, tx.hist, counters))
}
