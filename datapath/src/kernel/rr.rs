//! Request/response over the kernel stack: UDP (a connected socket per
//! flow on the client, one socket per queue on the server, messages cut
//! into datagrams sent with sendmmsg) and TCP (a connection per flow,
//! TCP_NODELAY, one record per message). Same transactions, histogram and
//! counters as the AF_XDP client.

use std::{
    io::{ErrorKind, IoSlice, IoSliceMut, Read, Write},
    net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream, UdpSocket},
    os::fd::{AsFd, AsRawFd, BorrowedFd},
    sync::atomic::Ordering,
    time::{Duration, Instant},
};

use nix::{
    errno::Errno,
    poll::{poll, PollFd, PollFlags, PollTimeout},
    sys::socket::{recvmmsg, sendmmsg, setsockopt, sockopt, MsgFlags, MultiHeaders, SockaddrIn},
};

use super::{read_datagram, RecordParser, SOCKET_BUFFER};
use crate::{
    clock::monotonic_ns,
    header::{Fragment, Header, Kind, HEADER_LEN, MESSAGE_HEADER_LEN},
    message::{Fragmentation, MessageTracker},
    stats::{CounterSnapshot, WorkerCounters},
    worker::{
        spawn_with, transactions::Transactions, ClientConfig, Placement, RrSummary, StopSignal,
        WaitMode, Worker, WorkerError, MAX_FLOWS, MAX_LATENCY_NS,
    },
    xsk::BindMode,
};

/// One side of a kernel-stack rr run.
#[derive(Debug, Clone)]
pub struct KernelRrConfig {
    /// The server's address for this queue.
    pub server: SocketAddrV4,
    /// The client's address.
    pub client_ip: Ipv4Addr,
    /// How requests are cut (UDP datagrams).
    pub request: Fragmentation,
    /// How responses are cut.
    pub response: Fragmentation,
    /// Datagrams per sendmmsg/recvmmsg.
    pub batch: usize,
    /// Busy (spin) or wait (poll).
    pub wait: WaitMode,
    /// Where to run.
    pub placement: Placement,
    /// When to stop.
    pub stop: StopSignal,
}

fn err(what: &'static str) -> impl Fn(std::io::Error) -> WorkerError {
    move |e| WorkerError::Hook(format!("{what}: {e}"))
}

fn nerr(what: &'static str) -> impl Fn(Errno) -> WorkerError {
    move |e| WorkerError::Hook(format!("{what}: {e}"))
}

/// Waits for any of `fds` to become ready (POLLIN or POLLOUT), at most `ms`.
fn wait_any(fds: &[BorrowedFd<'_>], flags: PollFlags, ms: u16) {
    let mut p: Vec<PollFd<'_>> = fds.iter().map(|fd| PollFd::new(*fd, flags)).collect();
    let _ = poll(&mut p, PollTimeout::from(ms));
}

fn empty_hist() -> hdrhistogram::Histogram<u64> {
    hdrhistogram::Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3).expect("valid bounds")
}

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

fn udp_socket(bind: SocketAddrV4) -> Result<UdpSocket, WorkerError> {
    let s = UdpSocket::bind(bind).map_err(err("UDP bind"))?;
    s.set_nonblocking(true).map_err(err("UDP nonblocking"))?;
    let _ = setsockopt(&s, sockopt::RcvBufForce, &SOCKET_BUFFER);
    let _ = setsockopt(&s, sockopt::SndBufForce, &SOCKET_BUFFER);
    Ok(s)
}

/// Starts a UDP rr server: answers every complete request.
pub fn spawn_udp_server(
    name: String,
    cfg: KernelRrConfig,
) -> Result<Worker<RrSummary>, WorkerError> {
    let server = cfg.server;
    spawn_with(
        name,
        cfg.placement.clone(),
        move || Ok((udp_socket(server)?, BindMode::Kernel, None, false)),
        move |sock, counters| udp_serve(sock, &cfg, counters),
    )
}

