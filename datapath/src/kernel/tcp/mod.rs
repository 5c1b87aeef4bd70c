//! The TCP backend: one connection per flow; each message travels as one
//! record (its headers, then its bytes) on the byte stream, and the
//! receiver finds the records again wherever the reads cut the stream.

pub mod rr;

use crate::kernel::{size_buffer, Buffer};
use std::{
    io::{ErrorKind, Read, Write},
    net::{SocketAddrV4, TcpListener, TcpStream},
    time::{Duration, Instant},
};

use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};

use crate::kernel::{
    pace_idle, received, records::RecordCutter, sent, spawn_socket, KernelReceiverConfig,
    KernelStreamConfig, RecordParser, BLOCK_SLICE,
};
use crate::{
    header::{Kind, MESSAGE_HEADER_LEN},
    message::Fragmentation,
    pacing::Pacer,
    worker::{FlowTable, RxSummary, TxSummary, WaitMode, Worker, WorkerError},
};
use linerate_counters::stats::{CounterSnapshot, WorkerCounters};

/// Bytes handed to one write().
const CHUNK: usize = 256 << 10;

fn io(what: &'static str) -> impl Fn(std::io::Error) -> WorkerError {
    move |e| WorkerError::Hook(format!("TCP {what}: {e}"))
}

/// Connects, retrying while the receiver is not listening yet.
pub(super) fn connect(dst: SocketAddrV4) -> Result<TcpStream, WorkerError> {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        match TcpStream::connect_timeout(&dst.into(), Duration::from_secs(1)) {
            Ok(s) => return Ok(s),
            Err(e) if Instant::now() < until && e.kind() == ErrorKind::ConnectionRefused => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(io("connect")(e)),
        }
    }
}

/// Starts a TCP sender: one connection, messages as records.
pub fn spawn_tcp_tx(
    name: String,
    cfg: KernelStreamConfig,
) -> Result<Worker<TxSummary>, WorkerError> {
    spawn_socket(
        name,
        cfg,
        |cfg| {
            let s = connect(cfg.dst)?;
            size_buffer(&s, Buffer::Send)
                .map_err(|e| WorkerError::Hook(format!("SO_SNDBUF: {e}")))?;
            if cfg.wait == WaitMode::Busy {
                s.set_nonblocking(true).map_err(io("nonblocking"))?;
            } else {
                s.set_write_timeout(Some(BLOCK_SLICE))
                    .map_err(io("timeout"))?;
            }
            Ok(s)
        },
        send,
    )
}

fn send(
    mut s: TcpStream,
    cfg: &KernelStreamConfig,
    counters: &WorkerCounters,
) -> Result<TxSummary, WorkerError> {
    // A whole message is one record on the stream.
    let whole = Fragmentation::new(cfg.message.msg_len, cfg.message.msg_len.max(1))
        .map_err(|e| WorkerError::Hook(e.to_string()))?;
    let mut cutter = RecordCutter::new(Kind::Message, cfg.flow, whole, false);
    let rec_len = (MESSAGE_HEADER_LEN + cfg.message.msg_len) as u64;
    let mut pacer = Pacer::new(cfg.rate, cfg.count);
    if cfg.rate.is_some() {
        crate::pacing::precise_timers();
    }
    let mut chunk = vec![0u8; CHUNK];
    for (i, b) in chunk.iter_mut().enumerate() {
        *b = i as u8;
    }
    // Bytes of the current chunk still to write, and where they start.
    let (mut filled, mut written) = (0usize, 0usize);
    // Bytes of the record under way still to place in chunks.
    let mut rec_left = 0u64;
    let mut c = CounterSnapshot::default();
    let mut bytes_out = 0u64;
    let start = Instant::now();
    loop {
        let now = Instant::now();
        let between = rec_left == 0 && written == filled;
        let stopping = cfg.stop.should_stop(now);
        if (stopping && (between || now >= cfg.stop.deadline))
            || (pacer.done(cutter.written()) && between)
        {
            break;
        }
        if written == filled {
            // Refill the chunk: the rest of the record under way, then new
            // records as the pacer allows.
            filled = 0;
            written = 0;
            while filled < CHUNK {
                if rec_left == 0 {
                    // Told to stop: the record under way ends the stream.
                    if stopping || pacer.allowed(cutter.written(), now - start, 1) == 0 {
                        break;
                    }
                    // Headers are never split across chunks.
                    if CHUNK - filled < MESSAGE_HEADER_LEN {
                        break;
                    }
                    cutter.write_next(&mut chunk[filled..], crate::clock::monotonic_ns());
                    filled += MESSAGE_HEADER_LEN;
                    rec_left = rec_len - MESSAGE_HEADER_LEN as u64;
                    continue;
                }
                let n = rec_left.min((CHUNK - filled) as u64) as usize;
                filled += n;
                rec_left -= n as u64;
            }
            if filled == 0 {
                pace_idle(&pacer, cutter.written(), now - start, &mut c);
                continue;
            }
        }
        match s.write(&chunk[written..filled]) {
            Ok(n) => {
                written += n;
                bytes_out += n as u64;
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) =>
            {
                c.idle_loops += 1;
            }
            Err(e) => return Err(io("write")(e)),
        }
        c.syscalls += 1;
        // Messages count as sent once all their bytes are written.
        let done = bytes_out / rec_len;
        c.frames = done;
        c.messages = done;
        c.message_bytes = done * cfg.message.msg_len as u64;
        c.payload_bytes = bytes_out;
        c.bytes = bytes_out;
        counters.publish(&c);
    }
    Ok(sent(c, counters, pacer.slipped()))
}

