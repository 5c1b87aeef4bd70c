//! `linerate doctor`: what this host can do, probed rather than guessed.

use std::{process::ExitCode, thread};

use anyhow::{anyhow, Result};
use linerate_datapath::xsk::{RxPort, SocketOptions, ZeroCopy};
use linerate_ebpf::{AttachPolicy, Steering, SteeringConfig};
use serde::Serialize;

use crate::{cli::DoctorArgs, lab::Lab};
use linerate_host::{iface, output};

/// Capability bits (linux/capability.h).
const CAPS: [(&str, u32); 5] = [
    ("CAP_NET_ADMIN", 12),
    ("CAP_NET_RAW", 13),
    ("CAP_SYS_ADMIN", 21),
    ("CAP_PERFMON", 38),
    ("CAP_BPF", 39),
];

/// The doctor's findings.
#[derive(Debug, Serialize)]
pub struct Report {
    /// Kernel release.
    pub kernel: String,
    /// Cores online.
    pub cpus: usize,
    /// Effective user is root.
    pub root: bool,
    /// Capabilities present / missing.
    pub capabilities: Vec<(String, bool)>,
    /// Interface probed.
    pub iface: String,
    /// Its namespace.
    pub netns: Option<String>,
    /// Driver kind.
    pub driver: Option<String>,
    /// MTU.
    pub mtu: Option<u32>,
    /// Receive queues.
    pub queues: Option<u32>,
    /// Native XDP attach: Ok or why not.
    pub xdp_native: Probe,
    /// Generic XDP attach.
    pub xdp_generic: Probe,
    /// Zero-copy AF_XDP bind.
    pub zero_copy: Probe,
    /// Copy-mode AF_XDP bind.
    pub copy_mode: Probe,
    /// Copy-mode bind with multi-buffer (XDP_USE_SG).
    pub multi_buffer: Probe,
    /// Free huge pages and their size (UMEMs use them when free).
    pub huge_pages: Option<linerate_datapath::xsk::HugePages>,
    /// What a run would use.
    pub run_would_use: String,
    /// What runs that ended without cleaning up (SIGKILL, a crash) had
    /// left changed in the kernel, put back now from their journals.
    pub put_back: Vec<String>,
    /// Journals or entries of them not replayed, and why.
    pub journal_problems: Vec<String>,
    /// The noise floor between the cores a default run would use (its
    /// sender's and its receiver's), or why it was not measured (in JSON:
    /// the floor, or `{"not_measured": WHY}`).
    #[serde(serialize_with = "floor_or_why")]
    pub noise_floor: Result<NoiseFloor, String>,
}

/// The floor as its own object, or why there is none.
fn floor_or_why<S: serde::Serializer>(
    floor: &Result<NoiseFloor, String>,
    s: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    match floor {
        Ok(f) => f.serialize(s),
        Err(why) => {
            let mut m = s.serialize_map(Some(1))?;
            m.serialize_entry("not_measured", why)?;
            m.end()
        }
    }
}

/// The noise floor of the cores a run would use.
#[derive(Debug, Serialize)]
pub struct NoiseFloor {
    /// The sender's core.
    pub from_core: usize,
    /// The receiver's core.
    pub to_core: usize,
    /// What was measured.
    pub floor: linerate_datapath::noise::Floor,
    /// The larger of the two cores' shares lost in gaps over 1 us, %.
    pub gap_pct: f64,
}

/// How long doctor measures the noise floor.
const FLOOR_BUDGET: std::time::Duration = std::time::Duration::from_secs(1);

/// The floor between a single-queue run's sender and receiver cores: the
/// first of `--tx-cores`/`--rx-cores` when given, else a default run's
/// (host::cores::for_queues).
fn noise_floor(
    ncpu: usize,
    tx_cores: Option<&str>,
    rx_cores: Option<&str>,
) -> Result<NoiseFloor, String> {
    let core = |list, offset| {
        linerate_host::cores::for_queues(list, 1, ncpu, offset, false)
            .map_err(|e| e.to_string())
            .map(|c| c[0])
    };
    let (from_core, to_core) = (core(tx_cores, 0)?, core(rx_cores, 1)?);
    let plan = linerate_datapath::noise::FloorPlan::new(from_core, to_core, FLOOR_BUDGET);
    let floor = linerate_datapath::noise::measure(&plan).map_err(|e| e.to_string())?;
    Ok(NoiseFloor {
        from_core,
        to_core,
        gap_pct: floor.gap_pct(),
        floor,
    })
}

