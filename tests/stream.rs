//! Real frames between two lab namespaces: a fixed number of frames at a
//! paced rate must all arrive, none bad, and linerate's counts must agree
//! with the interfaces' own counters (`ip -s link`).

mod common;

use common::*;

const COUNT: u64 = 20_000;
// Well below what the lab carries even when its NAPI thread is descheduled
// for a few milliseconds (veth queues 256 frames).
const RATE: &str = "50000";

fn stream_is_exact(lab: &str, mtu: u32, size: usize, wait: &str) {
    require_root(&format!("stream {size} B, MTU {mtu}, {wait}"));
    let _turn = serial();
    let lab = Lab::up(lab, mtu);
    let (rx0, _) = packets(&lab.ns_b(), &lab.if_b());
    let (_, tx0) = packets(&lab.ns_a(), &lab.if_a());
    let out = run(&[
        "stream",
        "--lab",
        &lab.name,
        "--size",
        &size.to_string(),
        "--count",
        &COUNT.to_string(),
        "--rate",
        RATE,
        "--napi",
        "softirq",
        "--warmup",
        "0s",
        "--duration",
        "30s",
        "--tx-wait",
        wait,
        "--rx-wait",
        wait,
        "--json",
    ]);
    let r = json(&out);
    assert!(
        out.status.success(),
        "stream failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let f = &r["frames"];
    assert_eq!(f["sent"], COUNT, "{r:#}");
    assert_eq!(f["received"], COUNT, "every frame counted: {r:#}");
    for k in ["lost", "bad", "duplicates", "seq_gaps", "unfinished"] {
        assert_eq!(f[k], 0, "{k}: {r:#}");
    }
    assert_eq!(r["xdp"]["redirected"], COUNT, "{r:#}");
    assert_eq!(r["params"]["frame_size"], size);
    let descs = (size - 4).div_ceil(3840);
    assert_eq!(r["setup"]["descs_per_frame"], descs);
    // 2048-byte UMEM chunks when a frame fits in one (1792 bytes of data).
    let chunk = if size - 4 <= 1792 { 2048 } else { 4096 };
    assert_eq!(r["setup"]["umem_chunk"], chunk, "{r:#}");
    if wait == "wait" {
        // A sleeping sender kicks the kernel (and sleeps in poll()), and
        // says so. How many calls a run makes depends on how many frames
        // come due per wake-up, that is on the scheduler of this shared VM
        // (about 1 in 50 frames when it is quiet): not asserted here.
        let tx = &r["workers"][0];
        assert_eq!(tx["role"], "tx");
        let syscalls = tx["total"]["syscalls"].as_u64().unwrap();
        assert!(syscalls > 0, "a waiting sender counts its calls: {tx:#}");
    }
    // veth refuses zero-copy: copy mode must have been used and said so.
    assert_eq!(r["setup"]["rx_bind_mode"], "copy");
    assert!(r["setup"]["zero_copy_refused"].is_string());
    assert_eq!(r["setup"]["xdp_mode"], "native");

    // The interfaces' own counters, read by the test itself.
    let (rx1, _) = packets(&lab.ns_b(), &lab.if_b());
    let (_, tx1) = packets(&lab.ns_a(), &lab.if_a());
    assert_eq!(tx1 - tx0, COUNT, "{} sent (ip -s link)", lab.if_a());
    assert_eq!(rx1 - rx0, COUNT, "{} received (ip -s link)", lab.if_b());
    assert_eq!(r["interfaces"]["rx"]["rx_packets"], COUNT);

    // Nothing left attached once the run is over.
    assert!(
        !has_xdp(&lab.ns_b(), &lab.if_b()),
        "XDP program left attached"
    );
    let name = lab.name.clone();
    drop(lab);
    assert!(!netns_exists(&format!("{name}-a")) && !netns_exists(&format!("{name}-b")));
}

#[test]
#[ignore = "needs root: real frames between lab namespaces, counted against ip -s link"]
fn frames_64_mtu1500_busy() {
    stream_is_exact("ts64b", 1500, 64, "busy");
}

#[test]
#[ignore = "needs root: real frames between lab namespaces, counted against ip -s link"]
fn frames_64_mtu1500_wait() {
    stream_is_exact("ts64w", 1500, 64, "wait");
}

#[test]
#[ignore = "needs root: real frames between lab namespaces, counted against ip -s link"]
fn frames_1518_mtu1500_busy() {
    stream_is_exact("ts1518b", 1500, 1518, "busy");
}

#[test]
#[ignore = "needs root: real frames between lab namespaces, counted against ip -s link"]
fn frames_1518_mtu1500_wait() {
    stream_is_exact("ts1518w", 1500, 1518, "wait");
}

#[test]
#[ignore = "needs root: real frames between lab namespaces, counted against ip -s link"]
fn jumbo_9018_mtu9000_multibuffer_busy() {
    stream_is_exact("ts9018b", 9000, 9018, "busy");
}

#[test]
#[ignore = "needs root: real frames between lab namespaces, counted against ip -s link"]
fn jumbo_9018_mtu9000_multibuffer_wait() {
    stream_is_exact("ts9018w", 9000, 9018, "wait");
}

#[test]
#[ignore = "needs root: real frames between lab namespaces, counted against ip -s link"]
fn timed_run_reports_rates_and_cpu() {
    require_root("timed run");
    let _turn = serial();
    let lab = Lab::up("tstime", 1500);
    let out = run(&[
        "stream",
        "--lab",
        &lab.name,
        "--warmup",
        "0.5s",
        "--duration",
        "1s",
        "--json",
    ]);
    let r = json(&out);
    assert!(out.status.success());
    let window = r["window_s"].as_f64().unwrap();
    assert!((0.9..2.0).contains(&window), "window {window}");
    for side in ["sender", "receiver"] {
        let s = &r[side];
        assert!(s["frames_per_s"].as_f64().unwrap() > 1000.0, "{side}: {s}");
        assert!(s["payload_mb_s"].as_f64().unwrap() > 1.0);
        assert!(s["cpu"]["cpu_pct"].as_f64().unwrap() > 0.0);
        assert!(s["cpu"]["service_demand_ms_per_mb"].as_f64().unwrap() > 0.0);
    }
    // Per core: user, system, softirq, irq for every core.
    let cores = r["cpu"]["per_core"].as_array().unwrap();
    assert_eq!(
        cores.len(),
        r["environment"]["cpus"].as_u64().unwrap() as usize
    );
    for c in cores {
        for k in ["user", "system", "softirq", "irq", "busy"] {
            assert!(c[k].is_number(), "{c}");
        }
    }
    // The payload rate follows from frames/s and the frame size.
    let fps = r["receiver"]["frames_per_s"].as_f64().unwrap();
    let mbs = r["receiver"]["payload_mb_s"].as_f64().unwrap();
    assert!((fps * 1472.0 / 1e6 - mbs).abs() / mbs < 1e-6);
    // Sent and received both reported; received never exceeds sent.
    assert!(r["frames"]["received"].as_u64() <= r["frames"]["sent"].as_u64());
    // The human table names the figures.
    let out = run(&[
        "stream",
        "--lab",
        &lab.name,
        "--warmup",
        "0s",
        "--duration",
        "0.5s",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    for word in [
        "frames/s",
        "payload MB/s",
        "SD ms/MB",
        "copy",
        "native",
        "core 0",
    ] {
        assert!(text.contains(word), "{word} missing from:\n{text}");
    }
}

/// Sets vm.nr_hugepages for a test and puts the old value back.
struct HugePages(String);

impl HugePages {
    fn reserve(n: u32) -> Self {
        let path = "/proc/sys/vm/nr_hugepages";
        let old = std::fs::read_to_string(path).unwrap().trim().to_string();
        std::fs::write(path, n.to_string()).unwrap();
        Self(old)
    }

    fn free() -> u64 {
        let info = std::fs::read_to_string("/proc/meminfo").unwrap();
        let line = info
            .lines()
            .find(|l| l.starts_with("HugePages_Free:"))
            .unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }
}

impl Drop for HugePages {
    fn drop(&mut self) {
        let _ = std::fs::write("/proc/sys/vm/nr_hugepages", &self.0);
    }
}

#[test]
#[ignore = "needs root: real frames between lab namespaces, counted against ip -s link"]
fn umem_on_huge_pages_when_the_system_has_them() {
    require_root("huge pages");
    let _turn = serial();
    let lab = Lab::up("tshuge", 1500);
    let _pages = HugePages::reserve(64);
    // The receiver's UMEM: 16,384 chunks of 2 KB, 16 huge pages of 2 MB.
    if HugePages::free() < 16 {
        eprintln!("SKIP: the kernel gave fewer than 16 huge pages (memory fragmented)");
        return;
    }
    let r = counted_stream(&lab.name, 20_000, &[]);
    assert_eq!(r["frames"]["received"], 20_000, "{r:#}");
    assert_eq!(r["setup"]["umem_huge_pages"], true, "{r:#}");
    assert!(HugePages::free() >= 16, "huge pages given back at the end");
    // Without them: ordinary pages, said so.
    let _none = HugePages::reserve(0);
    let r = counted_stream(&lab.name, 1_000, &[]);
    assert_eq!(r["setup"]["umem_huge_pages"], false, "{r:#}");
}

/// Receivers verify every frame's checksums: a normal stream's frames all
/// pass (IPv4: the header checksum; IPv6 message fragments: the UDP
/// checksum too), and `bad_checksum` is reported as 0 in the JSON (whole
/// run and per worker) and in the table's whole-run line.
#[test]
#[ignore = "needs root: real frames between lab namespaces, counted against ip -s link"]
fn checksums_verified_and_reported() {
    require_root("checksums verified");
    let _turn = serial();
    let lab = Lab::up("tcsum", 1500);
    let r = counted_stream(&lab.name, 2000, &[]);
    assert_whole(&r, 2000, 2000 * 1514);
    assert_eq!(r["frames"]["bad_checksum"], 0, "{r:#}");
    assert_eq!(worker(&r, "rx")["total"]["bad_checksum"], 0, "{r:#}");
    // IPv6 messages of 3 fragments: every fragment's UDP checksum checked.
    let r = counted_stream(&lab.name, 300, &["--ipv6", "--message", "3000"]);
    assert_eq!(r["frames"]["received"], 900, "{r:#}");
    assert_eq!(r["frames"]["messages"]["received"], 300, "{r:#}");
    assert_eq!(r["frames"]["bad_checksum"], 0, "{r:#}");
    assert_eq!(r["frames"]["bad"], 0, "{r:#}");
    // The table's whole-run line names it.
    let out = run(&[
        "stream",
        "--lab",
        &lab.name,
        "--count",
        "1000",
        "--rate",
        "50000",
        "--napi",
        "softirq",
        "--warmup",
        "0s",
        "--duration",
        "30s",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "received 1000, lost 0 (0.0000 %), reordered 0, duplicates 0, bad 0, bad_checksum 0\n"
        ),
        "{text}"
    );
}
