#!/usr/bin/env python3
"""The same run five times (by hand, as root, on a quiet machine, with a
release build: LINERATE, default target/release/linerate): `stream --size S
--duration 3` with the defaults and with `--rx-wait busy` (issue 34's first
done-when), the two alternated, ROUNDS rounds (default 5) on one lab
(`lrbrep`); prints every run (received frames/s, the placement line, total
CPU %) and, per setting, the median, max/min and whether every run recorded
the same placement. SIZE (default 64) is the first argument after ROUNDS."""
import json, os, statistics, subprocess, sys

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
SIZE = sys.argv[2] if len(sys.argv) > 2 else "64"
BIN = os.environ.get("LINERATE", "target/release/linerate")
LAB = "lrbrep"
CONFIGS = {"defaults": [], "rx-busy": ["--rx-wait", "busy"]}

subprocess.run([BIN, "lab", "up", "--lab", LAB], check=False, capture_output=True)
print("load before:", open("/proc/loadavg").read().strip(), flush=True)
rows = {}
try:
    for r in range(ROUNDS):
        for name in (CONFIGS if r % 2 == 0 else reversed(list(CONFIGS))):
            p = subprocess.run(
                [BIN, "stream", "--lab", LAB, "--size", SIZE, "--duration", "3s", "--json"]
                + CONFIGS[name], capture_output=True, text=True, timeout=60)
            if p.returncode != 0:
                print(name, "failed:", p.stderr.strip()[:300], flush=True)
                continue
            d = json.loads(p.stdout)
            fps = d["receiver"]["frames_per_s"]
            placement = d["setup"]["placement"]
            cpu = d["cpu"]["total"]["cpu_pct"]
            rows.setdefault(name, []).append((fps, placement))
            # What the host and other tasks took, beside linerate's own:
            # per side, interference and steal; the floor's gaps just
            # before the window (a spinning loop's lost time).
            side = lambda s, k: (d.get(s) or {}).get("cpu", {}).get(k)
            fmt = lambda v: "-" if v is None else f"{v:.1f}"
            noise = d.get("noise") or {}
            gaps = noise.get("gap_pct") if isinstance(noise, dict) else None
            # The kernel's receive work per frame (receiver.softirq_ns_per_frame):
            # what moves between runs when nothing else does.
            rx_pct = sum(s["net_rx_pct"] for s in d.get("softirq") or []
                         if s["net_rx_pct"] >= 1.0 and s.get("host") != "tx")
            softirq_ns = rx_pct / 100 / fps * 1e9 if fps > 0 else 0.0
            print(f"round {r} {name:9} {fps/1e6:.3f} Mpps cpu {cpu:5.1f} % "
                  f"| NET_RX {softirq_ns:.0f} ns/frame "
                  f"| rx interference {fmt(side('receiver', 'interference_pct'))} % "
                  f"steal {fmt(side('receiver', 'steal_pct'))} % "
                  f"| tx interference {fmt(side('sender', 'interference_pct'))} % "
                  f"steal {fmt(side('sender', 'steal_pct'))} % "
                  f"| floor gaps {fmt(gaps)} % | {placement}", flush=True)
finally:
    subprocess.run([BIN, "lab", "down", "--lab", LAB], check=False, capture_output=True)
print("load after:", open("/proc/loadavg").read().strip())
for name, xs in rows.items():
    f = [x[0] for x in xs]
    same = len({x[1] for x in xs}) == 1
    print(f"{name:9} {SIZE} B: median {statistics.median(f)/1e6:.3f} Mpps, range "
          f"{min(f)/1e6:.3f}-{max(f)/1e6:.3f}, max/min {max(f)/min(f):.2f}, "
          f"same placement in all {len(xs)}: {same}")
