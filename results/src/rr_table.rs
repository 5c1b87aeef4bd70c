//! The human-readable table of an rr result, local or across two hosts
//! (then with the agents and each host's CPU).

use std::fmt::Write;

use linerate_counters::stats::CounterSnapshot;

use super::rr::{RrResult, SideCpu};
use crate::{stream_table::thousands, system::Host, two_host};

fn opt(v: Option<f64>, prec: usize) -> String {
    v.map_or("-".into(), |x| format!("{x:.prec$}"))
}

fn side(name: &str, s: &SideCpu) -> String {
    // A two-host total counts the cores of both hosts (no list: their
    // numbers repeat).
    let cores = if s.cpu.cores.is_empty() {
        "of both hosts".to_string()
    } else {
        format!("{:?}", s.cpu.cores)
    };
    let beside = match s.cpu.own() {
        Some(o) if s.cpu.cpu_source == crate::parts::CpuSource::Own => format!(
            " (linerate's own; other tasks {:.1} %, steal {:.1} %, busy {:.1} %)",
            o.interference_pct, o.steal_pct, o.busy_pct
        ),
        _ => String::new(),
    };
    format!(
        "  {name:<10} cores {cores}: CPU {:.1} %{beside}, {} us CPU per transaction\n",
        s.cpu.cpu_pct,
        opt(s.us_per_transaction, 2)
    )
}

/// The one line most runs are for, first in the table and alone with
/// `-q`: transactions/s, response times, each side's CPU and the service
/// demand (CPU per transaction).
pub fn summary(r: &RrResult) -> String {
    let (l, c) = (&r.latency, &r.cpu);
    let mut o = format!(
        "rr: {} transactions/s, response time p50 {:.1} us p99 {:.1} us, timeouts {}, CPU client {:.1} % responder {:.1} %, SD {} us/transaction",
        thousands(r.transactions.per_s),
        l.p50_us,
        l.p99_us,
        r.transactions.timeouts,
        c.client.cpu.cpu_pct,
        c.responder.cpu.cpu_pct,
        opt(c.total.us_per_transaction, 2),
    );
    if r.common.interrupted {
        o.push_str(" (INTERRUPTED)");
    }
    if r.common.fault.is_some() {
        o.push_str(" (ENDED EARLY)");
    }
    o.push('\n');
    o
}

/// The noise floor's line: a response crosses twice, and spins when both
/// ends spin.
fn noise_line(r: &RrResult) -> Option<String> {
    let spinning = r.params.client_wait == "busy" && r.params.responder_wait == "busy";
    let reader = if spinning {
        crate::noise::Reader::Spinning
    } else {
        crate::noise::Reader::Woken
    };
    r.common
        .noise
        .as_ref()
        .map(|f| f.line(r.latency.p99_us, reader, 2))
}

