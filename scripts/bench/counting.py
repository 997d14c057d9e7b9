#!/usr/bin/env python3
"""Benchmark of the counting mechanisms: setup time, per-sample time, peak memory; gmpy2 vs plain ints; batched draws.

Usage: .venv/bin/python scripts/bench/counting.py [--quick] [--batch 100000] [--only-batch-target]
       [--out bench-results/counting.json]
Each configuration runs in a fresh process (so peak RSS is per mechanism); both
big-integer backends run in the same invocation so their ratio is comparable.
In the gmpy2 process the same mechanism also runs ``draw_many`` on --batch
counts (system generator): amortized microseconds per count, next to the scalar
``draw`` in the same process, and the number of tie fallbacks (exact redraws;
counted here only, never in a release). Prints a table and the load, writes JSON.
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


def configs(quick: bool, batch: int, only_target: bool = False) -> list[dict]:
    out = []
    for n in (10**3, 10**6, 10**9):
        for eps in ("1/10", "1"):
            out.append({"mech": "FastSample", "n": n, "epsilon": eps, "gamma": GAMMA, "samples": 300 if quick else 2000,
                        "batch": batch})
    for n in (10**3, 10**5):
        for eps in ("1/10", "1"):
            out.append({"mech": "GeoSample", "n": n, "epsilon": eps, "samples": 3 if n == 10**5 and quick else (7 if n == 10**5 else 300),
                        "batch": batch})
    if only_target:  # the target row: FastSample, n = 10^9, eps = 1/10
        out = [c for c in out if c["mech"] == "FastSample" and c["n"] == 10**9 and c["epsilon"] == "1/10"]
    return out


def run_one(cfg: dict, backend: str, queue: mp.Queue) -> None:
    from dpspark.noise import FastSample, GeoSample
    from dpspark.noise import bigint
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
    batch: dict = {}
    if backend == "gmpy2" and cfg.get("batch"):
        import numpy as np

        m = cfg["batch"]
        counts = (np.arange(m, dtype=np.int64) * 7919) % (mech.n + 1)
        t0 = time.perf_counter()
        mech.draw_many(counts[:1], rng)  # builds the public 63-bit tables once
        batch["batch_setup_s"] = time.perf_counter() - t0
        runs = []
        for _ in range(3):
            t0 = time.perf_counter()
            mech.draw_many(counts, rng)
            runs.append((time.perf_counter() - t0) / m)
        batch.update({"batch_counts": m, "batch_us_per_count": min(runs) * 1e6,  # report
                      "batch_us_per_count_median": statistics.median(runs) * 1e6,  # report
                      "batch_ties": mech.batch_ties, "batch_draws": 3 * m + 1})
        batch["scalar_mean_us"] = statistics.fmean(times) * 1e6  # report
        batch["speedup_vs_scalar_median"] = statistics.median(times) / min(runs)  # report
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    desc = mech.describe()
    queue.put({
        **cfg, "backend": backend, "setup_s": setup,
        "median_us": statistics.median(times) * 1e6, "p90_us": sorted(times)[int(0.9 * len(times))] * 1e6,
        "peak_rss_mb": rss1 / 1024, "rss_growth_mb": (rss1 - rss0) / 1024,
        "d_bits": mech.d.bit_length(), "t": desc.get("t"), "fallback": desc.get("fallback"),
        "exp_eps": f"{mech.exp_eps}", **batch,
    })


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="fewer samples")
    ap.add_argument("--batch", type=int, default=100_000, help="counts per draw_many call (0: skip the batched rows)")
    ap.add_argument("--only-batch-target", action="store_true", help="only FastSample n=1e9 eps=1/10 (the batch target)")
    ap.add_argument("--out", default="bench-results/counting.json")
    args = ap.parse_args()
    load_before = os.getloadavg()
    ctx = mp.get_context("spawn")
    rows = []
    hdr = f"{'mechanism':<11}{'n':>12}{'eps':>6}{'backend':>8}{'t':>6}{'d bits':>10}{'setup ms':>10}{'median us':>11}{'p90 us':>10}{'peak MB':>9}"
    print(hdr)
    print("-" * len(hdr))
    cfgs = configs(args.quick, args.batch, args.only_batch_target)
    for cfg in cfgs:
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
    for cfg in cfgs:
        g = next(r for r in rows if r["backend"] == "gmpy2" and all(r[k] == cfg[k] for k in ("mech", "n", "epsilon")))
        i = next(r for r in rows if r["backend"] == "int" and all(r[k] == cfg[k] for k in ("mech", "n", "epsilon")))
        print(f"  {cfg['mech']:<11} n={cfg['n']:<11} eps={cfg['epsilon']:<5} {i['median_us'] / g['median_us']:.2f}x")
    batched = [r for r in rows if "batch_us_per_count" in r]
    if batched:
        print()
        print(f"batched draw_many (system generator, gmpy2 process; {args.batch} counts per call, best of 3):")
        print(f"  {'mechanism':<11}{'n':>12}{'eps':>6}{'scalar median us':>18}{'batch us/count':>16}{'speed-up':>10}{'ties':>6}")
        for r in batched:
            print(f"  {r['mech']:<11}{r['n']:>12}{r['epsilon']:>6}{r['median_us']:>18.1f}{r['batch_us_per_count']:>16.3f}"
                  f"{r['speedup_vs_scalar_median']:>9.0f}x{r['batch_ties']:>6}")
    load_after = os.getloadavg()
    print(f"load average (1/5/15 min): before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump({"benchmark": "counting", "python": platform.python_version(), "machine": platform.machine(),
                   "cpus": os.cpu_count(), "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                   "load_before": load_before, "load_after": load_after, "rows": rows}, fh, indent=1)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
