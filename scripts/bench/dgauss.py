#!/usr/bin/env python3
"""Benchmark of the strict-time discrete Gaussian against OpenDP's make_gaussian on integers.

Usage: .venv/bin/python scripts/bench/dgauss.py [--quick] [--batch 100000] [--out bench-results/dgauss.json]

Per sigma: setup time (construction, certified weights), peak traced memory of
the construction, per-draw time of ``draw_many`` in batches (SystemRandom) and of
single ``draw`` calls, the certificate (time, eta), and OpenDP's
``make_gaussian`` on an integer vector of the same batch size and on single
integers, in the same run (skipped if opendp is not installed: ``pip install
dpspark[bench]``). Load average is recorded next to the figures; compare only
ratios within one run. Floats here are reporting only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import tracemalloc

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from dpspark.noise import DiscreteGaussian, certify  # noqa: E402
from dpspark.rng import SystemRandom  # noqa: E402


def opendp_gaussian(sigma: int, batch: int) -> dict | None:
    """Per-draw times of OpenDP's make_gaussian on ints (vector batch and scalar), or None if absent."""
    try:
        import opendp.prelude as dp
    except ImportError:
        return None
    dp.enable_features("contrib")
    t0 = time.perf_counter()
    vec = dp.m.make_gaussian(dp.vector_domain(dp.atom_domain(T=int)), dp.l2_distance(T=int), scale=float(sigma))  # report
    one = dp.m.make_gaussian(dp.atom_domain(T=int), dp.absolute_distance(T=int), scale=float(sigma))  # report
    setup = time.perf_counter() - t0
    vec([0] * 1000)  # warm-up
    t0, c0 = time.perf_counter(), time.process_time()
    vec([0] * batch)
    per_batch = (time.perf_counter() - t0) / batch
    per_batch_cpu = (time.process_time() - c0) / batch
    n_single = 300
    t0 = time.perf_counter()
    for _ in range(n_single):
        one(0)
    per_single = (time.perf_counter() - t0) / n_single
    return {"setup_s": setup, "batch_us": per_batch * 1e6, "batch_cpu_us": per_batch_cpu * 1e6, "single_us": per_single * 1e6}  # report


def bench_sigma(sigma: int, batch: int, quick: bool) -> dict:
    t0, c0 = time.perf_counter(), time.process_time()
    mech = DiscreteGaussian(sigma=sigma)
    setup, setup_cpu = time.perf_counter() - t0, time.process_time() - c0
    tracemalloc.start()
    DiscreteGaussian(sigma=sigma)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rng = SystemRandom()
    mech.draw_many(1000, rng)  # warm-up
    reps = 1 if quick else 3
    per_draw, per_draw_cpu = [], []
    for _ in range(reps):
        t0, c0 = time.perf_counter(), time.process_time()
        mech.draw_many(batch, rng)
        per_draw.append((time.perf_counter() - t0) / batch)
        per_draw_cpu.append((time.process_time() - c0) / batch)
    singles = []
    for _ in range(300):
        t0 = time.perf_counter()
        mech.draw(rng)
        singles.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    cert = certify(mech, 4, verify_weights=True)
    cert_s = time.perf_counter() - t0
    return {
        "sigma": sigma,
        "T": mech.T,
        "m": mech.m,
        "rounds": mech.rounds,
        "floor": mech.floor,
        "floor_mass": float(mech.floor * mech.m) / mech.d,  # report
        "setup_s": setup,
        "setup_cpu_s": setup_cpu,
        "peak_mem_mb": peak / 2**20,  # report
        "batch_us": statistics.median(per_draw) * 1e6,  # report
        "batch_cpu_us": statistics.median(per_draw_cpu) * 1e6,  # report
        "single_us": statistics.median(singles) * 1e6,  # report
        "certify_s": cert_s,
        "certified": cert.ok,
        "eta_max": None if cert.eta_max is None else str(cert.eta_max),
        "rho": [None if b.rho is None else str(b.rho) for b in cert.bounds],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="one repetition, smaller batch")
    ap.add_argument("--batch", type=int, default=100_000)
    ap.add_argument("--sigmas", default="1,10,100,1000,10000")
    ap.add_argument("--out", default="bench-results/dgauss.json")
    args = ap.parse_args()
    batch = 20_000 if args.quick else args.batch
    load_before = os.getloadavg()
    rows = []
    hdr = (f"{'sigma':>6}{'m':>8}{'rounds':>7}{'setup ms':>10}{'(cpu)':>8}{'mem MB':>8}{'us/draw':>9}{'(cpu)':>7}"
           f"{'us/single':>10}{'cert s':>8}{'eta':>5}{'opendp us/draw':>15}{'(cpu)':>7}{'opendp us/single':>17}")
    print(hdr)
    print("-" * len(hdr))
    for s in (int(x) for x in args.sigmas.split(",")):
        row = bench_sigma(s, batch, args.quick)
        row["opendp"] = opendp_gaussian(s, batch)
        rows.append(row)
        od = row["opendp"]
        od_batch = f"{od['batch_us']:.2f}" if od else "absent"
        od_cpu = f"{od['batch_cpu_us']:.2f}" if od else "-"
        od_single = f"{od['single_us']:.2f}" if od else "absent"
        print(
            f"{s:>6}{row['m']:>8}{row['rounds']:>7}{row['setup_s'] * 1e3:>10.1f}{row['setup_cpu_s'] * 1e3:>8.1f}"
            f"{row['peak_mem_mb']:>8.1f}{row['batch_us']:>9.2f}{row['batch_cpu_us']:>7.2f}{row['single_us']:>10.2f}"
            f"{row['certify_s']:>8.2f}{row['eta_max'] or 'inf':>5}{od_batch:>15}{od_cpu:>7}{od_single:>17}",
            flush=True,
        )
    load_after = os.getloadavg()
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} (cpus: {os.cpu_count()})")
    out = {
        "rows": rows,
        "batch": batch,
        "load_before": load_before,
        "load_after": load_after,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
    }
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=2)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
