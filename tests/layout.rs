//! The XDP program reads the linerate header by offsets of its own
//! (`#define LR_*` in ebpf/src/bpf/steer.bpf.c, for the XDP_TX responder).
//! The generator (gen.bpf.c) writes a frame's sequence, time and fragment
//! header. These tests write headers with the Rust code and read them back
//! with the C programs' constants, so that a change of the header on one
//! side only fails here. (The map value layouts are checked through the
//! program's BTF in ebpf/src/layout.rs.)

use std::collections::HashMap;

use linerate_datapath::header::{Fragment, Header, Kind, MESSAGE_HEADER_LEN};

/// The `#define LR_* value` (and `MAX_MIX`) lines of a C program in
/// ebpf/src/bpf/.
fn c_defines(file: &str) -> HashMap<String, u64> {
    let path = format!("{}/ebpf/src/bpf/{file}", env!("CARGO_MANIFEST_DIR"));
    let src = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    src.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            (w.next()? == "#define").then_some(())?;
            let name = w.next()?;
            let value = w.next()?;
            let v = match value.strip_prefix("0x") {
                Some(h) => u64::from_str_radix(h, 16).ok()?,
                None => value.parse().ok()?,
            };
            (name.starts_with("LR_") || name == "MAX_MIX").then(|| (name.to_string(), v))
        })
        .collect()
}

#[test]
fn the_programs_header_offsets_read_what_rust_writes() {
    let d = c_defines("steer.bpf.c");
    let get = |n: &str| -> usize {
        *d.get(n)
            .unwrap_or_else(|| panic!("{n} is not defined in steer.bpf.c")) as usize
    };
    let mut lr = vec![0u8; MESSAGE_HEADER_LEN];
    Header {
        kind: Kind::Request,
        flow: 7,
        seq: 1,
        send_ns: 2,
    }
    .write(&mut lr);
    Fragment {
        msg_id: 3,
        index: 0,
        count: 1,
        msg_len: 1,
    }
    .write(&mut lr[linerate_datapath::header::HEADER_LEN..]);

    assert_eq!(get("LR_HEADER_LEN"), MESSAGE_HEADER_LEN, "LR_HEADER_LEN");
    let magic = get("LR_MAGIC");
    assert_eq!(lr[0], (magic >> 8) as u8, "LR_MAGIC high byte");
    assert_eq!(lr[1], (magic & 0xff) as u8, "LR_MAGIC low byte");
    assert_eq!(usize::from(lr[2]), get("LR_VERSION"), "LR_VERSION");
    assert_eq!(
        usize::from(lr[3]),
        get("LR_KIND_REQUEST"),
        "LR_KIND_REQUEST"
    );
    assert_eq!(
        Kind::Response as usize,
        get("LR_KIND_RESPONSE"),
        "LR_KIND_RESPONSE"
    );
    let at = get("LR_COUNT_OFFSET");
    assert_eq!(
        &lr[at..at + 4],
        &1u32.to_be_bytes(),
        "LR_COUNT_OFFSET must point at the fragment count"
    );
}

#[test]
fn the_generators_offsets_are_where_rust_reads() {
    use linerate_datapath::{
        frame::HEADER_OFFSET,
        header::{FRAGMENT_LEN, HEADER_LEN, SEQ_OFFSET, TIME_OFFSET},
    };
    let d = c_defines("gen.bpf.c");
    let get = |n: &str| -> usize {
        *d.get(n)
            .unwrap_or_else(|| panic!("{n} is not defined in gen.bpf.c")) as usize
    };
    assert_eq!(get("LR_OFFSET"), HEADER_OFFSET, "LR_OFFSET");
    assert_eq!(get("LR_SEQ_OFFSET"), SEQ_OFFSET, "LR_SEQ_OFFSET");
    assert_eq!(get("LR_TIME_OFFSET"), TIME_OFFSET, "LR_TIME_OFFSET");
    assert_eq!(get("LR_BASE_LEN"), HEADER_LEN, "LR_BASE_LEN");
    assert_eq!(get("LR_FRAGMENT_LEN"), FRAGMENT_LEN, "LR_FRAGMENT_LEN");
    // The generator's size pattern holds a whole mix's.
    assert_eq!(
        get("MAX_MIX"),
        linerate_datapath::mix::MAX_PATTERN,
        "MAX_MIX"
    );
    let mut lr = vec![0u8; HEADER_LEN];
    Header {
        kind: Kind::Stream,
        flow: 0x1234,
        seq: 0,
        send_ns: 0,
    }
    .write(&mut lr);
    let at = get("LR_FLOW_OFFSET");
    assert_eq!(&lr[at..at + 2], &[0x12, 0x34], "LR_FLOW_OFFSET");
}
