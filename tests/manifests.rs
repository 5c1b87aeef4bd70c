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
    for cap in ["NET_ADMIN", "BPF", "PERFMON", "IPC_LOCK", "NET_RAW"] {
        assert!(ds.contains(&format!("\"{cap}\"")), "{cap}: {ds}");
    }
    // No namespace is entered on the host's network: no SYS_ADMIN, and
    // the runtime's seccomp profile (bpf(), perf_event_open() allowed to
    // BPF and PERFMON).
    assert!(!ds.contains("\"SYS_ADMIN\""), "{ds}");
    assert!(!ds.contains("Unconfined"), "{ds}");
    assert!(ds.contains("type: RuntimeDefault"), "{ds}");
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

/// The `args:` of the (first) container of a manifest, unquoted.
fn container_args(yaml: &str) -> Vec<String> {
    let (_, rest) = yaml.split_once("          args:\n").expect("no args:");
    rest.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#'))
        .map_while(|l| l.strip_prefix("- "))
        .map(|a| a.trim_matches('"').to_string())
        .collect()
}

fn manifest(name: &str) -> String {
    std::fs::read_to_string(root().join("deploy/kubernetes").join(name)).unwrap()
}

#[test]
fn images_are_this_version_pulled_every_start_on_pinned_bases() {
    let version = env!("CARGO_PKG_VERSION");
    for name in ["agent-daemonset.yaml", "sweep-job.yaml"] {
        let m = manifest(name);
        let images: Vec<&str> = m
            .lines()
            .filter_map(|l| l.trim().strip_prefix("image: "))
            .collect();
        assert!(!images.is_empty(), "{name}");
        for image in &images {
            assert_eq!(*image, format!("linerate:{version}"), "{name}");
        }
        let policies: Vec<&str> = m
            .lines()
            .filter_map(|l| l.trim().strip_prefix("imagePullPolicy: "))
            .collect();
        assert_eq!(policies.len(), images.len(), "{name}");
        assert!(
            policies.iter().all(|p| *p == "Always"),
            "{name}: {policies:?}"
        );
    }
    let docker = std::fs::read_to_string(root().join("deploy/Dockerfile")).unwrap();
    let bases: Vec<&str> = docker
        .lines()
        .filter_map(|l| l.strip_prefix("FROM "))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(bases.len(), 2, "{docker}");
    for base in &bases {
        assert!(pinned(base), "{base}: not an exact release (or digest)");
    }
    assert!(
        docker.contains(&format!("-t linerate:{version} .")),
        "{docker}"
    );
    for moving in [
        "rust:1-bookworm",
        "debian:bookworm-slim",
        "rust:latest",
        "debian:12-slim",
        "rust:1.95.0@sha256:abc",
    ] {
        assert!(!pinned(moving), "{moving}");
    }
    assert!(pinned(&format!(
        "rust:1.95.0-bookworm@sha256:{}",
        "0a".repeat(32)
    )));
}

/// An image pinned: an exact release (X.Y[.Z], then an optional variant)
/// and, if any, a whole sha256 digest.
fn pinned(image: &str) -> bool {
    let (name, digest) = match image.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (image, None),
    };
    let digest_ok = digest.is_none_or(|d| {
        d.strip_prefix("sha256:")
            .is_some_and(|h| h.len() == 64 && h.chars().all(|c| c.is_ascii_hexdigit()))
    });
    let Some((_, tag)) = name.split_once(':') else {
        return false;
    };
    let release = tag.split('-').next().unwrap_or("");
    let parts: Vec<&str> = release.split('.').collect();
    digest_ok
        && parts.len() >= 2
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
}