/// Renders the result as the terminal table: the summary line first.
pub fn print_table(r: &RrResult) -> String {
    let p = &r.params;
    let ns = |n: &Option<String>| n.as_ref().map(|n| format!(" ({n})")).unwrap_or_default();
    let mut o = summary(r);
    if let Some(a) = &r.common.agents {
        o.push_str(&two_host::header("rr", a));
    }
    let _ = writeln!(
        o,
        "linerate rr: client {}{} -> responder {}{} ({}), MTU {}, request {} B ({} frame{}), response {} B ({} frame{})",
        p.client_iface,
        ns(&p.client_netns),
        p.responder_iface,
        ns(&p.responder_netns),
        p.responder,
        p.mtu,
        p.request,
        r.setup.request_frames,
        if r.setup.request_frames > 1 { "s" } else { "" },
        p.response,
        r.setup.response_frames,
        if r.setup.response_frames > 1 { "s" } else { "" },
    );
    let _ = writeln!(
        o,
        "  {} flow{} x concurrency {}, {} queue{}; AF_XDP {}{}; XDP {} mode; wait client {} / responder {}",
        p.flows,
        if p.flows > 1 { "s" } else { "" },
        p.concurrency,
        p.queues,
        if p.queues > 1 { "s" } else { "" },
        r.setup.client_bind_mode,
        r.setup
            .zero_copy_refused
            .as_ref()
            .map(|w| format!(" (zero-copy refused: {w})"))
            .unwrap_or_default(),
        r.setup.xdp_mode,
        p.client_wait,
        p.responder_wait,
    );
    let _ = writeln!(o, "  placement: {}", r.setup.placement);
    let _ = writeln!(o, "  wait: {}", r.setup.wait.line());
    let t = &r.transactions;
    let _ = writeln!(
        o,
        "  window {:.2} s after {:.1} s warm-up{}: {} transactions, {:.0} transactions/s",
        r.common.window_s,
        p.warmup_s,
        if r.common.interrupted {
            " (INTERRUPTED: figures so far)"
        } else {
            ""
        },
        t.completed,
        t.per_s
    );
    if let Some(f) = &r.common.fault {
        let _ = writeln!(o, "  ENDED EARLY: {f}");
    }
    let l = &r.latency;
    let _ = writeln!(
        o,
        "  response time (us): mean {:.1}, min {:.1}, p50 {:.1}, p90 {:.1}, p99 {:.1}, p99.9 {:.1}, max {:.1} ({} samples)",
        l.mean_us, l.min_us, l.p50_us, l.p90_us, l.p99_us, l.p99_9_us, l.max_us, l.count
    );
    if let Some(line) = noise_line(r) {
        let _ = writeln!(o, "{line}");
    }
    let _ = writeln!(
        o,
        "  whole run: {} completed, {} timed out (retried), {} late answers, {} requests answered",
        t.total, t.timeouts, t.late, t.answered
    );
    // Frames the clients and responders refused, when there were any.
    let all = r
        .common
        .workers
        .iter()
        .fold(CounterSnapshot::default(), |a, w| a.add(&w.total));
    let refused: Vec<String> = CounterSnapshot::FIELDS
        .iter()
        .filter(|c| c.refused)
        .map(|c| format!("{} {}", c.name, (c.read)(&all)))
        .collect();
    if all.refused() != CounterSnapshot::default() {
        let _ = writeln!(o, "  frames refused: {}", refused.join(", "));
    }
    o.push_str(&side("client", &r.cpu.client));
    o.push_str(&side("responder", &r.cpu.responder));
    o.push_str(&side("total", &r.cpu.total));
    o.push_str(&crate::threads::lines(&r.common.threads));
    for u in &r.cpu.per_core {
        let core = match u.host {
            Some(Host::Tx) => format!("{} of the client's host", u.core),
            Some(Host::Rx) => format!("{} of the responder's host", u.core),
            None => u.core.to_string(),
        };
        let _ = writeln!(
            o,
            "    core {:<3} {:5.1} user + {:5.1} system + {:5.1} softirq + {:4.1} irq = {:5.1} %",
            core, u.user, u.system, u.softirq, u.irq, u.busy
        );
    }
    if let Some(h) = &r.cpu.hosts {
        o.push_str(&two_host::hosts_lines(h, &r.cpu.total.cpu));
    }
    let _ = writeln!(
        o,
        "  XDP: responder side seen {}, redirected {}, answered in XDP {}; client side seen {}, redirected {}",
        r.xdp.responder.seen,
        r.xdp.responder.redirected,
        r.xdp.responder.responded,
        r.xdp.client.seen,
        r.xdp.client.redirected
    );
    o
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::print_table;
    use crate::run::RunResult;

    fn fixture(name: &str) -> super::RrResult {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/results")
            .join(name);
        match serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap() {
            RunResult::Rr(r) => r,
            RunResult::Stream(_) => panic!("{name} is not rr"),
        }
    }

    /// Refused frames get their line (every refused counter by name) only
    /// when a client or responder refused any.
    #[test]
    fn refused_frames_printed_when_any() {
        let mut r = fixture("rr-xdp.json");
        assert!(!print_table(&r).contains("frames refused"));
        r.common.workers[0].total.bad = 3;
        r.common.workers[0].total.bad_checksum = 2;
        let mut other = r.common.workers[0].clone();
        other.total.bad = 1;
        other.total.bad_checksum = 0;
        r.common.workers.push(other);
        assert!(
            print_table(&r).contains("\n  frames refused: bad 4, bad_checksum 2\n"),
            "{}",
            print_table(&r)
        );
    }
}
