//! Turning `linerate stream` arguments into a checked plan: the engines,
//! the path, the frame size, messages, whether multi-buffer is needed.

use std::path::PathBuf;

use anyhow::{bail, Result};
use linerate_datapath::{frame::Verify, geometry::Geometry, message::Fragmentation, mix::SizeMix};

use crate::{
    cli::{BackendArg, RxEngineArg, StreamArgs, TxEngineArg},
    engine::{self, names_that, Engine},
    path::PathPlan,
    spec::{Iface, Ifaces, PathSpec, RunSpec},
};

/// The smallest frame for which the default placement crosses queues over
/// too few cores.
pub const CROSS_MIN_FRAME: usize = 1024;

/// A checked stream run.
#[derive(Debug, Clone)]
pub struct StreamPlan {
    /// What every run is given.
    pub run: RunSpec,
    /// How much of each frame the receivers verify (`--verify`).
    pub verify: Verify,
    /// Frames (or messages) each sender sends, then stops (`--count`).
    pub count: Option<u64>,
    /// Frames (or messages) per second each sender sends (`--rate`).
    pub rate: Option<f64>,
    /// Another tool sends (`--rx-only`).
    pub rx_only: bool,
    /// Another tool (or a device) receives (`--tx-only`).
    pub tx_only: bool,
    /// The file the frames sent and received are written to (`--pcap`).
    pub pcap: Option<PathBuf>,
    /// Frames each worker keeps for it (`--pcap-count`).
    pub pcap_count: u32,
    /// The senders' engine.
    pub sender: &'static dyn Engine,
    /// The receivers' engine.
    pub receiver: &'static dyn Engine,
    /// Interfaces and cores.
    pub path: PathPlan,
    /// Frame size, FCS included.
    pub frame_size: usize,
    /// Whether frames span several UMEM chunks.
    pub multi_buffer: bool,
    /// UMEM chunk size (for the largest frame the sockets carry; with
    /// --rx-only, whatever the link's MTU lets another tool send).
    pub chunk_size: u32,
    /// How messages are cut, with --message.
    pub message: Option<Fragmentation>,
    /// Why `--tx-engine auto` chose the sender it chose.
    pub tx_engine_reason: Option<String>,
    /// Frames of several sizes (`--size imix`); `frame_size` is the
    /// largest. None: every frame is `frame_size`.
    pub mix: Option<SizeMix>,
}

impl StreamPlan {
    /// Descriptors per frame (the loopback's link carries every frame in
    /// one buffer, whatever its size).
    pub fn descs_per_frame(&self) -> usize {
        if self.path.in_memory {
            return 1;
        }
        Geometry::buffers_per_frame(self.frame_size)
    }
}

/// The path the options ask for. With `--rx-only` another tool sends,
/// so `--rx-iface X` alone names the whole path: X is both ends (nothing
/// is sent from it, as on the receiving side of a two-host run).
fn path_spec(args: &StreamArgs) -> PathSpec {
    let run = &args.run;
    let mut spec = super::run::path(run);
    if let (true, None, Some(rx)) = (args.rx_only, &run.tx_iface, &run.rx_iface) {
        let end = Iface {
            name: rx.clone(),
            netns: run.rx_netns.clone(),
        };
        spec.ifaces = Ifaces::Pair {
            tx: end.clone(),
            rx: end,
        };
    }
    spec
}

/// The AF_XDP sender options the user gave ("--tx-wait, --batch"), which
/// the generator does not take: `--tx-engine auto` then keeps AF_XDP.
/// Options with a default count when set to another value.
pub fn af_xdp_sender_options(args: &StreamArgs) -> Option<String> {
    let run = &args.run;
    let given: Vec<&str> = [
        ("--tx-wait", run.tx_wait.is_some()),
        ("--zero-copy", run.zero_copy),
        ("--batch", run.batch != crate::cli::DEFAULT_BATCH),
        ("--ring", run.ring != crate::cli::DEFAULT_RING),
        ("--umem-chunk", run.umem_chunk.is_some()),
        ("--pcap", args.pcap.is_some()),
    ]
    .into_iter()
    .filter_map(|(name, set)| set.then_some(name))
    .collect();
    (!given.is_empty()).then(|| given.join(", "))
}

