//! A fleet's inventory: the host pairs one controller drives (docs/fleet.md).
//! One TOML file, one `[[pair]]` each, with its sending and receiving
//! agents; `linerate fleet up` writes one for lab pairs on this host, and
//! real hosts are listed the same way by hand. Read whole, checked whole:
//! names are names (the kernel's rules), agents are `http://HOST:PORT`,
//! token files absolute paths.

use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::files::{self, FileError};

/// Most pairs one inventory lists.
pub const MAX_PAIRS: usize = 1024;
/// Largest inventory file read.
const MAX_BYTES: u64 = 1 << 20;
/// The format written (and the only one read).
pub const VERSION: u32 = 1;

/// Why an inventory cannot be had.
#[derive(Debug, Error)]
pub enum InventoryError {
    /// Reading or writing the file.
    #[error(transparent)]
    File(#[from] FileError),
    /// Not TOML of this format.
    #[error("inventory {path}: {message}: see docs/fleet.md for the format")]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The parser's words.
        message: String,
    },
    /// Parsed, but one entry breaks a rule.
    #[error("inventory {path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What and how to fix it.
        message: String,
    },
}

/// The whole file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Inventory {
    /// Format version ([`VERSION`]).
    pub version: u32,
    /// The pairs, in the order runs report them.
    #[serde(default, rename = "pair")]
    pub pairs: Vec<Pair>,
}

/// One pair of hosts: a sender and a receiver joined by the link under test.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pair {
    /// Its name in results, metrics labels and reports (1 to 32 letters,
    /// digits, '-', '_' or '.').
    pub name: String,
    /// The lab `fleet up` made for it on this host (`fleet down` removes
    /// it); absent for real hosts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lab: Option<String>,
    /// The sending side (rr: the client).
    pub tx: Side,
    /// The receiving side (rr: the responder).
    pub rx: Side,
    /// The UDP port of this pair's test traffic (its runs' `--port`), for
    /// pairs whose hosts share an address (agents on 127.0.0.1 serving
    /// `lo`): their ports at least 1,025 apart, since senders use the 1,024
    /// ports above it. Absent: the run's `--port`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
}

/// One host of a pair: its agent and the interface under test.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Side {
    /// The agent, `http://HOST:PORT`.
    pub agent: String,
    /// The interface under test, as the agent names it.
    pub iface: String,
    /// The file holding this agent's token (mode 600), an absolute path.
    pub token_file: PathBuf,
}

impl Inventory {
    /// An inventory of these pairs, checked.
    pub fn new(pairs: Vec<Pair>) -> Result<Self, String> {
        let inventory = Self {
            version: VERSION,
            pairs,
        };
        inventory.check()?;
        Ok(inventory)
    }

    /// Reads and checks `path`: a regular file of at most 1 MiB, the user's
    /// running linerate or root's and writable by no one else (it chooses
    /// the hosts each token file is sent to), through a link only where
    /// root alone owns every component (`files::read_input`).
    pub fn load(path: &Path) -> Result<Self, InventoryError> {
        let text = files::read_input_text(path, MAX_BYTES, files::Trust::Mine)?;
        let inventory: Self = toml::from_str(&text).map_err(|e| InventoryError::Syntax {
            path: path.to_path_buf(),
            message: e.message().to_string(),
        })?;
        inventory
            .check()
            .map_err(|message| InventoryError::Invalid {
                path: path.to_path_buf(),
                message,
            })?;
        Ok(inventory)
    }

