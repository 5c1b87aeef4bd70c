//! The built-in sweeps, one per reference document.

/// (name, what it reproduces, the sweep file).
pub const PRESETS: [(&str, &str, &str); 5] = [
    (
        "fc-modes",
        "000: message size x blocking/non-blocking Read/Write, both directions",
        include_str!("../../presets/fc-modes.toml"),
    ),
    (
        "service-demand",
        "001: throughput, CPU and service demand at 1/4/8 KB; AF_XDP vs kernel UDP/TCP",
        include_str!("../../presets/service-demand.toml"),
    ),
    (
        "rpc",
        "002: RPC transfer rate 100 B..1 MB, forward and -r, null RPC",
        include_str!("../../presets/rpc.toml"),
    ),
    (
        "bs2000",
        "004: transaction rate, 16 flows x 64 KB at MTU 1500/9000, one flow by length",
        include_str!("../../presets/bs2000.toml"),
    ),
    (
        "wait-modes",
        "000 today: wait modes and NAPI placement x offered load, AF_XDP and udp, rr per mode",
        include_str!("../../presets/wait-modes.toml"),
    ),
];

/// The preset called `name`.
pub fn get(name: &str) -> Option<&'static str> {
    PRESETS.iter().find(|p| p.0 == name).map(|p| p.2)
}
