//! The human-readable table of a stream result, local or across two
//! hosts (then with the agents and each host's CPU).

use std::fmt::Write;

use linerate_counters::stats::CounterSnapshot;

use super::stream::{SideFigures, StreamResult};
use crate::{system::Host, two_host};

fn sd(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{x:.3}"))
}

/// A number with its thousands grouped (1,234,567).
pub(crate) fn thousands(n: f64) -> String {
    let s = format!("{:.0}", n);
    let (sign, digits) = s.strip_prefix('-').map_or(("", s.as_str()), |d| ("-", d));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    format!("{sign}{out}")
}

fn row(name: &str, s: &SideFigures) -> String {
    format!(
        "  {name:<9} {:>12} {:>12} {:>12.1} {:>10.1} {:>7.2} {:>7.1} {:>9}\n",
        thousands(s.frames as f64),
        thousands(s.frames_per_s),
        s.payload_mb_s,
        s.wire_mb_s,
        s.wire_gbit_s,
        s.cpu.cpu_pct,
        sd(s.cpu.service_demand_ms_per_mb),
    )
}

/// Whether the senders ran (not with --rx-only, where another tool sent).
pub fn senders_ran(r: &StreamResult) -> bool {
    r.setup.tx_bind_mode != RX_ONLY
}

/// The one line most runs are for, first in the table and alone with
/// `-q`: what arrived (frames/s, Gbit/s on the wire), the loss, each
/// side's CPU and the service demand.
pub fn summary(r: &StreamResult) -> String {
    let (side, s) = if receivers_ran(r) {
        ("received", &r.receiver)
    } else {
        ("sent", &r.sender)
    };
    let mut o = format!(
        "stream: {side} {} frames/s, {:.2} Gbit/s",
        thousands(s.frames_per_s),
        s.wire_gbit_s
    );
    if let Some(m) = s.messages_per_s {
        let _ = write!(o, " ({} messages/s)", thousands(m));
    }
    let f = &r.frames;
    if !receivers_ran(r) {
        o.push_str(", no receiver of ours (--tx-only): loss not measured");
    } else if !senders_ran(r) {
        o.push_str(", loss unknown (--rx-only: another tool sent)");
    } else if let Some(m) = &f.messages {
        let _ = write!(
            o,
            ", lost {} of {} messages ({:.4} %)",
            thousands(m.lost as f64),
            thousands(m.sent as f64),
            m.loss_pct
        );
    } else {
        let _ = write!(
            o,
            ", lost {} of {} frames ({:.4} %)",
            thousands(f.lost as f64),
            thousands(f.sent as f64),
            f.loss_pct
        );
    }
    let p = &r.params;
    if r.cpu.hosts.is_none() && crate::system::cores_shared(&p.tx_cores, &p.rx_cores) {
        let _ = write!(o, ", CPU tx+rx {:.1} %", r.cpu.total.cpu_pct);
    } else if !receivers_ran(r) {
        let _ = write!(o, ", CPU tx {:.1} %", r.sender.cpu.cpu_pct);
    } else if senders_ran(r) {
        let _ = write!(
            o,
            ", CPU tx {:.1} % rx {:.1} %",
            r.sender.cpu.cpu_pct, r.receiver.cpu.cpu_pct
        );
    } else {
        let _ = write!(o, ", CPU rx {:.1} %", r.receiver.cpu.cpu_pct);
    }
    let _ = write!(o, ", SD {} ms/MB", sd(r.cpu.total.service_demand_ms_per_mb));
    if r.common.interrupted {
        o.push_str(" (INTERRUPTED)");
    }
    if r.common.fault.is_some() {
        o.push_str(" (ENDED EARLY)");
    }
    o.push('\n');
    o
}

/// The one-way latency line: percentiles of every received frame's
/// latency, and across two hosts the clock correction's uncertainty.
fn latency_line(l: &crate::latency::Latency) -> String {
    let mut o = format!(
        "  one-way latency of {} frames, us: min {:.1}, mean {:.1}, p50 {:.1}, p99 {:.1}, p99.9 {:.1}, max {:.1}",
        l.count, l.min_us, l.mean_us, l.p50_us, l.p99_us, l.p99_9_us, l.max_us
    );
    if let Some(c) = l.clock {
        let _ = write!(
            o,
            " (clocks of the two hosts {:+.1} us apart, corrected: each figure +/- {:.1} us)",
            c.offset_ns as f64 / 1000.0,
            c.uncertainty_us
        );
    }
    if l.out_of_range > 0 {
        let _ = write!(
            o,
            "; {} frames' send time after their receive time or over 60 s before (left out)",
            l.out_of_range
        );
    }
    o.push('\n');
    o
}

