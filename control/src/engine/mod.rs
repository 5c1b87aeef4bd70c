//! The engines: the data paths a run's workers move frames with, each
//! declared in one file with what it can do ([`Capabilities`]) and how its
//! workers start (the [`Engine`] trait).
//!
//! | engine | `--backend` | file |
//! |---|---|---|
//! | AF_XDP sockets fed by the steering program | `xdp` | `af_xdp.rs` |
//! | kernel UDP sockets (sendmmsg/recvmmsg) | `udp` | `udp.rs` |
//! | kernel TCP connections | `tcp` | `tcp.rs` |
//! | sender and receiver joined in memory (a test and demo engine) | `loopback` | `loopback.rs` |
//! | the in-kernel frame generator (stream senders) | `--tx-engine generator` | `generator.rs` |
//! | the XDP-only receiver (stream receivers) | `--rx-engine xdp` | `xdp_only.rs` |
//!
//! Commands never match on the engine: they build one config per role
//! ([`SenderConfig`], [`ReceiverConfig`], [`RrConfig`]) and call the
//! engine's spawn functions; every check of an option that depends on the
//! engine reads its capabilities (the plans' checks: `plan::run`,
//! `plan::stream`, `plan::rr`).
//!
//! Which engine plays which role is decided here too ([`for_stream`],
//! [`for_rr`]): today `--backend` names one engine for both ends.
//!
//! Adding an engine touches four files: its own file here (capabilities
//! and the spawn functions of the roles it plays), this file (its `mod`
//! line, its arm in [`backend`], and in [`for_stream`] if it plays one
//! end only), `cli.rs` (its name), and `docs/guide.md` with README.md's
//! table "What runs where" (the options it takes).

mod af_xdp;
mod contract;
mod generator;
mod kernel;
mod loopback;
mod tcp;
mod udp;
mod xdp_only;

use std::sync::Arc;

pub use contract::{Capabilities, Engine, Io, ReceiverConfig, RrConfig, SenderConfig, SideWorkers};

use anyhow::Result;
use clap::ValueEnum;
use linerate_datapath::{worker::GenCredit, xsk::Credits};

use crate::cli::{BackendArg, RxEngineArg, TxEngineArg};

/// The engine `--backend` names: the registry of engines.
pub fn backend(arg: BackendArg) -> &'static dyn Engine {
    match arg {
        BackendArg::Xdp => &af_xdp::AfXdp,
        BackendArg::Udp => &udp::UDP,
        BackendArg::Tcp => &tcp::TCP,
        BackendArg::Loopback => &loopback::Loopback,
    }
}

/// Frames the loopback engine's links on `port` dropped on purpose
/// (`--inject-loss`), for the result; each link is counted once.
pub fn loopback_injected(port: u16) -> u64 {
    loopback::injected(port)
}

/// The engines of a stream's senders and of its receivers.
pub fn for_stream(
    backend_arg: BackendArg,
    tx: TxEngineArg,
    rx: RxEngineArg,
) -> (&'static dyn Engine, &'static dyn Engine) {
    let engine = backend(backend_arg);
    let receiver: &'static dyn Engine = match rx {
        RxEngineArg::AfXdp => engine,
        RxEngineArg::Xdp => &xdp_only::XdpOnly,
    };
    match tx {
        // Auto is decided once the path is known (auto_sender); until
        // then, the backend's.
        TxEngineArg::Backend | TxEngineArg::Auto => (engine, receiver),
        TxEngineArg::Generator => (&generator::Generator, receiver),
    }
}

/// What `--tx-engine auto` weighs of what the run asks.
#[derive(Debug, Clone)]
pub struct AutoAsked {
    /// The engine `--backend` names.
    pub backend: BackendArg,
    /// Messages sent as fast as they go (`--message` without `--rate`).
    pub unpaced_messages: bool,
    /// The AF_XDP sender options given ("--tx-wait, --batch"), which the
    /// generator does not take.
    pub af_xdp_options: Option<String>,
    /// Frames of several sizes (`--size imix`).
    pub size_mix: bool,
    /// IPv6 test traffic.
    pub ipv6: bool,
}