/// The floor's lines for the terminal.
fn render_floor(f: &Result<NoiseFloor, String>) -> String {
    let n = match f {
        Ok(n) => n,
        Err(why) => return format!("noise floor  not measured: {why}\n"),
    };
    let h = |name: &str, x: &linerate_datapath::noise::HandOff| {
        format!(
            "noise floor  {name} core {} -> {}: one-way p50 {:.2} us, p99 {:.2} us (median of ten slices'; {:.2} over every stamp), p99.9 {:.2} us, max {:.1} us ({} stamps)\n",
            n.from_core, n.to_core, x.p50_us, x.p99_us, x.p99_all_us, x.p999_us, x.max_us, x.received
        )
    };
    let g = |core: usize, x: &linerate_datapath::noise::Gaps| {
        format!(
            "noise floor  gaps core {core}: {:.3} % of the time in gaps over 1 us, {} over 1 ms, max {:.1} us\n",
            x.pct(),
            x.over_1ms,
            x.max_ns as f64 / 1e3
        )
    };
    [
        h("spin", &n.floor.spin),
        h("wake", &n.floor.wake),
        g(n.from_core, &n.floor.from_gaps),
        g(n.to_core, &n.floor.to_gaps),
    ]
    .concat()
}

/// A probe's outcome.
#[derive(Debug, Serialize)]
pub struct Probe {
    /// Whether it worked.
    pub ok: bool,
    /// Why not, or a detail.
    pub detail: String,
}

impl Probe {
    fn of<T, E: std::fmt::Display>(r: Result<T, E>) -> Self {
        match r {
            Ok(_) => Self {
                ok: true,
                detail: String::new(),
            },
            Err(e) => Self {
                ok: false,
                detail: e.to_string(),
            },
        }
    }
}

fn capabilities() -> Vec<(String, bool)> {
    let eff = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        })
        .unwrap_or(0);
    CAPS.iter()
        .map(|(n, bit)| (n.to_string(), eff & (1 << bit) != 0))
        .collect()
}

/// Runs the probes; a temporary lab is created (and removed) when no
/// interface is given and the lab is not up.
pub fn run(args: &DoctorArgs) -> Result<Report> {
    let env = linerate_host::environment::describe();
    let root = nix::unistd::geteuid().is_root();
    // Before any probe: what killed runs left, put back (root only).
    let replayed = linerate_host::putback::replay_all();
    let mut temp_lab = None;
    let (ifname, netns) = match &args.iface {
        Some(i) => (i.clone(), args.netns.clone()),
        None => {
            let lab = Lab::new(&args.lab.name)?;
            if !lab.is_up() {
                linerate_host::privilege::require_root("linerate doctor (to create a probe lab)")?;
                let probe = Lab::new("lrdoc")?;
                probe.up(1500, 1)?;
                temp_lab = Some(probe);
            }
            let l = temp_lab.as_ref().unwrap_or(&lab);
            (l.if_b.clone(), Some(l.ns_b.clone()))
        }
    };
    let probes = (|| -> Result<Report> {
        let info = iface::info(netns.as_deref(), &ifname).ok();
        let (ifc, nsc) = (ifname.clone(), netns.clone());
        let (native, generic, zc, copy, mb) = thread::spawn(move || {
            if let Some(ns) = &nsc {
                if let Err(e) = linerate_datapath::netns::enter(ns) {
                    let p = || Probe {
                        ok: false,
                        detail: e.to_string(),
                    };
                    return (p(), p(), p(), p(), p());
                }
            }
            let attach = |policy| {
                Probe::of(Steering::attach(
                    &ifc,
                    SteeringConfig {
                        port_lo: 7471,
                        port_hi: 7471,
                        policy,
                        force: false,
                        respond: false,
                        drop_ppm: 0,
                    },
                ))
            };
            let bind = |zero_copy, multi_buffer| {
                Probe::of(RxPort::new(
                    &SocketOptions {
                        iface: ifc.clone(),
                        queue: 0,
                        ring_size: 64,
                        zero_copy,
                        multi_buffer,
                        chunk_size: if multi_buffer {
                            linerate_datapath::xsk::CHUNK_SIZE
                        } else {
                            linerate_datapath::xsk::SMALL_CHUNK_SIZE
                        },
                    },
                    64,
                ))
            };
            (
                attach(AttachPolicy::Native),
                attach(AttachPolicy::Generic),
                bind(ZeroCopy::Require, false),
                bind(ZeroCopy::Off, false),
                bind(ZeroCopy::Off, true),
            )
        })
        .join()
        .map_err(|_| anyhow!("probe thread panicked"))?;
        let run_would_use = format!(
            "XDP {} mode, AF_XDP {} mode",
            if native.ok {
                "native"
            } else if generic.ok {
                "generic"
            } else {
                "no"
            },
            if zc.ok {
                "zero-copy"
            } else if copy.ok {
                "copy"
            } else {
                "no"
            },
        );
        Ok(Report {
            kernel: env.kernel.clone(),
            cpus: env.cpus,
            root,
            capabilities: capabilities(),
            iface: ifname.clone(),
            netns: netns.clone(),
            driver: info.as_ref().and_then(|i| i.kind.clone()),
            mtu: info.as_ref().map(|i| i.mtu),
            queues: info.as_ref().map(|i| i.rx_queues),
            xdp_native: native,
            xdp_generic: generic,
            zero_copy: zc,
            copy_mode: copy,
            multi_buffer: mb,
            huge_pages: linerate_datapath::xsk::huge_pages(),
            run_would_use,
            put_back: replayed.restored.clone(),
            journal_problems: replayed.problems.clone(),
            noise_floor: noise_floor(env.cpus, args.tx_cores.as_deref(), args.rx_cores.as_deref()),
        })
    })();
    if let Some(l) = temp_lab {
        l.down()?;
    }
    probes
}