    /// Writes the inventory to `path` whole (replaced atomically, mode 644:
    /// it names token files, it holds no secret).
    pub fn save(&self, path: &Path) -> Result<(), InventoryError> {
        let mut text = String::from(
            "# linerate fleet inventory: one [[pair]] per host pair (docs/fleet.md)\n",
        );
        text.push_str(&toml::to_string(self).map_err(|e| InventoryError::Syntax {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?);
        files::write_atomic(path, text.as_bytes(), 0o644)?;
        Ok(())
    }

    /// Every rule of the format; the first broken one, with its fix.
    pub fn check(&self) -> Result<(), String> {
        if self.version != VERSION {
            return Err(format!(
                "version {} is not one this linerate reads: write version = {VERSION}",
                self.version
            ));
        }
        if self.pairs.is_empty() {
            return Err("no [[pair]]: list at least one pair".into());
        }
        if self.pairs.len() > MAX_PAIRS {
            return Err(format!(
                "{} pairs: at most {MAX_PAIRS} are driven from one controller",
                self.pairs.len()
            ));
        }
        let mut names = BTreeSet::new();
        for pair in &self.pairs {
            check_pair_name(&pair.name)?;
            if !names.insert(pair.name.as_str()) {
                return Err(format!(
                    "pair {:?} is listed twice: give every pair its own name",
                    pair.name
                ));
            }
            if let Some(port) = pair.port.filter(|p| !(1..=MAX_PORT).contains(p)) {
                return Err(format!(
                    "pair {}: port {port} is not one of 1 to {MAX_PORT} (the 1,024 ports above it are the senders')",
                    pair.name
                ));
            }
            if let Some(lab) = &pair.lab {
                crate::limits::check_name(lab).map_err(|e| format!("pair {}: {e}", pair.name))?;
            }
            for (side, which) in [(&pair.tx, "tx"), (&pair.rx, "rx")] {
                side.check()
                    .map_err(|e| format!("pair {} {which}: {e}", pair.name))?;
            }
        }
        Ok(())
    }
}

impl Side {
    fn check(&self) -> Result<(), String> {
        check_agent_url(&self.agent)?;
        linerate_datapath::names::check_iface(&self.iface).map_err(|e| e.to_string())?;
        if !self.token_file.is_absolute() {
            return Err(format!(
                "token_file {} is relative: give an absolute path (the controller and the agent may not share a working directory)",
                self.token_file.display()
            ));
        }
        Ok(())
    }
}

/// The highest UDP port of a pair's test traffic: senders use the 1,024
/// above it.
pub const MAX_PORT: u16 = 64_511;

/// A pair's name: 1 to 32 letters, digits, '-', '_' or '.' (it becomes a
/// metrics label and a file name in reports).
pub fn check_pair_name(name: &str) -> Result<(), String> {
    if name.is_empty()
        || name.len() > 32
        || name.starts_with('.')
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(format!(
            "pair name {name:?} is invalid: use 1 to 32 letters, digits, '-', '_' or '.', not starting with '.'"
        ));
    }
    Ok(())
}

/// An agent's address: `http://HOST:PORT`, HOST a name or an IP address
/// (IPv6 in brackets), nothing after the port but an optional '/'.
pub fn check_agent_url(url: &str) -> Result<(), String> {
    let bad = |why: &str| {
        Err(format!(
            "agent {url:?} {why}: write http://HOST:PORT (e.g. http://198.19.0.2:7480)"
        ))
    };
    let Some(rest) = url.strip_prefix("http://") else {
        return bad("is not plain http (agents speak HTTP on a management network)");
    };
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let (host, port) = match rest.rsplit_once(':') {
        Some((h, p)) => (h, p),
        None => return bad("has no port"),
    };
    if port.parse::<u16>().map_or(true, |p| p == 0) {
        return bad("has no valid port");
    }
    let host_ok = if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        v6.parse::<std::net::Ipv6Addr>().is_ok()
    } else {
        !host.is_empty()
            && host.len() <= 253
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.'))
    };
    if !host_ok {
        return bad("has no valid host");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(agent: &str, iface: &str) -> Side {
        Side {
            agent: agent.into(),
            iface: iface.into(),
            token_file: "/run/linerate/t".into(),
        }
    }

    fn pair(name: &str) -> Pair {
        Pair {
            name: name.into(),
            lab: Some("fl0".into()),
            tx: side("http://198.19.0.2:7480", "fl0-a0"),
            rx: side("http://198.19.0.6:7480", "fl0-b0"),
            port: None,
        }
    }

    #[test]
    fn saved_inventories_load_back_equal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fleet.toml");
        let mut second = pair("p1");
        second.port = Some(8_496);
        let inv = Inventory::new(vec![pair("p0"), second]).unwrap();
        inv.save(&path).unwrap();
        assert_eq!(Inventory::load(&path).unwrap(), inv);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("[[pair]]"), "{text}");
        assert!(text.contains("[pair.tx]"), "{text}");
        assert_eq!(text.matches("port = 8496").count(), 1, "{text}");
    }

    #[test]
    fn broken_entries_are_named() {
        type Spoil = Box<dyn Fn(&mut Inventory)>;
        let cases: Vec<(Spoil, &str)> = vec![
            (Box::new(|i| i.pairs[1].name = "p0".into()), "listed twice"),
            (Box::new(|i| i.pairs[0].name = "../x".into()), "pair name"),
            (
                Box::new(|i| i.pairs[0].tx.agent = "https://a:1".into()),
                "pair p0 tx: agent",
            ),
            (
                Box::new(|i| i.pairs[0].rx.agent = "http://a".into()),
                "no port",
            ),
            (
                Box::new(|i| i.pairs[0].rx.agent = "http://a b:80".into()),
                "no valid host",
            ),
            (
                Box::new(|i| i.pairs[0].rx.iface = "../../etc".into()),
                "pair p0 rx",
            ),
            (
                Box::new(|i| i.pairs[0].tx.token_file = "t".into()),
                "relative",
            ),
            (Box::new(|i| i.pairs.clear()), "no [[pair]]"),
            (Box::new(|i| i.version = 2), "version 2"),
            (
                Box::new(|i| i.pairs[0].lab = Some("much-too-long".into())),
                "lab name",
            ),
            (
                Box::new(|i| i.pairs[1].port = Some(64_512)),
                "pair p1: port 64512 is not one of 1 to 64511",
            ),
            (Box::new(|i| i.pairs[0].port = Some(0)), "port 0"),
        ];
        for (spoil, want) in cases {
            let mut inv = Inventory::new(vec![pair("p0"), pair("p1")]).unwrap();
            spoil(&mut inv);
            let e = inv.check().unwrap_err();
            assert!(e.contains(want), "{want:?} not in {e:?}");
        }
    }

    #[test]
    fn ipv6_and_names_are_agents() {
        for ok in [
            "http://[2001:2::1]:7480",
            "http://host-1.lab:1/",
            "http://198.19.0.2:7480",
        ] {
            check_agent_url(ok).unwrap();
        }
        for bad in [
            "http://[zz]:1",
            "http://h:0",
            "http://h:99999",
            "ftp://h:1",
            "http://:1",
        ] {
            assert!(check_agent_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn unknown_keys_and_bad_toml_are_refused_with_the_file_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fleet.toml");
        std::fs::write(&path, "version = 1\n[[pair]]\nname = \"a\"\ncolour = 1\n").unwrap();
        let e = Inventory::load(&path).unwrap_err().to_string();
        assert!(
            e.contains("fleet.toml") && e.contains("docs/fleet.md"),
            "{e}"
        );
        std::fs::write(&path, "version = 1\n").unwrap();
        let e = Inventory::load(&path).unwrap_err().to_string();
        assert!(e.contains("no [[pair]]"), "{e}");
    }
}