pub use crate::stream::{RX_ONLY, TX_ONLY};

/// Whether the receivers ran (not with --tx-only).
pub fn receivers_ran(r: &StreamResult) -> bool {
    r.setup.rx_bind_mode != TX_ONLY
}

/// Renders the result as the terminal table: the summary line first.
pub fn print_table(r: &StreamResult) -> String {
    let mut o = summary(r);
    if let Some(a) = &r.common.agents {
        o.push_str(&two_host::header("stream", a));
    }
    title_line(r, &mut o);
    setup_lines(r, &mut o);
    frame_lines(r, &mut o);
    if let Some(l) = &r.latency {
        o.push_str(&latency_line(l));
        let reader = crate::noise::Reader::of_wait(&r.params.rx_wait);
        if let Some(floor) = &r.common.noise {
            o.push_str(&floor.line(l.p99_us, reader, 1));
            o.push('\n');
        }
    }
    cpu_lines(r, &mut o);
    port_lines(r, &mut o);
    // The loopback engine's link is memory: no interface counted.
    if r.params.backend != "loopback" {
        link_lines(r, &mut o);
    }
    o
}

/// The run's first line: backend, interfaces, MTU, frame geometry, queues.
fn title_line(r: &StreamResult, o: &mut String) {
    let p = &r.params;
    let ns = |n: &Option<String>| n.as_ref().map(|n| format!(" ({n})")).unwrap_or_default();
    let _ = writeln!(
        o,
        "linerate stream ({}{}{}): {}{} -> {}{}, MTU {}, {}-byte frames ({} B payload, {} descriptor{}), {} queue{}",
        p.backend,
        match (p.gso, p.gro) {
            (true, true) => ", GSO+GRO",
            (true, false) => ", GSO",
            (false, true) => ", GRO",
            _ => "",
        },
        if p.ipv6 { ", IPv6" } else { "" },
        if senders_ran(r) {
            p.tx_iface.as_str()
        } else {
            "another tool"
        },
        if senders_ran(r) {
            ns(&p.tx_netns)
        } else {
            String::new()
        },
        p.rx_iface,
        ns(&p.rx_netns),
        p.mtu,
        p.frame_size,
        r.setup.payload_per_frame,
        r.setup.descs_per_frame,
        if r.setup.descs_per_frame > 1 { "s, multi-buffer" } else { "" },
        p.queues,
        if p.queues > 1 { "s" } else { "" },
    );
}

/// How the run was set up: socket and XDP modes, waits, cores, engines,
/// placement and the measured window.
fn setup_lines(r: &StreamResult, o: &mut String) {
    let p = &r.params;
    let _ = writeln!(
        o,
        "  AF_XDP: tx {} / rx {}{}{}; XDP: {} mode{}; wait tx {} / rx {}; cores tx {:?} rx {:?}",
        r.setup.tx_bind_mode,
        r.setup.rx_bind_mode,
        r.setup
            .zero_copy_refused
            .as_ref()
            .map(|w| format!(" (zero-copy refused: {w})"))
            .unwrap_or_default(),
        r.setup
            .umem_chunk
            .map(|c| format!(
                ", {c}-byte UMEM chunks on {}",
                if r.setup.umem_huge_pages == Some(true) {
                    "huge pages"
                } else {
                    "4 KB pages"
                }
            ))
            .unwrap_or_default(),
        r.setup.xdp_mode,
        r.setup
            .xdp_fallback_reason
            .as_ref()
            .map(|w| format!(" ({w})"))
            .unwrap_or_default(),
        p.tx_wait,
        p.rx_wait,
        p.tx_cores,
        p.rx_cores,
    );
    if !r.setup.tx_engine.is_empty() {
        let _ = writeln!(
            o,
            "  engines: sent by {}, received by {}{}",
            r.setup.tx_engine,
            r.setup.rx_engine,
            r.setup
                .verify
                .as_ref()
                .map(|v| match v.strip_prefix("1/") {
                    Some(n) => format!(
                        " (verifying checksums: one frame in {n} in full, the others' IPv4 header)"
                    ),
                    None => format!(" (verifying checksums: {v})"),
                })
                .unwrap_or_default()
        );
    }
    let _ = writeln!(o, "  placement: {}", r.setup.placement);
    let _ = writeln!(o, "  wait: {}", r.setup.wait.line());
    let warmup = if r.common.window_whole_run {
        format!(
            ", the whole run (its count went out within the {:.1} s warm-up)",
            p.warmup_s
        )
    } else {
        format!(" after {:.1} s warm-up", p.warmup_s)
    };
    let _ = writeln!(
        o,
        "  window {:.2} s{}{warmup}{}{}",
        r.common.window_s,
        r.receiver_window_s
            .map(|w| format!(" (the receiver's host: {w:.2} s)"))
            .unwrap_or_default(),
        p.rate_pps
            .map(|x| format!(", paced at {} frames/s per queue", thousands(x)))
            .unwrap_or_default(),
        if r.common.interrupted {
            " (INTERRUPTED: figures so far)"
        } else {
            ""
        },
    );
}

