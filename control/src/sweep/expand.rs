//! A sweep point's arguments parsed and checked by the same clap
//! definitions as the command line (no system access).

use linerate_report::sweep::spec::Kind;

use crate::request::RunRequest;

/// Parses and checks a point's arguments (no system access): clap's errors
/// for unknown options or bad values, the command's own range checks.
pub fn parse(kind: Kind, argv: &[String]) -> Result<RunRequest, String> {
    match kind {
        Kind::Stream => RunRequest::stream(argv),
        Kind::Rr => RunRequest::rr(argv),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_report::sweep::{
        points::{argv, points},
        presets::PRESETS,
        spec::SweepSpec,
    };

    fn spec(extra: &str) -> SweepSpec {
        SweepSpec::parse(
            &format!(
                "name = \"t\"\nkind = \"stream\"\n[fixed]\nmtu = 1500\nreverse = false\n{extra}\n[[axis]]\nname = \"message\"\nvalues = [64, 1024, 65500]\n[[axis]]\nname = \"mode\"\nvalues = [{{tx_wait = \"busy\", rx_wait = \"busy\"}}, {{tx_wait = \"wait\", rx_wait = \"wait\"}}]\n"
            ),
            "t.toml",
        )
        .unwrap()
    }

    #[test]
    fn points_become_command_lines() {
        let s = spec("");
        let p = points(0, &s.parts[0]);
        let a = argv(&s.parts[0], &p[1], &["--lab".into(), "x".into()], true).unwrap();
        assert_eq!(
            a,
            [
                "--mtu",
                "1500",
                "--message",
                "64",
                "--rx-wait",
                "wait",
                "--tx-wait",
                "wait",
                "--lab",
                "x",
                "--warmup",
                "0.5s",
                "--duration",
                "1s"
            ]
        );
        let RunRequest::Stream(st) = parse(Kind::Stream, &a).unwrap() else {
            panic!()
        };
        assert_eq!(st.message, Some(64));
        assert_eq!(st.run.lab.name, "x");
    }

    #[test]
    fn bad_settings_are_refused_before_running() {
        let s = spec("colour = 3");
        let p = points(0, &s.parts[0]);
        let a = argv(&s.parts[0], &p[0], &[], false).unwrap();
        let e = parse(Kind::Stream, &a).unwrap_err();
        assert!(e.contains("--colour"), "{e}");
        let s = spec("queues = 0");
        let a = argv(&s.parts[0], &points(0, &s.parts[0])[0], &[], false).unwrap();
        let e = parse(Kind::Stream, &a).unwrap_err();
        assert!(e.contains("invalid value '0' for '--queues"), "{e}");
    }

    /// A preset that sends with `--tx-engine auto` gives no AF_XDP sender
    /// option (--tx-wait, --batch, ...) itself: auto would read it as the
    /// user's wish for AF_XDP and not send with the fastest engine.
    #[test]
    fn auto_presets_leave_the_sender_to_auto() {
        use crate::cli::TxEngineArg;
        for (name, _, text) in PRESETS {
            let s = SweepSpec::parse(text, name).unwrap();
            for (pi, part) in s.parts.iter().enumerate() {
                for p in points(pi, part) {
                    let a = argv(part, &p, &[], false).unwrap();
                    let Ok(RunRequest::Stream(args)) = parse(part.kind, &a) else {
                        continue;
                    };
                    if args.tx_engine == TxEngineArg::Auto {
                        let given = crate::plan::stream::af_xdp_sender_options(&args);
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
                for p in points(pi, part) {
                    let a = argv(part, &p, &[], true).unwrap();
                    parse(part.kind, &a).unwrap_or_else(|e| panic!("{name} {}: {e}", p.describe()));
                }
            }
        }
    }
}
