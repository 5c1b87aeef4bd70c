//! `linerate fleet prometheus`: a Prometheus configuration that scrapes
//! every agent of an inventory (both sides of each pair) with its own
//! token, each target labelled with its pair and side (docs/fleet.md,
//! "Metrics").
//!
//! One scrape job per agent (the token file is a job's setting), with
//! `honor_labels: true`: a run's own `pair` label (the agent serves it,
//! docs/metrics.md) is kept as it is instead of being renamed
//! `exported_pair`, and the target's `pair` fills in for series that have
//! none (an idle agent's cores, a one-pair run).

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
    time::Duration,
};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::cli::FleetPrometheusArgs;
use linerate_host::inventory::{Inventory, Side};

/// The whole configuration (the part of Prometheus's format it uses).
#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct Config {
    /// Defaults of every job.
    pub global: Global,
    /// One job per agent.
    pub scrape_configs: Vec<ScrapeConfig>,
}

/// `global:`.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct Global {
    /// How often targets are scraped.
    pub scrape_interval: String,
    /// How often rules are evaluated.
    pub evaluation_interval: String,
}

/// One `scrape_configs:` entry: one agent.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct ScrapeConfig {
    /// `linerate-PAIR-SIDE`.
    pub job_name: String,
    /// The agent's own labels win (its run's `pair`).
    pub honor_labels: bool,
    /// As `global`.
    pub scrape_interval: String,
    /// At most the interval.
    pub scrape_timeout: String,
    /// `/metrics`.
    pub metrics_path: String,
    /// `http`: agents speak plain HTTP on a management network.
    pub scheme: String,
    /// The agent's token.
    pub authorization: Authorization,
    /// The agent.
    pub static_configs: Vec<StaticConfig>,
}

/// `authorization:` with a bearer token read from a file.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct Authorization {
    /// `Bearer`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The file holding the token.
    pub credentials_file: PathBuf,
}

/// `static_configs:` entry.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct StaticConfig {
    /// `HOST:PORT`.
    pub targets: Vec<String>,
    /// `pair` and `side`.
    pub labels: Labels,
}

/// A target's labels.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct Labels {
    /// The inventory's pair name.
    pub pair: String,
    /// `tx` or `rx`.
    pub side: String,
}

