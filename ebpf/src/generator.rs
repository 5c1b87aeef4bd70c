//! The in-kernel frame generator: an XDP program of ours run by
//! `BPF_PROG_RUN` in live-frames mode (`BPF_F_TEST_XDP_LIVE_FRAMES`,
//! kernel >= 5.18). Each repetition stamps the template frame with its
//! flow's next sequence number and the send time and redirects it to the
//! sending interface as an xdp_frame (no skb, no copy). The program counts
//! per flow what it stamped and redirected; what the driver then dropped
//! at a full peer shows only in the driver's own counters.

use std::os::fd::AsFd;

use libbpf_rs::{ErrorKind, MapCore, MapFlags, MapHandle, Object, ObjectBuilder, ProgramInput};

use crate::{values, EbpfError};

const PROG_NAME: &str = "linerate_gen";
pub(crate) static GEN_OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/gen.bpf.o"));

/// `BPF_F_TEST_XDP_LIVE_FRAMES`.
const LIVE_FRAMES: u32 = 1 << 1;
/// The longest frame (without FCS) live-frames mode takes on kernel 6.18:
/// one page less the kernel's headroom and skb_shared_info (EINVAL above;
/// no multi-buffer, so no jumbo frames).
pub const MAX_LIVE_FRAME: usize = 3408;

/// `struct gen_config` in gen.bpf.c: (field, offset, size), in order.
pub(crate) const GEN_CONFIG_LAYOUT: [(&str, usize, usize); 11] = [
    ("ifindex", 0, 4),
    ("msg_len", 4, 4),
    ("frag_count", 8, 4),
    ("per_fragment", 12, 4),
    ("count", 16, 8),
    ("interval_fp", 24, 8),
    ("burst", 32, 8),
    ("epoch_ns", 40, 8),
    ("window", 48, 8),
    ("mix_count", 56, 4),
    // `__u16 mix[MAX_MIX]`: the whole array.
    ("mix", 60, 2 * MAX_MIX),
];
/// Size of `struct gen_config`.
pub(crate) const GEN_CONFIG_SIZE: usize = 192;
/// Entries of the `gen_credit` map (`MAX_FLOWS` in gen.bpf.c): one
/// acknowledgement counter (u64) per flow.
pub const CREDIT_FLOWS: u32 = 4096;
/// Frames in the generator's size pattern at most (`MAX_MIX` in gen.bpf.c).
pub(crate) const MAX_MIX: usize = 64;
/// `struct gen_flow` in gen.bpf.c.
pub(crate) const GEN_FLOW_LAYOUT: [(&str, usize, usize); 8] = [
    ("seq", 0, 8),
    ("redirected", 8, 8),
    ("redirect_failed", 16, 8),
    ("msg_id", 24, 4),
    ("frag_index", 28, 4),
    ("next_due_fp", 32, 8),
    ("skipped", 40, 8),
    ("bytes", 48, 8),
];
/// Size of `struct gen_flow`.
pub(crate) const GEN_FLOW_SIZE: usize = 56;

/// How the generator cuts messages into fragments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GenMessage {
    /// Bytes per message.
    pub msg_len: u32,
    /// Fragments per message.
    pub frag_count: u32,
    /// Message bytes in a full fragment.
    pub per_fragment: u32,
}

/// What the generator sends where, and how fast.
#[derive(Debug, Clone, PartialEq)]
pub struct GeneratorConfig {
    /// The sending interface (in the calling thread's network namespace).
    pub ifindex: u32,
    /// Messages instead of plain frames.
    pub message: Option<GenMessage>,
    /// Frames per flow, then every repetition is skipped (None: no limit).
    pub count: Option<u64>,
    /// Frames per second per flow (None: as fast as the kernel sends).
    pub rate: Option<f64>,
    /// Frames a flow that fell behind its rate may send at once to catch
    /// up (a token bucket's depth).
    pub burst: u64,
    /// CLOCK_MONOTONIC ns that paced time counts from.
    pub epoch_ns: u64,
    /// Frames a flow may have sent and not yet acknowledged in the
    /// [`CreditMap`] given to [`Generator::load`] (its receivers'
    /// backpressure); 0: no acknowledgements, the generator sends
    /// regardless.
    pub window: u64,
    /// A traffic mix: frame `i` of a flow is `mix[i % mix.len()]` bytes
    /// long (without FCS; at most [`MAX_MIX`] entries, none shorter than
    /// 60 bytes nor longer than the template). Empty: every frame is the
    /// template's size. Ignored with `message`.
    pub mix: Vec<u16>,
}

