//! Starting a two-host run: which agent runs which side (`--reverse`
//! swaps them), both agents checked, the interfaces' MTUs compared, and
//! each side's run created to start at one agreed instant.

use std::time::Duration;

use anyhow::{bail, Result};

use super::{request::Request, side::Side};
use crate::{
    api::{self, Created, RunRequest},
    client::{unix_ns, Remote},
    token,
};
use linerate_results::latency::ClockCorrection;

/// Agents stop a run whose lease was not renewed for this long.
const LEASE: Duration = Duration::from_secs(5);
/// Time from the start request to the agreed start: both sides bind first.
pub(super) const START_DELAY: Duration = Duration::from_secs(2);

/// Where one side runs: its agent, its interface and namespace there, and
/// the interface as the agent found it.
pub(super) struct End {
    pub(super) remote: Remote,
    iface: String,
    netns: Option<String>,
    found: api::Iface,
}

/// Both ends, their agents connected.
pub(super) struct Ends {
    pub(super) tx: End,
    pub(super) rx: End,
}

/// Connects to both agents the request names and reads both interfaces.
pub(super) fn connect(req: &Request) -> Result<Ends> {
    let run = req;
    if run.tx_agent.is_none() || run.rx_agent.is_none() {
        bail!("give both --tx-agent and --rx-agent");
    }
    if run.tx_iface.is_none() || run.rx_iface.is_none() {
        bail!("with --tx-agent and --rx-agent, give --tx-iface (an interface of the tx agent's host) and --rx-iface (one of the rx agent's host)");
    }
    let token = token::read(run.token_file.as_deref())?;
    connect_with(req, (&token, &token))
}

/// [`connect`] with each agent's own token (tx, rx; `--reverse` swaps
/// them with the agents), as a fleet's inventory gives them.
pub(super) fn connect_with(req: &Request, tokens: (&str, &str)) -> Result<Ends> {
    let run = req;
    let (Some(tx_agent), Some(rx_agent)) = (run.tx_agent.as_deref(), run.rx_agent.as_deref())
    else {
        bail!("give both --tx-agent and --rx-agent");
    };
    let (Some(tx_iface), Some(rx_iface)) = (run.tx_iface.as_deref(), run.rx_iface.as_deref())
    else {
        bail!("with --tx-agent and --rx-agent, give --tx-iface and --rx-iface");
    };
    let mut tx = (tx_agent, tx_iface, &run.tx_netns, tokens.0);
    let mut rx = (rx_agent, rx_iface, &run.rx_netns, tokens.1);
    // --reverse: the rx agent's host sends.
    if run.reverse {
        std::mem::swap(&mut tx, &mut rx);
    }
    let tx_remote = Remote::connect("tx agent", tx.0, tx.3)?;
    let rx_remote = Remote::connect("rx agent", rx.0, rx.3)?;
    let (tx, rx) = ((tx.0, tx.1, tx.2), (rx.0, rx.1, rx.2));
    let end = |remote: Remote, (_, iface, netns): (&str, &str, &Option<String>)| -> Result<End> {
        Ok(End {
            found: remote.iface(iface, netns.as_deref())?,
            remote,
            iface: iface.to_string(),
            netns: netns.clone(),
        })
    };
    let ends = Ends {
        tx: end(tx_remote, tx)?,
        rx: end(rx_remote, rx)?,
    };
    let (t, r) = (&ends.tx, &ends.rx);
    if t.found.mtu != r.found.mtu {
        bail!(
            "the MTUs differ: {} on the tx host has {}, {} on the rx host {}: set both to the same (`ip link set dev IF mtu N`)",
            t.iface,
            t.found.mtu,
            r.iface,
            r.found.mtu
        );
    }
    Ok(ends)
}

impl End {
    /// The run request for this end's side, `peer` the other end; the
    /// receiver takes `clock_offset_ns` off its one-way latencies.
    fn request(
        &self,
        req: &Request,
        role: &str,
        peer: &End,
        start_ns: u64,
        clock_offset_ns: Option<i64>,
        pair: Option<&str>,
    ) -> RunRequest {
        RunRequest {
            test: req.test,
            role: if role == "tx" {
                api::Role::Tx
            } else {
                api::Role::Rx
            },
            args: req.args.clone(),
            iface: self.iface.clone(),
            netns: self.netns.clone(),
            peer: api::Peer {
                mac: peer.found.mac,
                ip: peer.found.ipv4,
            },
            // The agreed instant on this agent's clock.
            start_at_ns: (start_ns as i64 + self.remote.offset_ns) as u64,
            lease_ms: LEASE.as_millis() as u64,
            clock_offset_ns,
            // A fleet's pair, or the one `--pair` names.
            pair: pair.map(str::to_string).or_else(|| req.pair.clone()),
        }
    }
}

impl Ends {
    /// The receiving host's CLOCK_MONOTONIC minus the sending host's.
    pub(super) fn clock(&self) -> Option<ClockCorrection> {
        crate::clock::monotonic_offset(
            (self.tx.remote.monotonic_ns, self.tx.remote.rtt_ns),
            (self.rx.remote.monotonic_ns, self.rx.remote.rtt_ns),
        )
    }

    /// Creates both sides' runs (the receiver's first), to start at one
    /// instant; if the sender's cannot be created, the receiver's is
    /// stopped.
    pub(super) fn start(&self, req: &Request) -> Result<(Side<'_>, Side<'_>)> {
        let start = unix_ns() + START_DELAY.as_nanos() as u64 + self.rtt_ns();
        self.start_at(req, start, None)
    }

    /// The longer round trip to the two agents, ns.
    pub(super) fn rtt_ns(&self) -> u64 {
        self.tx.remote.rtt_ns.max(self.rx.remote.rtt_ns)
    }

    /// [`Ends::start`] at `start` (ns since the Unix epoch, this host's
    /// clock), the runs labelled with their fleet `pair`.
    pub(super) fn start_at(
        &self,
        req: &Request,
        start: u64,
        pair: Option<&str>,
    ) -> Result<(Side<'_>, Side<'_>)> {
        let (tx, rx) = (&self.tx, &self.rx);
        let (mut txs, mut rxs) = (Side::new(&tx.remote), Side::new(&rx.remote));
        let c: Created = rx.remote.post(
            "/v1/runs",
            &rx.request(
                req,
                "rx",
                tx,
                start,
                self.clock().map(|c| c.offset_ns),
                pair,
            ),
            "the run request",
        )?;
        rxs.id = Some(c.id);
        match tx.remote.post::<Created>(
            "/v1/runs",
            &tx.request(req, "tx", rx, start, None, pair),
            "the run request",
        ) {
            Ok(c) => txs.id = Some(c.id),
            Err(e) => {
                rxs.stop(true);
                return Err(e.into());
            }
        }
        Ok((txs, rxs))
    }
}
