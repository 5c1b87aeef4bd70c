//! A fleet for the tests (tests/fleet.rs, tests/prometheus.rs): `linerate
//! fleet up` into a fresh folder, `fleet down` on drop (and its labs by
//! name should that fail).

#![allow(dead_code)]

use std::path::PathBuf;

use crate::common::run;

/// A fleet of the test's own, removed on drop (`fleet down`, and the
/// namespaces by name should that fail).
pub struct Fleet {
    pub prefix: &'static str,
    pub pairs: u32,
    pub inventory: PathBuf,
}

/// A fresh folder for a test's inventory.
pub fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

impl Fleet {
    pub fn up(prefix: &'static str, pairs: u32) -> Self {
        let inventory = temp_dir(prefix).join("fleet.toml");
        let out = run(&[
            "fleet",
            "up",
            "--pairs",
            &pairs.to_string(),
            "--name",
            prefix,
            "--inventory",
            inventory.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "fleet up failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Self {
            prefix,
            pairs,
            inventory,
        }
    }

    pub fn inv(&self) -> &str {
        self.inventory.to_str().unwrap()
    }

    pub fn pair(&self, i: u32) -> String {
        format!("{}{i}", self.prefix)
    }

    pub fn down(&self) -> std::process::Output {
        run(&["fleet", "down", "--inventory", self.inv()])
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        if self.inventory.exists() {
            let _ = self.down();
        }
        for i in 0..self.pairs {
            let _ = run(&["lab", "down", "--lab", &self.pair(i)]);
        }
        if let Some(d) = self.inventory.parent() {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}