impl GeneratorConfig {
    /// ns between frames, in 1/256 ns.
    fn interval_fp(&self) -> u64 {
        self.rate
            .filter(|r| r.is_finite() && *r > 0.0)
            .map_or(0, |r| ((256e9 / r).round() as u64).max(1))
    }

    fn encode(&self) -> Result<Vec<u8>, EbpfError> {
        let m = self.message.unwrap_or(GenMessage {
            msg_len: 0,
            frag_count: 0,
            per_fragment: 0,
        });
        if self.mix.len() > MAX_MIX {
            return Err(EbpfError::Generator(format!(
                "a size pattern of {} frames is longer than the generator's {MAX_MIX}",
                self.mix.len()
            )));
        }
        let mut out = values::encode(
            &GEN_CONFIG_LAYOUT,
            GEN_CONFIG_SIZE,
            &[
                u64::from(self.ifindex),
                u64::from(m.msg_len),
                u64::from(m.frag_count),
                u64::from(m.per_fragment),
                self.count.unwrap_or(0),
                self.interval_fp(),
                self.burst,
                self.epoch_ns,
                self.window,
                self.mix.len() as u64,
            ],
        );
        let at = GEN_CONFIG_LAYOUT[10].1;
        for (i, len) in self.mix.iter().enumerate() {
            out[at + 2 * i..at + 2 * i + 2].copy_from_slice(&len.to_ne_bytes());
        }
        Ok(out)
    }
}

/// One flow's counters in the generator.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GenFlowCounters {
    /// Frames stamped (the next sequence number).
    pub seq: u64,
    /// Frames handed to the interface.
    pub redirected: u64,
    /// Frames the redirect refused.
    pub redirect_failed: u64,
    /// Messages begun.
    pub msg_id: u32,
    /// The next fragment of the current message.
    pub frag_index: u32,
    /// Repetitions not sent: not due yet (pacing), or past the count.
    pub skipped: u64,
    /// Bytes (without FCS) of the frames handed to the interface.
    pub bytes: u64,
}

impl GenFlowCounters {
    fn decode(b: &[u8]) -> Option<Self> {
        let v = values::decode(&GEN_FLOW_LAYOUT, GEN_FLOW_SIZE, b)?;
        Some(Self {
            seq: v[0],
            redirected: v[1],
            redirect_failed: v[2],
            msg_id: v[3] as u32,
            frag_index: v[4] as u32,
            skipped: v[6],
            bytes: v[7],
        })
    }
}

/// The loaded generator, one per generator thread (and so per flow): the
/// thread calls [`Generator::run`] with its flow's template.
#[derive(Debug)]
pub struct Generator {
    object: Object,
    cfg: GeneratorConfig,
    config: MapHandle,
    flows: MapHandle,
    credit: MapHandle,
}

/// `struct xdp_md` as BPF_PROG_RUN takes it: the frame's data spans
/// `0..data_end` (the kernel insists on the frame's length there) and it
/// arrives on `ingress_ifindex`, queue 0.
fn xdp_md(frame_len: usize, ifindex: u32) -> [u8; 24] {
    let mut md = [0u8; 24];
    md[4..8].copy_from_slice(&(frame_len as u32).to_ne_bytes());
    md[12..16].copy_from_slice(&ifindex.to_ne_bytes());
    md
}

/// The generator's acknowledgements (`gen_credit` in gen.bpf.c): per
/// flow, a u64 of the frames its receivers took, which receivers of the
/// same host add to through a shared mapping of the map (it is created
/// mappable) and the generator reads before each frame. Created before
/// the receivers start; every generator of the run loads over it.
#[derive(Debug)]
pub struct CreditMap {
    map: MapHandle,
}

