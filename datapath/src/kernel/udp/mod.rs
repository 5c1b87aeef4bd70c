//! The UDP backend: a connected socket per flow sending record datagrams
//! in sendmmsg batches (or GSO super-datagrams), a bound socket receiving
//! them in recvmmsg batches (with GRO, split back into datagrams).

pub mod rr;

use crate::kernel::{size_buffer, Buffer};
use std::{
    io::{IoSlice, IoSliceMut},
    net::UdpSocket,
    os::fd::{AsFd, AsRawFd},
    time::Instant,
};

use nix::{
    errno::Errno,
    sys::socket::{
        recvmmsg, recvmsg, sendmmsg, setsockopt, sockopt, ControlMessageOwned, MsgFlags,
        MultiHeaders, SockaddrIn,
    },
};

use crate::kernel::{
    pace_idle, received,
    records::{read_datagram, RecordCutter},
    sent, spawn_socket, KernelReceiverConfig, KernelStreamConfig, BLOCK_SLICE,
};
use crate::{
    frame::HEADER_OFFSET,
    geometry::Geometry,
    header::{Kind, HEADER_LEN},
    mix::SizeMix,
    pacing::Pacer,
    worker::busy_poll::{self, BusyPollError, EpollWait, BUSY_POLL_USECS},
    worker::{FlowTable, RxSummary, TxSummary, WaitMode, Worker, WorkerError},
};
use linerate_counters::stats::{CounterSnapshot, WorkerCounters};

/// Largest UDP payload a GSO send may carry.
const GSO_MAX_BYTES: usize = 65_000;
/// Largest number of segments in one GSO send.
const GSO_MAX_SEGMENTS: usize = 64;
/// Bytes a datagram's frame holds beside its UDP payload (the Ethernet,
/// IPv4 and UDP headers; the FCS is not counted, as in an AF_XDP
/// descriptor), so kernel backends count "frame bytes" as AF_XDP does.
const FRAME_OVERHEAD: u64 = HEADER_OFFSET as u64;

fn io(e: std::io::Error) -> WorkerError {
    WorkerError::Hook(format!("UDP socket: {e}"))
}

fn bp(e: BusyPollError) -> WorkerError {
    WorkerError::Hook(format!("UDP socket: {e}"))
}

fn nix_err(what: &str) -> impl Fn(Errno) -> WorkerError + '_ {
    move |e| WorkerError::Hook(format!("{what}: {e}"))
}

/// Starts a UDP sender.
pub fn spawn_udp_tx(
    name: String,
    cfg: KernelStreamConfig,
) -> Result<Worker<TxSummary>, WorkerError> {
    spawn_socket(
        name,
        cfg,
        |cfg| {
            let sock = UdpSocket::bind(cfg.src).map_err(io)?;
            sock.connect(cfg.dst).map_err(io)?;
            size_buffer(&sock, Buffer::Send).map_err(nix_err("SO_SNDBUF"))?;
            if cfg.wait == WaitMode::Busy {
                sock.set_nonblocking(true).map_err(io)?;
            } else {
                sock.set_write_timeout(Some(BLOCK_SLICE)).map_err(io)?;
            }
            Ok(sock)
        },
        send,
    )
}

