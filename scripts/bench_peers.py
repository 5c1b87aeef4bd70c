#!/usr/bin/env python3
"""linerate against its peers, on one lab, in one run (see scripts/bench-peers).

Every comparison runs ours and theirs alternately (A B A B ...), `--rounds`
times, and reports medians with min and max. CPU per core comes from
/proc/stat over the measured window, for every tool alike; service demand is
busy CPU milliseconds per MB of payload received (total, and per side: the
sender's core, the receiver's core).

Writes DIR/results.jsonl (one line per run, as it finishes) and DIR/report.md
(the tables and the targets of issue 7, met or not and by how much).
"""

import argparse
import datetime
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "linerate")
LAB15, LAB90 = "bp1", "bp9"
# Two-queue labs: linerate crosses two queues over two cores for large
# frames (each core sends one queue and receives the other) and keeps the
# roles apart for small ones.
LAB15Q, LAB90Q = "bq1", "bq9"
Q2 = ", 2 queues"
A_IP, B_IP = "198.18.0.1", "198.18.0.2"
SEND_CORE, RECV_CORE = 0, 1

children = []


def log(msg):
    print(f"[{datetime.datetime.now():%H:%M:%S}] {msg}", flush=True)


def run(cmd, timeout, check=True, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()[-600:]}")
    return p


def netns(ns, cmd):
    return ["ip", "netns", "exec", ns] + cmd


def cpu_snap():
    """Busy and total jiffies per core."""
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            m = re.match(r"cpu(\d+)\s+(.*)", line)
            if not m:
                continue
            v = [int(x) for x in m.group(2).split()]
            user, nice, system, idle, iowait, irq, softirq = v[:7]
            steal = v[7] if len(v) > 7 else 0
            busy = user + nice + system + irq + softirq
            out[int(m.group(1))] = (busy, busy + idle + iowait + steal)
    return out


def cpu_pct(a, b):
    return {c: 100.0 * (b[c][0] - a[c][0]) / max(1, b[c][1] - a[c][1]) for c in a}


def figures(mb, window, cpu, fps=None):
    """Row figures from MB received in a window and CPU % per core."""
    mb_s = mb / window if window > 0 else 0.0
    busy_ms = {c: cpu[c] * 10.0 * window for c in cpu}  # % of a core over window s -> ms
    total = sum(busy_ms.values())
    sd = lambda ms: ms / mb if mb > 0 else None
    return {
        "mb_s": mb_s,
        "fps": fps,
        "cpu": [round(cpu[c], 1) for c in sorted(cpu)],
        "sd_total": sd(total),
        "sd_tx": sd(busy_ms.get(SEND_CORE, 0.0)),
        "sd_rx": sd(busy_ms.get(RECV_CORE, 0.0)),
    }


# ---- linerate -------------------------------------------------------------

def linerate(args, duration, warmup, timeout_extra=40):
    cmd = [BIN] + args + ["--duration", f"{duration}s", "--warmup", f"{warmup}s", "--json"]
    p = run(cmd, timeout=duration + warmup + timeout_extra)
    return json.loads(p.stdout)


def lr_stream(lab, extra, duration, warmup):
    d = linerate(["stream", "--lab", lab] + extra, duration, warmup)
    r, s = d["receiver"], d["sender"]
    cpu = {c["core"]: c["busy"] for c in d["cpu"]["per_core"]}
    mb = (r["message_mb_s"] or r["payload_mb_s"]) * d["window_s"]
    out = figures(mb, d["window_s"], cpu, fps=r["frames_per_s"])
    out.update(
        sent_fps=s["frames_per_s"],
        loss_pct=d["frames"]["loss_pct"],
        # Frames a sender without backpressure (the generator) handed to
        # its link that the link dropped (not sent, not lost on the way),
        # in % of those handed over.
        dropped_at_sender_pct=100.0 * d["frames"].get("dropped_at_sender", 0)
        / max(1, d["frames"]["sent"] + d["frames"].get("dropped_at_sender", 0)),
        link_pps=r["link_packets_per_s"],
        # linerate's own time (its threads and the network softirq on its
        # cores: issue 34), beside the busy share every tool gets; what
        # other tasks took of its cores is interference, not added in.
        own_cpu=d["cpu"]["total"].get("own_pct"),
        sd_own=d["cpu"]["total"].get("service_demand_ms_per_mb")
        if d["cpu"]["total"].get("cpu_source") == "own" else None,
        interference_pct=d["cpu"]["total"].get("interference_pct"),
        # The receiver's core (issue 26: receiver CPU by wait mode) and the
        # one-way latency of every received frame.
        rx_cpu=cpu.get(RECV_CORE),
        # (none where nothing was timed: the XDP-only receiver)
        p50_us=(d.get("latency") or {}).get("p50_us") if (d.get("latency") or {}).get("count") else None,
        p99_us=(d.get("latency") or {}).get("p99_us") if (d.get("latency") or {}).get("count") else None,
        # The machine's own floor, measured by the run (issue 34): the
        # paced tail is held against it (issue 36).
        spin_p99_us=(d.get("noise") or {}).get("spin_p99_us"),
        wake_p99_us=(d.get("noise") or {}).get("wake_p99_us"),
        placement=f"tx cores {d['params']['tx_cores']}, rx cores {d['params']['rx_cores']}, "
        f"sent by {d['setup'].get('tx_engine') or d['params']['backend']}, "
        f"received by {d['setup'].get('rx_engine') or d['params']['backend']}, "
        f"NAPI {d['setup'].get('napi')}, XDP {d['setup']['xdp_mode']}, "
        f"bind {d['setup']['rx_bind_mode']}, UMEM chunks {d['setup'].get('umem_chunk')} B on "
        f"{'huge' if d['setup'].get('umem_huge_pages') else '4 KB'} pages",
    )
    return out


