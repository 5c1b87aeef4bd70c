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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::{expand, spec::SweepSpec};

    /// A preset that sends with `--tx-engine auto` gives no AF_XDP sender
    /// option (--tx-wait, --batch, ...) itself: auto would read it as the
    /// user's wish for AF_XDP and not send with the fastest engine.
    #[test]
    fn auto_presets_leave_the_sender_to_auto() {
        use crate::{cli::TxEngineArg, request::RunRequest};
        for (name, _, text) in PRESETS {
            let s = SweepSpec::parse(text, name).unwrap();
            for (pi, part) in s.parts.iter().enumerate() {
                for p in expand::points(pi, part) {
                    let a = expand::argv(part, &p, &[], false).unwrap();
                    let Ok(RunRequest::Stream(args)) = expand::parse(part.kind, &a) else {
                        continue;
                    };
                    if args.tx_engine == TxEngineArg::Auto {
                        let given = crate::engine::af_xdp_sender_options(&args);
                        assert_eq!(given, None, "{name} {}", p.describe());
                    }
                }
            }
        }
    }

    #[test]
    fn every_preset_parses_and_every_point_checks() {
        for (name, _, text) in PRESETS {
            let s = SweepSpec::parse(text, name).unwrap_or_else(|e| panic!("{e}"));
            s.check_run_only(text, name)
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(s.name, name);
            assert!(
                !s.references.is_empty(),
                "{name} sets no reference beside ours"
            );
            for (pi, part) in s.parts.iter().enumerate() {
                assert!(!part.tables.is_empty(), "{name}");
                for p in expand::points(pi, part) {
                    let a = expand::argv(part, &p, &[], true).unwrap();
                    expand::parse(part.kind, &a)
                        .unwrap_or_else(|e| panic!("{name} {}: {e}", p.describe()));
                }
            }
        }
    }
}
