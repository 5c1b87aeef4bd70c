//! An agent facing hostile clients: it serves only the interfaces it was
//! told to (403 otherwise, --force only when allowed), refuses names that
//! are paths (400), answers every error in JSON, keeps answering while
//! idle and half-sent connections pile up (and closes them), caps its
//! connections, and refuses a token file that is a directory or holds more
//! than one line. Agents here listen on loopback in this namespace.

mod common;

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::TcpStream,
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex},
    thread,
    time::{Duration, Instant},
};

use common::*;
use serde_json::{json, Value};

const TOKEN: &str = "ha-test-token-0123456789abcdef";
/// A valid kernel interface name that a shell would run.
const HOSTILE: &str = "q;id>pw;#";
const HOSTILE_URL: &str = "q%3Bid%3Epw%3B%23";

fn token_file(name: &str, text: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("ha-token-{name}-{}", std::process::id()));
    std::fs::write(&p, text).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    p
}

/// An agent on 127.0.0.1 (a free port), its log kept; stopped on drop.
struct Agent {
    child: Child,
    url: String,
    addr: String,
    token: PathBuf,
    log: Arc<Mutex<Vec<String>>>,
}

impl Agent {
    fn start(name: &str, args: &[&str], cwd: &Path) -> Self {
        let token = token_file(name, &format!("{TOKEN}\n"));
        let mut child = Command::new(linerate())
            .args(["agent", "--listen", "127.0.0.1:0", "--token-file"])
            .arg(&token)
            .args(args)
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting the agent");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut addr = None;
        for line in lines.by_ref() {
            let line = line.unwrap();
            if let Some(rest) = line.split("listening on http://").nth(1) {
                addr = Some(rest.split(';').next().unwrap().to_string());
                break;
            }
        }
        let addr = addr.expect("the agent did not say where it listens");
        let log = Arc::new(Mutex::new(Vec::new()));
        let l2 = log.clone();
        thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                l2.lock().unwrap().push(line);
            }
        });
        Self {
            child,
            url: format!("http://{addr}"),
            addr,
            token,
            log,
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        terminate(&mut self.child);
        let _ = std::fs::remove_file(&self.token);
    }
}

/// One request: (status, content type, body).
fn call(url: &str, method: &str, path: &str, body: Option<Value>) -> (u16, String, String) {
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(30))
        .build();
    let req = agent
        .request(method, &format!("{url}{path}"))
        .set("Authorization", &format!("Bearer {TOKEN}"));
    let r = match body {
        Some(b) => req.send_json(b),
        None => req.call(),
    };
    let r = match r {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{method} {path}: {e}"),
    };
    let (code, ct) = (r.status(), r.content_type().to_string());
    (code, ct, r.into_string().unwrap_or_default())
}

/// A request answered `code` with a JSON error; its text.
fn refused(url: &str, method: &str, path: &str, body: Option<Value>, code: u16) -> String {
    let (got, ct, text) = call(url, method, path, body);
    assert_eq!(got, code, "{method} {path}: {text}");
    assert_eq!(ct, "application/json", "{method} {path}: {text}");
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    v["error"].as_str().unwrap().to_string()
}

