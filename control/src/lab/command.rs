//! `linerate lab up|down|status`.

use std::process::ExitCode;

use anyhow::Result;

use super::topology::{Lab, MGMT_A, MGMT_B};
use crate::cli::LabAction;
use linerate_host::{
    output::{self, emit},
    privilege,
};

/// `linerate lab up|down|status`.
pub fn command(action: LabAction) -> Result<ExitCode> {
    match action {
        LabAction::Up {
            mtu,
            queues,
            mgmt,
            lab,
        } => {
            privilege::require_root("linerate lab up")?;
            let lab = Lab::new(&lab.name)?;
            // What a killed run left changed on it is put back, and said.
            linerate_host::putback::replay_all().warn();
            lab.up(mtu, queues)?;
            if mgmt {
                if let Err(e) = lab.add_mgmt() {
                    let _ = lab.down();
                    return Err(e);
                }
                emit(&format!(
                    "management: {} <-> {} ({}), {} <-> {} ({})\n",
                    MGMT_A.0, MGMT_A.1, lab.ns_a, MGMT_B.0, MGMT_B.1, lab.ns_b
                ))?;
            }
            emit(&format!(
                "lab {} up: {} ({}, {}) <-> {} ({}, {}), MTU {mtu}, {queues} queue(s)\n",
                lab.name, lab.if_a, lab.ns_a, lab.ip_a, lab.if_b, lab.ns_b, lab.ip_b
            ))?;
        }
        LabAction::Down { lab } => {
            privilege::require_root("linerate lab down")?;
            let lab = Lab::new(&lab.name)?;
            linerate_host::putback::replay_all().warn();
            lab.down()?;
            emit(&format!("lab {} down\n", lab.name))?;
        }
        LabAction::Status { lab, json } => {
            let status = Lab::new(&lab.name)?.status();
            say_what_runs_left();
            if json {
                output::emit_json(&status)?;
            } else if status.up {
                emit(&format!(
                    "lab {} up: {} ({}) <-> {} ({}), MTU {}, {} queue(s), XDP programs: {:?}\n",
                    status.lab.name,
                    status.lab.if_a,
                    status.lab.ns_a,
                    status.lab.if_b,
                    status.lab.ns_b,
                    status.mtu.map_or("?".into(), |m| m.to_string()),
                    status.queues.map_or("?".into(), |m| m.to_string()),
                    status.xdp
                ))?;
            } else {
                emit(&format!("lab {} is down\n", status.lab.name))?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Says (on stderr) what runs that ended without cleaning up (SIGKILL, a
/// crash) left changed in the kernel, from their journals, without
/// changing it: `lab up|down`, `doctor` and the next run put it back.
fn say_what_runs_left() {
    if !nix::unistd::geteuid().is_root() {
        return;
    }
    let (left, refused) =
        linerate_host::journal::left(std::path::Path::new(linerate_host::journal::DIR));
    for l in &left {
        for e in &l.entries {
            let (netns, iface) = e.iface();
            eprintln!(
                "linerate: warning: a run that did not end cleanly left a setting of {} changed ({}): `linerate lab up` or `linerate doctor` puts it back",
                linerate_host::shown::shown(&match netns {
                    Some(ns) => format!("{iface} (namespace {ns})"),
                    None => iface.to_string(),
                }),
                linerate_host::shown::shown(&l.path.display().to_string())
            );
        }
    }
    for r in &refused {
        eprintln!(
            "linerate: warning: a run's journal: {}",
            linerate_host::shown::shown(&r.to_string())
        );
    }
}
