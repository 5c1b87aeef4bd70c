//! The options every run shares, checked and turned once into the typed
//! parts the layers below take (`spec`): the path its [`PathSpec`], the
//! session its timing, wait modes, NAPI and XDP settings, the engines
//! their sockets' and rings' options.

use anyhow::{bail, Context, Result};
use linerate_datapath::worker::WaitMode;
use linerate_ebpf::AttachPolicy;

use crate::{
    cli::{BackendArg, NapiArg, RunArgs, XdpModeArg},
    engine::{backend, names_that},
    spec::{
        Iface, Ifaces, Napi, NapiMode, PathSpec, Priorities, Rings, RunSpec, Sockets, Timing, Wait,
        Xdp,
    },
};
use linerate_host::cores;

/// Checks the shared options that need no system access: those of the
/// path, then those that depend on the engine. `rx_alone`: `--rx-iface`
/// may name the whole path alone (a stream's `--rx-only`).
pub fn check(args: &RunArgs, rx_alone: bool) -> Result<()> {
    check_path(args, rx_alone)?;
    check_engine(args)
}

/// The path's options: each value's own range is checked where it is
/// parsed (cli.rs, exit 2); what depends on two options or on the host is
/// checked here.
fn check_path(args: &RunArgs, rx_alone: bool) -> Result<()> {
    if args.batch > args.ring as usize {
        bail!(
            "--batch {} is out of range: use 1 to --ring ({})",
            args.batch,
            args.ring
        );
    }
    // The cores must exist on the host that runs the workers: this one,
    // unless agents run them (a controller's), or this is one side of a
    // two-host run (the agent's child: its plan checks the cores as it
    // places its workers, and fails as that side).
    if args.agents.tx_agent.is_none() && args.role.role.is_none() {
        let ncpu = cores::online();
        for (name, list) in [
            ("--tx-cores", &args.tx_cores),
            ("--rx-cores", &args.rx_cores),
        ] {
            if let Some(list) = list {
                cores::check_list(list, ncpu).with_context(|| name.to_string())?;
            }
        }
    }
    let alone = rx_alone && args.tx_iface.is_none();
    if args.tx_iface.is_some() != args.rx_iface.is_some() && !alone {
        bail!("give both --tx-iface and --rx-iface, or neither to use the lab");
    }
    Ok(())
}

/// The shared options that depend on the engine.
fn check_engine(args: &RunArgs) -> Result<()> {
    let engine = backend(args.backend);
    let can = engine.can();
    if (args.gso || args.gro) && !can.udp_offloads {
        bail!(
            "--gso and --gro are UDP offloads: use them with --backend {}",
            names_that(|c| c.udp_offloads)
        );
    }
    if args.inject_loss > 0.0 && !can.injects_loss {
        bail!(
            "--inject-loss works in the XDP program (or on the loopback's link): use it with --backend {}",
            names_that(|can| can.injects_loss)
        );
    }
    if args.ipv6 && !can.ipv6 {
        bail!(
            "--ipv6: the {} engine carries IPv4 test traffic only; use --backend {}",
            engine.name(),
            names_that(|can| can.ipv6)
        );
    }
    // An engine in memory has no NAPI for the kernel to busy-poll.
    for (side, wait) in [("tx", args.tx_wait), ("rx", args.rx_wait)] {
        let mode = wait.map(WaitMode::from);
        if can.in_memory && mode.is_some_and(WaitMode::kernel_polls) {
            bail!(
                "--{side}-wait {}: the {} engine's link is memory, with no NAPI for the kernel to busy-poll; use busy or wait",
                mode.map_or("", WaitMode::name),
                engine.name()
            );
        }
    }
    if args.tx_wait.is_some() && !can.wait_modes {
        bail!(
            "--tx-wait: the {} engine does not wait on rings; use --backend {}",
            engine.name(),
            names_that(|can| can.wait_modes)
        );
    }
    Ok(())
}

/// The path the options ask for (checked by [`check`]: both interfaces
/// or neither).
pub fn path(args: &RunArgs) -> PathSpec {
    let ifaces = match (&args.tx_iface, &args.rx_iface) {
        (Some(tx), Some(rx)) => Ifaces::Pair {
            tx: Iface {
                name: tx.clone(),
                netns: args.tx_netns.clone(),
            },
            rx: Iface {
                name: rx.clone(),
                netns: args.rx_netns.clone(),
            },
        },
        _ => Ifaces::Lab(args.lab.name.clone()),
    };
    PathSpec {
        ifaces,
        reverse: args.reverse,
        mtu: args.mtu,
        queues: args.queues,
        tx_cores: args.tx_cores.clone(),
        rx_cores: args.rx_cores.clone(),
        ipv6: args.ipv6,
    }
}

