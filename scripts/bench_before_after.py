#!/usr/bin/env python3
"""Before/after release bench (by hand, as root, on a quiet machine): two
release binaries of linerate, BEFORE and AFTER (paths in the environment,
default /work/linerate-before and /work/linerate-after), alternate on one
lab (`lrbench`), `stream --size 64` and `--size 1518`, 1 s warm-up and 5 s
each, ROUNDS rounds (default 5), the order swapped every round; prints each
run and the medians of received frames/s with their range and the ratio.
Each run's exit is checked; a failed run is named and left out."""
import json, subprocess, statistics, sys, os
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
bins = {
    "before": os.environ.get("BEFORE", "/work/linerate-before"),
    "after": os.environ.get("AFTER", "/work/linerate-after"),
}
lab = "lrbench"
subprocess.run([bins["after"], "lab", "up", "--lab", lab], check=False, capture_output=True)
print("load before:", open("/proc/loadavg").read().strip(), flush=True)
rows = {}
try:
    for r in range(ROUNDS):
        for size in (64, 1518):
            order = ["before", "after"] if r % 2 == 0 else ["after", "before"]
            for name in order:
                p = subprocess.run([bins[name], "stream", "--lab", lab, "--size", str(size),
                                    "--warmup", "1s", "--duration", "5s", "--json"],
                                   capture_output=True, text=True, timeout=60)
                if p.returncode != 0:
                    print(name, size, "failed:", p.stderr.strip()[:300], flush=True)
                    continue
                d = json.loads(p.stdout)
                fps = d["receiver"]["frames_per_s"]
                cpu = d["cpu"]["total"]
                cpu = round(cpu.get("cpu_pct", 0.0), 1)
                rows.setdefault((name, size), []).append((fps, cpu))
                print(f"round {r} {name:6} {size:5} B {fps/1e6:.3f} Mpps cpu {cpu}", flush=True)
finally:
    subprocess.run([bins["after"], "lab", "down", "--lab", lab], check=False, capture_output=True)
print("load after:", open("/proc/loadavg").read().strip())
for size in (64, 1518):
    b = [x[0] for x in rows.get(("before", size), [])]
    a = [x[0] for x in rows.get(("after", size), [])]
    if a and b:
        print(f"{size} B: before median {statistics.median(b)/1e6:.3f} Mpps (n={len(b)}, {min(b)/1e6:.3f}-{max(b)/1e6:.3f}), "
              f"after median {statistics.median(a)/1e6:.3f} Mpps (n={len(a)}, {min(a)/1e6:.3f}-{max(a)/1e6:.3f}), "
              f"after/before {statistics.median(a)/statistics.median(b):.3f}")
