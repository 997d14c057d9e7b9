#!/usr/bin/env python3
"""Benchmark of the counting mechanisms: setup time, per-sample time, peak memory; gmpy2 vs plain ints.

Usage: .venv/bin/python scripts/bench/counting.py [--quick] [--out bench-results/counting.json]
Each configuration runs in a fresh process (so peak RSS is per mechanism); both
big-integer backends run in the same invocation so their ratio is comparable.
Prints a table and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import resource
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

GAMMA = "2^-70"


def configs(quick: bool) -> list[dict]:
    out = []
    for n in (10**3, 10**6, 10**9):
        for eps in ("1/10", "1"):
            out.append({"mech": "FastSample", "n": n, "epsilon": eps, "gamma": GAMMA, "samples": 300 if quick else 2000})
    for n in (10**3, 10**5):
        for eps in ("1/10", "1"):
            out.append({"mech": "GeoSample", "n": n, "epsilon": eps, "samples": 3 if n == 10**5 and quick else (7 if n == 10**5 else 300)})
    return out


def run_one(cfg: dict, backend: str, queue: mp.Queue) -> None:
    from dpspark.counting import FastSample, GeoSample, bigint
    from dpspark.rng import SystemRandom

    bigint.set_backend(backend)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    if cfg["mech"] == "FastSample":
        mech = FastSample(n=cfg["n"], epsilon=cfg["epsilon"], gamma=cfg["gamma"])
    else:
        mech = GeoSample(n=cfg["n"], epsilon=cfg["epsilon"])
    setup = time.perf_counter() - t0
    rng = SystemRandom()
    times = []
    for i in range(cfg["samples"]):
        c = (i * 7919) % (mech.n + 1)
        t0 = time.perf_counter()
        mech.draw(c, rng)
        times.append(time.perf_counter() - t0)
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    desc = mech.describe()
    queue.put({
        **cfg, "backend": backend, "setup_s": setup,
        "median_us": statistics.median(times) * 1e6, "p90_us": sorted(times)[int(0.9 * len(times))] * 1e6,
        "peak_rss_mb": rss1 / 1024, "rss_growth_mb": (rss1 - rss0) / 1024,
        "d_bits": mech.d.bit_length(), "t": desc.get("t"), "fallback": desc.get("fallback"),
        "exp_eps": f"{mech.exp_eps}",
    })


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="fewer samples")
    ap.add_argument("--out", default="bench-results/counting.json")
    args = ap.parse_args()
    ctx = mp.get_context("spawn")
    rows = []
    hdr = f"{'mechanism':<11}{'n':>12}{'eps':>6}{'backend':>8}{'t':>6}{'d bits':>10}{'setup ms':>10}{'median us':>11}{'p90 us':>10}{'peak MB':>9}"
    print(hdr)
    print("-" * len(hdr))
    for cfg in configs(args.quick):
        for backend in ("gmpy2", "int"):
            q: mp.Queue = ctx.Queue()
            p = ctx.Process(target=run_one, args=(cfg, backend, q))
            p.start()
            row = q.get()
            p.join()
            rows.append(row)
            print(f"{row['mech']:<11}{row['n']:>12}{row['epsilon']:>6}{backend:>8}{str(row['t'] or '-'):>6}{row['d_bits']:>10}"
                  f"{row['setup_s'] * 1e3:>10.1f}{row['median_us']:>11.1f}{row['p90_us']:>10.1f}{row['peak_rss_mb']:>9.0f}", flush=True)
    print()
    print("gmpy2 speed-up (median per sample, same run):")
    for cfg in configs(args.quick):
        g = next(r for r in rows if r["backend"] == "gmpy2" and all(r[k] == cfg[k] for k in ("mech", "n", "epsilon")))
        i = next(r for r in rows if r["backend"] == "int" and all(r[k] == cfg[k] for k in ("mech", "n", "epsilon")))
        print(f"  {cfg['mech']:<11} n={cfg['n']:<11} eps={cfg['epsilon']:<5} {i['median_us'] / g['median_us']:.2f}x")
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump({"benchmark": "counting", "python": platform.python_version(), "machine": platform.machine(),
                   "cpus": os.cpu_count(), "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "rows": rows}, fh, indent=1)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