/// The engines the options name (`--tx-engine auto`: the backend's until
/// the path is known).
fn engines(args: &StreamArgs) -> (&'static dyn Engine, &'static dyn Engine) {
    engine::for_stream(args.run.backend, args.tx_engine, args.rx_engine)
}

/// What `--tx-engine auto` weighs of the options.
pub fn auto_asked(args: &StreamArgs) -> engine::AutoAsked {
    engine::AutoAsked {
        backend: args.run.backend,
        unpaced_messages: args.message.is_some() && args.rate.is_none(),
        af_xdp_options: af_xdp_sender_options(args),
        size_mix: args.size.as_ref().is_some_and(|m| !m.is_single()),
        ipv6: args.run.ipv6,
    }
}

/// Whether the run spans two hosts, or is an agent's side of one.
fn two_hosts(args: &StreamArgs) -> bool {
    let agents = &args.run.agents;
    agents.tx_agent.is_some() || agents.fleet.is_some() || args.run.role.role.is_some()
}

/// Refuses real-time threads that never sleep on every core of this host
/// (`plan::spinners`): AF_XDP receivers at a real-time `--rx-priority`
/// that do not wait, the generator's runners at a real-time
/// `--gen-priority`. A controller of two agents leaves it to each agent.
fn check_spinners(
    args: &StreamArgs,
    (sender, receiver): (&dyn Engine, &dyn Engine),
    path: &PathPlan,
) -> Result<()> {
    use crate::cli::RoleArg;
    use linerate_datapath::worker::WaitMode;
    let run = &args.run;
    if run.agents.tx_agent.is_some() {
        return Ok(());
    }
    let mut threads = Vec::new();
    let rx_wait = run.rx_wait.map_or(WaitMode::Wait, WaitMode::from);
    if !args.tx_only && run.role.role != Some(RoleArg::Tx) && receiver.name() == "xdp" {
        threads.push(super::spinners::Threads {
            option: "--rx-priority",
            why: format!("--rx-wait {}", rx_wait.name()),
            cores: path.rx_cores.clone(),
            priority: run.rx_priority,
            spins: rx_wait != WaitMode::Wait,
        });
    }
    if !args.rx_only && run.role.role != Some(RoleArg::Rx) && sender.name() == "generator" {
        threads.push(super::spinners::Threads {
            option: "--gen-priority",
            why: "the in-kernel generator's runners".into(),
            cores: path.tx_cores.clone(),
            priority: run.gen_priority,
            spins: true,
        });
    }
    super::spinners::check(linerate_host::cores::online(), &threads)
}

/// Checks arguments that need no system access.
pub fn check_args(args: &StreamArgs) -> Result<()> {
    super::run::check(&args.run, args.rx_only)?;
    // --duration, --rate, --count and --search-rate are checked where
    // they are parsed (cli.rs).
    if args.search_rate.is_some() && args.run.agents.tx_agent.is_some() {
        bail!("--search-rate runs on one host for now: drop --tx-agent/--rx-agent, or search with repeated paced runs");
    }
    check_in_memory(args)?;
    check_engines(args)
}

/// An engine that runs both ends in memory (the loopback) has no
/// interface, no other host and no other tool at either end.
fn check_in_memory(args: &StreamArgs) -> Result<()> {
    super::run::check_in_memory(
        engine::backend(args.run.backend),
        &args.run,
        &[
            ("--rx-only", args.rx_only),
            ("--tx-only", args.tx_only),
            (
                "--tx-engine generator",
                args.tx_engine == TxEngineArg::Generator,
            ),
            ("--rx-engine xdp", args.rx_engine == RxEngineArg::Xdp),
        ],
        "the stream",
    )
}

