#!/usr/bin/env python3
"""rr's defaults against the sleeping settings (by hand, as root, on a quiet
machine, with a release build: LINERATE, default target/release/linerate):
`rr` with its defaults, with the responder waiting (`--rx-wait wait`, the
default before issue 36), and with both ends waiting (`--tx-wait wait
--rx-wait wait`), ROUNDS rounds (default 5) on one lab (`lrbrr`), 1 s warm-up
and 3 s each, the order rotated every round; prints every run (transactions/s,
p50 and p99 response time, total CPU %, the waits the result records) and the
medians with their range and the ratio to the defaults. Each run's exit is
checked; a failed run is named and left out."""
import json, os, statistics, subprocess, sys

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
BIN = os.environ.get("LINERATE", "target/release/linerate")
LAB = "lrbrr"
CONFIGS = {
    "defaults": [],
    "rx-wait": ["--rx-wait", "wait"],
    "both-wait": ["--tx-wait", "wait", "--rx-wait", "wait"],
}

subprocess.run([BIN, "lab", "up", "--lab", LAB], check=False, capture_output=True)
print("load before:", open("/proc/loadavg").read().strip(), flush=True)
rows = {}
try:
    names = list(CONFIGS)
    for r in range(ROUNDS):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            p = subprocess.run(
                [BIN, "rr", "--lab", LAB, "--warmup", "1s", "--duration", "3s", "--json"]
                + CONFIGS[name],
                capture_output=True, text=True, timeout=60)
            if p.returncode != 0:
                print(name, "failed:", p.stderr.strip()[:300], flush=True)
                continue
            d = json.loads(p.stdout)
            tps = d["transactions"]["per_s"]
            lat = d["latency"]
            cpu = d["cpu"]["total"]["cpu_pct"]
            waits = (d["params"]["client_wait"], d["params"]["responder_wait"])
            rows.setdefault(name, []).append((tps, lat["p50_us"], lat["p99_us"], cpu))
            print(f"round {r} {name:10} {tps/1e3:8.1f} k/s p50 {lat['p50_us']:7.1f} us "
                  f"p99 {lat['p99_us']:8.1f} us cpu {cpu:5.1f} % waits {waits}", flush=True)
finally:
    subprocess.run([BIN, "lab", "down", "--lab", LAB], check=False, capture_output=True)
print("load after:", open("/proc/loadavg").read().strip())
base = statistics.median(x[0] for x in rows.get("defaults", [(0,)]))
for name in CONFIGS:
    xs = rows.get(name, [])
    if not xs:
        continue
    tps = [x[0] for x in xs]
    med = statistics.median(tps)
    p99 = statistics.median(x[2] for x in xs)
    cpu = statistics.median(x[3] for x in xs)
    ratio = med / base if base else float("nan")
    print(f"{name:10} median {med/1e3:8.1f} k/s (range {min(tps)/1e3:.1f}-{max(tps)/1e3:.1f}), "
          f"p99 {p99:.1f} us, cpu {cpu:.1f} %, {ratio:.2f}x the defaults' rate (n={len(xs)})")
