//! Message streams: messages larger than a frame, cut into MTU-sized
//! fragments, every message accounted whole; injected losses counted.

mod common;

use common::*;

#[test]
#[ignore = "needs root: message streams between lab namespaces (XDP, AF_XDP)"]
fn messages_65500_and_1mb_arrive_whole() {
    require_root("message stream");
    let _turn = serial();
    let lab = Lab::up("tmsg", 1500);
    for (size, count, rate) in [(65_500u64, 300u64, "1000"), (1_048_576, 20, "50")] {
        let s = size.to_string();
        let r = counted_stream(&lab.name, count, &["--message", &s, "--rate", rate]);
        let m = &r["frames"]["messages"];
        assert_eq!(m["sent"], count, "{m}");
        assert_eq!(m["received"], count, "{m}");
        assert_eq!(m["lost"], 0);
        assert_eq!(m["receiver_counted_lost"], 0);
        let per_message = size.div_ceil(1500 - 62);
        assert_eq!(m["frames_per_message"], per_message);
        assert_eq!(r["frames"]["received"], count * per_message);
        assert_eq!(r["frames"]["bad"], 0);
        // The interface saw exactly the fragments.
        assert_eq!(r["interfaces"]["rx"]["rx_packets"], count * per_message);
    }
}

#[test]
#[ignore = "needs root: message streams between lab namespaces (XDP, AF_XDP)"]
fn message_frames_at_mtu_9000_use_multibuffer() {
    require_root("jumbo messages");
    let _turn = serial();
    let lab = Lab::up("tmsgj", 9000);
    let r = counted_stream(&lab.name, 200, &["--message", "65500", "--rate", "5000"]);
    let m = &r["frames"]["messages"];
    assert_eq!(m["received"], 200, "{m}");
    assert_eq!(m["frames_per_message"], 65_500u64.div_ceil(9000 - 62));
    assert_eq!(r["setup"]["descs_per_frame"], 3);
}

#[test]
#[ignore = "needs root: message streams between lab namespaces (XDP, AF_XDP)"]
fn injected_loss_is_counted_exactly() {
    require_root("stream loss");
    let _turn = serial();
    let lab = Lab::up("tmsgl", 1500);
    let r = counted_stream(&lab.name, 20_000, &["--inject-loss", "1"]);
    let dropped = r["xdp"]["dropped"].as_u64().unwrap();
    assert!(dropped > 0);
    let f = &r["frames"];
    assert_eq!(f["lost"].as_u64().unwrap(), dropped, "{f}");
    assert_eq!(
        f["seq_gaps"].as_u64().unwrap(),
        dropped,
        "the receiver found each gap: {f}"
    );
    // Messages: every message with a fragment dropped is lost, no other.
    let r = counted_stream(
        &lab.name,
        500,
        &["--message", "14380", "--inject-loss", "1", "--rate", "5000"],
    );
    let m = &r["frames"]["messages"];
    let lost = m["lost"].as_u64().unwrap();
    assert!(lost > 0, "{m}");
    assert_eq!(
        m["sent"].as_u64().unwrap() - m["received"].as_u64().unwrap(),
        lost
    );
    assert_eq!(m["receiver_counted_lost"].as_u64().unwrap(), lost, "{m}");
    assert_eq!(r["frames"]["bad"], 0);
}