/// Checks what the run asks of its engines against what they can do.
fn check_engines(args: &StreamArgs) -> Result<()> {
    let (sender, receiver) = engines(args);
    let (send, receive) = (sender.can(), receiver.can());
    if !send.stream_sender {
        bail!(
            "the {} engine sends no streams: use --backend {}",
            sender.name(),
            names_that(|c| c.stream_sender)
        );
    }
    if !receive.stream_receiver {
        bail!(
            "the {} engine receives no streams: use --backend {}",
            receiver.name(),
            names_that(|c| c.stream_receiver)
        );
    }
    if sender.name() != receiver.name() && send.frames && !receive.frames {
        bail!(
            "the {} engine sends frames and the {} engine receives a byte stream: use --backend {}",
            sender.name(),
            receiver.name(),
            names_that(|c| c.frames && c.stream_receiver)
        );
    }
    if args.rx_engine == RxEngineArg::Xdp {
        if args.run.backend != BackendArg::Xdp {
            bail!(
                "--rx-engine xdp counts linerate's frames in its XDP program: use it with --backend xdp (the {} engine receives with its own sockets: --rx-engine af-xdp)",
                engine::backend(args.run.backend).name()
            );
        }
        if args.rx_only {
            bail!("--rx-only counts frames another tool sends, which the XDP-only receiver cannot tell apart: use --rx-engine af-xdp");
        }
    }
    if args.message.is_some() && !receive.messages {
        bail!(
            "--message: the {} receiver counts frames and their sequence, not whole messages; send frames (--size), or receive with --rx-engine af-xdp",
            receiver.name()
        );
    }
    if args.rx_only && !receive.counts_foreign {
        bail!(
            "--rx-only counts frames another tool sends to AF_XDP receivers: use it with --backend {}",
            names_that(|c| c.counts_foreign)
        );
    }
    if args.pcap.is_some() && !(send.umem && receive.umem) {
        bail!(
            "--pcap copies the frames AF_XDP workers send and receive: use --backend xdp (and --tx-engine backend), or tcpdump on the interfaces for the kernel's sockets"
        );
    }
    // On two hosts, or as an agent's child (never a file on the agent's
    // host named by a remote controller).
    let two_hosts = two_hosts(args);
    if args.pcap.is_some() && two_hosts {
        bail!("--pcap writes the frames of a run on this host: drop --tx-agent/--rx-agent");
    }
    if args.tx_only && !send.frames {
        bail!(
            "--tx-only sends frames to a receiver that is not linerate; the {} engine sends a byte stream: use --backend {}",
            sender.name(),
            names_that(|c| c.frames && c.stream_sender && !c.in_memory)
        );
    }
    if args.tx_only && two_hosts {
        bail!("--tx-only runs the senders on this host: drop --tx-agent/--rx-agent");
    }
    if args.size.is_some() && !send.frames {
        bail!(
            "--backend {} carries messages on a byte stream, not frames (the kernel cuts its segments: frame sizes cannot be chosen): give --message instead of --size",
            sender.name()
        );
    }
    if args.size.as_ref().is_some_and(|m| !m.is_single()) && !send.size_mix {
        bail!(
            "--size {}: the {} engine sends frames of one size per stream; send a mix with --backend {} (--tx-engine backend), or give one size",
            args.size.as_ref().map(ToString::to_string).unwrap_or_default(),
            sender.name(),
            names_that(|c| c.size_mix)
        );
    }
    if args.run.ipv6 && !send.ipv6 {
        bail!(
            "--ipv6: the {} engine sends IPv4 test traffic only; send with --backend {} (--tx-engine backend)",
            sender.name(),
            names_that(|c| c.ipv6)
        );
    }
    if args.message.is_some() && !send.messages {
        bail!(
            "--message: the {} engine sends no messages; use --backend {}",
            sender.name(),
            names_that(|c| c.messages)
        );
    }
    if args.rate.is_some() && !send.pacing {
        bail!(
            "--rate: the {} engine does not pace; use --backend {}",
            sender.name(),
            names_that(|c| c.pacing)
        );
    }
    Ok(())
}

/// Checks the frames the plan needs against what the engines carry.
fn check_frames(
    (sender, receiver): (&'static dyn Engine, &'static dyn Engine),
    frame_size: usize,
    max_descriptor: usize,
) -> Result<()> {
    if let Some(max) = sender.can().max_frame.filter(|&m| frame_size > m) {
        // A sender only (the generator) gives way to the backend's own;
        // a backend's sender (UDP's largest datagram), to another backend.
        let instead = if sender.can().stream_receiver {
            "use --backend xdp"
        } else {
            "send with --tx-engine backend"
        };
        bail!(
            "--size {frame_size}: the {} engine sends frames up to {max} bytes; give --size {max} or less, lower the MTU, or {instead} (AF_XDP sends any size)",
            sender.name()
        );
    }
    for (engine, descriptor) in [
        (sender, Geometry::descriptor_len(frame_size)),
        (receiver, max_descriptor),
    ] {
        if Geometry::multi_buffer(descriptor) && !engine.can().multi_buffer {
            bail!(
                "the {} engine carries no multi-buffer frames ({descriptor} bytes here): send smaller frames, or use --backend {}",
                engine.name(),
                names_that(|c| c.multi_buffer)
            );
        }
    }
    Ok(())
}

