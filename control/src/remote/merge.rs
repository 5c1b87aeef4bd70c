//! One result from two hosts' figures: the sender's (client's) side from
//! the tx host, the receiver's (responder's) from the rx host, in the
//! shape of a local run's JSON, plus CPU per core per host and an `agents`
//! section (URLs, versions, clock offsets).

use serde_json::{json, Value};

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole > 0 {
        100.0 * part as f64 / whole as f64
    } else {
        0.0
    }
}

/// Workers of `role` in a side's result.
fn workers(r: &Value, roles: &[&str]) -> Vec<Value> {
    r["workers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|w| roles.contains(&w["role"].as_str().unwrap_or("")))
        .cloned()
        .collect()
}

/// Every core of both hosts, each labelled with its host ("tx", "rx").
fn per_core(tx: &Value, rx: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for (host, r) in [("tx", tx), ("rx", rx)] {
        for c in r["cpu"]["per_core"].as_array().into_iter().flatten() {
            let mut c = c.clone();
            c["host"] = json!(host);
            out.push(c);
        }
    }
    out
}

/// Mean busy percent and count of `cores` (all when empty) of a side.
fn busy(r: &Value, cores: &[u64]) -> (f64, usize) {
    let chosen: Vec<f64> = r["cpu"]["per_core"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| cores.is_empty() || cores.contains(&u(&c["core"])))
        .map(|c| c["busy"].as_f64().unwrap_or(0.0))
        .collect();
    let n = chosen.len();
    let mean = if n > 0 {
        chosen.iter().sum::<f64>() / n as f64
    } else {
        0.0
    };
    (mean, n)
}

/// `CPU% x nCPU x 10 / (MB/s)`.
fn sd(cpu_pct: f64, n: usize, mb_s: f64) -> Option<f64> {
    (mb_s > 0.0).then(|| cpu_pct * n as f64 * 10.0 / mb_s)
}

/// Both hosts' CPU over all their cores at `mb_s`: per host and together.
fn hosts_cpu(tx: &Value, rx: &Value, mb_s: f64) -> (Value, Value) {
    let (t, tn) = busy(tx, &[]);
    let (r, rn) = busy(rx, &[]);
    let n = tn + rn;
    let all = if n > 0 {
        (t * tn as f64 + r * rn as f64) / n as f64
    } else {
        0.0
    };
    let host = |p: f64, n: usize| json!({"cores": n, "cpu_pct": p, "service_demand_ms_per_mb": sd(p, n, mb_s)});
    (
        json!({"tx": host(t, tn), "rx": host(r, rn)}),
        json!({"cores": [], "cpu_pct": all, "service_demand_ms_per_mb": sd(all, n, mb_s)}),
    )
}

fn concat(a: &Value, b: &Value) -> Value {
    let mut v: Vec<Value> = a.as_array().cloned().unwrap_or_default();
    v.extend(b.as_array().cloned().unwrap_or_default());
    Value::Array(v)
}

/// A stream's result from the sender's and the receiver's host.
pub fn stream(tx: &Value, rx: &Value, agents: Value) -> Value {
    let mut m = tx.clone();
    m["receiver"] = rx["receiver"].clone();
    let (tf, rf) = (&tx["frames"], &rx["frames"]);
    let (sent, received) = (u(&tf["sent"]), u(&rf["received"]));
    let f = &mut m["frames"];
    for k in ["received", "seq_gaps", "reordered", "duplicates", "bad"] {
        f[k] = rf[k].clone();
    }
    f["lost"] = json!(sent.saturating_sub(received));
    f["loss_pct"] = json!(pct(sent.saturating_sub(received), sent));
    if tf["messages"].is_object() {
        let (ms, mr) = (u(&tf["messages"]["sent"]), u(&rf["messages"]["received"]));
        let mm = &mut f["messages"];
        mm["received"] = json!(mr);
        mm["receiver_counted_lost"] = rf["messages"]["receiver_counted_lost"].clone();
        mm["lost"] = json!(ms.saturating_sub(mr));
        mm["loss_pct"] = json!(pct(ms.saturating_sub(mr), ms));
    }
    for k in [
        "rx_bind_mode",
        "xdp_mode",
        "xdp_fallback_reason",
        "driver",
        "napi",
    ] {
        m["setup"][k] = rx["setup"][k].clone();
    }
    m["setup"]["napi_threads"] = concat(&tx["setup"]["napi_threads"], &rx["setup"]["napi_threads"]);
    for k in ["rx_iface", "rx_netns", "rx_cores", "rx_wait"] {
        m["params"][k] = rx["params"][k].clone();
    }
    m["params"]["lab"] = Value::Null;
    let mut w = workers(tx, &["tx"]);
    w.extend(workers(rx, &["rx"]));
    m["workers"] = Value::Array(w);
    m["xdp"] = rx["xdp"].clone();
    m["interfaces"]["rx"] = rx["interfaces"]["rx"].clone();
    let mb_s = rx["receiver"]["message_mb_s"]
        .as_f64()
        .or(rx["receiver"]["payload_mb_s"].as_f64())
        .unwrap_or(0.0);
    let (hosts, total) = hosts_cpu(tx, rx, mb_s);
    m["cpu"] = json!({"per_core": per_core(tx, rx), "total": total, "hosts": hosts});
    m["receiver_window_s"] = rx["window_s"].clone();
    finish(&mut m, tx, rx, agents);
    m
}

/// An rr result from the client's and the responder's host.
pub fn rr(tx: &Value, rx: &Value, agents: Value) -> Value {
    let mut m = tx.clone();
    for k in ["responder_bind_mode", "xdp_mode", "driver"] {
        m["setup"][k] = rx["setup"][k].clone();
    }
    m["setup"]["napi_threads"] = concat(&tx["setup"]["napi_threads"], &rx["setup"]["napi_threads"]);
    for k in [
        "responder_iface",
        "responder_netns",
        "responder_cores",
        "responder_wait",
    ] {
        m["params"][k] = rx["params"][k].clone();
    }
    m["transactions"]["answered"] = rx["transactions"]["answered"].clone();
    let mut w = workers(tx, &["client"]);
    w.extend(workers(rx, &["responder"]));
    m["workers"] = Value::Array(w);
    m["xdp"]["responder"] = rx["xdp"]["responder"].clone();
    m["interfaces"]["rx"] = rx["interfaces"]["rx"].clone();
    // The responder's host knows its CPU but not the rate: per
    // transaction figures use the client's.
    let tps = tx["transactions"]["per_s"].as_f64().unwrap_or(0.0);
    let p = &tx["params"];
    let mb_s = tps * (u(&p["request"]) + u(&p["response"])) as f64 / 1e6;
    let cores: Vec<u64> = rx["params"]["responder_cores"]
        .as_array()
        .into_iter()
        .flatten()
        .map(u)
        .collect();
    let (rp, rn) = busy(rx, &cores);
    let per_t = |p: f64, n: usize| (tps > 0.0).then(|| p / 100.0 * n as f64 / tps * 1e6);
    m["cpu"]["responder"] = json!({
        "cores": cores, "cpu_pct": rp, "service_demand_ms_per_mb": sd(rp, rn, mb_s),
        "us_per_transaction": per_t(rp, rn),
    });
    let (hosts, mut total) = hosts_cpu(tx, rx, mb_s);
    let n = busy(tx, &[]).1 + busy(rx, &[]).1;
    total["us_per_transaction"] = json!(per_t(total["cpu_pct"].as_f64().unwrap_or(0.0), n));
    m["cpu"]["total"] = total;
    m["cpu"]["hosts"] = hosts;
    m["cpu"]["per_core"] = Value::Array(per_core(tx, rx));
    finish(&mut m, tx, rx, agents);
    m
}

fn finish(m: &mut Value, tx: &Value, rx: &Value, agents: Value) {
    m["interrupted"] = json!(tx["interrupted"] == true || rx["interrupted"] == true);
    m["fault"] = match (&tx["fault"], &rx["fault"]) {
        (Value::String(t), _) => json!(format!("tx host: {t}")),
        (_, Value::String(r)) => json!(format!("rx host: {r}")),
        _ => Value::Null,
    };
    // `environment` stays the sending host's (as in a local run's shape);
    // each host's is in `agents`.
    let mut agents = agents;
    if agents.is_object() {
        agents["tx"]["environment"] = tx["environment"].clone();
        agents["rx"]["environment"] = rx["environment"].clone();
    }
    m["agents"] = agents;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_sides_merge() {
        let tx = json!({
            "frames": {"sent": 100, "received": 0, "unfinished": 0},
            "workers": [{"role": "tx", "queue": 0}],
            "cpu": {"per_core": [{"core": 0, "busy": 50.0}, {"core": 1, "busy": 0.0}]},
            "setup": {"napi_threads": []}, "params": {}, "interfaces": {"tx": {"tx_packets": 100}},
            "sender": {"frames": 100},
        });
        let rx = json!({
            "frames": {"sent": 0, "received": 98, "seq_gaps": 2},
            "workers": [{"role": "rx", "queue": 0}],
            "cpu": {"per_core": [{"core": 0, "busy": 10.0}, {"core": 1, "busy": 30.0}]},
            "receiver": {"frames": 98, "payload_mb_s": 1.0},
            "setup": {"napi_threads": [], "rx_bind_mode": "copy"}, "params": {"rx_iface": "b0"},
            "interfaces": {"rx": {"rx_packets": 98}}, "xdp": {"redirected": 98},
            "fault": "interface b0 went down during the run",
        });
        let m = stream(&tx, &rx, json!({}));
        assert_eq!(m["frames"]["sent"], 100);
        assert_eq!(m["frames"]["received"], 98);
        assert_eq!(m["frames"]["lost"], 2);
        assert_eq!(m["workers"].as_array().unwrap().len(), 2);
        assert_eq!(m["cpu"]["per_core"].as_array().unwrap().len(), 4);
        assert_eq!(m["cpu"]["per_core"][3]["host"], "rx");
        // (50 + 0 + 10 + 30) % over 4 cores at 1 MB/s: 900 ms/MB.
        assert_eq!(m["cpu"]["total"]["service_demand_ms_per_mb"], 900.0);
        assert_eq!(m["setup"]["rx_bind_mode"], "copy");
        assert_eq!(m["interfaces"]["tx"]["tx_packets"], 100);
        assert_eq!(m["interfaces"]["rx"]["rx_packets"], 98);
        assert!(m["fault"].as_str().unwrap().starts_with("rx host:"));
    }
}