/// The frame counts: the sent/received rows, the whole run's accounting,
/// the traffic mix and the messages.
fn frame_lines(r: &StreamResult, o: &mut String) {
    let p = &r.params;
    let mean = |m: Option<f64>| m.map_or("-".to_string(), |m| format!("{m:.1}"));
    let _ = writeln!(
        o,
        "  {:<9} {:>12} {:>12} {:>12} {:>10} {:>7} {:>7} {:>9}",
        "", "frames", "frames/s", "payload MB/s", "wire MB/s", "Gbit/s", "CPU %", "SD ms/MB"
    );
    o.push_str(&row("sent", &r.sender));
    let f = &r.frames;
    if receivers_ran(r) {
        o.push_str(&row("received", &r.receiver));
        let _ = write!(
            o,
            "  whole run: sent {}, received {}, lost {} ({:.4} %{}), reordered {}, duplicates {}",
            f.sent,
            f.received,
            f.lost,
            f.loss_pct,
            f.injected
                .map(|n| format!("; {n} dropped on purpose, --inject-loss"))
                .unwrap_or_default(),
            f.reordered,
            f.duplicates
        );
        for c in CounterSnapshot::FIELDS.iter().filter(|c| c.refused) {
            match f.refused.get(c) {
                Some(n) => _ = write!(o, ", {} {n}", c.name),
                None => _ = write!(o, ", {} not checked", c.name),
            }
        }
        o.push('\n');
    } else {
        let _ = writeln!(
            o,
            "  whole run: sent {}, still in the kernel at the end {}; no receiver of ours (--tx-only): nothing received or lost is measured",
            f.sent, f.unfinished
        );
    }
    if f.dropped_at_sender > 0 {
        let _ = writeln!(
            o,
            "  dropped at the sender's link: {} (handed over, but the link had no room: not sent, not lost){}",
            f.dropped_at_sender,
            if f.resent > 0 {
                format!("; {} sent again so that --count holds", f.resent)
            } else {
                String::new()
            }
        );
    }
    if f.slipped > 0 {
        let _ = writeln!(
            o,
            "  pacing: {} frames slipped after stalls (each sender catches up at most 1 ms of its rate at once; the schedule ran that much later)",
            f.slipped
        );
    }
    generator_line(r, o);
    if let Some(mix) = &p.size_mix {
        let _ = writeln!(
            o,
            "  traffic mix {mix} (SIZE:WEIGHT, FCS included): mean frame {} B sent, {} B received",
            mean(r.sender.avg_frame_size),
            mean(r.receiver.avg_frame_size)
        );
    }
    if let Some(m) = &f.messages {
        let _ = writeln!(
            o,
            "  messages of {} B in {} frame{}: sent {}, received {}, lost {} ({:.4} %; receiver found {} incomplete or missing)",
            m.message_bytes,
            m.frames_per_message,
            if m.frames_per_message > 1 { "s" } else { "" },
            m.sent,
            m.received,
            m.lost,
            m.loss_pct,
            m.receiver_counted_lost
        );
        for (name, s) in [("sent", &r.sender), ("received", &r.receiver)] {
            let _ = writeln!(
                o,
                "  {name:<9} {} messages/s, {:.1} message MB/s",
                thousands(s.messages_per_s.unwrap_or(0.0)),
                s.message_mb_s.unwrap_or(0.0)
            );
        }
    }
}