/// What `--tx-engine auto` knows of the run when it chooses.
#[derive(Debug, Clone, Copy)]
pub struct AutoFacts<'a> {
    /// The sending interface's link kind ("veth"; None: a NIC, or not known).
    pub driver: Option<&'a str>,
    /// The largest frame the senders send, FCS included.
    pub frame_size: usize,
    /// The kernel's release (`uname -r`).
    pub kernel: &'a str,
    /// The receivers run in this process and take frames off a ring
    /// (AF_XDP), so they acknowledge what they took: the generator then
    /// waits for them ([`credit`]) and loses nothing on the way.
    pub acknowledged: bool,
}

/// Link kinds with no AF_XDP zero-copy (their AF_XDP sockets bind in copy
/// mode: an skb and a copy per frame), where the generator pays.
const NO_ZERO_COPY: &[&str] = &["veth", "macvlan", "ipvlan", "vxlan", "bridge", "bond"];

/// `--tx-engine auto`: the generator where the sending driver has no
/// zero-copy and the frames fit, else the backend's engine; with the
/// reason, for the placement line.
pub fn auto_sender(asked: &AutoAsked, facts: AutoFacts<'_>) -> (&'static dyn Engine, String) {
    let backend_engine = backend(asked.backend);
    let gen: &'static dyn Engine = &generator::Generator;
    let keep = |why: String| (backend_engine, format!("auto: {why}"));
    if asked.backend != BackendArg::Xdp {
        return keep(format!(
            "--backend {} sends with its own sockets",
            backend_engine.name()
        ));
    }
    if asked.unpaced_messages && !facts.acknowledged {
        return keep(
            "unpaced messages need a sender with backpressure, and the generator has it only from AF_XDP receivers of this host (a frame the link drops breaks its whole message)".into(),
        );
    }
    if let Some(given) = &asked.af_xdp_options {
        return keep(format!("{given}: AF_XDP sender options, given"));
    }
    if asked.size_mix && !gen.can().size_mix {
        return keep("the generator sends one frame size (no --size mix)".into());
    }
    if asked.ipv6 && !gen.can().ipv6 {
        return keep("the generator sends IPv4 test traffic only".into());
    }
    if !generator::live_frames_kernel(facts.kernel) {
        return keep(format!(
            "kernel {} has no live-frames mode (5.18 or later)",
            facts.kernel
        ));
    }
    if let Some(max) = gen.can().max_frame.filter(|&m| facts.frame_size > m) {
        return keep(format!(
            "{}-byte frames are longer than the generator sends ({max})",
            facts.frame_size
        ));
    }
    match facts.driver.filter(|d| NO_ZERO_COPY.contains(d)) {
        Some(driver) => (
            gen,
            format!(
                "auto: {driver} has no AF_XDP zero-copy and {}-byte frames fit live-frames mode",
                facts.frame_size
            ),
        ),
        None => keep(format!(
            "{} may have AF_XDP zero-copy",
            facts.driver.unwrap_or("the sending NIC")
        )),
    }
}

/// The engine of an rr run's clients and responders.
pub fn for_rr(backend_arg: BackendArg) -> &'static dyn Engine {
    backend(backend_arg)
}

/// Who sent an rr run's requests, and why, for the placement line: the
/// --backend engine's clients with `auto` too, as the generator cannot wait
/// for a response.
/// `auto`: `--tx-engine auto` was given.
pub fn rr_sender(engine: &dyn Engine, auto: bool) -> String {
    let engine = engine.name();
    if auto {
        format!(
            "sent by {engine} (auto: the generator cannot wait for responses, so the clients are the backend's)"
        )
    } else {
        format!("sent by {engine}")
    }
}

/// Every engine `--backend` can name.
pub fn all() -> impl Iterator<Item = &'static dyn Engine> {
    BackendArg::value_variants().iter().map(|arg| backend(*arg))
}