/// A duration as Prometheus writes them: whole seconds or milliseconds.
fn prometheus_duration(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// The shortest interval written: Prometheus keeps milliseconds.
const MIN_INTERVAL: Duration = Duration::from_millis(100);
/// The longest: a target not scraped for 5 min goes stale.
const MAX_INTERVAL: Duration = Duration::from_secs(300);

/// The configuration for `inventory`; with `credentials_dir`, each token
/// file is looked for there under its own file name (where the Prometheus
/// server reads copies of the tokens).
pub fn config(
    inventory: &Inventory,
    interval: Duration,
    credentials_dir: Option<&Path>,
) -> Result<Config, String> {
    if !(MIN_INTERVAL..=MAX_INTERVAL).contains(&interval) {
        return Err(format!(
            "--interval {}: give 100ms to 5m (Prometheus marks a series stale after 5 min unscraped)",
            humantime::format_duration(interval)
        ));
    }
    let every = prometheus_duration(interval);
    let credentials = |side: &Side| -> Result<PathBuf, String> {
        let Some(dir) = credentials_dir else {
            return Ok(side.token_file.clone());
        };
        let name = side.token_file.file_name().ok_or_else(|| {
            format!(
                "token file {} has no file name to look for in --credentials-dir",
                side.token_file.display()
            )
        })?;
        Ok(dir.join(name))
    };
    let mut jobs = Vec::with_capacity(inventory.pairs.len() * 2);
    for pair in &inventory.pairs {
        for (name, side) in [("tx", &pair.tx), ("rx", &pair.rx)] {
            let target = side
                .agent
                .strip_prefix("http://")
                .map(|t| t.trim_end_matches('/'))
                .ok_or_else(|| format!("agent {:?} is not http://HOST:PORT", side.agent))?;
            jobs.push(ScrapeConfig {
                job_name: format!("linerate-{}-{name}", pair.name),
                honor_labels: true,
                scrape_interval: every.clone(),
                scrape_timeout: every.clone(),
                metrics_path: "/metrics".into(),
                scheme: "http".into(),
                authorization: Authorization {
                    kind: "Bearer".into(),
                    credentials_file: credentials(side)?,
                },
                static_configs: vec![StaticConfig {
                    targets: vec![target.to_string()],
                    labels: Labels {
                        pair: pair.name.clone(),
                        side: name.into(),
                    },
                }],
            });
        }
    }
    Ok(Config {
        global: Global {
            scrape_interval: every.clone(),
            evaluation_interval: every,
        },
        scrape_configs: jobs,
    })
}

/// The configuration as YAML, with a header naming where it came from:
/// every value quoted as YAML needs by the serializer, the inventory's
/// path in the comment on its line ([`linerate_host::shown::yaml_comment`]).
pub fn render(config: &Config, inventory: &Path) -> Result<String> {
    let body = serde_yaml_ng::to_string(config).context("writing the configuration as YAML")?;
    Ok(format!(
        "# Prometheus configuration for the linerate fleet of {} (linerate fleet prometheus):\n\
         # every agent scraped with its token; see docs/fleet.md, \"Metrics\".\n{body}",
        linerate_host::shown::yaml_comment(&inventory.display().to_string())
    ))
}

/// `linerate fleet prometheus`.
pub fn command(args: &FleetPrometheusArgs) -> Result<ExitCode> {
    let inventory = Inventory::load(&args.inventory)?;
    let config = config(&inventory, args.interval, args.credentials_dir.as_deref())
        .map_err(anyhow::Error::msg)?;
    linerate_host::output::print(&render(&config, &args.inventory)?)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_host::inventory::Pair;

    fn side(agent: &str, iface: &str, token: &str) -> Side {
        Side {
            agent: agent.into(),
            iface: iface.into(),
            token_file: token.into(),
        }
    }

    fn two_pairs() -> Inventory {
        let pair = |name: &str, a: &str, b: &str| Pair {
            name: name.into(),
            lab: None,
            tx: side(a, &format!("{name}-a0"), &format!("/run/lr/{name}-a.token")),
            rx: side(b, &format!("{name}-b0"), &format!("/run/lr/{name}-b.token")),
            port: None,
        };
        Inventory::new(vec![
            pair("fl0", "http://198.19.0.2:7480", "http://198.19.0.6:7480/"),
            pair(
                "rack.b-1",
                "http://host-b1:7480",
                "http://[2001:db8::7]:7481",
            ),
        ])
        .unwrap()
    }

    #[test]
    fn every_agent_scraped_with_its_token_and_labels() {
        let inv = two_pairs();
        let c = config(&inv, Duration::from_secs(1), None).unwrap();
        let text = render(&c, Path::new("/tmp/fleet.toml")).unwrap();
        // It parses as YAML, into the same configuration.
        let back: Config = serde_yaml_ng::from_str(&text).unwrap();
        assert_eq!(back, c);
        // And as any YAML: the keys Prometheus reads.
        let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).unwrap();
        assert_eq!(v["global"]["scrape_interval"].as_str(), Some("1s"));
        let jobs = v["scrape_configs"].as_sequence().unwrap();
        let want = [
            ("fl0", "tx", "198.19.0.2:7480", "/run/lr/fl0-a.token"),
            ("fl0", "rx", "198.19.0.6:7480", "/run/lr/fl0-b.token"),
            ("rack.b-1", "tx", "host-b1:7480", "/run/lr/rack.b-1-a.token"),
            (
                "rack.b-1",
                "rx",
                "[2001:db8::7]:7481",
                "/run/lr/rack.b-1-b.token",
            ),
        ];
        assert_eq!(jobs.len(), want.len(), "{text}");
        for (job, (pair, side, target, token)) in jobs.iter().zip(want) {
            assert_eq!(
                job["job_name"].as_str(),
                Some(format!("linerate-{pair}-{side}").as_str())
            );
            assert_eq!(job["honor_labels"].as_bool(), Some(true));
            assert_eq!(job["scrape_timeout"].as_str(), Some("1s"));
            assert_eq!(job["metrics_path"].as_str(), Some("/metrics"));
            assert_eq!(job["authorization"]["type"].as_str(), Some("Bearer"));
            assert_eq!(
                job["authorization"]["credentials_file"].as_str(),
                Some(token)
            );
            let s = &job["static_configs"][0];
            assert_eq!(s["targets"][0].as_str(), Some(target), "{text}");
            assert_eq!(s["labels"]["pair"].as_str(), Some(pair));
            assert_eq!(s["labels"]["side"].as_str(), Some(side));
        }
    }

    #[test]
    fn text_from_the_inventory_starts_no_line_of_yaml() {
        let hostile = "a\nglobal: {scrape_interval: 1h}\n#.toml";
        let mut inv = two_pairs();
        inv.pairs[0].tx.token_file = format!("/run/lr/{hostile}").into();
        inv.pairs[0].rx.agent = "http://h:1/\nglobal: {scrape_interval: 1h}".into();
        let c = config(&inv, Duration::from_secs(1), None).unwrap();
        let text = render(&c, Path::new(hostile)).unwrap();
        // The path in the header: one comment line; the values: quoted.
        assert!(
            text.starts_with("# Prometheus configuration for the linerate fleet of a\\u{a}global: {scrape_interval: 1h}\\u{a}#.toml (linerate fleet prometheus):\n# every agent"),
            "{text}"
        );
        assert!(!text.lines().any(|l| l.starts_with("global: {")), "{text}");
        let back: Config = serde_yaml_ng::from_str(&text).unwrap();
        assert_eq!(back, c);
        assert_eq!(back.global.scrape_interval, "1s");
        assert_eq!(
            back.scrape_configs[0].authorization.credentials_file,
            Path::new(&format!("/run/lr/{hostile}"))
        );
        assert_eq!(
            back.scrape_configs[1].static_configs[0].targets,
            ["h:1/\nglobal: {scrape_interval: 1h}"]
        );
    }

    #[test]
    fn credentials_dir_and_interval() {
        let inv = two_pairs();
        let c = config(
            &inv,
            Duration::from_millis(1500),
            Some(Path::new("/etc/prometheus/linerate")),
        )
        .unwrap();
        assert_eq!(c.global.scrape_interval, "1500ms");
        assert_eq!(
            c.scrape_configs[3].authorization.credentials_file,
            Path::new("/etc/prometheus/linerate/rack.b-1-b.token")
        );
        for bad in [Duration::from_millis(10), Duration::from_secs(600)] {
            let e = config(&inv, bad, None).unwrap_err();
            assert!(e.contains("give 100ms to 5m"), "{e}");
        }
    }
}