fn send(
    sock: UdpSocket,
    cfg: &KernelStreamConfig,
    counters: &WorkerCounters,
) -> Result<TxSummary, WorkerError> {
    let mut cutter = RecordCutter::new(Kind::Message, cfg.flow, cfg.message, cfg.frames);
    let per = cutter.per_message();
    let mut pacer = Pacer::new(cfg.rate.map(|r| r * per as f64), cfg.count.map(|c| c * per));
    if cfg.rate.is_some() {
        crate::pacing::precise_timers();
    }
    let lengths = MixLengths::new(cfg.mix.as_ref(), cfg.frames);
    let rec_max = lengths.max().max(cutter.max_len());
    let gso = cfg.gso && !(cfg.frames && rec_max > GSO_MAX_BYTES);
    let per_buf = if gso {
        (GSO_MAX_BYTES / rec_max).clamp(1, GSO_MAX_SEGMENTS)
    } else {
        1
    };
    if gso {
        setsockopt(&sock, sockopt::UdpGsoSegment, &(rec_max as i32))
            .map_err(nix_err("UDP_SEGMENT"))?;
    }
    let nbufs = (cfg.batch / per_buf).max(1);
    let pattern: Vec<u8> = (0..rec_max * per_buf).map(|i| i as u8).collect();
    let mut bufs: Vec<Vec<u8>> = (0..nbufs).map(|_| pattern.clone()).collect();
    let mut lens = vec![0usize; nbufs];
    let mut recs = vec![0usize; nbufs];
    let mut rec_bytes = vec![0u64; nbufs];
    let mut headers = MultiHeaders::<SockaddrIn>::preallocate(nbufs, None);
    let addrs: Vec<Option<SockaddrIn>> = vec![None; nbufs];
    let flags = if cfg.wait == WaitMode::Busy {
        MsgFlags::MSG_DONTWAIT
    } else {
        MsgFlags::empty()
    };
    let mut c = CounterSnapshot::default();
    let start = Instant::now();
    loop {
        let now = Instant::now();
        let boundary = cutter.at_message_start() || now >= cfg.stop.deadline;
        let stopping = cfg.stop.should_stop(now);
        if (stopping && boundary) || pacer.done(cutter.written()) {
            break;
        }
        let mut want = pacer.allowed(cutter.written(), now - start, nbufs * per_buf);
        if stopping {
            // Told to stop inside a message: finish it, no more.
            want = want.min(cutter.left_in_message() as usize);
        }
        if want == 0 {
            pace_idle(&pacer, cutter.written(), now - start, &mut c);
            continue;
        }
        // Fill buffers: one record each, or GSO runs of equal-length records
        // (a shorter record may only end a run).
        let ts = crate::clock::monotonic_ns();
        let mut left = want;
        let mut used = 0;
        while used < nbufs && left > 0 {
            let (mut off, mut k, mut bytes) = (0, 0, 0);
            while k < per_buf && left > 0 {
                let len = lengths.next(&cutter);
                if k > 0 && len > rec_max {
                    break;
                }
                cutter.write_next(&mut bufs[used][off..], ts);
                off += len;
                bytes += len as u64;
                k += 1;
                left -= 1;
                if len < rec_max {
                    break;
                }
            }
            lens[used] = off;
            recs[used] = k;
            rec_bytes[used] = bytes;
            used += 1;
        }
        let iovs: Vec<[IoSlice<'_>; 1]> = (0..used)
            .map(|i| [IoSlice::new(&bufs[i][..lens[i]])])
            .collect();
        let sent = match sendmmsg(
            sock.as_raw_fd(),
            &mut headers,
            &iovs,
            &addrs[..used],
            [],
            flags,
        ) {
            Ok(r) => r.count(),
            Err(Errno::EAGAIN | Errno::ENOBUFS | Errno::EINTR) => 0,
            Err(e) => return Err(nix_err("sendmmsg")(e)),
        };
        c.syscalls += 1;
        let unsent: usize = recs[sent..used].iter().sum();
        cutter.rewind(unsent as u64);
        for i in 0..sent {
            c.frames += recs[i] as u64;
            c.payload_bytes += rec_bytes[i];
            c.bytes += rec_bytes[i] + recs[i] as u64 * FRAME_OVERHEAD;
        }
        c.queued = c.frames;
        c.messages = cutter.written() / per;
        c.message_bytes = if cfg.frames {
            // Each stream frame is a message of its bytes after the header
            // (for a mix, of several lengths).
            c.payload_bytes - c.frames * HEADER_LEN as u64
        } else {
            c.messages * cfg.message.msg_len as u64
        };
        if sent == 0 {
            c.idle_loops += 1;
            std::hint::spin_loop();
        }
        counters.publish(&c);
    }
    Ok(sent(c, counters, pacer.slipped()))
}

/// The length of each record a sender writes: the cutter's, or, for a
/// mix of stream frames, the UDP payload of frame `seq` of the mix's
/// pattern (the lengths from [`Geometry`]). A GSO run of records of the
/// largest length may end with a shorter one, so mixes keep `--gso`.
struct MixLengths(Option<Vec<usize>>);

impl MixLengths {
    fn new(mix: Option<&SizeMix>, frames: bool) -> Self {
        Self(mix.filter(|_| frames).map(|mix| {
            mix.pattern()
                .iter()
                .map(|&frame| Geometry::udp_payload(frame))
                .collect()
        }))
    }

    /// The longest record of the mix (0 without a mix).
    fn max(&self) -> usize {
        self.0.iter().flatten().copied().max().unwrap_or(0)
    }

    /// The length of the record `cutter` writes next.
    fn next(&self, cutter: &RecordCutter) -> usize {
        match &self.0 {
            Some(lens) => lens[(cutter.written() % lens.len() as u64) as usize],
            None => cutter.next_len(),
        }
    }
}

/// Starts a UDP receiver.
pub fn spawn_udp_rx(
    name: String,
    cfg: KernelReceiverConfig,
) -> Result<Worker<RxSummary>, WorkerError> {
    spawn_socket(
        name,
        cfg,
        |cfg| {
            let sock = UdpSocket::bind(cfg.bind).map_err(io)?;
            size_buffer(&sock, Buffer::Receive).map_err(nix_err("SO_RCVBUF"))?;
            if cfg.gro {
                setsockopt(&sock, sockopt::UdpGroSegment, &true).map_err(nix_err("UDP_GRO"))?;
            }
            if cfg.wait.nonblocking_receive() {
                sock.set_nonblocking(true).map_err(io)?;
            } else {
                sock.set_read_timeout(Some(BLOCK_SLICE)).map_err(io)?;
            }
            if cfg.wait == WaitMode::Busy {
                // Each empty non-blocking receive polls the NAPI once.
                crate::sys::set_busy_poll(sock.as_fd(), BUSY_POLL_USECS).map_err(io)?;
            }
            busy_poll::setup_socket(sock.as_fd(), cfg.wait).map_err(bp)?;
            Ok(sock)
        },
        receive,
    )
}

fn receive(
    sock: UdpSocket,
    cfg: &KernelReceiverConfig,
    counters: &WorkerCounters,
) -> Result<RxSummary, WorkerError> {
    let batch = cfg.batch.max(1);
    let buf_len = if cfg.gro {
        65_536
    } else {
        cfg.max_datagram.max(64)
    };
    let mut bufs: Vec<Vec<u8>> = (0..batch).map(|_| vec![0u8; buf_len]).collect();
    let mut headers = MultiHeaders::<SockaddrIn>::preallocate(batch, None);
    // With GRO one receive returns up to 64 datagrams coalesced, with their
    // size in a control message: recvmsg, whose control buffer is set anew
    // for every call (recvmmsg's is not).
    let mut cmsg = nix::cmsg_space!(i32);
    let mut flows = FlowTable::default();
    let mut c = CounterSnapshot::default();
    let flags = if cfg.wait.nonblocking_receive() {
        MsgFlags::MSG_DONTWAIT
    } else {
        MsgFlags::empty()
    };
    // IRQ suspension: sleeps in epoll_wait, which busy-polls first.
    let mut waiter = match cfg.wait {
        WaitMode::IrqSuspend => EpollWait::new(&[sock.as_fd()], cfg.wait).map_err(bp)?,
        _ => None,
    };
    while !cfg.stop.should_stop(Instant::now()) {
        flows.start_batch();
        let got = if cfg.gro {
            let mut iov = [IoSliceMut::new(&mut bufs[0])];
            match recvmsg::<SockaddrIn>(sock.as_raw_fd(), &mut iov, Some(&mut cmsg), flags) {
                Ok(msg) => {
                    let seg = msg
                        .cmsgs()
                        .ok()
                        .and_then(|mut it| {
                            it.find_map(|m| match m {
                                ControlMessageOwned::UdpGroSegments(s) => Some(s as usize),
                                _ => None,
                            })
                        })
                        .unwrap_or(msg.bytes)
                        .max(1);
                    let total = msg.bytes;
                    if let Some(data) = msg.iovs().next() {
                        for part in data[..total.min(data.len())].chunks(seg) {
                            account(part, &mut flows, &mut c);
                        }
                    }
                    1
                }
                Err(Errno::EAGAIN | Errno::EINTR) => 0,
                Err(e) => return Err(nix_err("recvmsg")(e)),
            }
        } else {
            let mut iovs: Vec<[IoSliceMut<'_>; 1]> =
                bufs.iter_mut().map(|b| [IoSliceMut::new(b)]).collect();
            match recvmmsg(sock.as_raw_fd(), &mut headers, iovs.iter_mut(), flags, None) {
                Ok(results) => {
                    let mut n = 0;
                    for msg in results {
                        n += 1;
                        let total = msg.bytes;
                        if let Some(data) = msg.iovs().next() {
                            account(&data[..total.min(data.len())], &mut flows, &mut c);
                        }
                    }
                    n
                }
                Err(Errno::EAGAIN | Errno::EINTR) => 0,
                Err(e) => return Err(nix_err("recvmmsg")(e)),
            }
        };
        c.syscalls += 1;
        if got == 0 {
            c.idle_loops += 1;
            if cfg.wait == WaitMode::Busy {
                std::thread::yield_now();
            } else if let Some(w) = &mut waiter {
                w.wait(BLOCK_SLICE.as_millis() as u16);
            }
        }
        let _ = sock.take_error();
        counters.publish(&c);
    }
    Ok(received(flows, c, counters))
}

/// Accounts one received record (datagram).
pub(super) fn account(part: &[u8], flows: &mut FlowTable, c: &mut CounterSnapshot) {
    let Some(r) = read_datagram(part) else {
        c.bad += 1;
        return;
    };
    // A stream datagram (no fragment header) is a whole message of its own.
    let whole = r
        .fragment
        .is_none()
        .then(|| (part.len() - crate::header::HEADER_LEN) as u64);
    let len = part.len() as u64;
    flows.record(c, &r.header, r.fragment, len + FRAME_OVERHEAD, len, whole);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Fragmentation;

    #[test]
    fn a_mix_gives_each_datagram_its_frames_udp_payload_in_turn() {
        let largest = Geometry::data_after_header(1518);
        let cut = Fragmentation::new(largest, largest).unwrap();
        let mut cutter = RecordCutter::new(Kind::Message, 0, cut, true);
        let mix = SizeMix::imix();
        let lengths = MixLengths::new(Some(&mix), true);
        assert_eq!(lengths.max(), 1472);
        let mut buf = vec![0u8; 1472];
        let mut got = Vec::new();
        for _ in 0..13 {
            got.push(lengths.next(&cutter));
            cutter.write_next(&mut buf, 0);
        }
        // 64 594 64 64 594 64 1518 64 594 64 594 64, then 64 again:
        // 18, 548 and 1472 bytes of UDP payload.
        let (s, m, l) = (18, 548, 1472);
        assert_eq!(got, [s, m, s, s, m, s, l, s, m, s, m, s, s]);
        // Rewound records take their lengths back.
        cutter.rewind(7);
        assert_eq!(lengths.next(&cutter), l);
        cutter.rewind(1);
        assert_eq!(lengths.next(&cutter), s);
        // No mix (or messages): the cutter's one length.
        let one = MixLengths::new(None, true);
        assert_eq!((one.max(), one.next(&cutter)), (0, 1472));
        assert_eq!(MixLengths::new(Some(&mix), false).max(), 0);
    }
}