/// Renders the report for the terminal.
pub fn render(r: &Report) -> String {
    let p = |x: &Probe| {
        if x.ok {
            "yes".to_string()
        } else {
            format!("no: {}", x.detail)
        }
    };
    let caps: Vec<String> = r
        .capabilities
        .iter()
        .map(|(n, ok)| format!("{n} {}", if *ok { "yes" } else { "NO" }))
        .collect();
    let huge = match r.huge_pages {
        Some(h) if h.free > 0 => {
            format!("{} free of {} KB: UMEMs go on them", h.free, h.size / 1024)
        }
        _ => "none free: UMEMs go on 4 KB pages (reserve some with \
              `echo 256 > /proc/sys/vm/nr_hugepages`: measured 1.06x at 1518 B)"
            .to_string(),
    };
    let mut left = String::new();
    if !r.root {
        left.push_str("left by runs  not checked (the journals are root's)\n");
    } else if r.put_back.is_empty() && r.journal_problems.is_empty() {
        left.push_str(
            "left by runs  nothing (no run ended without putting back what it changed)\n",
        );
    }
    for what in &r.put_back {
        left.push_str(&format!(
            "put back      {} (left by a run that did not end cleanly)\n",
            linerate_host::shown::shown(what)
        ));
    }
    for why in &r.journal_problems {
        left.push_str(&format!(
            "journal       {}\n",
            linerate_host::shown::shown(why)
        ));
    }
    format!(
        "kernel        {}\ncpus          {}\nroot          {}\ncapabilities  {}\ninterface     {}{} (driver {}, MTU {}, {} queues)\nXDP native    {}\nXDP generic   {}\nzero-copy     {}\ncopy mode     {}\nmulti-buffer  {}\nhuge pages    {}\n{left}{}a run would use: {}\n",
        r.kernel,
        r.cpus,
        if r.root { "yes" } else { "no (run with sudo)" },
        caps.join(", "),
        r.iface,
        r.netns.as_ref().map(|n| format!(" in {n}")).unwrap_or_default(),
        r.driver.as_deref().unwrap_or("?"),
        r.mtu.map_or("?".into(), |m| m.to_string()),
        r.queues.map_or("?".into(), |m| m.to_string()),
        p(&r.xdp_native),
        p(&r.xdp_generic),
        p(&r.zero_copy),
        p(&r.copy_mode),
        p(&r.multi_buffer),
        huge,
        render_floor(&r.noise_floor),
        r.run_would_use,
    )
}

/// `linerate doctor`: the report as a table or JSON.
pub fn command(args: &DoctorArgs) -> Result<ExitCode> {
    let report = run(args)?;
    if args.json {
        output::emit_json(&report)?;
    } else {
        output::emit(&render(&report))?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod floor_tests {
    use super::*;
    use linerate_datapath::noise::{Floor, Gaps, HandOff};

    /// In JSON: the floor's own object, or `{"not_measured": WHY}` (not
    /// serde's `{"Ok": ...}`/`{"Err": ...}`).
    #[test]
    fn the_floors_json_is_the_floor_or_why_not() {
        #[derive(Serialize)]
        struct Shown {
            #[serde(serialize_with = "floor_or_why")]
            noise_floor: Result<NoiseFloor, String>,
        }
        let why = Shown {
            noise_floor: Err("one core".into()),
        };
        assert_eq!(
            serde_json::to_value(&why).unwrap(),
            serde_json::json!({"noise_floor": {"not_measured": "one core"}})
        );
    }

    #[test]
    fn the_floor_prints_what_was_measured_or_why_not() {
        assert_eq!(
            render_floor(&Err("the noise floor needs two different cores".into())),
            "noise floor  not measured: the noise floor needs two different cores\n"
        );
        let spin = HandOff {
            sent: 10,
            received: 10,
            p50_us: 0.07,
            p99_us: 7.5,
            p99_all_us: 900.0,
            p999_us: 2000.0,
            max_us: 6500.0,
        };
        let gaps = Gaps {
            span_ns: 1_000_000,
            lost_ns: 15_000,
            count: 3,
            over_1ms: 0,
            max_ns: 9_000,
        };
        let n = NoiseFloor {
            from_core: 0,
            to_core: 1,
            floor: Floor {
                spin,
                wake: spin,
                from_gaps: gaps,
                to_gaps: gaps,
            },
            gap_pct: 1.5,
        };
        let text = render_floor(&Ok(n));
        assert!(text.contains(
            "spin core 0 -> 1: one-way p50 0.07 us, p99 7.50 us (median of ten slices'; 900.00 over every stamp), p99.9 2000.00 us, max 6500.0 us (10 stamps)"
        ));
        assert!(text.contains(
            "gaps core 1: 1.500 % of the time in gaps over 1 us, 0 over 1 ms, max 9.0 us"
        ));
        assert_eq!(text.lines().count(), 4);
    }
}