/// Checks everything and brings up the lab if the run needs it.
pub fn plan(args: &StreamArgs) -> Result<StreamPlan> {
    check_args(args)?;
    // Crossing the queues over the cores pays with large frames and costs
    // with small ones (measured on two cores: 1.0-1.4x at 1518 B, 1.3-1.4x
    // at 9018 B, 0.6x at 64 B).
    let frame_size = |mtu: u32| {
        args.size
            .as_ref()
            .map_or(Geometry::for_mtu(mtu).max_frame(), SizeMix::max_frame)
    };
    let ipv6 = args.run.ipv6;
    let run = super::run::spec(&args.run, path_spec(args));
    let path = super::run::path_for(
        engine::backend(args.run.backend),
        &run.path,
        "linerate stream",
        |mtu| frame_size(mtu) >= CROSS_MIN_FRAME,
    )?;
    let geometry = Geometry::for_mtu(path.mtu).ipv6(ipv6);
    let frame_size = frame_size(path.mtu);
    let (mut sender, receiver) = engines(args);
    let mut tx_engine_reason = None;
    // With --rx-only another tool sends: nothing to choose.
    if args.tx_engine == TxEngineArg::Auto && !args.rx_only {
        let kernel = linerate_host::environment::describe().kernel;
        let (chosen, why) = engine::auto_sender(
            &auto_asked(args),
            engine::AutoFacts {
                driver: path.tx.info.kind.as_deref(),
                frame_size,
                kernel: &kernel,
                acknowledged: receiver.can().umem
                    && !(two_hosts(args) || args.rx_only || args.tx_only),
            },
        );
        sender = chosen;
        tx_engine_reason = Some(why);
    }
    // An engine without frames (TCP) carries messages only; by default as
    // large as a full frame's UDP payload, so that defaults compare like
    // with like.
    let message_len = match args.message {
        None if !sender.can().frames => Some(geometry.max_udp_payload()),
        m => m,
    };
    let message = message_len
        .map(|len| geometry.fragments(len))
        .transpose()
        .map_err(|e| anyhow::anyhow!("--message: {e}"))?;
    // Senders count frames: a message's frames times --count must fit.
    if let (Some(count), Some(cut)) = (args.count, &message) {
        let frames = count.checked_mul(cut.count as u64);
        if frames.is_none_or(|f| f > crate::cli::MAX_COUNT) {
            bail!(
                "--count {count} messages of {} frames each is more than 2^48 ({}) frames per queue: lower --count or --message",
                cut.count,
                crate::cli::MAX_COUNT
            );
        }
    }
    let mix = args.size.clone().filter(|m| !m.is_single());
    let one = [frame_size];
    for &size in mix.as_ref().map_or(&one[..], |m| m.pattern()) {
        geometry.check_frame(size).map_err(|e| {
            let fix = if size < geometry.min_frame() && ipv6 {
                "IPv6 frames hold a header 20 bytes longer (RFC 5180): send larger frames"
            } else if size < geometry.min_frame() {
                "send larger frames"
            } else {
                "raise the MTU with --mtu or send smaller frames"
            };
            anyhow::anyhow!("--size: {e}; {fix}")
        })?;
    }
    // With --rx-only another tool sends: whatever the link carries.
    let max_descriptor = if args.rx_only {
        Geometry::descriptor_len(frame_size).max(geometry.max_descriptor())
    } else {
        Geometry::descriptor_len(frame_size)
    };
    check_frames((sender, receiver), frame_size, max_descriptor)?;
    check_spinners(args, (sender, receiver), &path)?;
    if ipv6 && message.is_some() && Geometry::multi_buffer(max_descriptor) {
        bail!(
            "--ipv6 --message: message frames over IPv6 fit one UMEM chunk for now ({max_descriptor} bytes here, multi-buffer): lower the MTU (--mtu 3000) or send messages over IPv4"
        );
    }
    Ok(StreamPlan {
        tx_engine_reason,
        verify: verify(args),
        run,
        count: args.count,
        rate: args.rate,
        rx_only: args.rx_only,
        tx_only: args.tx_only,
        pcap: args.pcap.clone(),
        pcap_count: args.pcap_count,
        sender,
        receiver,
        path,
        frame_size,
        multi_buffer: Geometry::multi_buffer(max_descriptor),
        chunk_size: crate::path::umem_chunk(args.run.umem_chunk, max_descriptor)?,
        message,
        mix,
    })
}