fn run_request(iface: &str, netns: Option<&str>, args: &[&str]) -> Value {
    json!({
        "test": "stream", "role": "rx", "args": args, "iface": iface, "netns": netns,
        "peer": {"mac": "02:00:c6:12:00:01", "ip": "198.18.0.1"},
        "start_at_ns": 0, "lease_ms": 3000,
    })
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
#[ignore = "needs root: agents in the lab's namespaces"]
fn agent_serves_only_allowed_interfaces() {
    require_root("allowed interfaces");
    let _turn = serial();
    let lab = Lab::up("ha1", 1500);
    // An interface with a name a shell would run, in the lab's A side (a
    // veth: its peer ha1-x stays there too; both go with the namespace).
    let ns_a = lab.ns_a();
    let in_a = |args: &[&str]| ip(&[&["-n", ns_a.as_str()], args].concat());
    in_a(&[
        "link", "add", "name", HOSTILE, "type", "veth", "peer", "name", "ha1-x",
    ]);
    in_a(&["addr", "add", "198.18.99.1/32", "dev", HOSTILE]);
    in_a(&["link", "set", "dev", "ha1-x", "up"]);
    in_a(&["link", "set", "dev", HOSTILE, "up"]);
    let cwd = std::env::temp_dir().join(format!("ha1-cwd-{}", std::process::id()));
    std::fs::create_dir_all(&cwd).unwrap();
    let b = format!("{}@{}", lab.if_b(), lab.ns_b());
    let h = format!("{HOSTILE}@{}", lab.ns_a());
    let agent = Agent::start("ha1", &["--allow-iface", &b, "--allow-iface", &h], &cwd);
    let u = &agent.url;

    // Allowed: the interface asked for, in its namespace.
    let (code, _, text) = call(
        u,
        "GET",
        &format!("/v1/ifaces/{}?netns={}", lab.if_b(), lab.ns_b()),
        None,
    );
    assert_eq!(code, 200, "{text}");
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap()["mtu"], 1500);

    // Anything else: 403 naming the interface and the flag that allows it.
    for (path, flag) in [
        ("/v1/ifaces/lo".to_string(), "--allow-iface lo ".to_string()),
        ("/v1/ifaces/eth0".into(), "--allow-iface eth0 ".into()),
        (
            format!("/v1/ifaces/{}?netns={}", lab.if_a(), lab.ns_a()),
            format!("--allow-iface {}@{} ", lab.if_a(), lab.ns_a()),
        ),
        (
            format!("/v1/ifaces/{}?netns={}", lab.if_b(), lab.ns_a()),
            format!("--allow-iface {}@{} ", lab.if_b(), lab.ns_a()),
        ),
        ("/v1/doctor?iface=lo".into(), "--allow-iface lo ".into()),
        (
            format!("/v1/doctor?iface={}&netns={}", lab.if_a(), lab.ns_a()),
            format!("--allow-iface {}@{} ", lab.if_a(), lab.ns_a()),
        ),
    ] {
        let e = refused(u, "GET", &path, None, 403);
        assert!(e.contains(&flag), "{path}: {e}");
    }
    assert!(
        !has_xdp(&lab.ns_a(), &lab.if_a()),
        "the refused doctor probed"
    );

    // Paths are not names: 400 with the command line's message.
    let pid = std::process::id();
    for path in [
        format!("/v1/ifaces/eth0?netns=../../proc/{pid}/ns/net"),
        "/v1/ifaces/eth0?netns=/run/netns/ha1-a".into(),
        "/v1/doctor?iface=eth0&netns=..".into(),
    ] {
        let e = refused(u, "GET", &path, None, 400);
        assert!(e.contains("is not a network namespace name"), "{path}: {e}");
    }
    let e = refused(u, "GET", "/v1/ifaces/a%2Fb", None, 400);
    assert!(
        e.contains("is not an interface name: it contains '/'"),
        "{e}"
    );

    // A hostile name is a name: served (allowed), no shell runs it.
    let (code, _, text) = call(
        u,
        "GET",
        &format!("/v1/ifaces/{HOSTILE_URL}?netns={}", lab.ns_a()),
        None,
    );
    assert_eq!(code, 200, "{text}");
    let i: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(i["name"], HOSTILE);
    assert_eq!(i["ipv4"], "198.18.99.1");
    let (code, _, text) = call(
        u,
        "GET",
        &format!("/v1/doctor?iface={HOSTILE_URL}&netns={}", lab.ns_a()),
        None,
    );
    assert_eq!(code, 200, "{text}");
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap()["iface"],
        HOSTILE
    );
    // Not allowed without its namespace (the agent's own has none such).
    let e = refused(u, "GET", &format!("/v1/ifaces/{HOSTILE_URL}"), None, 403);
    assert!(e.contains(&format!("--allow-iface '{HOSTILE}' ")), "{e}");

    // Run requests: names that are paths 400, others' interfaces and
    // --force 403; nothing starts.
    let ns_b = lab.ns_b();
    for (req, code, says) in [
        (
            run_request("a/b", None, &[]),
            400,
            "is not an interface name",
        ),
        (run_request("", None, &[]), 400, "it is empty"),
        (
            run_request(&lab.if_b(), Some("../netns/rp-a"), &[]),
            400,
            "is not a network namespace name",
        ),
        (
            run_request(&lab.if_b(), Some("/run/netns/rp-a"), &[]),
            400,
            "is not a network namespace name",
        ),
        (
            run_request(&lab.if_b(), None, &["--rx-netns", "../../proc/1/ns/net"]),
            400,
            "is not a network namespace name",
        ),
        (run_request("lo", None, &[]), 403, "--allow-iface lo "),
        (
            run_request(&lab.if_b(), None, &[]),
            403,
            &format!("--allow-iface {} ", lab.if_b()),
        ),
        (
            run_request(&lab.if_b(), None, &["--tx-netns", &ns_b]),
            403,
            &format!("--allow-iface {} ", lab.if_b()),
        ),
        (
            run_request(&lab.if_b(), Some(&ns_b), &["--force"]),
            403,
            "--allow-force",
        ),
    ] {
        let e = refused(u, "POST", "/v1/runs", Some(req.clone()), code);
        assert!(e.contains(says), "{req}: {e}");
    }
    let (_, _, m) = call(u, "GET", "/metrics", None);
    assert!(
        !m.lines().any(|l| l.starts_with("linerate_run_active{")),
        "a run started: {m}"
    );
    assert!(!has_xdp(&lab.ns_b(), &lab.if_b()));
    // A controller names it too (encoded in its URLs): both "hosts" are
    // this agent, so the rx side starts and the tx side finds the agent
    // busy, the 409 naming the run that holds it; the rx side is stopped.
    let out = Command::new(linerate())
        .args(["stream", "--tx-agent", u, "--rx-agent", u, "--token-file"])
        .arg(&agent.token)
        .args(["--tx-iface", HOSTILE, "--tx-netns", &ns_a])
        .args(["--rx-iface", &lab.if_b(), "--rx-netns", &ns_b])
        .args(["--count", "10", "--napi", "keep"])
        .current_dir(&cwd)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "tx agent {u} answered 409 to the run request: this agent is busy with run "
        )) && err.contains("(stream rx, started ")
            && err.contains(" by 127.0.0.1:"),
        "{err}"
    );
    // The deadline only guards against a hang.
    let end = Instant::now() + Duration::from_secs(60);
    while has_xdp(&lab.ns_b(), &lab.if_b()) {
        assert!(Instant::now() < end, "the rx side was not stopped");
        thread::sleep(Duration::from_millis(100));
    }
    // No shell ran the hostile name: no file `pw` appeared.
    assert!(!cwd.join("pw").exists());
    drop(agent);
    let _ = std::fs::remove_dir_all(&cwd);
}

