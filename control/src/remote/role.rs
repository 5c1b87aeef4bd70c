//! One side of a two-host run, as the agent's child process plays it: it
//! starts at the agreed instant, reads `stop` (the other side is done) on
//! stdin, takes end of input as the agent gone (the run ends at once), and
//! writes its live counters to stderr as `LIVE {json}` lines for the
//! agent's /metrics.

use std::{
    cell::Cell,
    io::{BufRead, Write},
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use anyhow::{anyhow, bail, Result};
use serde_json::json;

use crate::{
    cli::{RoleArg, RoleArgs},
    path::PathPlan,
    session::{Live, Peer},
};

use linerate_remote::api::LIVE_PREFIX;

/// How often live counters are written.
const LIVE_EVERY: Duration = Duration::from_millis(250);

/// The side this process plays and what the agent tells it.
pub struct Role {
    side: RoleArg,
    /// The agreed start, as an instant of this process.
    start: Instant,
    stop: Arc<AtomicBool>,
    last_live: Cell<Instant>,
}

impl Role {
    /// The side this process runs (none: the whole run): the path's other
    /// end pointed at the peer host ([`patch_path`]), then
    /// [`Role::from_args`].
    pub fn for_side(
        path: &mut PathPlan,
        args: &RoleArgs,
        interrupted: &Arc<AtomicBool>,
    ) -> Result<Option<Self>> {
        patch_path(path, args)?;
        Self::from_args(args, interrupted)
    }

    /// The role the hidden options ask for; watches stdin from now on
    /// (`stop`: finish normally; end of input: set `interrupted`).
    pub fn from_args(args: &RoleArgs, interrupted: &Arc<AtomicBool>) -> Result<Option<Self>> {
        let Some(side) = args.role else {
            return Ok(None);
        };
        if let Some(ns) = args.clock_offset_ns {
            // Before any receiver starts: they take it when made.
            linerate_datapath::latency::set_clock_offset(ns);
        }
        let start = match args.start_at {
            Some(ns) => {
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_err(|e| anyhow!("the clock is before 1970: {e}"))?
                    .as_nanos() as u64;
                let ahead = Duration::from_nanos(ns.saturating_sub(now));
                if ahead > Duration::from_secs(60) {
                    bail!("--start-at is {ahead:?} ahead: the clocks of the hosts disagree too much (sync them with NTP)");
                }
                Instant::now() + ahead
            }
            None => Instant::now(),
        };
        let stop = Arc::new(AtomicBool::new(false));
        let (flag, gone) = (stop.clone(), interrupted.clone());
        std::thread::spawn(move || {
            let stdin = std::io::stdin();
            for line in stdin.lock().lines() {
                match line {
                    Ok(line) if line.trim() == "stop" => flag.store(true, Ordering::Relaxed),
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
            // The agent is gone (or closed our input): end the run now.
            gone.store(true, Ordering::Relaxed);
        });
        Ok(Some(Self {
            side,
            start,
            stop,
            last_live: Cell::new(Instant::now() - LIVE_EVERY),
        }))
    }
}

/// The run sees the agent's side of it through [`Peer`].
impl Peer for Role {
    fn runs_tx(&self) -> bool {
        self.side == RoleArg::Tx
    }

    fn start(&self) -> Instant {
        self.start
    }

    fn stop_asked(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Writes the live counters, at most every LIVE_EVERY.
    fn live(&self, read: &dyn Fn() -> Live) {
        if self.last_live.get().elapsed() < LIVE_EVERY {
            return;
        }
        self.last_live.set(Instant::now());
        let live = read();
        let group = |role: &'static str, counters: Vec<_>, checksums: bool| {
            counters.into_iter().enumerate().map(move |(q, c)| {
                json!({"role": role, "queue": q, "counters": c, "checksums": checksums})
            })
        };
        let workers: Vec<_> = group("tx", live.tx, live.tx_checksums)
            .chain(group("rx", live.rx, live.rx_checksums))
            .collect();
        // The agent reads these; if it is gone, the run ends on its own
        // (stdin closes), so a failed write is not worth a panic.
        let _ = writeln!(
            std::io::stderr(),
            "{LIVE_PREFIX}{}",
            json!({"workers": workers, "xdp": live.xdp})
        );
    }
}

/// Points the other end of a one-side path at the peer host's interface:
/// the agent gives this host's interface as both ends, the peer's MAC and
/// address come from the other agent.
pub fn patch_path(path: &mut PathPlan, args: &RoleArgs) -> Result<()> {
    let Some(side) = args.role else {
        return Ok(());
    };
    let (Some(mac), Some(ip)) = (&args.peer_mac, args.peer_ip) else {
        bail!("--role needs --peer-mac and --peer-ip");
    };
    let mac = mac.0;
    let peer = match side {
        RoleArg::Tx => &mut path.rx,
        RoleArg::Rx => &mut path.tx,
    };
    peer.info.mac = mac;
    peer.ip = ip;
    Ok(())
}