fn udp_serve(
    sock: UdpSocket,
    cfg: &KernelRrConfig,
    counters: &WorkerCounters,
) -> Result<RrSummary, WorkerError> {
    let mut input = DatagramIn::new(cfg.batch, MESSAGE_HEADER_LEN + cfg.request.per_fragment);
    let mut out = DatagramOut::new(cfg.batch, &cfg.response);
    let mut trackers: Vec<Option<MessageTracker>> = Vec::new();
    let mut todo: Vec<(u16, u32, Option<SockaddrIn>)> = Vec::with_capacity(1024);
    let mut c = CounterSnapshot::default();
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
            idle(cfg.wait, &[sock.as_fd()]);
        }
        counters.publish(&c);
    }
    counters.publish(&c);
    Ok(RrSummary {
        counters: c,
        latency: empty_hist(),
        xsk: Default::default(),
    })
}

fn idle(wait: WaitMode, fds: &[BorrowedFd<'_>]) {
    match wait {
        WaitMode::Busy => std::thread::yield_now(),
        WaitMode::Wait => wait_any(fds, PollFlags::POLLIN, 1),
    }
}

/// Starts a UDP rr client for `client.flows`.
pub fn spawn_udp_client(
    name: String,
    cfg: KernelRrConfig,
    client: ClientConfig,
) -> Result<Worker<RrSummary>, WorkerError> {
    let setup = cfg.clone();
    let flows = client.flows.clone();
    spawn_with(
        name,
        cfg.placement.clone(),
        move || {
            let mut socks = Vec::new();
            for _ in &flows {
                let s = udp_socket(SocketAddrV4::new(setup.client_ip, 0))?;
                s.connect(setup.server).map_err(err("UDP connect"))?;
                socks.push(s);
            }
            Ok((socks, BindMode::Kernel, None, false))
        },
        move |socks, counters| udp_client(socks, &cfg, &client, counters),
    )
}

fn udp_client(
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
    tx.start(monotonic_ns(), &mut |f, id| todo.push((f, id)));
    while !cfg.stop.should_stop(Instant::now()) && !tx.all_done() {
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
            idle(cfg.wait, &fds);
        }
        counters.publish(&c);
    }
    counters.publish(&c);
    Ok(RrSummary {
        counters: c,
        latency: tx.hist,
        xsk: Default::default(),
    })
}

/// Writes all of `bytes`, waiting for socket space when needed.
fn write_all(s: &mut TcpStream, mut bytes: &[u8], stop: &StopSignal) -> Result<(), WorkerError> {
    while !bytes.is_empty() {
        match s.write(bytes) {
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {
                if stop.should_stop(Instant::now()) {
                    return Ok(());
                }
                wait_any(&[s.as_fd()], PollFlags::POLLOUT, 1);
            }
            // The peer went away (its run ended): nothing more to say.
            Err(e) if matches!(e.kind(), ErrorKind::BrokenPipe | ErrorKind::ConnectionReset) => {
                return Ok(());
            }
            Err(e) => return Err(err("TCP write")(e)),
        }
    }
    Ok(())
}

/// Writes one message as a record: its headers, then its bytes.
#[allow(clippy::too_many_arguments)]
fn write_record(
    s: &mut TcpStream,
    kind: Kind,
    flow: u16,
    seq: u64,
    msg_id: u32,
    len: usize,
    pattern: &[u8],
    stop: &StopSignal,
) -> Result<(), WorkerError> {
    let mut head = [0u8; MESSAGE_HEADER_LEN];
    Header {
        kind,
        flow,
        seq,
        send_ns: monotonic_ns(),
    }
    .write(&mut head);
    Fragment {
        msg_id,
        index: 0,
        count: 1,
        msg_len: len as u32,
    }
    .write(&mut head[HEADER_LEN..]);
    // Small records go out in one write (TCP_NODELAY sends each write).
    if len <= pattern.len() - MESSAGE_HEADER_LEN {
        let mut one = [0u8; 2048];
        if MESSAGE_HEADER_LEN + len <= one.len() {
            one[..MESSAGE_HEADER_LEN].copy_from_slice(&head);
            one[MESSAGE_HEADER_LEN..MESSAGE_HEADER_LEN + len].copy_from_slice(&pattern[..len]);
            return write_all(s, &one[..MESSAGE_HEADER_LEN + len], stop);
        }
    }
    write_all(s, &head, stop)?;
    let mut left = len;
    while left > 0 {
        let n = left.min(pattern.len());
        write_all(s, &pattern[..n], stop)?;
        left -= n;
    }
    Ok(())
}

