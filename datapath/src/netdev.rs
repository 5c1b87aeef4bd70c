//! The kernel's netdev generic-netlink family: `napi-get` (a dump of an
//! interface's NAPI instances with their settings) and `napi-set` (a
//! NAPI's `defer-hard-irqs`, `gro-flush-timeout`, `irq-suspend-timeout`),
//! through neli. Linux 6.13+ for napi-set; the attribute numbers are
//! those of include/uapi/linux/netdev.h.

use neli::{
    attr::Attribute,
    consts::{nl::NlmF, socket::NlFamily},
    genl::{AttrTypeBuilder, Genlmsghdr, GenlmsghdrBuilder, NlattrBuilder},
    neli_enum,
    nl::NlPayload,
    router::synchronous::NlRouter,
    types::{Buffer, GenlBuffer},
    utils::Groups,
};
use serde::{Deserialize, Serialize};

/// Commands of the netdev family that linerate uses.
#[neli_enum(serialized_type = "u8")]
pub enum NetdevCmd {
    /// None.
    Unspec = 0,
    /// NETDEV_CMD_NAPI_GET.
    NapiGet = 11,
    /// NETDEV_CMD_NAPI_SET.
    NapiSet = 14,
}
impl neli::consts::genl::Cmd for NetdevCmd {}

/// Attributes of a NAPI instance (enum netdev_a_napi).
#[neli_enum(serialized_type = "u16")]
pub enum NapiAttr {
    /// None.
    Unspec = 0,
    /// ifindex of the device.
    Ifindex = 1,
    /// The NAPI's id.
    Id = 2,
    /// Its interrupt.
    Irq = 3,
    /// Its kernel thread's pid (threaded NAPI).
    Pid = 4,
    /// Empty polls before interrupts are unmasked again.
    DeferHardIrqs = 5,
    /// ns of the re-poll timer (uint: 4 or 8 bytes).
    GroFlushTimeout = 6,
    /// ns of IRQ suspension (uint; Linux 6.13+).
    IrqSuspendTimeout = 7,
    /// Threaded (Linux 6.17+).
    Threaded = 8,
}
impl neli::consts::genl::NlAttrType for NapiAttr {}

/// The family's version in requests.
const VERSION: u8 = 1;

/// One NAPI instance as napi-get reports it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Napi {
    /// Its id.
    pub id: u32,
    /// Its device's ifindex.
    pub ifindex: u32,
    /// Its kernel thread (threaded NAPI).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The settings.
    pub config: NapiConfig,
}

/// The settings of a NAPI that the wait modes change.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NapiConfig {
    /// `defer-hard-irqs`.
    pub defer_hard_irqs: u32,
    /// `gro-flush-timeout`, ns.
    pub gro_flush_timeout_ns: u64,
    /// `irq-suspend-timeout`, ns (None: the kernel does not report one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq_suspend_timeout_ns: Option<u64>,
}

/// What went wrong talking to the netdev family.
#[derive(Debug, thiserror::Error)]
pub enum NetdevError {
    /// The socket or the family could not be had.
    #[error("the netdev netlink family (Linux 6.13+ for napi-set) is not available: {0}")]
    Family(String),
    /// A request failed.
    #[error("netdev {what}: {detail}")]
    Request {
        /// napi-get or napi-set.
        what: &'static str,
        /// The kernel's answer.
        detail: String,
    },
}

type Attrs = GenlBuffer<NapiAttr, Buffer>;

fn attr<P: neli::Size + neli::ToBytes>(
    t: NapiAttr,
    payload: P,
) -> Result<neli::genl::Nlattr<NapiAttr, Buffer>, String> {
    NlattrBuilder::default()
        .nla_type(
            AttrTypeBuilder::default()
                .nla_type(t)
                .build()
                .map_err(|e| e.to_string())?,
        )
        .nla_payload(payload)
        .build()
        .map_err(|e| e.to_string())
}

