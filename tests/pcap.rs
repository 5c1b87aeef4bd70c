//! `stream --pcap FILE`: the frames the workers sent and received, read
//! back frame by frame with the pcap-file crate and parsed with
//! etherparse.

mod common;

use std::{
    fs,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use common::*;
use etherparse::{NetSlice, SlicedPacket, TransportSlice};
use linerate_datapath::header::{Header, MASK48};
use pcap_file::pcapng::{blocks::enhanced_packet::EnhancedPacketOption, Block, PcapNgReader};

/// One packet of the file: interface, time, flags, length, bytes.
struct Packet {
    interface: u32,
    ts: Duration,
    flags: Option<u32>,
    original_len: u32,
    data: Vec<u8>,
}

fn read(file: &std::path::Path) -> (Vec<(String, u8)>, Vec<Packet>) {
    let mut r = PcapNgReader::new(fs::File::open(file).unwrap()).unwrap();
    let mut packets = Vec::new();
    while let Some(block) = r.next_block() {
        if let Block::EnhancedPacket(p) = block.unwrap() {
            let flags = p.options.iter().find_map(|o| match o {
                EnhancedPacketOption::Flags(f) => Some(*f),
                _ => None,
            });
            packets.push(Packet {
                interface: p.interface_id,
                ts: p.timestamp,
                flags,
                original_len: p.original_len,
                data: p.data.to_vec(),
            });
        }
    }
    use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionOption as O;
    let interfaces = r
        .interfaces()
        .iter()
        .map(|i| {
            let name = i.options.iter().find_map(|o| match o {
                O::IfName(n) => Some(n.to_string()),
                _ => None,
            });
            let resol = i.options.iter().find_map(|o| match o {
                O::IfTsResol(r) => Some(*r),
                _ => None,
            });
            (name.unwrap_or_default(), resol.unwrap_or(6))
        })
        .collect();
    (interfaces, packets)
}

#[test]
#[ignore = "needs root: streams on the veth lab"]
fn pcap_holds_the_frames_sent_and_received() {
    require_root("--pcap");
    let _turn = serial();
    let lab = Lab::up("uxpc", 1500);
    let file = std::env::temp_dir().join(format!("ux-pcap-{}.pcapng", std::process::id()));
    let start = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let r = counted_stream(
        &lab.name,
        400,
        &[
            "--size",
            "256",
            "--rate",
            "20000",
            "--pcap",
            file.to_str().unwrap(),
            "--pcap-count",
            "150",
        ],
    );
    let end = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let (interfaces, packets) = read(&file);
    let _ = fs::remove_file(&file);
    assert_eq!(
        interfaces,
        [(lab.if_a(), 9), (lab.if_b(), 9)],
        "one interface per side, nanoseconds"
    );
    let received = r["frames"]["received"].as_u64().unwrap();
    assert!(received >= 150, "{}", r["frames"]);
    for (interface, flags) in [(0, 2), (1, 1)] {
        let side: Vec<&Packet> = packets
            .iter()
            .filter(|p| p.interface == interface)
            .collect();
        assert_eq!(side.len(), 150, "interface {interface}");
        let mut last_seq = None;
        let first = &side[0];
        let mut first_send_ns = None;
        for (i, p) in side.iter().enumerate() {
            let at = format!("interface {interface} packet {i}");
            // Direction: outbound from the sender, inbound at the receiver.
            assert_eq!(p.flags, Some(flags), "{at}");
            // 256-byte frames, FCS included: 252 bytes, all kept.
            assert_eq!((p.original_len, p.data.len()), (252, 252), "{at}");
            let s = SlicedPacket::from_ethernet(&p.data).unwrap_or_else(|e| panic!("{at}: {e}"));
            let Some(NetSlice::Ipv4(ip)) = &s.net else {
                panic!("{at}: not IPv4")
            };
            let h = ip.header().to_header();
            assert_eq!(
                h.header_checksum,
                h.calc_header_checksum(),
                "{at}: IPv4 checksum"
            );
            assert_eq!(
                (h.source, h.destination),
                ([198, 18, 0, 1], [198, 18, 0, 2]),
                "{at}"
            );
            let Some(TransportSlice::Udp(udp)) = &s.transport else {
                panic!("{at}: not UDP")
            };
            let u = udp.to_header();
            assert_eq!((u.source_port, u.destination_port), (7472, 7471), "{at}");
            let payload = udp.payload();
            assert_eq!(payload.len(), 252 - 14 - 20 - 8, "{at}");
            assert!(
                u.checksum == 0 || u.checksum == u.calc_checksum_ipv4(&h, payload).unwrap(),
                "{at}: UDP checksum {:#06x}",
                u.checksum
            );
            let lr = Header::read(payload).unwrap_or_else(|e| panic!("{at}: {e}"));
            assert_eq!(lr.flow, 0, "{at}");
            // Sequence numbers increase in the flow.
            if let Some(prev) = last_seq {
                assert!(lr.seq > prev, "{at}: seq {} after {prev}", lr.seq);
            }
            last_seq = Some(lr.seq);
            // Timestamps: never back in time, within the run, on the wall clock.
            if i > 0 {
                assert!(p.ts >= side[i - 1].ts, "{at}");
            }
            assert!(start <= p.ts && p.ts <= end, "{at}: {:?}", p.ts);
            // A sender's timestamp is the one it stamped the frame with.
            if interface == 0 {
                let first_ns = *first_send_ns.get_or_insert(lr.send_ns);
                assert_eq!(
                    (p.ts - first.ts).as_nanos() as u64 & MASK48,
                    lr.send_ns.wrapping_sub(first_ns) & MASK48,
                    "{at}"
                );
            }
        }
        // The senders' first frames are the first of their flow.
        if interface == 0 {
            assert_eq!(last_seq, Some(149));
        }
    }
}

#[test]
#[ignore = "needs root: streams on the veth lab"]
fn pcap_refuses_a_file_it_cannot_write_before_the_run() {
    require_root("--pcap unwritable");
    let _turn = serial();
    let lab = Lab::up("uxpe", 1500);
    let out = run(&[
        "stream",
        "--lab",
        &lab.name,
        "--count",
        "10",
        "--pcap",
        "/nonexistent-dir/x.pcapng",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with("linerate: error: --pcap /nonexistent-dir/x.pcapng: creating the file failed; give a file in a directory you can write"),
        "{err}"
    );
    // The kernel's sockets are no AF_XDP workers: refused, with the fix.
    let out = run(&["stream", "--backend", "udp", "--pcap", "x.pcapng"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--pcap copies the frames AF_XDP workers send and receive: use --backend xdp"),
        "{err}"
    );
}
