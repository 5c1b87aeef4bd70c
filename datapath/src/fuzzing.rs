//! Entry points of the fuzz targets (`fuzz/`, cargo-fuzz) and of the long
//! property runs (`tests/fuzz.rs`): arbitrary bytes through the receive
//! path, the reassembler and the stream-record parser, with their
//! invariants checked. A broken invariant panics, which is what a fuzzer
//! reports; so does any panic of the code under test.

use std::net::Ipv4Addr;

use crate::{
    binding::XskStats,
    frame::{Endpoint, FrameSpec, HEADER_OFFSET},
    header::{Fragment, Kind, FRAGMENT_LEN, MESSAGE_HEADER_LEN},
    kernel::records::{RecordHead, RecordParser},
    message::{MessageTracker, Outcome},
    worker::FlowTable,
};
use linerate_counters::stats::CounterSnapshot;

/// The longest frame a fuzz input makes (a jumbo frame's first buffer).
const MAX_FRAME: usize = 4096;

/// A valid message frame of `size` bytes: the fuzzer's bytes overwrite it
/// from the linerate header on, so the Ethernet, IP and UDP headers parse
/// and the fuzzer works on ours.
fn template(size: usize) -> Vec<u8> {
    let ep = |last, port| Endpoint {
        mac: [2, 0, 0, 0, 0, last],
        ip: Ipv4Addr::new(198, 18, 0, last).into(),
        port,
    };
    FrameSpec {
        src: ep(1, 7472),
        dst: ep(2, 7471),
        frame_size: size,
        flow: 0,
        kind: Kind::Message,
    }
    .template()
    .expect("a 1518-byte message frame builds")
}

/// Splits `data` into records of `[len_hi, len_lo, bytes...]` (lengths
/// modulo `max`; the last record takes what is left).
fn records(mut data: &[u8], max: usize) -> impl Iterator<Item = &[u8]> {
    std::iter::from_fn(move || {
        if data.len() < 2 {
            return None;
        }
        let n = usize::from(u16::from_be_bytes([data[0], data[1]])) % (max + 1);
        let n = n.min(data.len() - 2);
        let (rec, rest) = data[2..].split_at(n);
        data = rest;
        Some(rec)
    })
}

/// One receiver's accounting of the frames in `data`. Byte 0 chooses
/// how frames are made: even, the record's bytes are the whole frame;
/// odd, they overwrite a valid test frame from the linerate header on
/// (the frame keeps the template's length when the record is shorter).
///
/// Checks: every frame is accounted or counted bad; no total exceeds what
/// was fed; and the totals kept incrementally equal the per-flow figures
/// summed at the end (loss, reordering, duplicates, lost messages).
pub fn receive(data: &[u8]) -> CounterSnapshot {
    let Some((&mode, data)) = data.split_first() else {
        return CounterSnapshot::default();
    };
    let base = template(1518);
    let mut flows = FlowTable::default();
    let mut c = CounterSnapshot::default();
    let mut fed = 0u64;
    let mut frame = Vec::with_capacity(MAX_FRAME);
    for rec in records(data, MAX_FRAME) {
        frame.clear();
        if mode & 1 == 0 {
            frame.extend_from_slice(rec);
        } else {
            frame.extend_from_slice(&base);
            let end = HEADER_OFFSET + rec.len();
            if end > frame.len() {
                frame.resize(end, 0);
            }
            frame[HEADER_OFFSET..end].copy_from_slice(rec);
        }
        let before = c;
        let _ = flows.account_frame(&mut c, &frame, frame.len() as u64);
        fed += 1;
        let took = (c.frames - before.frames) + (c.bad - before.bad);
        assert!(
            (1..=2).contains(&took),
            "a frame must be accounted or counted bad (at most both): {took}"
        );
    }
    assert!(c.frames <= fed && c.bad <= fed);
    assert!(c.duplicates <= fed && c.reordered <= fed);
    // Every counter of refused frames: a refused frame is bad too.
    for f in CounterSnapshot::FIELDS.iter().filter(|f| f.refused) {
        assert!(
            (f.read)(&c) <= c.bad,
            "{} frames are counted bad too",
            f.name
        );
    }
    assert!(c.messages <= c.frames);
    let s = flows.finish(c, XskStats::default());
    let c = s.counters;
    assert!(s.flows.len() as u64 <= fed);
    let sum = |f: &dyn Fn(&crate::worker::FlowAccounting) -> u64| -> u64 {
        s.flows.iter().map(|(_, t)| f(t)).sum()
    };
    assert_eq!(c.lost, sum(&|t| t.frames.lost), "frame loss total");
    assert_eq!(c.reordered, sum(&|t| t.frames.reordered), "reordered total");
    assert_eq!(
        c.duplicates,
        sum(&|t| t.frames.duplicates + t.messages.duplicates),
        "duplicates total"
    );
    assert_eq!(
        c.messages_lost,
        sum(&|t| t.messages.lost() + t.messages.in_progress()),
        "lost messages total"
    );
    c
}