fn tcp_setup(s: &TcpStream) -> Result<(), WorkerError> {
    s.set_nodelay(true).map_err(err("TCP_NODELAY"))?;
    s.set_nonblocking(true).map_err(err("TCP nonblocking"))?;
    let _ = setsockopt(s, sockopt::RcvBufForce, &SOCKET_BUFFER);
    let _ = setsockopt(s, sockopt::SndBufForce, &SOCKET_BUFFER);
    Ok(())
}

/// Starts a TCP rr server: accepts connections, answers every request.
pub fn spawn_tcp_server(
    name: String,
    cfg: KernelRrConfig,
) -> Result<Worker<RrSummary>, WorkerError> {
    let server = cfg.server;
    spawn_with(
        name,
        cfg.placement.clone(),
        move || {
            let l = TcpListener::bind(server).map_err(err("TCP listen"))?;
            l.set_nonblocking(true).map_err(err("TCP nonblocking"))?;
            Ok((l, BindMode::Kernel, None, false))
        },
        move |l, counters| tcp_serve(l, &cfg, counters),
    )
}

fn tcp_serve(
    l: TcpListener,
    cfg: &KernelRrConfig,
    counters: &WorkerCounters,
) -> Result<RrSummary, WorkerError> {
    let pattern: Vec<u8> = (0..256 << 10).map(|i| i as u8).collect();
    let mut conns: Vec<(TcpStream, RecordParser, u64)> = Vec::new();
    let mut buf = vec![0u8; 256 << 10];
    let mut todo: Vec<(u16, u32)> = Vec::new();
    let mut c = CounterSnapshot::default();
    while !cfg.stop.should_stop(Instant::now()) {
        match l.accept() {
            Ok((s, _)) => {
                tcp_setup(&s)?;
                conns.push((s, RecordParser::default(), 0));
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(e) => return Err(err("TCP accept")(e)),
        }
        let mut got = 0;
        for (s, parser, seq) in conns.iter_mut() {
            match s.read(&mut buf) {
                Ok(n) if n > 0 => {
                    got += n;
                    c.bytes += n as u64;
                    parser.feed(&buf[..n], |r| match (r.header.kind, r.fragment) {
                        (Kind::Request, Some(f)) => {
                            c.frames += 1;
                            c.messages += 1;
                            c.message_bytes += u64::from(f.msg_len);
                            todo.push((r.header.flow, f.msg_id));
                        }
                        _ => c.bad += 1,
                    });
                    for (flow, id) in todo.drain(..) {
                        write_record(
                            s,
                            Kind::Response,
                            flow,
                            *seq,
                            id,
                            cfg.response.msg_len,
                            &pattern,
                            &cfg.stop,
                        )?;
                        *seq += 1;
                        c.queued += 1;
                    }
                }
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e)
                    if matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::BrokenPipe) => {}
                Err(e) => return Err(err("TCP read")(e)),
            }
        }
        if got == 0 {
            c.idle_loops += 1;
            let mut fds: Vec<BorrowedFd<'_>> = conns.iter().map(|(s, _, _)| s.as_fd()).collect();
            fds.push(l.as_fd());
            idle(cfg.wait, &fds);
        }
        counters.publish(&c);
    }
    counters.publish(&c);
    Ok(RrSummary {
        counters: c,
        latency: empty_hist(),
        xsk: Default::default(),
    })
}