def lr_rr(lab, extra, duration, warmup):
    d = linerate(["rr", "--lab", lab] + extra, duration, warmup)
    cpu = {c["core"]: c["busy"] for c in d["cpu"]["per_core"]}
    t, lat = d["transactions"], d["latency"]
    out = {
        "tps": t["per_s"],
        "p50_us": lat["p50_us"],
        "p99_us": lat["p99_us"],
        "mean_us": lat["mean_us"],
        "cpu": [round(cpu[c], 1) for c in sorted(cpu)],
        # From the busy share, as sockperf's row; then own time (issue 34):
        # linerate's threads and softirq on its cores.
        "us_per_tx": sum(cpu.values()) * 10.0 * 1000.0 / max(1.0, t["per_s"]),
        "us_per_tx_own": d["cpu"]["total"].get("us_per_transaction"),
        "own_cpu": d["cpu"]["total"].get("own_pct"),
        "interference_pct": d["cpu"]["total"].get("interference_pct"),
        "timeouts": t["timeouts"],
        "spin_p99_us": (d.get("noise") or {}).get("spin_p99_us"),
        "wake_p99_us": (d.get("noise") or {}).get("wake_p99_us"),
    }
    return out


# ---- DPDK testpmd (AF_XDP vdev, txonly) into linerate's receiver -------------

def link_tx_packets(ns, dev):
    p = run(["ip", "-n", ns, "-j", "-s", "link", "show", "dev", dev], timeout=10)
    return json.loads(p.stdout)[0]["stats64"]["tx"]["packets"]


def testpmd(lab, frame, duration, warmup, rx_extra=()):
    """testpmd sends `frame`-byte frames (FCS included) from side a; linerate
    --rx-only receives on side b, port 9 (txonly's UDP port), with
    `rx_extra` options."""
    mac = json.loads(run(["ip", "-n", f"{lab}-b", "-j", "link", "show", f"{lab}-b0"], 10).stdout)[0]["address"]
    cmd = netns(f"{lab}-a", [
        "dpdk-testpmd", "--no-huge", "-m", "1024", "--no-pci", "-l", f"{SEND_CORE},{RECV_CORE}",
        "--main-lcore", str(RECV_CORE), "--file-prefix", f"lr{os.getpid()}",
        "--vdev", f"net_af_xdp0,iface={lab}-a0", "--log-level=lib.eal:warning",
        "--", "--forward-mode=txonly", f"--txpkts={frame - 4}", f"--eth-peer=0,{mac}",
        "--auto-start", "--stats-period", "0",
    ])
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    children.append(p)
    try:
        # Wait until it sends (EAL start-up takes seconds without huge pages).
        t0, n0 = time.time(), link_tx_packets(f"{lab}-a", f"{lab}-a0")
        while time.time() - t0 < 30:
            time.sleep(0.5)
            if p.poll() is not None:
                raise RuntimeError(f"testpmd exited: {p.stdout.read()[-800:]}")
            if link_tx_packets(f"{lab}-a", f"{lab}-a0") > n0 + 1000:
                break
        else:
            raise RuntimeError("testpmd sent nothing within 30 s")
        row = lr_stream(lab, ["--rx-only", "--port", "9", "--size", str(frame)] + list(rx_extra), duration, warmup)
    finally:
        try:
            p.stdin.write("\n")
            p.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass
        try:
            out, _ = p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
    m = re.findall(r"TX-packets:\s+(\d+)", out)
    row["testpmd_tx_packets"] = int(m[-1]) if m else None
    row.pop("sent_fps", None)
    row.pop("loss_pct", None)
    row.pop("dropped_at_sender_pct", None)
    return row


def client_window(cmd, duration, warmup, stderr=subprocess.STDOUT):
    """Runs a peer's client for warmup + duration; returns its output (with
    stderr unless told otherwise) and CPU % per core over the measured part."""
    cli = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, text=True)
    children.append(cli)
    time.sleep(warmup)
    c0 = cpu_snap()
    time.sleep(duration)
    c1 = cpu_snap()
    out, _ = cli.communicate(timeout=30)
    return out, cpu_pct(c0, c1)


# ---- iperf3 ------------------------------------------------------------------