#[test]
fn agent_errors_are_json() {
    let agent = Agent::start("ha2", &[], &std::env::temp_dir());
    let u = &agent.url;
    let e = refused(u, "GET", "/nothing", None, 404);
    assert!(e.contains("no such endpoint"), "{e}");
    let e = refused(u, "DELETE", "/v1/runs", None, 405);
    assert!(e.contains("DELETE is not allowed on /v1/runs"), "{e}");
    let e = refused(u, "GET", "/v1/runs/x/stop", None, 405);
    assert!(e.contains("GET is not allowed"), "{e}");
    let e = refused(u, "POST", "/v1/runs/x/stop?now=maybe", Some(json!({})), 400);
    assert!(e.contains("query string"), "{e}");
    let e = refused(u, "GET", "/v1/doctor?iface=lo&netns=a&netns=b", None, 400);
    assert!(e.contains("query string"), "{e}");
    // A body over the limit: 413 (it was read as JSON up to 2 MB before).
    let big = json!({"test": "x".repeat(100_000)});
    let e = refused(u, "POST", "/v1/runs", Some(big), 413);
    assert!(
        e.contains("larger than the agent's limit of 65536 bytes"),
        "{e}"
    );
    let e = refused(u, "POST", "/v1/runs", Some(json!({"test": "stream"})), 400);
    assert!(e.contains("the run request is not valid"), "{e}");
}

