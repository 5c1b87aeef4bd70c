//! Request/response over TCP: a connection per flow, TCP_NODELAY, one
//! record per message.

use crate::kernel::{size_buffer, Buffer};
use std::{
    io::{ErrorKind, Read, Write},
    net::{TcpListener, TcpStream},
    os::fd::{AsFd, BorrowedFd},
    sync::atomic::Ordering,
    time::Instant,
};

use nix::{
    poll::PollFlags,
    sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout},
};

use crate::{
    clock::monotonic_ns,
    header::{Fragment, Header, Kind, HEADER_LEN, MESSAGE_HEADER_LEN},
    kernel::{
        rr::{answered, err, idle, nerr, responded, spawn_client_with, wait_any, KernelRrConfig},
        spawn_socket, RecordParser, BLOCK_SLICE,
    },
    worker::{
        transactions::Transactions, ClientConfig, RrSummary, StopSignal, WaitMode, Worker,
        WorkerError,
    },
};
use linerate_counters::stats::{CounterSnapshot, WorkerCounters};

/// Writes all of `bytes`, waiting for socket space when needed.
fn write_all(s: &TcpStream, mut bytes: &[u8], stop: &StopSignal) -> Result<(), WorkerError> {
    while !bytes.is_empty() {
        // `Write` for `&TcpStream`: the stream itself stays shared.
        match { s }.write(bytes) {
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
    s: &TcpStream,
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
    let _ = size_buffer(s, Buffer::Receive);
    let _ = size_buffer(s, Buffer::Send);
    Ok(())
}

/// Starts a TCP rr responder: accepts connections, answers every request.
pub fn spawn_responder(
    name: String,
    cfg: KernelRrConfig,
) -> Result<Worker<RrSummary>, WorkerError> {
    spawn_socket(
        name,
        cfg,
        |cfg| {
            let l = TcpListener::bind(cfg.responder).map_err(err("TCP listen"))?;
            l.set_nonblocking(true).map_err(err("TCP nonblocking"))?;
            Ok(l)
        },
        respond,
    )
}

/// The listener's token in the responder's epoll set (connections are
/// their index).
const LISTENER: u64 = u64::MAX;
/// Connections accepted per turn at most (the loop stays bounded).
const ACCEPTS_PER_TURN: usize = 64;

/// One connection of the responder.
struct Conn {
    s: TcpStream,
    parser: RecordParser,
    seq: u64,
}

/// The responder, as netperf's TCP_RR server: it waits in epoll_wait for
/// a connection with a request (or a new connection) and reads only those;
/// `busy` polls the same set without sleeping (`epoll_wait` with timeout
/// 0, yielding between empty turns). Nothing is allocated per turn: the
/// event list is made once, the answer list reused.
fn respond(
    l: TcpListener,
    cfg: &KernelRrConfig,
    counters: &WorkerCounters,
) -> Result<RrSummary, WorkerError> {
    let pattern: Vec<u8> = (0..256 << 10).map(|i| i as u8).collect();
    let mut conns: Vec<Conn> = Vec::new();
    let mut buf = vec![0u8; 256 << 10];
    let mut todo: Vec<(u16, u32)> = Vec::new();
    let mut c = CounterSnapshot::default();
    let epoll = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC).map_err(nerr("epoll_create"))?;
    epoll
        .add(&l, EpollEvent::new(EpollFlags::EPOLLIN, LISTENER))
        .map_err(nerr("epoll_ctl"))?;
    let mut events = vec![EpollEvent::empty(); 64];
    let timeout = match cfg.wait {
        WaitMode::Busy => EpollTimeout::ZERO,
        _ => EpollTimeout::from(BLOCK_SLICE.as_millis() as u16),
    };
    while !cfg.stop.should_stop(Instant::now()) {
        c.syscalls += 1;
        let ready = epoll.wait(&mut events, timeout).unwrap_or(0);
        let mut got = 0;
        for ev in &events[..ready] {
            if ev.data() == LISTENER {
                accept_some(&l, &epoll, &mut conns)?;
                continue;
            }
            let conn = &mut conns[ev.data() as usize];
            got += answer(conn, &mut buf, &mut todo, &pattern, cfg, &mut c, &epoll)?;
        }
        if got == 0 {
            c.idle_loops += 1;
            if cfg.wait == WaitMode::Busy {
                std::thread::yield_now();
            }
            crate::worker::publish_idle(counters, &c);
        } else {
            counters.publish(&c);
        }
    }
    Ok(responded(c, counters))
}

/// Accepts the connections waiting (at most [`ACCEPTS_PER_TURN`]) and adds
/// each to the epoll set.
fn accept_some(l: &TcpListener, epoll: &Epoll, conns: &mut Vec<Conn>) -> Result<(), WorkerError> {
    for _ in 0..ACCEPTS_PER_TURN {
        match l.accept() {
            Ok((s, _)) => {
                tcp_setup(&s)?;
                epoll
                    .add(&s, EpollEvent::new(EpollFlags::EPOLLIN, conns.len() as u64))
                    .map_err(nerr("epoll_ctl"))?;
                conns.push(Conn {
                    s,
                    parser: RecordParser::default(),
                    seq: 0,
                });
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) => return Err(err("TCP accept")(e)),
        }
    }
    Ok(())
}

/// Reads what a ready connection has and answers every whole request in
/// it; returns the bytes read. A connection the peer closed leaves the
/// epoll set.
fn answer(
    conn: &mut Conn,
    buf: &mut [u8],
    todo: &mut Vec<(u16, u32)>,
    pattern: &[u8],
    cfg: &KernelRrConfig,
    c: &mut CounterSnapshot,
    epoll: &Epoll,
) -> Result<usize, WorkerError> {
    let n = match conn.s.read(buf) {
        Ok(0) => {
            let _ = epoll.delete(&conn.s);
            return Ok(0);
        }
        Ok(n) => n,
        Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(0),
        Err(e) if matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::BrokenPipe) => {
            let _ = epoll.delete(&conn.s);
            return Ok(0);
        }
        Err(e) => return Err(err("TCP read")(e)),
    };
    c.bytes += n as u64;
    conn.parser
        .feed(&buf[..n], |r| match (r.header.kind, r.fragment) {
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
            &conn.s,
            Kind::Response,
            flow,
            conn.seq,
            id,
            cfg.response.msg_len,
            pattern,
            &cfg.stop,
        )?;
        conn.seq += 1;
        c.queued += 1;
    }
    Ok(n)
}