def iperf3(lab, udp_len, duration, warmup):
    port = "5201"
    srv = subprocess.Popen(
        netns(f"{lab}-b", ["iperf3", "-s", "-1", "-B", B_IP, "-p", port, "-A", str(RECV_CORE)]),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    children.append(srv)
    time.sleep(0.5)
    cmd = ["iperf3", "-c", B_IP, "-p", port, "-A", str(SEND_CORE), "-t", str(duration + warmup),
           "-O", str(warmup), "-J"]
    if udp_len:
        cmd += ["-u", "-b", "0", "-l", str(udp_len)]
    # Its warnings go to stderr, apart from the JSON.
    out, cpu = client_window(netns(f"{lab}-a", cmd), duration, warmup, stderr=subprocess.DEVNULL)
    srv.wait(timeout=10)
    d = json.loads(out)
    if "error" in d:
        raise RuntimeError(f"iperf3: {d['error']}")
    if udp_len:
        # The receiver's figures, which the client fetches at the end.
        s = d["end"]["sum_received"]
        secs = s["seconds"]
        received = s["bytes"] / udp_len
        row = figures(s["bytes"] / 1e6 * duration / secs, duration, cpu, fps=received / secs)
        row["loss_pct"] = s["lost_percent"]
    else:
        s = d["end"]["sum_received"]
        mb = s["bytes"] / 1e6
        row = figures(mb * duration / s["seconds"], duration, cpu)
    return row


# ---- sockperf ----------------------------------------------------------------

def sockperf(lab, duration, warmup):
    port = "11111"
    srv = subprocess.Popen(
        netns(f"{lab}-b", ["taskset", "-c", str(RECV_CORE), "sockperf", "server", "--tcp", "-i", B_IP, "-p", port]),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    children.append(srv)
    time.sleep(0.5)
    try:
        out, cpu = client_window(
            netns(f"{lab}-a", ["taskset", "-c", str(SEND_CORE), "sockperf", "ping-pong", "--tcp", "-i", B_IP,
                               "-p", port, "-t", str(duration + warmup), "-m", "14", "--full-rtt"]),
            duration, warmup)
    finally:
        srv.terminate()
        srv.wait(timeout=10)
    # "[Valid Duration] RunTime=5.550 sec; SentMessages=212391; ReceivedMessages=212390"
    m = re.search(r"Valid Duration\] RunTime=([\d.]+) sec; SentMessages=(\d+); ReceivedMessages=(\d+)", out)
    if not m:
        raise RuntimeError(f"sockperf printed no summary: {out[-600:]}")
    tps = int(m.group(3)) / float(m.group(1))
    pct = lambda p: float(re.search(rf"percentile {p}\s*=\s*([\d.]+)", out).group(1))
    avg = float(re.search(r"avg-rtt=([\d.]+)", out).group(1))
    return {
        "tps": tps, "p50_us": pct("50.000"), "p99_us": pct("99.000"), "mean_us": avg,
        "cpu": [round(cpu[c], 1) for c in sorted(cpu)],
        "us_per_tx": sum(cpu.values()) * 10.0 * duration * 1000.0 / max(1.0, tps * duration),
    }


# ---- the plan ----------------------------------------------------------------

def plan(d, w):
    """(group, row name, tool, runner) in the order a round runs them; rows
    of a group alternate ours and theirs."""
    xs = lambda lab, extra: (lambda: lr_stream(lab, extra, d, w))
    xr = lambda lab, extra: (lambda: lr_rr(lab, extra, d, w))
    return [
        ("frames1518", "linerate xdp, 1518 B", "linerate", xs(LAB15, [])),
        ("frames1518", "testpmd txonly -> linerate rx, 1518 B", "dpdk-testpmd", lambda: testpmd(LAB15, 1518, d, w)),
        # Two queues on two cores: linerate crosses them (each core sends
        # one queue and receives the other; its senders then block).
        ("frames1518", f"linerate xdp, 1518 B{Q2}", "linerate", xs(LAB15Q, ["--queues", "2"])),
        ("frames64", "linerate xdp, 64 B", "linerate", xs(LAB15, ["--size", "64"])),
        ("frames64", "testpmd txonly -> linerate rx, 64 B", "dpdk-testpmd", lambda: testpmd(LAB15, 64, d, w)),
        ("frames64", f"linerate xdp, 64 B{Q2}", "linerate", xs(LAB15Q, ["--queues", "2", "--size", "64"])),
        ("udp1472", "linerate xdp, 1472 B payload", "linerate", xs(LAB15, [])),
        ("udp1472", "linerate udp backend, 1472 B", "linerate", xs(LAB15, ["--backend", "udp"])),
        ("udp1472", "iperf3 UDP -l 1472 -b 0", "iperf3", lambda: iperf3(LAB15, 1472, d, w)),
        ("udp1472", f"linerate xdp, 1472 B payload{Q2}", "linerate", xs(LAB15Q, ["--queues", "2"])),
        ("udp1472", f"linerate udp backend, 1472 B{Q2}", "linerate", xs(LAB15Q, ["--queues", "2", "--backend", "udp"])),
        ("tcp1500", "linerate tcp backend, MTU 1500", "linerate", xs(LAB15, ["--backend", "tcp"])),
        ("tcp1500", "iperf3 TCP, MTU 1500", "iperf3", lambda: iperf3(LAB15, 0, d, w)),
        ("mtu9000", "linerate xdp, 9018 B (3 descriptors)", "linerate", xs(LAB90, [])),
        ("mtu9000", "iperf3 TCP, MTU 9000", "iperf3", lambda: iperf3(LAB90, 0, d, w)),
        ("mtu9000", f"linerate xdp, 9018 B (3 descriptors){Q2}", "linerate", xs(LAB90Q, ["--queues", "2"])),
        ("mtu9000", "linerate udp backend, 8972 B", "linerate", xs(LAB90, ["--backend", "udp"])),
        ("mtu9000", "iperf3 UDP -l 8972 -b 0", "iperf3", lambda: iperf3(LAB90, 8972, d, w)),
        # Each at its best: one flow answered by a busy-polling responder;
        # with 16 flows the responder blocks (busy loses there, measured).
        ("rr1", "linerate xdp rr, 1 B, 1 flow", "linerate", xr(LAB15, ["--rx-wait", "busy"])),
        ("rr1", "linerate tcp rr, 1 B, 1 connection", "linerate", xr(LAB15, ["--backend", "tcp"])),
        # The in-kernel lower bound: the XDP program answers (XDP_TX), no
        # AF_XDP socket on the responder's side.
        ("rr1", "linerate rr, 1 B, 1 flow, XDP responder (XDP_TX)", "linerate", xr(LAB15, ["--responder", "xdp"])),
        ("rr1", "sockperf ping-pong TCP, 14 B", "sockperf", lambda: sockperf(LAB15, d, w)),
        ("rr16", "linerate xdp rr, 1 B, 1 flow, blocking responder", "linerate", xr(LAB15, [])),
        ("rr16", "linerate xdp rr, 1 B, 16 flows", "linerate", xr(LAB15, ["--flows", "16"])),
        ("rr16", "linerate tcp rr, 1 B, 16 connections", "linerate", xr(LAB15, ["--backend", "tcp", "--flows", "16"])),
        ("messages", "linerate xdp, 8 KB messages", "linerate", xs(LAB15, ["--message", "8192"])),
        ("messages", "linerate xdp, 64 KB messages", "linerate", xs(LAB15, ["--message", "65536"])),
        ("messages", "linerate xdp, 1 MB messages", "linerate", xs(LAB15, ["--message", "1048576"])),
        # The same messages at one paced 400 MB/s, both sides blocking: CPU
        # is then the work done, not spinning at saturation, so service
        # demand compares the cost of a MB at the three sizes.
    ] + [
        # The in-kernel generator (BPF_PROG_RUN, live frames: no skb, no
        # copy) into the AF_XDP receiver (busy on its own core) and into
        # the XDP-only receiver (counted and dropped in the XDP program),
        # and testpmd's sender into the same AF_XDP receiver.
        ("generator", f"linerate generator -> AF_XDP rx (busy), {size} B", "linerate",
         xs(lab, ["--tx-engine", "generator", "--size", str(size), "--rx-wait", "busy"]))
        for lab, size in ((LAB15, 64), (LAB15, 1518), (LAB90, 3412))
    ] + [
        ("generator", "testpmd txonly -> AF_XDP rx (busy), 64 B", "dpdk-testpmd",
         lambda: testpmd(LAB15, 64, d, w, ["--rx-wait", "busy"])),
        ("generator", "testpmd txonly -> AF_XDP rx (busy), 1518 B", "dpdk-testpmd",
         lambda: testpmd(LAB15, 1518, d, w, ["--rx-wait", "busy"])),
    ] + [
        ("generator", f"linerate generator -> XDP-only rx, {size} B", "linerate",
         xs(lab, ["--tx-engine", "generator", "--rx-engine", "xdp", "--size", str(size)]))
        for lab, size in ((LAB15, 64), (LAB15, 1518), (LAB90, 3412))
    ] + wait_rows(xs, xr) + frame_path_rows(xs, xr) + [
        ("messages_paced", f"linerate xdp, {name} messages, paced 400 MB/s, blocking", "linerate",
         xs(LAB15, ["--message", str(size), "--rate", str(round(400e6 / size)),
                    "--tx-wait", "wait", "--rx-wait", "wait"]))
        for name, size in (("8 KB", 8192), ("64 KB", 65536), ("1 MB", 1048576))
    ]


# Issue 26: receive wait modes and NAPI placement. The AF_XDP receiver's
# choices in copy mode (veth): busy or wait, NAPI in softirq on the sender's
# core or in a thread beside the receiver at SCHED_FIFO 50; the kernel's busy
# polling only reaches the udp backend there.
WAIT_PLACEMENTS = (
    ("defaults", []),
    ("busy, softirq", ["--rx-wait", "busy", "--napi", "softirq"]),
    ("wait, softirq", ["--rx-wait", "wait", "--napi", "softirq"]),
    ("busy, NAPI thread fifo:50", ["--rx-wait", "busy", "--napi", "threaded", "--napi-priority", "fifo:50"]),
    ("wait, NAPI thread fifo:50", ["--rx-wait", "wait", "--napi", "threaded", "--napi-priority", "fifo:50"]),
)
PACED_512 = ["--size", "512", "--rate", "50000"]
WAIT_PACED = (
    ("AF_XDP rx, defaults", []),
    ("udp, prefer-busy-poll", ["--backend", "udp", "--tx-engine", "backend", "--rx-wait", "prefer-busy-poll"]),
    ("udp, irq-suspend", ["--backend", "udp", "--tx-engine", "backend", "--rx-wait", "irq-suspend"]),
    ("udp, busy", ["--backend", "udp", "--tx-engine", "backend", "--rx-wait", "busy"]),
)
WAIT_RR = (
    ("defaults", []),
    ("busy client and responder", ["--tx-wait", "busy", "--rx-wait", "busy"]),
)


def wait_name(what, how):
    return f"wait: {what}, {how}"


def wait_rows(xs, xr):
    rows = []
    for size in (64, 1518):
        for how, extra in WAIT_PLACEMENTS:
            rows.append(("wait", wait_name(f"generator -> AF_XDP rx, {size} B", how), "linerate",
                         xs(LAB15, ["--size", str(size)] + extra)))
    for how, extra in WAIT_PACED:
        rows.append(("wait", wait_name("512 B paced 50 k/s", how), "linerate", xs(LAB15, PACED_512 + extra)))
    for how, extra in WAIT_RR:
        rows.append(("wait", wait_name("rr 1 flow, AF_XDP client and responder, 1 B", how), "linerate",
                     xr(LAB15, extra)))
    return rows


# Issue 36: the frame path and the latency path, its targets in one run.
FRAME_GEN = ["--tx-engine", "generator"]
FRAME_ROWS = (
    ("generator -> AF_XDP rx, 64 B, defaults", "s", FRAME_GEN + ["--size", "64"]),
    ("generator -> AF_XDP rx, 64 B, rx busy", "s", FRAME_GEN + ["--size", "64", "--rx-wait", "busy"]),
    ("generator -> AF_XDP rx, 1518 B, defaults", "s", FRAME_GEN + ["--size", "1518"]),
    ("generator -> AF_XDP rx, 1518 B, rx busy", "s", FRAME_GEN + ["--size", "1518", "--rx-wait", "busy"]),
    ("generator -> XDP-only rx, 64 B", "s", FRAME_GEN + ["--rx-engine", "xdp", "--size", "64"]),
    ("512 B paced 50 k/s, rx busy", "s", PACED_512 + ["--rx-wait", "busy"]),
    ("512 B paced 50 k/s, defaults", "s", PACED_512),
    ("rr 1 flow, AF_XDP both ends, defaults", "r", []),
    ("rr 1 flow, AF_XDP both ends, NAPI thread fifo:50", "r", ["--napi", "threaded", "--napi-priority", "fifo:50"]),
)


def frame_name(what):
    return f"frame path: {what}"


def frame_path_rows(xs, xr):
    return [("frame36", frame_name(what), "linerate", (xs if kind == "s" else xr)(LAB15, extra))
            for what, kind, extra in FRAME_ROWS]


def frame_path_report(v, g, target):
    """Issue 36's targets, from the medians of the frame36 group."""
    n = frame_name
    f1 = lambda x, d=0: "-" if x is None else f"{x:,.{d}f}"
    lines = ["", "## The frame path and the latency path (issue 36)", "",
             "| row | frames/s or transactions/s | p50 us | p99 us | floor p99 us (spin / wake) | CPU % per core | interference % |",
             "|---|---|---|---|---|---|---|"]
    for what, kind, _ in FRAME_ROWS:
        rate = v(n(what), "fps" if kind == "s" else "tps")
        lines.append(f"| {n(what)} | {f1(rate)} | {f1(v(n(what), 'p50_us'), 1)} | {f1(v(n(what), 'p99_us'), 1)} | "
                     f"{f1(v(n(what), 'spin_p99_us'), 2)} / {f1(v(n(what), 'wake_p99_us'), 1)} | "
                     f"{' / '.join(f'{c:.0f}' for c in (g(n(what), 'cpu') or [])) or '-'} | "
                     f"{f1(v(n(what), 'interference_pct'), 1)} |")
    def rate_target(what, goal, key="fps", unit=1e6, label="Mpps"):
        x = v(n(what), key)
        if x is not None:
            target(f"{what}: >= {goal / unit:g} {label}", x >= goal, f"{x / unit:.3f} {label} ({x / goal:.2f}x)")
    rate_target("generator -> AF_XDP rx, 64 B, defaults", 3.5e6)
    best = [(v(n(w), "fps"), w) for w in ("generator -> AF_XDP rx, 64 B, defaults", "generator -> AF_XDP rx, 64 B, rx busy")]
    best = max((b for b in best if b[0] is not None), default=None)
    if best:
        target("64 B generator -> AF_XDP rx, best settings: >= 4 Mpps", best[0] >= 4e6,
               f"{best[0] / 1e6:.3f} Mpps ({best[0] / 4e6:.2f}x; {best[1]})")
    rate_target("generator -> AF_XDP rx, 1518 B, defaults", 2.5e6)
    rate_target("generator -> XDP-only rx, 64 B", 5.5e6)
    for what, floor, reader in (("512 B paced 50 k/s, rx busy", "spin_p99_us", "spinning"),
                                ("512 B paced 50 k/s, defaults", "wake_p99_us", "woken")):
        p, fl = v(n(what), "p99_us"), v(n(what), floor)
        if p is not None and fl:
            target(f"{what}: one-way p99 <= 3x the run's floor ({reader} hand-off p99)", p <= 3 * fl,
                   f"p99 {p:,.1f} us vs floor {fl:,.2f} us ({p / fl:,.1f}x)")
    rate_target("rr 1 flow, AF_XDP both ends, defaults", 180e3, "tps", 1e3, "k transactions/s")
    rr = [(v(n(w), "tps"), v(n(w), "p99_us"), w) for w in
          ("rr 1 flow, AF_XDP both ends, defaults", "rr 1 flow, AF_XDP both ends, NAPI thread fifo:50")]
    rr = max((r for r in rr if r[0] is not None), default=None)
    if rr:
        target("rr 1 flow, best settings: >= 250 k transactions/s, p99 <= 6 us",
               rr[0] >= 250e3 and rr[1] is not None and rr[1] <= 6,
               f"{rr[0]:,.0f}/s ({rr[0] / 250e3:.2f}x), p99 {f1(rr[1], 1)} us ({rr[2]})")
    return lines


def wait_report(v, target):
    """The wait group's table and its targets (issue 26), from the medians."""
    lines = ["", "## Wait modes and placement (issue 26)", "",
             "| row | received frames/s | loss % | rx core CPU % | one-way p50 us | one-way p99 us |",
             "|---|---|---|---|---|---|"]
    f1 = lambda x, d=0: "-" if x is None else f"{x:,.{d}f}"
    for size in (64, 1518):
        for how, _ in WAIT_PLACEMENTS:
            n = wait_name(f"generator -> AF_XDP rx, {size} B", how)
            lines.append(f"| {n} | {f1(v(n, 'fps'))} | {f1(v(n, 'loss_pct'), 3)} | {f1(v(n, 'rx_cpu'))} | "
                         f"{f1(v(n, 'p50_us'), 1)} | {f1(v(n, 'p99_us'), 1)} |")
    for how, _ in WAIT_PACED:
        n = wait_name("512 B paced 50 k/s", how)
        lines.append(f"| {n} | {f1(v(n, 'fps'))} | {f1(v(n, 'loss_pct'), 3)} | {f1(v(n, 'rx_cpu'))} | "
                     f"{f1(v(n, 'p50_us'), 1)} | {f1(v(n, 'p99_us'), 1)} |")
    for size, mpps, max_loss in ((64, 4.0, 0.1), (1518, 3.0, 0.0)):
        for how, _ in WAIT_PLACEMENTS:
            n = wait_name(f"generator -> AF_XDP rx, {size} B", how)
            f, l = v(n, "fps"), v(n, "loss_pct")
            if f is not None:
                target(f"{size} B generator -> AF_XDP rx ({how}): >= {mpps} Mpps, loss <= {max_loss} %",
                       f >= mpps * 1e6 and (l or 0) <= max_loss,
                       f"{f/1e6:.3f} Mpps ({f/(mpps*1e6):.2f}x), loss {l:.4f} %")
    for how in ("AF_XDP rx, defaults", "udp, prefer-busy-poll", "udp, irq-suspend"):
        n = wait_name("512 B paced 50 k/s", how)
        p = v(n, "p99_us")
        if p is not None:
            target(f"512 B paced 50 k/s, {how}: one-way p99 <= 30 us", p <= 30, f"p99 {p:,.1f} us (p50 {f1(v(n, 'p50_us'), 1)})")
    irq, busy = (v(wait_name("512 B paced 50 k/s", h), "rx_cpu") for h in ("udp, irq-suspend", "udp, busy"))
    if irq is not None and busy:
        target("512 B paced 50 k/s, udp irq-suspend: rx CPU <= half of busy's", irq <= busy / 2,
               f"{irq:.0f} % vs {busy:.0f} % ({irq/busy:.2f}x)")
    for how, _ in WAIT_RR:
        n = wait_name("rr 1 flow, AF_XDP client and responder, 1 B", how)
        t, p = v(n, "tps"), v(n, "p99_us")
        if t is not None:
            target(f"rr 1 flow, AF_XDP ({how}): >= 250 k transactions/s, p99 <= 6 us",
                   t >= 250e3 and p is not None and p <= 6, f"{t:,.0f}/s ({t/250e3:.2f}x), p99 {f1(p, 1)} us")
    return lines


def median_row(runs):
    """Median, min and max of every numeric field over the runs of a row."""
    out = {}
    keys = [k for k in runs[0] if isinstance(runs[0][k], (int, float)) and not isinstance(runs[0][k], bool)]
    for k in keys:
        v = [r[k] for r in runs if isinstance(r.get(k), (int, float))]
        if v:
            out[k] = (statistics.median(v), min(v), max(v))
    if "cpu" in runs[0]:
        n = len(runs[0]["cpu"])
        out["cpu"] = [statistics.median(r["cpu"][i] for r in runs) for i in range(n)]
    for k in ("placement",):
        if k in runs[0]:
            out[k] = runs[0][k]
    return out


def fmt(t, digits=0, scale=1.0):
    if t is None:
        return "-"
    m, lo, hi = t
    f = f"{{:,.{digits}f}}"
    return f"{f.format(m * scale)} ({f.format(lo * scale)}-{f.format(hi * scale)})"


def report(out_dir, results, meta):
    rows = {}
    for r in results:
        if "error" in r:
            continue
        rows.setdefault(r["row"], []).append(r["figures"])
    med = {name: median_row(runs) for name, runs in rows.items()}
    errors = [r for r in results if "error" in r]
    g = lambda name, k: med.get(name, {}).get(k)
    v = lambda name, k: (g(name, k) or (None,))[0]

    lines = [f"# linerate against its peers ({meta['date']})", ""]
    lines.append(f"Kernel {meta['kernel']}, {meta['cpu']}, {meta['cores']} cores; lab: veth between two "
                 f"namespaces (AF_XDP copy mode, XDP native); {meta['rounds']} rounds of every row, "
                 f"{meta['duration']} s measured after {meta['warmup']} s warm-up, rows of a group "
                 "alternating (A B A B). Figures: median (min-max). CPU % per core from /proc/stat over "
                 "the window (core 0 sends, core 1 receives); service demand (SD) = busy CPU ms per MB "
                 "of payload received, total and per side, from that busy share (so that every tool is measured "
                 "alike). For linerate's rows also its own time (issue 34: its threads' run time and the "
                 "network softirq on its cores, % of the cores it uses; `own SD` = own CPU ms per MB) and "
                 "the interference (what other tasks took of its cores, never added in).")
    if "load_before" in meta:
        after = " / ".join(meta.get("load_after", ["?"]))
        lines.append("")
        lines.append(f"Load average (1/5/15 min): {' / '.join(meta['load_before'])} before, {after} after "
                     "(the bench's own runs raise it).")
    lines.append("")
    lines.append(f"Peers: {meta['peers']}.")
    lines.append("")
    lines.append("## Streams")
    lines.append("")
    lines.append("| row | received frames/s | payload MB/s | loss % | dropped at the sender % | CPU % core 0 / 1 | SD total | SD tx | SD rx | own CPU % | own SD | interference % |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for _, name, _, _ in plan(1, 1):
        m = med.get(name)
        if not m or "tps" in m:
            continue
        cpu = " / ".join(f"{c:.0f}" for c in m.get("cpu", []))
        lines.append(f"| {name} | {fmt(m.get('fps'))} | {fmt(m.get('mb_s'))} | {fmt(m.get('loss_pct'), 3)} | "
                     f"{fmt(m.get('dropped_at_sender_pct'), 2)} | {cpu} | "
                     f"{fmt(m.get('sd_total'), 2)} | {fmt(m.get('sd_tx'), 2)} | {fmt(m.get('sd_rx'), 2)} | "
                     f"{fmt(m.get('own_cpu'), 1)} | {fmt(m.get('sd_own'), 2)} | {fmt(m.get('interference_pct'), 1)} |")
    lines += ["", "## Request/response", "",
              "| row | transactions/s | mean us | p50 us | p99 us | CPU % core 0 / 1 | CPU us per transaction | own CPU % | own us per transaction | interference % |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for _, name, _, _ in plan(1, 1):
        m = med.get(name)
        if not m or "tps" not in m:
            continue
        cpu = " / ".join(f"{c:.0f}" for c in m.get("cpu", []))
        lines.append(f"| {name} | {fmt(m.get('tps'))} | {fmt(m.get('mean_us'), 1)} | {fmt(m.get('p50_us'), 1)} | "
                     f"{fmt(m.get('p99_us'), 1)} | {cpu} | {fmt(m.get('us_per_tx'), 2)} | "
                     f"{fmt(m.get('own_cpu'), 1)} | {fmt(m.get('us_per_tx_own'), 2)} | {fmt(m.get('interference_pct'), 1)} |")

    # Ours against theirs round by round: this VM drifts between a fast and
    # a slow state over minutes, which moves both rows of a round alike.
    def paired(ours, theirs, k="fps"):
        by_round = {}
        for r in results:
            if "error" not in r and r["row"] in (ours, theirs) and r["figures"].get(k):
                by_round.setdefault(r["round"], {})[r["row"]] = r["figures"][k]
        ratios = [d[ours] / d[theirs] for d in by_round.values() if ours in d and theirs in d]
        return (statistics.median(ratios), min(ratios), max(ratios)) if ratios else None

    # Targets.
    t = []
    def target(what, ok, how):
        t.append(f"| {what} | {'met' if ok else 'not met'} | {how} |")
    def frames_targets(size, mpps, max_loss):
        ours, theirs = f"linerate xdp, {size} B", f"testpmd txonly -> linerate rx, {size} B"
        fps, loss, tp = v(ours, "fps"), v(ours, "loss_pct"), v(theirs, "fps")
        for suffix, how in (("", "1 queue"), (Q2, "2 queues, linerate's placement")):
            f, l = v(ours + suffix, "fps"), v(ours + suffix, "loss_pct")
            if f is not None:
                target(f"{size} B: >= {mpps} Mpps received, loss < {max_loss} % ({how})",
                       f >= mpps * 1e6 and (l or 0) < max_loss,
                       f"{f/1e6:.3f} Mpps ({f/(mpps*1e6):.2f}x the target), loss {l:.4f} %")
        if fps and tp:
            pr = paired(ours, theirs)
            ok = (pr or (fps / tp,))[0] >= 1.0
            target(f"{size} B: frame rate >= testpmd's into the same receiver", ok,
                   f"ratio of medians {fps/tp:.2f} ({fps/1e6:.3f} vs {tp/1e6:.3f} Mpps)"
                   + (f"; median of the rounds' own ratios {pr[0]:.2f} ({pr[1]:.2f}-{pr[2]:.2f})" if pr else ""))

    frames_targets(1518, 1.2, 0.01)
    frames_targets(64, 1.7, 0.1)
    sdtcp9 = v("iperf3 TCP, MTU 9000", "sd_total")
    for suffix, how in (("", "1 queue"), (Q2, "2 queues, crossed")):
        mb9 = v(f"linerate xdp, 9018 B (3 descriptors){suffix}", "mb_s")
        sd9 = v(f"linerate xdp, 9018 B (3 descriptors){suffix}", "sd_total")
        if mb9 is not None:
            target(f"MTU 9000: >= 3,723 MB/s payload received ({how})", mb9 >= 3723, f"{mb9:,.0f} MB/s ({mb9/3723:.2f}x)")
        if sd9 and sdtcp9:
            target(f"MTU 9000: total SD <= iperf3 TCP's ({how})", sd9 <= sdtcp9,
                   f"{sd9:.3f} vs {sdtcp9:.3f} ms/MB (ratio {sd9/sdtcp9:.2f})")
    for suffix, how in (("", ""), (Q2, ", both with 2 queues, crossed")):
        xmb, xsd = v(f"linerate xdp, 1472 B payload{suffix}", "mb_s"), v(f"linerate xdp, 1472 B payload{suffix}", "sd_total")
        for peer in (f"linerate udp backend, 1472 B{suffix}",) + (("iperf3 UDP -l 1472 -b 0",) if not suffix else ()):
            pmb, psd = v(peer, "mb_s"), v(peer, "sd_total")
            if xmb and pmb and xsd and psd:
                target(f"vs {peer}: >= 4x MB/s, <= 1/4 SD{how}", xmb >= 4 * pmb and xsd <= psd / 4,
                       f"{xmb/pmb:.2f}x the MB/s, {xsd/psd:.2f}x the SD")
    x1, k1, s1 = (v("linerate xdp rr, 1 B, 1 flow", "tps"), v("linerate tcp rr, 1 B, 1 connection", "tps"),
                  v("sockperf ping-pong TCP, 14 B", "tps"))
    p99 = v("linerate xdp rr, 1 B, 1 flow", "p99_us")
    if x1 and k1:
        target("rr conc 1: >= 5x kernel TCP rr (linerate tcp)", x1 >= 5 * k1, f"{x1/k1:.2f}x ({x1:,.0f} vs {k1:,.0f}/s)")
    if x1 and s1:
        target("rr conc 1: >= 5x kernel TCP rr (sockperf)", x1 >= 5 * s1, f"{x1/s1:.2f}x ({x1:,.0f} vs {s1:,.0f}/s)")
    xt = v("linerate rr, 1 B, 1 flow, XDP responder (XDP_TX)", "tps")
    if xt and k1:
        target("rr conc 1, XDP responder: >= 5x kernel TCP rr (linerate tcp)", xt >= 5 * k1,
               f"{xt/k1:.2f}x ({xt:,.0f} vs {k1:,.0f}/s; AF_XDP client, the responder is the XDP program)")
    if p99 is not None:
        target("rr conc 1: p99 <= 20 us", p99 <= 20, f"p99 {p99:.1f} us")
    x16, k16 = v("linerate xdp rr, 1 B, 16 flows", "tps"), v("linerate tcp rr, 1 B, 16 connections", "tps")
    if x16 and k16:
        target("rr 16 flows: >= 2x kernel TCP rr with 16 connections", x16 >= 2 * k16, f"{x16/k16:.2f}x ({x16:,.0f} vs {k16:,.0f}/s)")
    u1 = v("linerate xdp rr, 1 B, 1 flow, blocking responder", "us_per_tx")
    u16 = v("linerate xdp rr, 1 B, 16 flows", "us_per_tx")
    if u1 and u16:
        # linerate stream has one flow per queue: the flows that share a
        # worker are rr's, so CPU per transaction stands in for CPU per frame.
        target("cost that does not grow: CPU per transaction from 1 to 16 flows grows <= 10 %",
               u16 <= 1.10 * u1, f"{u1:.2f} -> {u16:.2f} us per transaction ({100*(u16/u1-1):+.0f} %)")
    for what, suffix in (("at full rate", ""), ("at one paced 400 MB/s, blocking", ", paced 400 MB/s, blocking")):
        sds = [v(f"linerate xdp, {k} messages{suffix}", "sd_total") for k in ("8 KB", "64 KB", "1 MB")]
        if all(sds):
            spread = max(sds) / min(sds) - 1
            target(f"SD flat beyond 8 KB messages (within 10 %), {what}", spread <= 0.10,
                   f"{' / '.join(f'{s:.3f}' for s in sds)} ms/MB at 8 KB / 64 KB / 1 MB (spread {100*spread:.0f} %)")
    # Issue 15: the generator.
    for size, mpps, max_loss, peer_x in ((64, 1.9, 0.1, 1.6), (1518, 1.35, 0.01, None)):
        ours = f"linerate generator -> AF_XDP rx (busy), {size} B"
        theirs = f"testpmd txonly -> AF_XDP rx (busy), {size} B"
        f, l, dr = v(ours, "fps"), v(ours, "loss_pct"), v(ours, "dropped_at_sender_pct")
        if f is not None:
            target(f"generator, {size} B: >= {mpps} Mpps received by AF_XDP, loss <= {max_loss} %",
                   f >= mpps * 1e6 and (l or 0) <= max_loss,
                   f"{f/1e6:.3f} Mpps ({f/(mpps*1e6):.2f}x the target), loss on the way {l:.4f} %, "
                   f"dropped at the sender {dr:.2f} % (unpaced)")
        tp, pr = v(theirs, "fps"), paired(ours, theirs)
        if f and tp and peer_x:
            target(f"generator, {size} B: >= {peer_x}x testpmd's sender into the same receiver",
                   (pr or (f / tp,))[0] >= peer_x,
                   f"ratio of medians {f/tp:.2f}" + (f"; median of the rounds' ratios {pr[0]:.2f} ({pr[1]:.2f}-{pr[2]:.2f})" if pr else ""))
    f = v("linerate generator -> XDP-only rx, 64 B", "fps")
    if f is not None:
        target("XDP-only receiver: >= 5 Mpps at 64 B", f >= 5e6, f"{f/1e6:.3f} Mpps ({f/5e6:.2f}x)")
    mb = v("linerate generator -> AF_XDP rx (busy), 3412 B", "mb_s")
    if mb is not None:
        target("generator, 3412 B frames at MTU 9000: >= 3,723 MB/s payload received by AF_XDP", mb >= 3723,
               f"{mb:,.0f} MB/s ({mb/3723:.2f}x)")
    pl = med.get("linerate xdp, 1518 B", {}).get("placement")
    if pl:
        target("placement chosen by the engine", True, f"default run chose: {pl}")
    lines += wait_report(v, target)
    lines += frame_path_report(v, g, target)
    lines += ["", "## Targets (issues 7, 15, 26 and 36), from the medians above", "", "| target | verdict | measured |", "|---|---|---|"] + t
    if errors:
        lines += ["", "## Runs that failed", ""] + [f"- {e['row']} (round {e['round']}): {e['error']}" for e in errors]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out_dir, "report.md"), "w") as f:
        f.write(text)
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=5, help="measured seconds per run")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--out", default=None)
    ap.add_argument("--only", default=None, help="run only the groups named (comma-separated)")
    ap.add_argument("--report", default=None, metavar="DIR", help="only rewrite DIR/report.md from DIR/results.jsonl")
    ap.add_argument("--lab-suffix", default="", help="appended to the labs' names (bp1 -> bp1SUFFIX): two benches at once")
    a = ap.parse_args()
    global LAB15, LAB90, LAB15Q, LAB90Q
    if a.lab_suffix:
        if not re.fullmatch(r"[a-z0-9]{1,4}", a.lab_suffix):
            sys.exit("bench_peers: --lab-suffix: 1 to 4 lowercase letters or digits")
        LAB15, LAB90, LAB15Q, LAB90Q = (x + a.lab_suffix for x in (LAB15, LAB90, LAB15Q, LAB90Q))

    if a.report:
        with open(os.path.join(a.report, "results.jsonl")) as f:
            results = [json.loads(l) for l in f if l.strip()]
        with open(os.path.join(a.report, "meta.json")) as f:
            meta = json.load(f)
        print(report(a.report, results, meta))
        return

    out = a.out or os.path.join(ROOT, f"bench-peers-{datetime.datetime.now():%Y%m%d-%H%M%S}")
    os.makedirs(out, exist_ok=True)
    cpu_model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    def ver(cmd):
        try:
            return (run(cmd, 10, check=False).stdout or "").splitlines()[:1]
        except OSError:  # a peer not installed (--only a group without it)
            return ["(not installed)"]
    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "kernel": platform.release(), "cpu": cpu_model, "cores": os.cpu_count(),
        "rounds": a.rounds, "duration": a.duration, "warmup": a.warmup,
        # A figure taken under load is not one to sign: the load before is
        # kept, the load after written when the bench ends.
        "load_before": open("/proc/loadavg").read().split()[:3],
        "peers": "; ".join([
            "DPDK " + " ".join(ver(["dpkg-query", "-W", "-f", "${Version}", "dpdk"])) + " dpdk-testpmd, net_af_xdp vdev, --no-huge, txonly (Debian dpdk, librte-net-af-xdp23)",
            " ".join(ver(["iperf3", "--version"])),
            "sockperf " + " ".join(ver(["dpkg-query", "-W", "-f", "${Version}", "sockperf"])),
            " ".join(ver([BIN, "--version"])),
        ]),
    }
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f)

    for lab, mtu, queues in ((LAB15, 1500, 1), (LAB90, 9000, 1), (LAB15Q, 1500, 2), (LAB90Q, 9000, 2)):
        run([BIN, "lab", "up", "--lab", lab, "--mtu", str(mtu), "--queues", str(queues)], 60)
    steps = plan(a.duration, a.warmup)
    if a.only:
        groups = set(a.only.split(","))
        steps = [s for s in steps if s[0] in groups]
    results = []
    with open(os.path.join(out, "results.jsonl"), "a") as f:
        for rnd in range(1, a.rounds + 1):
            for group, name, tool, fn in steps:
                log(f"round {rnd}/{a.rounds}: {name}")
                rec = {"round": rnd, "group": group, "row": name, "tool": tool}
                try:
                    rec["figures"] = fn()
                except Exception as e:  # a failed run is reported, the bench goes on
                    rec["error"] = str(e)[:800]
                    log(f"  failed: {rec['error']}")
                results.append(rec)
                f.write(json.dumps(rec) + "\n")
                f.flush()
    meta["load_after"] = open("/proc/loadavg").read().split()[:3]
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f)
    print(report(out, results, meta))
    log(f"results in {out}")


def cleanup(*_):
    for p in children:
        if p.poll() is None:
            p.kill()
    for lab in (LAB15, LAB90, LAB15Q, LAB90Q):
        subprocess.run([BIN, "lab", "down", "--lab", lab], capture_output=True)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(130)
    finally:
        cleanup()
