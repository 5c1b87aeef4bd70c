//! Two hosts for the tests: a lab with its management links and a
//! `linerate agent` in each of its namespaces (tests/agent.rs,
//! tests/generator_two_host.rs).

use std::{
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use crate::common::{linerate, run};

/// A token file holding `token` (mode 0600), named after `lab` and `name`.
pub fn token_file(lab: &str, name: &str, token: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("{lab}-token-{name}-{}", std::process::id()));
    std::fs::write(&p, token).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    p
}

/// The lab with its management links and the agents' token file, both
/// removed on drop.
pub struct MgmtLab {
    pub name: &'static str,
    pub token: PathBuf,
}

impl MgmtLab {
    pub fn up(name: &'static str, token: &str) -> Self {
        let out = run(&["lab", "up", "--lab", name, "--mgmt"]);
        assert!(
            out.status.success(),
            "lab up --mgmt failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Self {
            name,
            token: token_file(name, "agents", token),
        }
    }
}

impl Drop for MgmtLab {
    fn drop(&mut self) {
        let _ = run(&["lab", "down", "--lab", self.name]);
        // The agents are gone by now: their token file goes too.
        let _ = std::fs::remove_file(&self.token);
    }
}

/// An agent in a namespace, stopped (SIGTERM, then SIGKILL) on drop.
pub struct Agent {
    pub child: Child,
    pub url: String,
}

impl Agent {
    /// Starts `linerate agent` in `ns` on `listen` for `lab`'s interfaces
    /// and waits until it answers `token`.
    pub fn start(ns: &str, listen: &str, lab: &str, token_file: &Path, token: &str) -> Self {
        let child = Command::new("ip")
            .args(["netns", "exec", ns])
            .arg(linerate())
            .args(["agent", "--listen", listen, "--lab", lab, "--token-file"])
            .arg(token_file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting the agent");
        let a = Self {
            child,
            url: format!("http://{listen}"),
        };
        let http = ureq::AgentBuilder::new()
            .timeout(Duration::from_secs(5))
            .build();
        let end = Instant::now() + Duration::from_secs(10);
        while http
            .get(&format!("{}/v1/version", a.url))
            .set("Authorization", &format!("Bearer {token}"))
            .call()
            .map(|r| r.status())
            .unwrap_or(0)
            != 200
        {
            assert!(Instant::now() < end, "agent on {listen} did not come up");
            thread::sleep(Duration::from_millis(100));
        }
        a
    }

    /// SIGKILL, as a crash would (tests/agent.rs).
    #[allow(dead_code)]
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        crate::common::terminate(&mut self.child);
    }
}
