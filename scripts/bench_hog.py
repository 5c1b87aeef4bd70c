#!/usr/bin/env python3
"""Issue 34's hog check (by hand, as root, on a quiet machine, release
build: LINERATE, default target/release/linerate): a paced stream (512 B,
200,000 frames/s, 5 s) alone, then with a CPU hog pinned to the receiver's
core (`taskset -c CORE sh -c 'while :; do :; done'`, killed after), ROUNDS
rounds (default 2) on one lab (`lrbhog`). Prints, per run, the receiver's
own CPU, interference, steal, busy share, service demand (own and busy),
and its receive thread's run time, kernel share, run-queue wait and
slices; then the ratios hog / alone of the service demand."""
import json, os, signal, statistics, subprocess, sys

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 2
BIN = os.environ.get("LINERATE", "target/release/linerate")
LAB = "lrbhog"
ARGS = ["stream", "--lab", LAB, "--size", "512", "--rate", "200000", "--duration", "5s", "--json"]

subprocess.run([BIN, "lab", "up", "--lab", LAB], check=False, capture_output=True)
print("load before:", open("/proc/loadavg").read().strip(), flush=True)
sd = {"alone": [], "hog": []}
try:
    for r in range(ROUNDS):
        for name in ("alone", "hog"):
            hog = None
            if name == "hog":
                core = str(d["params"]["rx_cores"][0])
                hog = subprocess.Popen(["taskset", "-c", core, "sh", "-c", "while :; do :; done"])
            try:
                p = subprocess.run([BIN] + ARGS, capture_output=True, text=True, timeout=60)
            finally:
                if hog:
                    hog.send_signal(signal.SIGKILL)
                    hog.wait()
            if p.returncode != 0:
                print(name, "failed:", p.stderr.strip()[:300], flush=True)
                continue
            d = json.loads(p.stdout)
            c = d["receiver"]["cpu"]
            t = [t for t in d["threads"] if t["name"].startswith("lr-rx")]
            th = " ".join(
                f"{x['name']} ran {x['run_pct']:.1f} % (kernel {x.get('kernel_pct') or 0:.0f} %), waited {x['wait_pct']:.1f} %, {x['slices']} slices"
                for x in t)
            sd[name].append(c["service_demand_ms_per_mb"])
            print(f"round {r} {name:5} own {c['cpu_pct']:5.1f} % interference {c.get('interference_pct', 0):5.1f} % steal {c.get('steal_pct', 0):4.1f} % busy {c.get('busy_pct', c['cpu_pct']):5.1f} % | SD own {c['service_demand_ms_per_mb']:.3f} busy {c.get('host_service_demand_ms_per_mb') or 0:.3f} ms/MB | {th}", flush=True)
finally:
    subprocess.run([BIN, "lab", "down", "--lab", LAB], check=False, capture_output=True)
print("load after:", open("/proc/loadavg").read().strip())
if sd["alone"] and sd["hog"]:
    a, h = statistics.median(sd["alone"]), statistics.median(sd["hog"])
    print(f"receiver service demand (own time), median: alone {a:.3f}, with the hog {h:.3f} ms/MB: {h / a:.2f}x")