/// The generator's batches and credit: program calls, frames a call, and
/// the time its flows waited out of credit.
fn generator_line(r: &StreamResult, o: &mut String) {
    if let Some(g) = &r.generator {
        let _ = writeln!(
            o,
            "  generator: {} program calls in the window, {:.0} frames a call; out of credit {} ms ({:.1} % of its flows' time)",
            thousands(g.calls as f64),
            g.frames_per_call,
            g.credit_wait_ms,
            g.credit_wait_pct
        );
    }
}

/// The kernel's receive work (NET_RX softirq, where the XDP program and
/// the copy into the UMEM run) per frame received, and the cores that ran
/// it: the part of a frame's cost that moves from run to run on a VM
/// whose neighbours share its memory.
fn receive_softirq_line(r: &StreamResult, o: &mut String) {
    let Some((ns, cores)) = r.receive_softirq() else {
        return;
    };
    let cores: Vec<String> = cores
        .iter()
        .map(|(core, pct)| format!("{core} ({pct:.1} %)"))
        .collect();
    let _ = writeln!(
        o,
        "  receive softirq (NET_RX): {ns:.0} ns a frame received, on cores {}",
        cores.join(", ")
    );
}

/// One line per side of linerate's own CPU on its cores beside what
/// else ran there (when measured).
fn own_lines(r: &StreamResult, o: &mut String) {
    for (name, side, ran) in [
        ("sender", &r.sender, senders_ran(r)),
        ("receiver", &r.receiver, receivers_ran(r)),
    ] {
        let c = &side.cpu;
        let (Some(own), Some(other), Some(steal)) = (c.own_pct, c.interference_pct, c.steal_pct)
        else {
            continue;
        };
        if ran {
            let _ = writeln!(
                o,
                "  {name} cores {:?}: linerate {own:.1} %, other tasks {other:.1} %, steal {steal:.1} % (mean per core); busy {:.1} %, {} ms/MB at the busy share",
                c.cores,
                c.busy(),
                sd(c.host_service_demand_ms_per_mb),
            );
        }
    }
}

/// The CPU per core and in total, with the service demand.
fn cpu_lines(r: &StreamResult, o: &mut String) {
    let p = &r.params;
    let f = &r.frames;
    let _ = writeln!(o, "  CPU per core (user + system + softirq + irq = busy):");
    for u in &r.cpu.per_core {
        // On two hosts a core is the tx host's or the rx host's.
        let (tx, rx) = (
            senders_ran(r) && p.tx_cores.contains(&u.core),
            receivers_ran(r) && p.rx_cores.contains(&u.core),
        );
        let (tx, rx) = match u.host {
            Some(Host::Tx) => (tx, false),
            Some(Host::Rx) => (false, rx),
            None => (tx, rx),
        };
        let role = match (tx, rx) {
            (true, true) => "tx+rx",
            (true, false) => "tx",
            (false, true) => "rx",
            _ => "",
        };
        let core = match u.host {
            Some(Host::Tx) => format!("{} of the tx host", u.core),
            Some(Host::Rx) => format!("{} of the rx host", u.core),
            None => u.core.to_string(),
        };
        let _ = writeln!(
            o,
            "    core {:<3} {:<5} {:5.1} + {:5.1} + {:5.1} + {:4.1} = {:5.1} %",
            core, role, u.user, u.system, u.softirq, u.irq, u.busy
        );
    }
    own_lines(r, o);
    receive_softirq_line(r, o);
    o.push_str(&crate::threads::lines(&r.common.threads));
    let shared = r.cpu.hosts.is_none() && crate::system::cores_shared(&p.tx_cores, &p.rx_cores);
    let _ = writeln!(
        o,
        "  total: CPU {:.1} % {} of {} cores, service demand {} ms/MB {} {} ({})",
        r.cpu.total.cpu_pct,
        crate::parts::source_words(r.cpu.total.cpu_source),
        r.cpu.per_core.len(),
        sd(r.cpu.total.service_demand_ms_per_mb),
        if f.messages.is_some() {
            "of messages"
        } else {
            "of payload"
        },
        if receivers_ran(r) { "received" } else { "sent" },
        if !receivers_ran(r) {
            "senders only".to_string()
        } else if shared {
            "both sides share the cores, so there is no split by side".to_string()
        } else {
            format!(
                "sender side {}, receiver side {}",
                sd(r.sender.cpu.service_demand_ms_per_mb),
                sd(r.receiver.cpu.service_demand_ms_per_mb),
            )
        },
    );
    if let Some(h) = &r.cpu.hosts {
        o.push_str(&two_host::hosts_lines(h, &r.cpu.total));
    }
}