impl CreditMap {
    /// A new map, every count 0.
    pub fn create() -> Result<Self, EbpfError> {
        let opts = libbpf_sys::bpf_map_create_opts {
            sz: std::mem::size_of::<libbpf_sys::bpf_map_create_opts>() as libbpf_sys::size_t,
            map_flags: libbpf_sys::BPF_F_MMAPABLE,
            ..Default::default()
        };
        let map = MapHandle::create(
            libbpf_rs::MapType::Array,
            Some("gen_credit"),
            4,
            8,
            CREDIT_FLOWS,
            &opts,
        )
        .map_err(|e| EbpfError::map("gen_credit", e))?;
        Ok(Self { map })
    }

    /// The map's descriptor, to map its values into memory.
    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.map.as_fd()
    }
}

impl Generator {
    /// Loads the program and configures it (in the calling thread's
    /// network namespace, where `cfg.ifindex` lives). With `credit`, the
    /// program reads its acknowledgements there (and `cfg.window` bounds
    /// what a flow has unacknowledged); without, from a map of its own
    /// that nobody writes (give `window` 0).
    pub fn load(cfg: GeneratorConfig, credit: Option<&CreditMap>) -> Result<Self, EbpfError> {
        let mut gen = Self::open(None, credit, cfg.clone())?;
        gen.configure(cfg)?;
        Ok(gen)
    }

    fn configure(&mut self, cfg: GeneratorConfig) -> Result<(), EbpfError> {
        self.config
            .update(&0u32.to_ne_bytes(), &cfg.encode()?, MapFlags::ANY)
            .map_err(|e| EbpfError::map("gen_config", e))?;
        self.cfg = cfg;
        Ok(())
    }

    /// Sets the frames per flow after which every repetition is skipped
    /// (for every instance sharing the maps): how a run ends on a message
    /// boundary.
    pub fn set_count(&mut self, count: u64) -> Result<(), EbpfError> {
        self.configure(GeneratorConfig {
            count: Some(count),
            ..self.cfg.clone()
        })
    }

    /// A second instance of the program that shares this one's maps (its
    /// configuration and flows): another thread on the same core runs it
    /// while this one's call is in its grace periods, so that the core
    /// never waits for them. Programs on one core never run at once, so
    /// the flows' counters stay exact.
    pub fn twin(&self) -> Result<Self, EbpfError> {
        Self::open(Some(self), None, self.cfg.clone())
    }

    fn open(
        share: Option<&Self>,
        credit: Option<&CreditMap>,
        cfg: GeneratorConfig,
    ) -> Result<Self, EbpfError> {
        let load = |e: libbpf_rs::Error| EbpfError::Load(e.to_string());
        let mut open = ObjectBuilder::default()
            .open_memory(GEN_OBJECT)
            .map_err(load)?;
        for mut m in open.maps_mut() {
            let fd = match (m.name().to_str(), share, credit) {
                (Some("gen_config"), Some(other), _) => other.config.as_fd(),
                (Some("gen_flows"), Some(other), _) => other.flows.as_fd(),
                (Some("gen_credit"), Some(other), _) => other.credit.as_fd(),
                (Some("gen_credit"), None, Some(c)) => c.fd(),
                _ => continue,
            };
            m.reuse_fd(fd).map_err(load)?;
        }
        let object = open.load().map_err(load)?;
        let config = values::map(&object, "gen_config")?;
        let flows = values::map(&object, "gen_flows")?;
        let credit = values::map(&object, "gen_credit")?;
        let mut gen = Self {
            object,
            cfg,
            config,
            flows,
            credit,
        };
        // The program must be there.
        gen.with_prog(|_| Ok(()))?;
        Ok(gen)
    }