/// Reassembly of arbitrary fragments that keep their bytes. Records are
/// `[fragment header (16 bytes)][data]`. Checks: a completed message has
/// exactly its length in bytes; nothing is completed twice in a row; the
/// tracker's counts never exceed the fragments fed.
pub fn reassemble(data: &[u8]) {
    let mut t = MessageTracker::new(true);
    let mut fed = 0u64;
    for rec in records(data, MAX_FRAME) {
        if rec.len() < FRAGMENT_LEN {
            continue;
        }
        let b = |i: usize| u32::from_be_bytes([rec[i], rec[i + 1], rec[i + 2], rec[i + 3]]);
        // Fields taken as they come: the tracker must refuse the ones no
        // sender makes by itself, not rely on the parser. Lengths are kept
        // small so that a run does not spend its time zeroing buffers.
        let f = Fragment {
            msg_id: b(0) % 8,
            index: b(4),
            count: b(8),
            msg_len: b(12) % (1 << 16),
        };
        fed += 1;
        if let Outcome::Complete { msg_id, msg_len } = t.on_fragment(&f, &rec[FRAGMENT_LEN..]) {
            let got = t
                .last_message(msg_id)
                .expect("a completed message's bytes are kept");
            assert_eq!(got.len(), msg_len as usize, "message {msg_id} length");
        }
    }
    assert!(t.completed + t.duplicates + t.stale + t.bad <= fed);
    assert!(t.abandoned <= fed);
}

/// The TCP record parser, fed the same bytes whole and cut at arbitrary
/// places (byte 0 and 1 seed the cuts): it must find the same records.
pub fn stream_records(data: &[u8]) {
    let Some((&seed, data)) = data.split_first() else {
        return;
    };
    let whole = {
        let mut p = RecordParser::default();
        let mut out = Vec::new();
        p.feed(data, |r| out.push(r));
        (out, p.broken)
    };
    let mut p = RecordParser::default();
    let mut out: Vec<RecordHead> = Vec::new();
    let mut rest = data;
    let mut step = usize::from(seed) % 7 + 1;
    while !rest.is_empty() {
        let n = step.min(rest.len());
        p.feed(&rest[..n], |r| out.push(r));
        rest = &rest[n..];
        step = (step * 5 + 3) % (MESSAGE_HEADER_LEN * 2) + 1;
    }
    assert_eq!(out, whole.0, "records depend on where the reads cut");
    assert_eq!(p.broken, whole.1, "a broken stream is broken wherever cut");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_of_every_shape_run() {
        receive(&[]);
        receive(&[1, 0, 3, 0x4c, 0x52, 1]);
        receive(&[0, 0, 0]);
        reassemble(&[0; 40]);
        stream_records(&[3; 100]);
    }

    #[test]
    fn template_mode_frames_parse_and_raw_garbage_is_bad() {
        // Mode 1, two records that rewrite nothing: the template itself,
        // a 0-byte message (one fragment), twice: the second is stale.
        let c = receive(&[1, 0, 0, 0, 0]);
        assert_eq!((c.frames, c.bad, c.messages, c.duplicates), (2, 0, 1, 1));
        // Mode 0: three bytes of garbage is one bad frame.
        let c = receive(&[0, 0, 3, 1, 2, 3]);
        assert_eq!((c.frames, c.bad), (0, 1));
    }
}