/// The XDP program's counters and each worker's port.
fn port_lines(r: &StreamResult, o: &mut String) {
    let x = &r.xdp;
    if receivers_ran(r) && r.params.backend != "loopback" {
        let _ = writeln!(
            o,
            "  XDP program: seen {}, redirected {}, redirect failed {}, passed {}, malformed {}, dropped on purpose {}",
            x.seen, x.redirected, x.redirect_failed, x.passed, x.malformed, x.dropped
        );
    }
    for w in &r.common.workers {
        let x = &w.xsk;
        // On two hosts, receivers measured the receiving host's window.
        let window_s = match w.side() {
            Host::Rx => r.receiver_window_s.unwrap_or(r.common.window_s),
            Host::Tx => r.common.window_s,
        };
        let secs = window_s.max(f64::MIN_POSITIVE);
        let _ = writeln!(
            o,
            "  {} queue {} core {}: {} frames, {} frames/s, {:.1} payload MB/s in the window; {} frames in all; rx_dropped {}, rx_ring_full {}, fill_ring_empty {}, tx_ring_empty {}, invalid descs {}/{}",
            w.role,
            w.queue,
            w.core.map_or("-".into(), |c| c.to_string()),
            thousands(w.window.frames as f64),
            thousands(w.window.frames as f64 / secs),
            w.window.payload_bytes as f64 / secs / 1e6,
            thousands(w.total.frames as f64),
            x.rx_dropped,
            x.rx_ring_full,
            x.rx_fill_ring_empty,
            x.tx_ring_empty,
            x.rx_invalid_descs,
            x.tx_invalid_descs
        );
    }
}

/// The interfaces' own counters (ip -s link).
fn link_lines(r: &StreamResult, o: &mut String) {
    let p = &r.params;
    let _ = writeln!(
        o,
        "  link packets/s (ip -s link, window): sent {}, received {}",
        thousands(r.sender.link_packets_per_s),
        thousands(r.receiver.link_packets_per_s)
    );
    let i = &r.common.interfaces;
    let _ = writeln!(
        o,
        "  interfaces (ip -s link): {} sent {} packets, {} received {} packets ({} dropped)",
        p.tx_iface, i.tx.tx_packets, p.rx_iface, i.rx.rx_packets, i.rx.rx_dropped
    );
}

#[cfg(test)]
mod tests {
    use super::{print_table, thousands};

    /// The whole-run line names every counter of refused frames.
    #[test]
    fn whole_run_line_names_every_refused_counter() {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/results/stream.json");
        let crate::run::RunResult::Stream(mut r) =
            serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
        else {
            panic!("stream.json is not a stream")
        };
        r.frames.refused.counts.bad = 5;
        r.frames.refused.counts.bad_checksum = 4;
        r.frames.refused.checksums = true;
        let text = print_table(&r);
        assert!(
            text.contains(", duplicates 0, bad 5, bad_checksum 4\n"),
            "{text}"
        );
        // Receivers that verify no checksum counted no bad one.
        r.frames.refused.checksums = false;
        let text = print_table(&r);
        assert!(
            text.contains(", duplicates 0, bad 5, bad_checksum not checked\n"),
            "{text}"
        );
    }

    /// A side's own CPU, when measured, on a line of its own.
    #[test]
    fn own_cpu_beside_interference() {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/results/stream.json");
        let crate::run::RunResult::Stream(mut r) =
            serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
        else {
            panic!("stream.json is not a stream")
        };
        assert!(!print_table(&r).contains("other tasks"));
        r.receiver.cpu = r.receiver.cpu.clone().with_own(
            crate::own::OwnCpu {
                own_pct: 43.2,
                interference_pct: 56.3,
                steal_pct: 0.5,
                busy_pct: 100.0,
            },
            r.receiver.counted_mb_s(),
        );
        let line = format!(
            "  receiver cores {:?}: linerate 43.2 %, other tasks 56.3 %, steal 0.5 % (mean per core); busy 100.0 %, ",
            r.receiver.cpu.cores
        );
        assert!(print_table(&r).contains(&line), "{}", print_table(&r));
    }

    #[test]
    fn groups_digits() {
        assert_eq!(thousands(0.0), "0");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(1234567.0), "1,234,567");
        assert_eq!(thousands(-1000.0), "-1,000");
    }
}
