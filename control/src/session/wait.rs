//! The wait modes of a run (`--rx-wait`, `--tx-wait`): which an end may
//! use (checked before anything changes), the per-NAPI settings the
//! kernel busy-poll modes need (set through the netdev netlink family for
//! the run, written down before in the run's journal and put back when it
//! ends: also after an error or a signal, or by the next run after
//! SIGKILL), and
//! what the result records (`setup.wait`).

use anyhow::{bail, Context, Result};
use linerate_datapath::{
    binding::BindMode,
    netdev::{self, NapiConfig},
    worker::busy_poll::{self, BUSY_POLL_BUDGET},
    worker::WaitMode,
};

use super::ends::Ends;
use crate::{
    path::{PathEnd, PathPlan},
    spec::Wait,
};
use linerate_host::{journal::Entry, putback::Changes};
use linerate_results::wait::{NapiUsed, WaitSetup};

/// The NAPI settings changed for a run, written down in the run's journal
/// before they are changed and put back when dropped (`putback`).
#[derive(Debug, Default)]
pub struct WaitRestore {
    changes: Changes,
}

/// What kind of sockets an end's workers use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sockets {
    /// AF_XDP sockets.
    Xsk,
    /// Kernel sockets of the backend.
    Kernel,
    /// None that wait (the generator, the XDP-only receiver, the XDP
    /// responder).
    None,
}

/// Checks the ends' modes, then sets the NAPI settings they need, on the
/// ends that run here. Returns what the result records and what puts the
/// settings back.
pub fn apply(
    wait: &Wait,
    path: &PathPlan,
    here: Ends<bool>,
    sockets: Ends<Sockets>,
) -> Result<(WaitSetup, WaitRestore)> {
    let modes = Ends {
        tx: path.tx_wait(wait, here.rx),
        rx: path.rx_wait(wait),
    };
    let mut setup = WaitSetup {
        tx: modes.tx.name().into(),
        rx: modes.rx.name().into(),
        ..WaitSetup::default()
    };
    let mut restore = WaitRestore::default();
    let ends = [
        ("tx", here.tx, modes.tx, sockets.tx, &path.tx),
        ("rx", here.rx, modes.rx, sockets.rx, &path.rx),
    ];
    for (side, runs_here, mode, sockets, end) in ends {
        if !runs_here || !mode.kernel_polls() || sockets == Sockets::None {
            continue;
        }
        check(wait.tcp, side, mode, sockets, end)?;
        setup.busy_poll_usecs = mode.busy_poll_usecs();
        setup.busy_poll_budget = Some(BUSY_POLL_BUDGET);
        let settings = mode.napi_settings();
        if let Some(s) = settings {
            setup.defer_hard_irqs = Some(s.defer_hard_irqs);
            setup.gro_flush_timeout_ns = Some(s.gro_flush_timeout_ns);
            setup.irq_suspend_timeout_ns =
                s.irq_suspend_timeout_ns.or(setup.irq_suspend_timeout_ns);
        }
        if setup.napi.iter().any(|n| n.iface == end.iface) {
            // One interface as both ends: set once, with the stronger mode
            // first (irq-suspend is handled as the rx end's).
            continue;
        }
        let used = set_napis(end, side, mode, settings, &mut restore)?;
        setup.napi.push(used);
    }
    Ok((setup, restore))
}

/// Refuses a kernel busy-poll mode where the kernel never busy-polls.
fn check(
    tcp: bool,
    side: &'static str,
    mode: WaitMode,
    sockets: Sockets,
    end: &PathEnd,
) -> Result<()> {
    if tcp {
        bail!(
            "--{side}-wait {}: kernel busy polling is offered for --backend udp and AF_XDP sockets in zero-copy mode; with --backend tcp use busy or wait",
            mode.name()
        );
    }
    // veth refuses zero-copy and links none of its queues to a NAPI, so
    // an AF_XDP socket on it never has one: refused here, before anything
    // changes (on other drivers the worker asks the socket after bind).
    if sockets == Sockets::Xsk && end.info.kind.as_deref() == Some("veth") {
        let why = format!(
            "{} is veth, which refuses zero-copy and links no NAPI to its queues",
            end.iface
        );
        return Err(busy_poll::no_napi_refusal(side, mode, BindMode::Copy, &why).into());
    }
    Ok(())
}