/// The attributes of a napi-set of NAPI `id` to `config` (an
/// irq-suspend-timeout only when there is one).
pub fn set_attrs(id: u32, config: &NapiConfig) -> Result<Attrs, String> {
    let mut attrs = Attrs::new();
    attrs.push(attr(NapiAttr::Id, id)?);
    attrs.push(attr(NapiAttr::DeferHardIrqs, config.defer_hard_irqs)?);
    attrs.push(attr(
        NapiAttr::GroFlushTimeout,
        config.gro_flush_timeout_ns,
    )?);
    if let Some(ns) = config.irq_suspend_timeout_ns {
        attrs.push(attr(NapiAttr::IrqSuspendTimeout, ns)?);
    }
    Ok(attrs)
}

/// A netlink uint: 4 or 8 bytes, native order.
fn uint(payload: &[u8]) -> Option<u64> {
    match payload.len() {
        4 => Some(u64::from(u32::from_ne_bytes(payload.try_into().ok()?))),
        8 => Some(u64::from_ne_bytes(payload.try_into().ok()?)),
        _ => None,
    }
}

/// A NAPI from a napi-get answer's attributes (None without an id).
pub fn napi_of(attrs: &Attrs) -> Option<Napi> {
    let mut napi = Napi::default();
    let mut has_id = false;
    for a in attrs.iter() {
        let p: &[u8] = a.payload().as_ref();
        let v = uint(p);
        match a.nla_type().nla_type() {
            NapiAttr::Id => {
                napi.id = v? as u32;
                has_id = true;
            }
            NapiAttr::Ifindex => napi.ifindex = v? as u32,
            NapiAttr::Pid => napi.pid = v.map(|v| v as u32),
            NapiAttr::DeferHardIrqs => napi.config.defer_hard_irqs = v? as u32,
            NapiAttr::GroFlushTimeout => napi.config.gro_flush_timeout_ns = v?,
            NapiAttr::IrqSuspendTimeout => napi.config.irq_suspend_timeout_ns = v,
            _ => {}
        }
    }
    has_id.then_some(napi)
}

/// A socket on the netdev family, in the network namespace of the thread
/// that opened it.
pub struct Netdev {
    router: NlRouter,
    family: u16,
}

impl Netdev {
    /// Opens the socket and resolves the family.
    pub fn open() -> Result<Self, NetdevError> {
        let (router, _) = NlRouter::connect(NlFamily::Generic, None, Groups::empty())
            .map_err(|e| NetdevError::Family(e.to_string()))?;
        let family = router
            .resolve_genl_family("netdev")
            .map_err(|e| NetdevError::Family(e.to_string()))?;
        Ok(Self { router, family })
    }

    /// The NAPI instances of interface `ifindex` (napi-get dump).
    pub fn napis(&self, ifindex: u32) -> Result<Vec<Napi>, NetdevError> {
        let err = |detail: String| NetdevError::Request {
            what: "napi-get",
            detail,
        };
        let mut attrs = Attrs::new();
        attrs.push(attr(NapiAttr::Ifindex, ifindex).map_err(err)?);
        let mut napis = Vec::new();
        for p in self.request("napi-get", NetdevCmd::NapiGet, NlmF::DUMP, attrs)? {
            napis.extend(napi_of(p.attrs()).filter(|n| n.ifindex == ifindex));
        }
        napis.sort_by_key(|n| n.id);
        Ok(napis)
    }

    /// Sets NAPI `id`'s settings (napi-set).
    pub fn set(&self, id: u32, config: &NapiConfig) -> Result<(), NetdevError> {
        let attrs = set_attrs(id, config).map_err(|detail| NetdevError::Request {
            what: "napi-set",
            detail,
        })?;
        self.request("napi-set", NetdevCmd::NapiSet, NlmF::ACK, attrs)
            .map(drop)
    }

    /// One request of the family and the payloads of its answers; an
    /// error answer is the request's error, named `what`.
    fn request(
        &self,
        what: &'static str,
        cmd: NetdevCmd,
        flags: NlmF,
        attrs: Attrs,
    ) -> Result<Vec<Genlmsghdr<NetdevCmd, NapiAttr>>, NetdevError> {
        let err = |detail: String| NetdevError::Request { what, detail };
        let msg = GenlmsghdrBuilder::default()
            .cmd(cmd)
            .version(VERSION)
            .attrs(attrs)
            .build()
            .map_err(|e| err(e.to_string()))?;
        let recv = self
            .router
            .send::<_, _, u16, Genlmsghdr<NetdevCmd, NapiAttr>>(
                self.family,
                flags,
                NlPayload::Payload(msg),
            )
            .map_err(|e| err(e.to_string()))?;
        let mut payloads = Vec::new();
        for m in recv {
            let m = m.map_err(|e| err(e.to_string()))?;
            if let Some(p) = m.get_payload() {
                payloads.push(p.clone());
            }
        }
        Ok(payloads)
    }
}