#[test]
fn the_agents_listen_address_is_valid_on_ipv4_and_ipv6_nodes() {
    let args = container_args(&manifest("agent-daemonset.yaml"));
    assert_eq!(args[0], "agent", "{args:?}");
    let at = args.iter().position(|a| a == "--listen").unwrap();
    let template = &args[at + 1];
    // As the kubelet expands $(NODE_IP) from status.hostIP.
    for node in ["2001:2::11", "198.18.1.11"] {
        let listen = template.replace("$(NODE_IP)", node);
        let token = format!("/nonexistent-{}/token", std::process::id());
        let out = run(&["agent", "--listen", &listen, "--token-file", &token]);
        let err = String::from_utf8_lossy(&out.stderr);
        // Parsed: the agent goes on to read its token (absent here).
        assert_eq!(out.status.code(), Some(1), "{listen}: {err}");
        assert!(
            err.contains(&format!("cannot read token file {token}")),
            "{listen}: {err}"
        );
    }
    // The template without brackets was what an IPv6 node refused.
    let out = run(&["agent", "--listen", "2001:2::11:7480"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("is not ADDR:PORT"), "{err}");
}

#[test]
#[ignore = "needs root: agents in the lab's namespaces"]
fn the_jobs_command_reads_a_config_map_shaped_mount() {
    require_root("the_jobs_command_reads_a_config_map_shaped_mount");
    use std::os::unix::fs::{symlink, PermissionsExt};
    // The ConfigMap's volume as the kubelet writes it (all root's).
    let d = std::env::temp_dir().join(format!("lr-manifests-cm-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    let cm_dir = d.join("inventory");
    let stamp = cm_dir.join("..2026_12_04_00_00_00.1");
    std::fs::create_dir_all(&stamp).unwrap();
    for p in [&d, &cm_dir, &stamp] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let cm = manifest("sweep-inventory.yaml");
    symlink("..2026_12_04_00_00_00.1", cm_dir.join("..data")).unwrap();
    let token_dir = d.join("token");
    for key in ["inventory.toml", "sweep.toml"] {
        let text =
            config_file(&cm, key).replace("/etc/linerate/token", token_dir.to_str().unwrap());
        std::fs::write(stamp.join(key), text).unwrap();
        symlink(format!("..data/{key}"), cm_dir.join(key)).unwrap();
    }
    // The Job's exact arguments, its mounts at their places here.
    let job = manifest("sweep-job.yaml");
    let args: Vec<String> = container_args(&job)
        .into_iter()
        .map(|a| {
            a.replace("/etc/linerate/inventory", cm_dir.to_str().unwrap())
                .replace("/results", d.join("results").to_str().unwrap())
        })
        .collect();
    // /results is an emptyDir (mode 777): the init container makes it
    // root's alone before the Job's command creates the report beneath.
    let init = job
        .split_once("initContainers:")
        .and_then(|(_, r)| r.split_once("command: "))
        .map(|(_, r)| r.lines().next().unwrap().to_string())
        .expect("no init container");
    assert_eq!(init, r#"["chmod", "0755", "/results"]"#);
    assert_eq!(
        args[..2],
        [
            "sweep".to_string(),
            format!("{}/sweep.toml", cm_dir.display())
        ]
    );
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run(&argv);
    let err = String::from_utf8_lossy(&out.stderr);
    // Past the sweep file and the inventory (both read through their
    // links, every pair parsed): stopped at the first token file, which
    // is not mounted here, before anything is sent.
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "inventory {}/inventory.toml: pair rack1-a: nothing was sent",
            cm_dir.display()
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "cannot read token file {}/token",
            token_dir.display()
        )),
        "{err}"
    );
    // The same volume with a link another user owns is refused.
    nix::unistd::fchownat(
        None,
        &cm_dir.join("..data"),
        Some(nix::unistd::Uid::from_raw(65534)),
        None,
        nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
    )
    .unwrap();
    let out = run(&argv);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("..data is not root's (uid 65534"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
#[ignore = "needs root: agents in the lab's namespaces"]
fn the_agents_command_reads_its_token_from_a_secret_shaped_mount() {
    require_root("the_agents_command_reads_its_token_from_a_secret_shaped_mount");
    use std::os::unix::fs::{symlink, PermissionsExt};
    // A Secret's volume as the kubelet writes it: a sticky tmpfs folder of
    // root's, the key a link into the current timestamped folder, 0400.
    let d = std::env::temp_dir().join(format!("lr-manifests-secret-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    let stamp = d.join("..2026_12_04_00_00_00.1");
    std::fs::create_dir_all(&stamp).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o1777)).unwrap();
    std::fs::set_permissions(&stamp, std::fs::Permissions::from_mode(0o755)).unwrap();
    let token = stamp.join("token");
    std::fs::write(&token, "0123456789abcdef0123456789abcdef\n").unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o400)).unwrap();
    symlink("..2026_12_04_00_00_00.1", d.join("..data")).unwrap();
    symlink("..data/token", d.join("token")).unwrap();
    // The DaemonSet's exact arguments, expanded as the kubelet does on an
    // IPv6 node (an address not on this host: the agent stops at listen).
    let args: Vec<String> = container_args(&manifest("agent-daemonset.yaml"))
        .into_iter()
        .map(|a| {
            a.replace("$(NODE_IP)", "2001:2::11")
                .replace("$(ALLOW_IFACE)", "eth1")
                .replace("/etc/linerate/token", d.to_str().unwrap())
        })
        .collect();
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run(&argv);
    let err = String::from_utf8_lossy(&out.stderr);
    // Past the token (read through the Secret's links) and the options.
    assert_eq!(out.status.code(), Some(1), "{argv:?}: {err}");
    assert!(
        err.contains("cannot listen on [2001:2::11]:7480"),
        "{argv:?}: {err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}
