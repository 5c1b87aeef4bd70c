//! deploy/kubernetes/ checked against the Kubernetes API schema by
//! `kubernetes-validate` (PyPI, pinned; scripts/install-kubernetes-validate
//! puts it under target/tools/), strictly (an unknown field is an error): no
//! cluster needed. Also: a planted invalid manifest is refused, the
//! DaemonSet is not privileged, and the inventory the sweep Job reads is one
//! linerate accepts.

mod common;

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use common::*;

const PINNED: &str = "1.37.0";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The validator: $LINERATE_KUBERNETES_VALIDATE, the one
/// scripts/install-kubernetes-validate installs, or the one on PATH. None
/// (with a message) outside CI when there is none; in CI a failure.
fn validator() -> Option<PathBuf> {
    let venv = root().join("target/tools/kubernetes-validate/bin/kubernetes-validate");
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::var_os("LINERATE_KUBERNETES_VALIDATE")
        .map(PathBuf::from)
        .into_iter()
        .chain([venv])
        .chain(std::env::split_paths(&path).map(|d| d.join("kubernetes-validate")))
        .find(|p| p.is_file());
    if found.is_none() {
        let why = "kubernetes-validate is not installed: run scripts/install-kubernetes-validate";
        assert!(std::env::var_os("CI").is_none(), "CI=true but {why}");
        eprintln!("skipped: {why}");
    }
    found
}

/// Runs the validator on `files`: (success, its output).
fn validate(tool: &Path, files: &[PathBuf]) -> (bool, String) {
    let out = Command::new(tool)
        .args(["--strict", "--kubernetes-version", "1.33.0"])
        .args(files)
        .output()
        .expect("running kubernetes-validate");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn manifests() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("deploy/kubernetes"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_manifest_validates_and_an_invalid_one_is_refused() {
    let Some(tool) = validator() else {
        return;
    };
    let v = Command::new(&tool).arg("--version").output().unwrap();
    assert_eq!(String::from_utf8_lossy(&v.stdout).trim(), PINNED);
    let files = manifests();
    let names: Vec<String> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for want in [
        "agent-daemonset.yaml",
        "agent-service.yaml",
        "agent-config.yaml",
        "sweep-job.yaml",
        "sweep-inventory.yaml",
    ] {
        assert!(names.iter().any(|n| n == want), "{want}: {names:?}");
    }
    for f in &files {
        let (ok, text) = validate(&tool, std::slice::from_ref(f));
        assert!(ok, "{}: {text}", f.display());
        assert!(text.contains("passed"), "{}: {text}", f.display());
    }

    // A manifest that breaks the schema is refused: the DaemonSet with a
    // field a DaemonSet has not (replicas), and with a mistyped one.
    let dir = std::env::temp_dir().join(format!("lr-manifests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ds =
        std::fs::read_to_string(root().join("deploy/kubernetes/agent-daemonset.yaml")).unwrap();
    let planted = [
        (
            "replicas.yaml",
            ds.replacen("spec:\n", "spec:\n  replicas: 2\n", 1),
        ),
        (
            "privileged.yaml",
            ds.replace("privileged: false", "privileged: \"no\""),
        ),
    ];
    for (name, text) in planted {
        assert_ne!(text, ds, "{name}: nothing planted");
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        let (ok, out) = validate(&tool, &[p]);
        assert!(!ok, "{name} passed: {out}");
        assert!(out.contains("did not validate"), "{name}: {out}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_agent_is_not_privileged_and_the_jobs_inventory_is_valid() {
    let ds =
        std::fs::read_to_string(root().join("deploy/kubernetes/agent-daemonset.yaml")).unwrap();
    assert!(ds.contains("privileged: false"), "{ds}");
    assert!(!ds.contains("privileged: true"), "{ds}");
    assert!(ds.contains("hostNetwork: true"), "{ds}");
    for cap in ["NET_ADMIN", "BPF", "PERFMON", "SYS_ADMIN", "IPC_LOCK"] {
        assert!(ds.contains(&format!("\"{cap}\"")), "{cap}: {ds}");
    }
    // The inventory in the ConfigMap, as the Job mounts it, is one linerate
    // reads (fleet prometheus loads and checks it whole).
    let cm =
        std::fs::read_to_string(root().join("deploy/kubernetes/sweep-inventory.yaml")).unwrap();
    let toml = config_file(&cm, "inventory.toml");
    let p = std::env::temp_dir().join(format!(
        "lr-manifests-inventory-{}.toml",
        std::process::id()
    ));
    std::fs::write(&p, &toml).unwrap();
    let out = run(&["fleet", "prometheus", "--inventory", p.to_str().unwrap()]);
    let _ = std::fs::remove_file(&p);
    assert!(
        out.status.success(),
        "{toml}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let job = std::fs::read_to_string(root().join("deploy/kubernetes/sweep-job.yaml")).unwrap();
    assert!(
        job.contains(
            "- sweep\n            - /etc/linerate/inventory/sweep.toml\n            - --fleet\n            - /etc/linerate/inventory/inventory.toml"
        ),
        "{job}"
    );
    // Its sweep file is one linerate reads: parsed and counted (3 points),
    // then refused here by --max-points before anything runs.
    let sweep = config_file(&cm, "sweep.toml");
    let p = std::env::temp_dir().join(format!("lr-manifests-sweep-{}.toml", std::process::id()));
    std::fs::write(&p, &sweep).unwrap();
    let out = run(&["sweep", p.to_str().unwrap(), "--max-points", "1"]);
    let _ = std::fs::remove_file(&p);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("3 points (3 per part) x 3 repeat(s) is more than the 1 points"),
        "{sweep}: {err}"
    );
}

/// The file under key `key` of a ConfigMap's data (a `|` block).
fn config_file(cm: &str, key: &str) -> String {
    let (_, block) = cm
        .split_once(&format!("  {key}: |\n"))
        .unwrap_or_else(|| panic!("no key {key}"));
    block
        .lines()
        .take_while(|l| l.is_empty() || l.starts_with("    "))
        .map(|l| format!("{}\n", l.strip_prefix("    ").unwrap_or(l)))
        .collect()
}