    fn with_prog<T>(
        &mut self,
        f: impl FnOnce(&libbpf_rs::ProgramMut<'_>) -> Result<T, EbpfError>,
    ) -> Result<T, EbpfError> {
        let prog = self
            .object
            .progs_mut()
            .find(|p| p.name() == PROG_NAME)
            .ok_or_else(|| EbpfError::Load(format!("program {PROG_NAME} missing")))?;
        f(&prog)
    }

    /// Runs the program `repeat` times over `frame` (a template whose
    /// header names a flow), in live-frames mode: up to `repeat` frames
    /// leave through the interface the generator was configured with, on
    /// the transmit path of the calling thread's CPU. Returns early with
    /// [`GenRun::Interrupted`] when a signal arrives (the flow's counters
    /// say how far it got).
    pub fn run(&mut self, frame: &[u8], ifindex: u32, repeat: u32) -> Result<GenRun, EbpfError> {
        if frame.len() > MAX_LIVE_FRAME {
            return Err(EbpfError::Generator(format!(
                "frames of {} bytes are longer than live-frames mode takes ({MAX_LIVE_FRAME} \
                 bytes without FCS): send smaller frames, or use the AF_XDP sender \
                 (--tx-engine af-xdp)",
                frame.len()
            )));
        }
        let mut md = xdp_md(frame.len(), ifindex);
        self.with_prog(|prog| {
            let input = ProgramInput {
                context_in: Some(&mut md),
                data_in: Some(frame),
                flags: LIVE_FRAMES,
                repeat,
                ..Default::default()
            };
            match prog.test_run(input) {
                Ok(_) => Ok(GenRun::Done),
                Err(e) => match e.kind() {
                    ErrorKind::Interrupted => Ok(GenRun::Interrupted),
                    _ if device_gone(&e) => Ok(GenRun::DeviceGone),
                    ErrorKind::InvalidInput => Err(EbpfError::Generator(format!(
                        "the kernel refused live-frames mode ({e}): it needs Linux 5.18 or \
                         later, a frame of at most {MAX_LIVE_FRAME} bytes and an interface of \
                         this namespace; use the AF_XDP sender (--tx-engine af-xdp)"
                    ))),
                    _ => Err(EbpfError::Generator(format!(
                        "BPF_PROG_RUN in live-frames mode failed: {e}"
                    ))),
                },
            }
        })
    }

    /// The counters of one flow.
    pub fn flow(&self, flow: u16) -> Result<GenFlowCounters, EbpfError> {
        let v = self
            .flows
            .lookup(&u32::from(flow).to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| EbpfError::map("gen_flows", e))?
            .unwrap_or_default();
        GenFlowCounters::decode(&v)
            .ok_or_else(|| EbpfError::Load("gen_flows value shorter than struct gen_flow".into()))
    }
}

/// How a call of [`Generator::run`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GenRun {
    /// Every repetition ran.
    Done,
    /// A signal cut the call short.
    Interrupted,
    /// The interface went away (deleted or down: ENODEV, ENXIO,
    /// ENETDOWN), as an AF_XDP sender's kick finds it: the run ends on the
    /// fault with what was sent.
    DeviceGone,
}

/// Whether a BPF_PROG_RUN error is the interface gone. libbpf-rs keeps the
/// errno only in its text: that text is compared whole with the system's
/// for each errno.
fn device_gone(e: &libbpf_rs::Error) -> bool {
    let text = e.to_string();
    [libc::ENODEV, libc::ENXIO, libc::ENETDOWN]
        .into_iter()
        .any(|code| text == std::io::Error::from_raw_os_error(code).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interface_gone_is_told_from_other_errors() {
        for code in [libc::ENODEV, libc::ENXIO, libc::ENETDOWN] {
            assert!(device_gone(&libbpf_rs::Error::from_raw_os_error(code)));
        }
        for code in [libc::EINVAL, libc::ENOENT, libc::EPERM] {
            assert!(!device_gone(&libbpf_rs::Error::from_raw_os_error(code)));
        }
    }

    fn cfg(mix: Vec<u16>) -> GeneratorConfig {
        GeneratorConfig {
            ifindex: 7,
            message: None,
            count: Some(12),
            rate: None,
            burst: 0,
            epoch_ns: 0,
            window: 0,
            mix,
        }
    }

    #[test]
    fn the_size_pattern_goes_into_the_config() {
        let b = cfg(vec![60, 590, 1514]).encode().unwrap();
        assert_eq!(b.len(), GEN_CONFIG_SIZE);
        assert_eq!(b[56..60], 3u32.to_ne_bytes(), "mix_count");
        let at = GEN_CONFIG_LAYOUT[10].1;
        let got: Vec<u16> = b[at..at + 8]
            .chunks(2)
            .map(|c| u16::from_ne_bytes([c[0], c[1]]))
            .collect();
        assert_eq!(got, [60, 590, 1514, 0]);
        // No mix: a count of 0, every frame the template's size.
        assert_eq!(cfg(vec![]).encode().unwrap()[56..60], [0; 4]);
        let long = cfg(vec![60; MAX_MIX + 1]).encode();
        assert!(matches!(long, Err(EbpfError::Generator(_))), "{long:?}");
    }
}