/// Runs `f` on a netdev socket opened in namespace `netns` (None: this
/// one), in a thread of its own (entering a namespace is per thread).
pub fn in_netns<T: Send + 'static>(
    netns: Option<&str>,
    f: impl FnOnce(&Netdev) -> Result<T, NetdevError> + Send + 'static,
) -> Result<T, NetdevError> {
    let ns = netns.unwrap_or("this one").to_string();
    crate::netns::in_thread(netns, move || f(&Netdev::open()?))
        .map_err(|e| NetdevError::Family(format!("namespace {ns}: {e}")))?
}

/// The ifindex of `iface` in the calling thread's namespace.
pub fn ifindex(iface: &str) -> Result<u32, NetdevError> {
    nix::net::if_::if_nametoindex(iface).map_err(|e| NetdevError::Request {
        what: "ifindex",
        detail: format!("interface {iface}: {e}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use neli::ToBytes;
    use std::io::Cursor;

    fn bytes(attrs: &Attrs) -> Vec<u8> {
        let mut c = Cursor::new(Vec::new());
        attrs.to_bytes(&mut c).unwrap();
        c.into_inner()
    }

    #[test]
    fn napi_set_carries_id_defer_and_timeouts_as_netdev_h_numbers_them() {
        let config = NapiConfig {
            defer_hard_irqs: 100,
            gro_flush_timeout_ns: 20_000,
            irq_suspend_timeout_ns: Some(20_000_000),
        };
        let b = bytes(&set_attrs(7, &config).unwrap());
        let mut want = Vec::new();
        // Each attribute: length (header 4 + payload), type, payload.
        want.extend([8, 0, 2, 0]);
        want.extend(7u32.to_ne_bytes());
        want.extend([8, 0, 5, 0]);
        want.extend(100u32.to_ne_bytes());
        want.extend([12, 0, 6, 0]);
        want.extend(20_000u64.to_ne_bytes());
        want.extend([12, 0, 7, 0]);
        want.extend(20_000_000u64.to_ne_bytes());
        assert_eq!(b, want);
        // Without an irq-suspend-timeout, none is sent.
        let plain = NapiConfig {
            irq_suspend_timeout_ns: None,
            ..config
        };
        assert_eq!(bytes(&set_attrs(7, &plain).unwrap()), want[..28]);
    }

    #[test]
    fn napi_get_answers_decode_with_4_or_8_byte_uints() {
        let mut attrs = Attrs::new();
        attrs.push(attr(NapiAttr::Ifindex, 3u32).unwrap());
        attrs.push(attr(NapiAttr::Id, 8193u32).unwrap());
        attrs.push(attr(NapiAttr::Pid, 612u32).unwrap());
        attrs.push(attr(NapiAttr::DeferHardIrqs, 2u32).unwrap());
        attrs.push(attr(NapiAttr::GroFlushTimeout, 50_000u32).unwrap());
        attrs.push(attr(NapiAttr::IrqSuspendTimeout, 5_000_000_000u64).unwrap());
        attrs.push(attr(NapiAttr::Threaded, 1u32).unwrap());
        assert_eq!(
            napi_of(&attrs),
            Some(Napi {
                id: 8193,
                ifindex: 3,
                pid: Some(612),
                config: NapiConfig {
                    defer_hard_irqs: 2,
                    gro_flush_timeout_ns: 50_000,
                    irq_suspend_timeout_ns: Some(5_000_000_000),
                },
            })
        );
        // No id: not a NAPI.
        let mut none = Attrs::new();
        none.push(attr(NapiAttr::Ifindex, 3u32).unwrap());
        assert_eq!(napi_of(&none), None);
    }
}