/// Starts a TCP receiver: accepts `flows` connections and reads records.
pub fn spawn_tcp_rx(
    name: String,
    cfg: KernelReceiverConfig,
) -> Result<Worker<RxSummary>, WorkerError> {
    spawn_socket(
        name,
        cfg,
        |cfg| {
            let l = TcpListener::bind(cfg.bind).map_err(io("listen"))?;
            l.set_nonblocking(true).map_err(io("nonblocking"))?;
            Ok(l)
        },
        receive,
    )
}

/// The listener's token in the receiver's epoll set (connections are
/// their index).
const LISTENER: u64 = u64::MAX;

/// The receiver, as netperf's TCP_STREAM receiver: it waits in epoll_wait
/// for a connection with data (or a new one, up to `flows`) and reads only
/// those; `busy` polls the same set without sleeping (timeout 0, yielding
/// between empty turns). Nothing is allocated per turn.
fn receive(
    l: TcpListener,
    cfg: &KernelReceiverConfig,
    counters: &WorkerCounters,
) -> Result<RxSummary, WorkerError> {
    let mut conns: Vec<(TcpStream, RecordParser)> = Vec::new();
    let mut flows = FlowTable::default();
    let mut buf = vec![0u8; CHUNK];
    let mut c = CounterSnapshot::default();
    let epoll = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC).map_err(nix_io("epoll_create"))?;
    epoll
        .add(&l, EpollEvent::new(EpollFlags::EPOLLIN, LISTENER))
        .map_err(nix_io("epoll_ctl"))?;
    let mut events = vec![EpollEvent::empty(); 64];
    let timeout = match cfg.wait {
        WaitMode::Busy => EpollTimeout::ZERO,
        _ => EpollTimeout::from(BLOCK_SLICE.as_millis() as u16),
    };
    while !cfg.stop.should_stop(Instant::now()) {
        flows.start_batch();
        c.syscalls += 1;
        let ready = epoll.wait(&mut events, timeout).unwrap_or(0);
        let mut got = 0;
        for ev in &events[..ready] {
            if ev.data() == LISTENER {
                accept_flows(&l, &epoll, &mut conns, cfg.flows)?;
                continue;
            }
            let (s, parser) = &mut conns[ev.data() as usize];
            c.syscalls += 1;
            match s.read(&mut buf) {
                Ok(0) => {
                    let _ = epoll.delete(&*s);
                }
                Ok(n) => {
                    got += n;
                    c.payload_bytes += n as u64;
                    c.bytes += n as u64;
                    // Bytes were counted as they were read.
                    parser.feed(&buf[..n], |r| match r.fragment {
                        Some(_) => flows.record(&mut c, &r.header, r.fragment, 0, 0, None),
                        None => c.bad += 1,
                    });
                    if parser.broken {
                        c.bad += 1;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e) => return Err(io("read")(e)),
            }
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
    Ok(received(flows, c, counters))
}

/// Accepts waiting connections while fewer than `flows` are open, each
/// into the epoll set; once all are in, the listener leaves the set.
fn accept_flows(
    l: &TcpListener,
    epoll: &Epoll,
    conns: &mut Vec<(TcpStream, RecordParser)>,
    flows: usize,
) -> Result<(), WorkerError> {
    while conns.len() < flows {
        match l.accept() {
            Ok((s, _)) => {
                let _ = size_buffer(&s, Buffer::Receive);
                s.set_nonblocking(true).map_err(io("nonblocking"))?;
                epoll
                    .add(&s, EpollEvent::new(EpollFlags::EPOLLIN, conns.len() as u64))
                    .map_err(nix_io("epoll_ctl"))?;
                conns.push((s, RecordParser::default()));
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
            Err(e) => return Err(io("accept")(e)),
        }
    }
    let _ = epoll.delete(l);
    Ok(())
}

fn nix_io(what: &'static str) -> impl Fn(nix::errno::Errno) -> WorkerError {
    move |e| WorkerError::Hook(format!("TCP {what}: {e}"))
}