/// Raises this process's open-file limit for a thousand sockets.
fn more_files() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    assert!(
        hard >= 1200,
        "the open-file hard limit ({hard}) is below 1200"
    );
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard).unwrap();
}

/// Sends a raw request on `s` and reads one answer: (status, body).
fn http(s: &mut TcpStream, path: &str) -> (u16, String) {
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\r\n"
    )
    .unwrap();
    read_answer(s)
}

fn read_answer(s: &mut TcpStream) -> (u16, String) {
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = s.read(&mut chunk).unwrap();
        assert!(
            n > 0,
            "closed before an answer: {:?}",
            String::from_utf8_lossy(&buf)
        );
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf).to_string();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let len: usize = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse().unwrap())
                })
                .unwrap_or(0);
            if body.len() >= len {
                let code = head.split(' ').nth(1).unwrap().parse().unwrap();
                return (code, body[..len].to_string());
            }
        }
    }
}

/// Whether the server closed `s` within `within` (EOF or reset).
fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    s.set_read_timeout(Some(within)).unwrap();
    let mut b = [0u8; 512];
    loop {
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => continue, // an error answer (408) before the close
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

#[test]
fn idle_connections_do_not_starve_the_agent() {
    more_files();
    let agent = Agent::start("ha3", &["--header-timeout", "3s"], &std::env::temp_dir());
    // A thousand connections without a token: half idle, half with a
    // request head begun and never finished.
    let mut held: Vec<TcpStream> = (0..1000)
        .map(|i| {
            let mut s = TcpStream::connect(&agent.addr).unwrap();
            if i % 2 == 1 {
                s.write_all(b"GET /v1/version HTTP/1.1\r\nHost: x\r\n")
                    .unwrap();
            }
            s
        })
        .collect();
    let opened = Instant::now();
    // An authorized request is answered at once all the same.
    let t = Instant::now();
    let mut s = TcpStream::connect(&agent.addr).unwrap();
    let (code, body) = http(&mut s, "/v1/version");
    let took = t.elapsed();
    eprintln!("authorized request with 1000 idle connections held: {took:?}");
    assert_eq!(code, 200, "{body}");
    drop(s);
    // The agent closes them after its header timeout (3 s here); the
    // 60 s only guard against a hang.
    let end = opened + Duration::from_secs(60);
    let closed = held
        .iter_mut()
        .filter_map(|s| {
            let left = end.saturating_duration_since(Instant::now());
            closed_within(s, left.max(Duration::from_millis(10))).then_some(())
        })
        .count();
    eprintln!(
        "the agent closed {closed} of 1000 idle connections within {:?}",
        opened.elapsed()
    );
    assert_eq!(closed, 1000);
    assert!(agent
        .log
        .lock()
        .unwrap()
        .iter()
        .all(|l| !l.contains("accepting a connection failed")));
}

#[test]
fn connections_over_the_cap_are_refused_at_once() {
    let agent = Agent::start(
        "ha4",
        &["--max-connections", "20", "--header-timeout", "60s"],
        &std::env::temp_dir(),
    );
    // A client that holds a keep-alive connection (a controller polling).
    let mut keep = TcpStream::connect(&agent.addr).unwrap();
    assert_eq!(http(&mut keep, "/v1/version").0, 200);
    let _idle: Vec<TcpStream> = (0..19)
        .map(|_| TcpStream::connect(&agent.addr).unwrap())
        .collect();
    thread::sleep(Duration::from_millis(300));
    // The cap is reached: a new connection gets 503 (JSON) and is closed.
    let t = Instant::now();
    let mut over = TcpStream::connect(&agent.addr).unwrap();
    let (code, body) = read_answer(&mut over);
    assert_eq!(code, 503, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("its limit (--max-connections)"),
        "{body}"
    );
    assert!(closed_within(&mut over, Duration::from_secs(60)));
    eprintln!("refused over the cap in {:?}", t.elapsed());
    // A client that sends its request at once reads the 503 too.
    let agent_ = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(10))
        .build();
    match agent_.get(&format!("{}/v1/version", agent.url)).call() {
        Err(ureq::Error::Status(503, r)) => {
            assert_eq!(r.content_type(), "application/json");
        }
        other => panic!("not a 503: {other:?}"),
    }
    // The connection held before goes on being served.
    assert_eq!(http(&mut keep, "/v1/version").0, 200);
}