/// Finds `end`'s NAPIs (napi-get) and, for the modes that need them, sets
/// their settings, recording each NAPI's settings before in `restore`.
fn set_napis(
    end: &PathEnd,
    side: &'static str,
    mode: WaitMode,
    settings: Option<busy_poll::NapiSettings>,
    restore: &mut WaitRestore,
) -> Result<NapiUsed> {
    let iface = end.iface.clone();
    let napis = netdev::in_netns(end.netns.as_deref(), move |nd| {
        nd.napis(netdev::ifindex(&iface)?)
    })
    .with_context(|| format!("reading the NAPIs of {} (napi-get)", end.iface))?;
    if napis.is_empty() {
        bail!(
            "--{side}-wait {}: interface {} has no NAPI to busy-poll (veth gets NAPI when GRO is on or an XDP program is attached): turn GRO on with `ethtool -K {} gro on`, or use busy or wait",
            mode.name(),
            end.iface,
            end.iface
        );
    }
    let ids: Vec<u32> = napis.iter().map(|n| n.id).collect();
    let Some(s) = settings else {
        return Ok(NapiUsed {
            iface: end.iface.clone(),
            ids,
            set: false,
        });
    };
    for n in &napis {
        restore.changes.record(Entry::Napi {
            netns: end.netns.clone(),
            iface: end.iface.clone(),
            id: n.id,
            config: n.config,
        })?;
    }
    let want: Vec<(u32, NapiConfig)> = napis
        .iter()
        .map(|n| {
            (
                n.id,
                NapiConfig {
                    defer_hard_irqs: s.defer_hard_irqs,
                    gro_flush_timeout_ns: s.gro_flush_timeout_ns,
                    irq_suspend_timeout_ns: s
                        .irq_suspend_timeout_ns
                        .or(n.config.irq_suspend_timeout_ns),
                },
            )
        })
        .collect();
    netdev::in_netns(end.netns.as_deref(), move |nd| {
        for (id, config) in &want {
            nd.set(*id, config)?;
        }
        Ok(())
    })
    .with_context(|| format!("setting the NAPIs of {} (napi-set)", end.iface))?;
    Ok(NapiUsed {
        iface: end.iface.clone(),
        ids,
        set: true,
    })
}

/// The sockets of an end whose engine has a UMEM (`umem`: AF_XDP) and
/// whose workers wait (`waits`).
pub fn sockets(umem: bool, waits: bool) -> Sockets {
    match (waits, umem) {
        (false, _) => Sockets::None,
        (true, true) => Sockets::Xsk,
        (true, false) => Sockets::Kernel,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::RunRequest;
    use crate::sweep::expand;
    use linerate_report::sweep::{
        points,
        spec::{Kind, SweepSpec},
    };

    #[test]
    fn every_mode_parses_on_both_ends_of_stream_and_rr() {
        for (arg, mode) in [
            ("busy", WaitMode::Busy),
            ("wait", WaitMode::Wait),
            ("busy-poll", WaitMode::BusyPoll),
            ("prefer-busy-poll", WaitMode::PreferBusyPoll),
            ("irq-suspend", WaitMode::IrqSuspend),
        ] {
            let s = RunRequest::stream_args(&["--rx-wait", arg, "--tx-wait", arg]);
            assert_eq!(WaitMode::from(s.run.rx_wait.unwrap()), mode);
            assert_eq!(s.run.tx_wait.map(WaitMode::from), Some(mode));
            let r = RunRequest::rr_args(&["--rx-wait", arg, "--tx-wait", arg]);
            assert_eq!(WaitMode::from(r.run.rx_wait.unwrap()), mode);
            assert_eq!(mode.name(), arg);
        }
    }

    #[test]
    fn a_sweep_takes_the_modes_as_the_command_line_does() {
        let s = SweepSpec::parse(
            "name = \"t\"\nkind = \"rr\"\n[[axis]]\nname = \"mode\"\nvalues = [{tx_wait = \"busy-poll\", rx_wait = \"irq-suspend\"}, {tx_wait = \"prefer-busy-poll\", rx_wait = \"busy-poll\"}]\n",
            "t.toml",
        )
        .unwrap();
        let part = &s.parts[0];
        let mut seen = Vec::new();
        for p in points::points(0, part) {
            let argv = points::argv(part, &p, &[], true).unwrap();
            let RunRequest::Rr(rr) = expand::parse(Kind::Rr, &argv).unwrap() else {
                panic!("not rr")
            };
            seen.push((
                WaitMode::from(rr.run.tx_wait.unwrap()).name(),
                WaitMode::from(rr.run.rx_wait.unwrap()).name(),
            ));
        }
        assert_eq!(
            seen,
            [
                ("busy-poll", "irq-suspend"),
                ("prefer-busy-poll", "busy-poll")
            ]
        );
    }

    #[test]
    fn setup_wait_names_modes_values_and_napis() {
        let w = WaitSetup {
            tx: "busy".into(),
            rx: "irq-suspend".into(),
            busy_poll_usecs: Some(50),
            busy_poll_budget: Some(64),
            defer_hard_irqs: Some(100),
            gro_flush_timeout_ns: Some(20_000),
            irq_suspend_timeout_ns: Some(20_000_000),
            napi: vec![NapiUsed {
                iface: "lr-b0".into(),
                ids: vec![8193],
                set: true,
            }],
        };
        assert_eq!(
            w.line(),
            "tx busy, rx irq-suspend (busy poll 50 us, budget 64, defer-hard-irqs 100, gro-flush-timeout 20000 ns, irq-suspend-timeout 20000000 ns, NAPI lr-b0 8193)"
        );
        let json = serde_json::to_value(&w).unwrap();
        assert_eq!(json["napi"][0]["ids"][0], 8193);
        assert_eq!(serde_json::from_value::<WaitSetup>(json).unwrap(), w);
        // busy and wait: the modes alone.
        let plain = WaitSetup {
            tx: "busy".into(),
            rx: "wait".into(),
            ..WaitSetup::default()
        };
        assert_eq!(plain.line(), "tx busy, rx wait");
        assert_eq!(
            serde_json::to_string(&plain).unwrap(),
            r#"{"tx":"busy","rx":"wait"}"#
        );
    }

    #[test]
    fn sockets_follow_the_engine() {
        assert_eq!(sockets(true, true), Sockets::Xsk);
        assert_eq!(sockets(false, true), Sockets::Kernel);
        assert_eq!(sockets(true, false), Sockets::None);
    }
}