/// The names of the engines that can do `what`, for a refusal:
/// "xdp", "udp or tcp".
pub fn names_that(what: impl Fn(&Capabilities) -> bool) -> String {
    let names: Vec<&str> = all().filter(|e| what(e.can())).map(|e| e.name()).collect();
    match names.split_last() {
        None => "none".to_string(),
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

/// Backpressure for a sender that has none of its own (the generator:
/// what the link cannot take is dropped) into receivers that take frames
/// off a ring (AF_XDP), when both ends run in this process: the receivers
/// acknowledge what they took and each sending flow waits while a window
/// of its frames is unacknowledged, so nothing is dropped on the way.
/// None where that does not apply (two hosts, `--rx-only`/`--tx-only`,
/// other engines). The window follows from where the senders run (`tx_cores`) and the
/// receiving link's queues and RX ring ([`generator::credit_window`]).
pub fn credit(
    sender: &dyn Engine,
    receiver: &dyn Engine,
    both_here: bool,
    (tx_cores, rx_queues, rx_ring, napi_threaded): (&[usize], u32, u32, bool),
    yield_to_receivers: bool,
) -> Result<Option<GenCredit>> {
    if sender.can().backpressure || !receiver.can().umem || !both_here {
        return Ok(None);
    }
    let credits =
        Credits::new().map_err(|e| anyhow::anyhow!("the generator's backpressure: {e}"))?;
    Ok(Some(GenCredit {
        credits: Arc::new(credits),
        window: generator::credit_window(tx_cores, rx_queues, rx_ring, napi_threaded),
        yield_to_receivers,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only AF_XDP receivers (and the loopback's, the same loop) parse
    /// frames and verify their checksums: the others' `bad_checksum` is
    /// not measured.
    #[test]
    fn only_af_xdp_receivers_verify_checksums() {
        assert_eq!(
            names_that(|c| c.stream_receiver && c.checksums),
            "xdp or loopback"
        );
        assert!(!xdp_only::XdpOnly.can().checksums);
        assert!(!generator::Generator.can().checksums);
    }

    #[test]
    fn every_backend_names_its_engine() {
        for arg in BackendArg::value_variants() {
            let name = arg.to_possible_value().unwrap().get_name().to_string();
            assert_eq!(backend(*arg).name(), name);
        }
    }

    #[test]
    fn auto_chooses_the_generator_where_it_pays() {
        use clap::Parser;
        let args = |extra: &[&str]| {
            let argv = ["linerate", "stream", "--tx-engine", "auto"]
                .iter()
                .chain(extra);
            match crate::cli::Cli::try_parse_from(argv).unwrap().command {
                crate::cli::Command::Stream(a) => crate::plan::stream::auto_asked(&a),
                _ => unreachable!("a stream command"),
            }
        };
        let facts = |driver, frame_size, kernel| AutoFacts {
            driver,
            frame_size,
            kernel,
            acknowledged: false,
        };
        let veth = facts(Some("veth"), 1518, "6.18.0-1-amd64");
        let (e, why) = auto_sender(&args(&[]), veth);
        assert_eq!(e.name(), "generator");
        assert!(why.contains("veth has no AF_XDP zero-copy"), "{why}");
        let paced = args(&["--message", "65536", "--rate", "1000"]);
        assert_eq!(auto_sender(&paced, veth).0.name(), "generator");
        let imix = args(&["--size", "imix"]);
        assert_eq!(auto_sender(&imix, veth).0.name(), "generator");
        // Unpaced messages: with receivers here that acknowledge.
        let here = AutoFacts {
            acknowledged: true,
            ..veth
        };
        let messages = args(&["--message", "65536"]);
        assert_eq!(auto_sender(&messages, here).0.name(), "generator");
        for (a, f, want) in [
            (
                args(&[]),
                facts(None, 1518, "6.18.0"),
                "may have AF_XDP zero-copy",
            ),
            (
                args(&[]),
                facts(Some("veth"), 9018, "6.18.0"),
                "longer than",
            ),
            (
                args(&[]),
                facts(Some("veth"), 64, "5.15.0-91"),
                "no live-frames mode",
            ),
            (args(&["--backend", "udp"]), veth, "--backend udp"),
            (args(&["--tx-wait", "busy"]), veth, "AF_XDP sender options"),
            (
                args(&["--zero-copy", "--batch", "16"]),
                veth,
                "--zero-copy, --batch: AF_XDP sender options, given",
            ),
            (args(&["--pcap", "f.pcapng"]), veth, "--pcap: AF_XDP"),
            (args(&["--message", "65536"]), veth, "backpressure"),
            (args(&["--ipv6"]), veth, "IPv4 test traffic only"),
        ] {
            let (e, why) = auto_sender(&a, f);
            assert_ne!(e.name(), "generator", "{why}");
            assert!(why.starts_with("auto: ") && why.contains(want), "{why}");
        }
    }

    /// rr: auto (the default) keeps the backend's clients and says why;
    /// the generator, which cannot wait for a response, is refused.
    #[test]
    fn rr_auto_keeps_the_backends_clients() {
        use crate::request::RunRequest;
        let plain = RunRequest::rr_args(&[]);
        assert_eq!(plain.tx_engine, TxEngineArg::Auto);
        assert_eq!(
            rr_sender(for_rr(plain.run.backend), true),
            "sent by xdp (auto: the generator cannot wait for responses, so the clients are the backend's)"
        );
        let udp = RunRequest::rr_args(&["--backend", "udp", "--tx-engine", "backend"]);
        assert_eq!(
            rr_sender(for_rr(udp.run.backend), udp.tx_engine == TxEngineArg::Auto),
            "sent by udp"
        );
        let gen = RunRequest::rr_args(&["--tx-engine", "generator"]);
        let e = crate::plan::rr::check_args(&gen).unwrap_err().to_string();
        assert!(e.starts_with("rr --tx-engine generator: the generator sends frames and never waits for a response"), "{e}");
    }

    #[test]
    fn refusals_name_the_engines_that_can() {
        assert_eq!(names_that(|can| can.steering), "xdp");
        assert_eq!(names_that(|can| can.udp_offloads), "udp");
        assert_eq!(
            names_that(|can| can.rr_responder.is_some()),
            "xdp, udp, tcp or loopback"
        );
        assert_eq!(names_that(|_| false), "none");
    }

    #[test]
    fn what_each_engine_can_do() {
        let xdp = backend(BackendArg::Xdp).can();
        assert!(xdp.steering && xdp.umem && xdp.counts_foreign && xdp.frames);
        let tcp = backend(BackendArg::Tcp).can();
        assert!(!tcp.frames && tcp.messages && !tcp.steering && !tcp.umem);
        assert_eq!(tcp.rr_responder, Some("tcp socket"));
        let udp = backend(BackendArg::Udp).can();
        assert!(udp.udp_offloads && udp.frames && !udp.counts_foreign);
        for engine in all().filter(|e| !e.can().in_memory) {
            let can = engine.can();
            assert!(can.stream_sender && can.stream_receiver && can.rr_responder.is_some());
            assert!(can.pacing && can.wait_modes && can.multi_buffer);
            // Only a UDP socket has a largest frame (its largest datagram).
            let largest = (engine.name() == "udp").then_some(65_553);
            assert_eq!(can.max_frame, largest, "{}", engine.name());
        }
        assert_eq!(names_that(|c| c.unprivileged && !c.in_memory), "udp or tcp");
        // The loopback: streams only, one chunk a frame, no system.
        let lo = backend(BackendArg::Loopback).can();
        assert!(lo.in_memory && lo.stream_sender && lo.stream_receiver && lo.injects_loss);
        assert_eq!(lo.rr_responder, Some("loopback"));
        // Frames of any size, each one buffer on its link.
        assert!(!lo.steering && !lo.umem && lo.multi_buffer);
        assert_eq!(names_that(|c| c.in_memory), "loopback");
    }
}