#[test]
fn a_body_sent_slowly_gets_408() {
    let agent = Agent::start("ha5", &["--request-timeout", "2s"], &std::env::temp_dir());
    let mut s = TcpStream::connect(&agent.addr).unwrap();
    // The head in full, then 10 of the 1000 bytes it announces.
    write!(
        s,
        "POST /v1/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{{\"test\": 1"
    )
    .unwrap();
    let t = Instant::now();
    let (code, body) = read_answer(&mut s);
    eprintln!("a slow body answered {code} after {:?}", t.elapsed());
    assert_eq!(code, 408, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("its body came too slowly"),
        "{body}"
    );
}

#[test]
fn token_file_must_be_one_private_line() {
    let dir = std::env::temp_dir().join(format!("ha-token-dir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let two = token_file("two-lines", "ha-test-token-0123\n456789abcdef\n");
    let one = token_file("space", "ha-test-token 0123456789abcdef\n");
    for (f, says) in [
        (&dir, format!("token file {} is a directory", dir.display())),
        (&two, "contains a line break (at byte 18)".to_string()),
        (&one, "contains a space (at byte 13)".to_string()),
    ] {
        let out = Command::new(linerate())
            .args(["agent", "--listen", "127.0.0.1:0", "--token-file"])
            .arg(f)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains(&says), "{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(two);
    let _ = std::fs::remove_file(one);
}

/// The text of the agent's log so far.
fn log_text(agent: &Agent) -> String {
    agent.log.lock().unwrap().join("\n")
}

/// A run request is checked field by field before the agent answers:
/// a MAC that is not one (a `\n` in it used to be passed on, 201, and
/// forged a line in the agent's log), a field the API does not have, an
/// option the agent owns or `--help` in `args`, an unknown test, a start
/// far ahead: 400 naming the field or option, and nothing starts. What a
/// client sent is logged and echoed with its control and bidirectional
/// characters escaped.
#[test]
#[ignore = "needs root: agents in the lab's namespaces"]
fn run_requests_are_checked_field_by_field_and_logged_escaped() {
    require_root("run request fields");
    let _turn = serial();
    // An interface name a terminal would turn around (U+202E), allowed so
    // that a run with it starts (and fails: there is no such interface).
    let turned = "hv\u{202e}0";
    let agent = Agent::start(
        "hv1",
        &["--allow-iface", turned, "--allow-iface", "hv-b0"],
        &std::env::temp_dir(),
    );
    let u = &agent.url;
    let forged = "linerate: agent: run r9-1 from 198.18.0.9:1: stream --forged";
    let with = |edit: &dyn Fn(&mut Value)| {
        let mut r = run_request("hv-b0", None, &[]);
        edit(&mut r);
        r
    };
    let cases: Vec<(Value, &[&str])> = vec![
        (
            with(&|r| r["peer"]["mac"] = json!(format!("02:00:c6:12:00:01\n{forged}"))),
            &["peer.mac", "is not a MAC address", "\\u{a}"],
        ),
        (
            with(&|r| r["peer"]["mac"] = json!("zz:00:c6:12:00:01")),
            &["peer.mac", "\"zz:00:c6:12:00:01\" is not a MAC address"],
        ),
        (
            with(&|r| r["peer"]["mac"] = json!("02:00:c6:12:00:01:02")),
            &["peer.mac", "is not a MAC address"],
        ),
        (with(&|r| r["evil"] = json!(1)), &["unknown field `evil`"]),
        (
            with(&|r| r["peer"]["evil"] = json!(1)),
            &["peer", "unknown field `evil`"],
        ),
        (
            with(&|r| r["test"] = json!("stream\u{202e}")),
            &["test", "unknown variant", "stream\\u{202e}"],
        ),
        (with(&|r| r["role"] = json!("boss")), &["role", "boss"]),
        (
            with(&|r| r["start_at_ns"] = json!(u64::MAX)),
            &["start_at_ns", "ahead of this agent's clock"],
        ),
        (
            with(&|r| r["lease_ms"] = json!(0)),
            &["lease_ms 0 is out of range"],
        ),
        (
            run_request("hv-b0", None, &["--token-file", "/etc/shadow"]),
            &["args: --token-file is not a run request's to give"],
        ),
        (
            run_request("hv-b0", None, &["--token-file=/etc/shadow"]),
            &["args: --token-file is not"],
        ),
        (
            run_request("hv-b0", None, &["--lab", "hv"]),
            &["args: --lab is not a run request's to give", "iface"],
        ),
        (
            run_request("hv-b0", None, &["--clock-offset-ns", "5"]),
            &["args: --clock-offset-ns is not"],
        ),
        (
            run_request("hv-b0", None, &["--help"]),
            &["--help is not a run option", "linerate stream --help"],
        ),
        (
            run_request("hv-b0", None, &["--size", "-64"]),
            &["invalid value '-64' for '--size", "is negative"],
        ),
        (
            run_request("hv-b0", None, &["--duration", "0"]),
            &["invalid value '0' for '--duration", "at least 100ms"],
        ),
    ];
    for (req, says) in &cases {
        let e = refused(u, "POST", "/v1/runs", Some(req.clone()), 400);
        for s in *says {
            assert!(e.contains(s), "{req}: {s:?} missing from: {e:?}");
        }
        assert!(!e.contains('\n') && !e.contains('\u{202e}'), "{e:?}");
    }
    // Nothing started.
    let (_, _, m) = call(u, "GET", "/metrics", None);
    assert!(
        !m.lines().any(|l| l.starts_with("linerate_run_active{")),
        "a run started: {m}"
    );
    // A name turned around: the 403 of another one echoes it escaped.
    let e = refused(
        u,
        "POST",
        "/v1/runs",
        Some(run_request("hv\u{202e}1", None, &[])),
        403,
    );
    assert!(e.contains("hv\\u{202e}1"), "{e:?}");
    // The allowed one starts (201) and fails on this host; its log lines
    // and its error hold the name escaped.
    let (code, _, text) = call(
        u,
        "POST",
        "/v1/runs",
        Some(run_request(turned, None, &["--duration", "1s"])),
    );
    assert_eq!(code, 201, "{text}");
    let id = serde_json::from_str::<Value>(&text).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let end = Instant::now() + Duration::from_secs(30);
    let status = loop {
        let (_, _, s) = call(u, "GET", &format!("/v1/runs/{id}"), None);
        let s: Value = serde_json::from_str(&s).unwrap();
        if s["state"] != "running" {
            break s;
        }
        assert!(Instant::now() < end, "the run did not end: {s}");
        thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(status["state"], "failed", "{status}");
    let error = status["error"].as_str().unwrap();
    assert!(!error.contains('\u{202e}'), "{error:?}");
    // Its end is logged after its stderr: wait for that line.
    let end = Instant::now() + Duration::from_secs(10);
    while !log_text(&agent).contains(&format!("run {id}: failed")) {
        assert!(
            Instant::now() < end,
            "no end in the log: {}",
            log_text(&agent)
        );
        thread::sleep(Duration::from_millis(50));
    }
    let log = log_text(&agent);
    assert!(
        log.contains(&format!("run {id} from 127.0.0.1:")) && log.contains("hv\\u{202e}0"),
        "{log}"
    );
    assert!(!log.contains('\u{202e}'), "a raw U+202E in the log: {log}");
    assert!(
        !log.lines().any(|l| l.starts_with(forged)),
        "a forged line in the log: {log}"
    );
}