/// Starts a TCP rr client: a connection per flow.
pub fn spawn_tcp_client(
    name: String,
    cfg: KernelRrConfig,
    client: ClientConfig,
) -> Result<Worker<RrSummary>, WorkerError> {
    let setup = cfg.clone();
    let flows = client.flows.clone();
    spawn_with(
        name,
        cfg.placement.clone(),
        move || {
            let mut conns = Vec::new();
            for _ in &flows {
                let until = Instant::now() + Duration::from_secs(5);
                let s = loop {
                    match TcpStream::connect_timeout(&setup.server.into(), Duration::from_secs(1)) {
                        Ok(s) => break s,
                        Err(e)
                            if Instant::now() < until
                                && e.kind() == ErrorKind::ConnectionRefused =>
                        {
                            std::thread::sleep(Duration::from_millis(20));
                        }
                        Err(e) => return Err(err("TCP connect")(e)),
                    }
                };
                tcp_setup(&s)?;
                conns.push(s);
            }
            Ok((conns, BindMode::Kernel, None, false))
        },
        move |conns, counters| tcp_client(conns, &cfg, &client, counters),
    )
}

fn tcp_client(
    mut conns: Vec<TcpStream>,
    cfg: &KernelRrConfig,
    cl: &ClientConfig,
    counters: &WorkerCounters,
) -> Result<RrSummary, WorkerError> {
    // A reliable stream: a slow answer is counted as a timeout, not retried.
    let mut tx = Transactions::for_client(cl, false);
    let nflows = tx.flow_bound();
    let conn_of = tx.positions();
    let pattern: Vec<u8> = (0..256 << 10).map(|i| i as u8).collect();
    let mut parsers: Vec<RecordParser> = conns.iter().map(|_| RecordParser::default()).collect();
    let mut seqs = vec![0u64; conns.len()];
    let mut buf = vec![0u8; 256 << 10];
    let mut todo: Vec<(u16, u32)> = Vec::new();
    let mut c = CounterSnapshot::default();
    tx.start(monotonic_ns(), &mut |f, id| todo.push((f, id)));
    while !cfg.stop.should_stop(Instant::now()) && !tx.all_done() {
        for (f, id) in todo.drain(..) {
            let i = conn_of[usize::from(f)];
            write_record(
                &mut conns[i],
                Kind::Request,
                f,
                seqs[i],
                id,
                cfg.request.msg_len,
                &pattern,
                &cfg.stop,
            )?;
            seqs[i] += 1;
            c.queued += 1;
        }
        let now = monotonic_ns();
        let measuring = cl.measuring.load(Ordering::Relaxed);
        let mut got = 0;
        for (i, s) in conns.iter_mut().enumerate() {
            match s.read(&mut buf) {
                Ok(n) if n > 0 => {
                    got += n;
                    c.bytes += n as u64;
                    parsers[i].feed(&buf[..n], |r| {
                        let fi = usize::from(r.header.flow);
                        match (r.header.kind, r.fragment) {
                            (Kind::Response, Some(f)) if fi < nflows => {
                                c.frames += 1;
                                c.messages += 1;
                                c.message_bytes += u64::from(f.msg_len);
                                tx.on_response(
                                    fi,
                                    f.msg_id,
                                    now,
                                    measuring,
                                    &mut c,
                                    &mut |f, id| todo.push((f, id)),
                                );
                            }
                            _ => c.bad += 1,
                        }
                    });
                }
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e)
                    if matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::BrokenPipe) =>
                {
                    return Err(WorkerError::Hook(
                        "TCP: the server closed the connection (did it stop?)".into(),
                    ));
                }
                Err(e) => return Err(err("TCP read")(e)),
            }
        }
        tx.scan_timeouts(now, &mut c, &mut |_, _| {});
        if got == 0 && todo.is_empty() {
            c.idle_loops += 1;
            let fds: Vec<BorrowedFd<'_>> = conns.iter().map(|s| s.as_fd()).collect();
            idle(cfg.wait, &fds);
        }
        counters.publish(&c);
    }
    counters.publish(&c);
    Ok(RrSummary {
        counters: c,
        latency: tx.hist,
        xsk: Default::default(),
    })
}
