"""Benchmark of dpspark.gf: field multiply, Horner, polynomial multiply, interpolation.

Usage:
    .venv/bin/python scripts/bench/gf.py [--quick] [--interp-1e6] [--out bench-results/gf.json]

Prints a table and writes JSON. Every figure is a median over ``--repeats``
runs (large cases, ``>= 10^5`` coefficients for products and interpolation,
run ``--repeats-large`` times). Wall and CPU (process) seconds are both
recorded, with the load average, because the machine may be shared. All
floating-point numbers here are timing reports only.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from dpspark import gf  # noqa: E402
from dpspark.gf import kernels as K  # noqa: E402


def timed(fn: Callable[[], object], repeats: int) -> dict[str, float]:
    """Median wall and CPU seconds of fn over repeats (after one warm-up for small cases)."""
    walls, cpus = [], []
    for _ in range(repeats):
        c0, w0 = time.process_time(), time.perf_counter()
        fn()
        walls.append(time.perf_counter() - w0)  # report
        cpus.append(time.process_time() - c0)  # report
    return {"wall_s": statistics.median(walls), "cpu_s": statistics.median(cpus), "repeats": repeats}  # report


def fit_exponent(sizes: list[int], secs: list[float]) -> float | None:
    """Least-squares slope of log(time) against log(size)."""
    if len(sizes) < 2:
        return None
    xs = [math.log(s) for s in sizes]  # report
    ys = [math.log(max(t, 1e-9)) for t in secs]  # report
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)  # report
    num = sum((x - mx) * (y - my) for x, y in zip(xs, ys))  # report
    den = sum((x - mx) ** 2 for x in xs)  # report
    return num / den  # report


def rand(rng: np.random.Generator, F: gf.GF2m, n: int) -> np.ndarray:
    return rng.integers(0, 2**64, (n, F.w), dtype=np.uint64)


def distinct_points(rng: np.random.Generator, F: gf.GF2m, n: int) -> np.ndarray:
    x = rand(rng, F, n)
    x[:, 0] = np.arange(n, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(1)
    return x


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes only (about a minute)")
    ap.add_argument("--interp-1e6", action="store_true", help="also interpolate at l = 10^6 (minutes)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--repeats-large", type=int, default=1)
    ap.add_argument("--out", default="bench-results/gf.json")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(2024)
    res: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "clmul_hardware": gf.CLMUL_HARDWARE, "threads": gf.poly.threads()},
        "loadavg_start": os.getloadavg(),
        "quick": args.quick,
    }
    rep = args.repeats

    # warm-up: compile (or load from cache) every kernel once
    t0 = time.perf_counter()
    for m in gf.MODULI:
        F = gf.GF2m(m)
        x = distinct_points(rng, F, 70)
        gf.interpolate(F, x, x)
        gf.horner(F, x, x[0], "table")
        gf.horner(F, x, x[0], "clmul")
        gf.horner(F, x, x[0], "agg")
        F.mul_fixed(F.mul_table(x[0]), x)
        F.inv(x)
        gf.fft_mul(F, x, x)
    res["warmup_s"] = time.perf_counter() - t0  # report

    # 1. field multiply, ns per element
    nmul = 1 << (16 if args.quick else 20)
    rows = []
    for m in sorted(gf.MODULI):
        F = gf.GF2m(m)
        a, b = rand(rng, F, nmul), rand(rng, F, nmul)
        out = np.empty_like(a)
        tg = timed(lambda: K.mul_arrays(a, b, F.taps, out), rep)
        tab = F.mul_table(b[0])
        tf = timed(lambda: K.table_mul_arrays(tab, a, out), rep)
        tt = timed(lambda: F.mul_table(b[1]), rep)
        ti = timed(lambda: F.inv(a[: nmul // 16]), rep)
        rows.append(
            {
                "m": m,
                "generic_ns": tg["wall_s"] / nmul * 1e9,  # report
                "fixed_table_ns": tf["wall_s"] / nmul * 1e9,  # report
                "table_build_us": tt["wall_s"] * 1e6,  # report
                "batch_inverse_ns": ti["wall_s"] / (nmul // 16) * 1e9,  # report
            }
        )
    res["multiply"] = rows

    # 2. Horner at one point, m = 128
    F = gf.GF2m(128)
    big = rand(rng, F, 10**6)
    x = rand(rng, F, 1)[0]
    hor = []
    for ell in (10**4, 10**5, 10**6):
        c = big[:ell]
        row: dict[str, Any] = {"l": ell}
        for meth in ("clmul", "table", "agg"):
            row[f"{meth}_ms"] = timed(lambda: gf.horner(F, c, x, meth), rep)["wall_s"] * 1e3  # report
        hor.append(row)
    keys = rand(rng, F, 64)
    tm = timed(lambda: gf.horner_many(F, big[:10**5], keys), rep)
    res["horner"] = hor
    res["horner_many_l1e5_64keys_ms_per_key"] = tm["wall_s"] * 1e3 / 64  # report

    # 3. polynomial multiply, m = 128
    psizes = [10**3, 10**4] if args.quick else [10**3, 10**4, 10**5]
    pm = []
    for n in psizes:
        a, b = big[:n], big[n : 2 * n]
        r = rep if n < 10**5 else args.repeats_large
        row = {"n": n, "auto": timed(lambda: gf.poly_mul(F, a, b), r)}
        if n <= 10**5:
            row["karatsuba"] = timed(lambda: gf.poly_mul_karatsuba(F, a, b), r)
        pm.append(row)
    res["poly_mul"] = pm
    res["poly_mul_exponent"] = fit_exponent([r["n"] for r in pm], [r["auto"]["wall_s"] for r in pm])

    # 4. interpolation through the subproduct tree, m = 128
    isizes = [10**3, 10**4] if args.quick else [10**3, 10**4, 10**5]
    if args.interp_1e6:
        isizes.append(10**6)
    it = []
    for n in isizes:
        pts = distinct_points(rng, F, n)
        vals = big[:n] if n <= 10**6 else rand(rng, F, n)
        r = rep if n < 10**5 else args.repeats_large
        holder: dict[str, np.ndarray] = {}

        def run() -> None:
            holder["f"] = gf.interpolate(F, pts, vals)

        row = {"l": n, **timed(run, r)}
        sample = np.arange(0, n, max(1, n // 50))
        row["verified"] = bool(np.array_equal(gf.horner_many(F, holder["f"], pts[sample]), vals[sample]))
        it.append(row)
        print(f"  interpolation l={n}: {row['wall_s']:.2f} s wall, {row['cpu_s']:.2f} s cpu", flush=True)  # report
    res["interpolate"] = it
    res["interpolate_exponent"] = fit_exponent([r["l"] for r in it], [r["wall_s"] for r in it])
    res["interpolate_exponent_cpu"] = fit_exponent([r["l"] for r in it], [r["cpu_s"] for r in it])
    res["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # report
    res["loadavg_end"] = os.getloadavg()

    # table
    print(f"clmul hardware: {gf.CLMUL_HARDWARE}, threads: {gf.poly.threads()}, load {res['loadavg_start']} -> {res['loadavg_end']}")
    print("\nfield multiply (ns/op)          generic   fixed(table)  table build (us)  batch inverse (ns)")
    for r in rows:
        print(f"  m={r['m']:<4}                     {r['generic_ns']:8.1f}  {r['fixed_table_ns']:12.1f}  {r['table_build_us']:16.1f}  {r['batch_inverse_ns']:16.1f}")
    print("\nHorner, m=128 (ms)      clmul     table       agg (default)")
    for r in hor:
        print(f"  l={r['l']:<9}      {r['clmul_ms']:9.2f} {r['table_ms']:9.2f} {r['agg_ms']:9.2f}")
    print(f"  multi-key (l=1e5, 64 keys): {res['horner_many_l1e5_64keys_ms_per_key']:.2f} ms/key")
    print("\npoly multiply, m=128 (s)      auto(FFT>=2048)   karatsuba")
    for r in pm:
        k = r.get("karatsuba", {}).get("wall_s", float("nan"))
        print(f"  n={r['n']:<9}             {r['auto']['wall_s']:10.4f}   {k:10.4f}")
    print(f"  fitted exponent (auto): {res['poly_mul_exponent']:.3f}")
    print("\ninterpolation, m=128 (s)      wall        cpu   verified")
    for r in it:
        print(f"  l={r['l']:<9}           {r['wall_s']:9.3f}  {r['cpu_s']:9.3f}   {r['verified']}")
    print(f"  fitted exponent: wall {res['interpolate_exponent']:.3f}, cpu {res['interpolate_exponent_cpu']:.3f}")
    print(f"\npeak RSS: {res['peak_rss_mib']:.0f} MiB")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=2, default=float))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