/// The path of a run on `engine`: in memory for an engine that runs both
/// ends there (the loopback), else checked as [`crate::path::plan`] does
/// (without root only for an engine that needs none).
pub fn path_for(
    engine: &dyn crate::engine::Engine,
    spec: &PathSpec,
    what: &str,
    may_cross: impl Fn(u32) -> bool,
) -> Result<crate::path::PathPlan> {
    if engine.can().in_memory {
        crate::path::in_memory(spec)
    } else {
        crate::path::plan(spec, (what, engine.can().unprivileged), may_cross)
    }
}

/// An engine that runs both ends in memory (the loopback) has no
/// interface, no other host and no other tool: the first of the run's
/// options that asks for one, or of the test's `own`, is refused, saying
/// that the engine runs `what` ("the stream") in this process's memory.
pub fn check_in_memory(
    engine: &dyn crate::engine::Engine,
    run: &RunArgs,
    own: &[(&str, bool)],
    what: &str,
) -> Result<()> {
    if !engine.can().in_memory {
        return Ok(());
    }
    let given = [
        ("--tx-iface", run.tx_iface.is_some()),
        ("--rx-iface", run.rx_iface.is_some()),
        ("--tx-agent", run.agents.tx_agent.is_some()),
        ("--fleet", run.agents.fleet.is_some()),
        ("--role", run.role.role.is_some()),
    ];
    if let Some((option, _)) = own.iter().chain(&given).find(|(_, on)| *on) {
        bail!(
            "{option}: the {} engine runs both ends of {what} in this process's memory, with no interface, other host or other tool; drop {option}, or use --backend xdp on the lab",
            engine.name()
        );
    }
    Ok(())
}

/// Everything the options give a run, typed; `path` as [`path`] made it
/// (a stream's `--rx-only` names one interface for both ends).
pub fn spec(args: &RunArgs, path: PathSpec) -> RunSpec {
    RunSpec {
        path,
        timing: Timing {
            warmup: args.warmup,
            duration: args.duration,
            intervals: args.json_stream.then_some(args.interval),
            floor: !args.no_floor,
        },
        wait: Wait {
            tx: args.tx_wait.map(WaitMode::from),
            rx: args.rx_wait.map(WaitMode::from),
            responders: false,
            tcp: args.backend == BackendArg::Tcp,
        },
        napi: Napi {
            mode: match args.napi {
                NapiArg::Auto => NapiMode::Auto,
                NapiArg::Threaded => NapiMode::Threaded,
                NapiArg::ThreadedOwn => NapiMode::ThreadedOwn,
                NapiArg::Softirq => NapiMode::Softirq,
                NapiArg::Keep => NapiMode::Keep,
            },
            priority: args.napi_priority,
        },
        xdp: Xdp {
            policy: match args.xdp_mode {
                XdpModeArg::Auto => AttachPolicy::Auto,
                XdpModeArg::Native => AttachPolicy::Native,
                XdpModeArg::Generic => AttachPolicy::Generic,
            },
            force: args.force,
            inject_loss: args.inject_loss,
        },
        sockets: Sockets {
            backend: args.backend,
            port: args.port,
            gso: args.gso,
            gro: args.gro,
            ipv6: args.ipv6,
        },
        rings: Rings {
            batch: args.batch,
            tx_ring: args.ring,
            rx_ring: args.rx_ring,
            umem_chunk: args.umem_chunk,
            zero_copy: args.zero_copy,
        },
        priorities: Priorities {
            generator: args.gen_priority,
            receivers: args.rx_priority,
        },
    }
}

/// How the result is printed.
pub fn printed(args: &RunArgs) -> crate::printed::Asked {
    crate::printed::Asked {
        json_stream: args.json_stream,
        json: args.json,
        quiet: args.quiet,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::RunRequest;

    #[test]
    fn the_spec_holds_what_was_given() {
        let a = RunRequest::stream_args(&[
            "--tx-iface",
            "a0",
            "--tx-netns",
            "na",
            "--rx-iface",
            "b0",
            "--queues",
            "2",
            "--tx-wait",
            "wait",
            "--json-stream",
            "--interval",
            "2s",
            "--xdp-mode",
            "generic",
            "--napi",
            "threaded-own",
        ])
        .run;
        let s = spec(&a, path(&a));
        assert_eq!(
            s.path.ifaces,
            Ifaces::Pair {
                tx: Iface {
                    name: "a0".into(),
                    netns: Some("na".into())
                },
                rx: Iface {
                    name: "b0".into(),
                    netns: None
                },
            }
        );
        assert_eq!(s.path.queues, 2);
        assert_eq!(s.wait.tx, Some(WaitMode::Wait));
        assert_eq!(s.timing.intervals, Some(std::time::Duration::from_secs(2)));
        assert_eq!(s.xdp.policy, AttachPolicy::Generic);
        assert_eq!(s.napi.mode, NapiMode::ThreadedOwn);
        let lab = RunRequest::stream_args(&["--lab", "x1"]).run;
        assert_eq!(path(&lab).ifaces, Ifaces::Lab("x1".into()));
        assert_eq!(spec(&lab, path(&lab)).timing.intervals, None);
    }
}