/// `--verify`, or the cheapest level that still catches what linerate's
/// own frames can get wrong: the IPv4 header's checksum (its IPv4 frames
/// carry no UDP checksum), over IPv6 the UDP checksum (its only one).
fn verify(args: &StreamArgs) -> Verify {
    match args.verify {
        Some(given) => given,
        None if args.run.ipv6 => Verify::Full,
        None => Verify::Header,
    }
}

#[cfg(test)]
impl StreamPlan {
    /// The plan of `args` at MTU 1500 on the lab's path as
    /// `PathPlan::for_test` gives it, for tests that need no system.
    pub fn for_test(args: &StreamArgs) -> Self {
        let (sender, receiver) = engines(args);
        let geometry = Geometry::for_mtu(1500);
        Self {
            run: super::run::spec(&args.run, path_spec(args)),
            verify: verify(args),
            count: args.count,
            rate: args.rate,
            rx_only: args.rx_only,
            tx_only: args.tx_only,
            pcap: args.pcap.clone(),
            pcap_count: args.pcap_count,
            sender,
            receiver,
            path: PathPlan::for_test(1500),
            frame_size: geometry.max_frame(),
            multi_buffer: false,
            chunk_size: 2048,
            message: args.message.map(|m| geometry.fragments(m).unwrap()),
            tx_engine_reason: None,
            mix: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn args(argv: &[&str]) -> StreamArgs {
        let argv = ["linerate", "stream"].iter().chain(argv);
        let Command::Stream(a) = Cli::try_parse_from(argv).unwrap().command else {
            unreachable!("a stream command")
        };
        *a
    }

    #[test]
    fn pcap_and_tx_only_run_on_one_host() {
        for option in [&["--pcap", "/etc/x"][..], &["--tx-only"]] {
            for two in [
                &["--tx-agent", "http://a", "--rx-agent", "http://b"][..],
                &[
                    "--role",
                    "rx",
                    "--peer-mac",
                    "02:00:00:00:00:01",
                    "--peer-ip",
                    "198.18.0.1",
                ],
            ] {
                let mut argv = option.to_vec();
                argv.extend(two);
                let e = check_args(&args(&argv)).unwrap_err().to_string();
                assert!(e.contains("drop --tx-agent/--rx-agent"), "{argv:?}: {e}");
            }
            check_args(&args(option)).unwrap();
        }
    }

    #[test]
    fn rx_only_needs_no_sending_interface() {
        let a = args(&["--rx-only", "--rx-iface", "eth1", "--rx-netns", "dut"]);
        check_args(&a).unwrap();
        let eth1 = Iface {
            name: "eth1".into(),
            netns: Some("dut".into()),
        };
        assert_eq!(
            path_spec(&a).ifaces,
            Ifaces::Pair {
                tx: eth1.clone(),
                rx: eth1
            }
        );
        // Senders need both ends.
        let e = check_args(&args(&["--rx-iface", "eth1"])).unwrap_err();
        assert!(
            e.to_string()
                .contains("give both --tx-iface and --rx-iface"),
            "{e}"
        );
        // Given, the sending interface is kept as given.
        let a = args(&["--rx-only", "--tx-iface", "a0", "--rx-iface", "b0"]);
        let Ifaces::Pair { tx, .. } = path_spec(&a).ifaces else {
            panic!("a pair of interfaces")
        };
        assert_eq!(tx.name, "a0");
    }
}