/// Starts a TCP rr client: a connection per flow.
pub fn spawn_client(
    name: String,
    cfg: KernelRrConfig,
    client: ClientConfig,
) -> Result<Worker<RrSummary>, WorkerError> {
    let connect = |cfg: &KernelRrConfig| {
        let s = super::connect(cfg.responder)?;
        tcp_setup(&s)?;
        Ok(s)
    };
    spawn_client_with(name, cfg, client, connect, run_client)
}

fn run_client(
    conns: Vec<TcpStream>,
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
    // Read and written through shared references (`Read`/`Write` for
    // `&TcpStream`), so the descriptors an idle turn polls are gathered once.
    let fds: Vec<BorrowedFd<'_>> = conns.iter().map(|s| s.as_fd()).collect();
    tx.start(monotonic_ns(), &mut |f, id| todo.push((f, id)));
    while !cfg.stop.should_stop(Instant::now()) && !tx.all_done() {
        let (sent, timeouts) = (!todo.is_empty(), c.timeouts);
        for (f, id) in todo.drain(..) {
            let i = conn_of[usize::from(f)];
            write_record(
                &conns[i],
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
        for (i, s) in conns.iter().enumerate() {
            match { s }.read(&mut buf) {
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
                        "TCP: the responder closed the connection (did it stop?)".into(),
                    ));
                }
                Err(e) => return Err(err("TCP read")(e)),
            }
        }
        tx.scan_timeouts(now, &mut c, &mut |_, _| {});
        if got == 0 && todo.is_empty() {
            c.idle_loops += 1;
            idle(cfg.wait, &fds);
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
