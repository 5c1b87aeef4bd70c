//! The XDP program reads the linerate header by offsets of its own
//! (`#define LR_*` in ebpf/src/bpf/steer.bpf.c, for the XDP_TX responder).
//! This test writes a request header with the Rust code and reads it back
//! with the C program's constants, so that a change of the header on one
//! side only fails here. (The map value layouts are checked through the
//! program's BTF in ebpf/src/layout.rs.)

use std::collections::HashMap;

use linerate_datapath::header::{Fragment, Header, Kind, MESSAGE_HEADER_LEN};

/// The `#define LR_* value` lines of the C program.
fn c_defines() -> HashMap<String, u64> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/ebpf/src/bpf/steer.bpf.c");
    let src = std::fs::read_to_string(path).expect("reading steer.bpf.c");
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
            name.starts_with("LR_").then(|| (name.to_string(), v))
        })
        .collect()
}

#[test]
fn the_programs_header_offsets_read_what_rust_writes() {
    let d = c_defines();
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
