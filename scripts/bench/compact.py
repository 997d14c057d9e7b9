"""Benchmark of dpspark.compact: build time, single-key and batch lookups (m = 128).

Usage:
    .venv/bin/python scripts/bench/compact.py [--sizes 1000 10000 100000] [--repeats 3] [--out bench-results/compact.json]

For each l = n + 1 in ``--sizes`` it times compact_histogram at |S| = l - 1
(every unit its own key: the worst case) and |S| = l/10, a single-key lookup
and a batch lookup of l keys. Every figure is the median wall time over
``--repeats`` runs (``--repeats-large``, default 1, for l >= 10^5). Floats here are timing reports only.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from dpspark.compact import compact_histogram, compact_mechanism  # noqa: E402
from dpspark.rng import SeededRandom  # noqa: E402

UNIVERSE = 2**64


def median_time(fn: Any, repeats: int) -> float:
    """Median wall seconds of fn over repeats."""
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)  # report
    return statistics.median(out)  # report


def slope(sizes: list[int], secs: list[float]) -> float | None:
    """Least-squares slope of log(time) on log(size)."""
    if len(sizes) < 2:
        return None
    xs = [math.log(s) for s in sizes]  # report
    ys = [math.log(max(t, 1e-9)) for t in secs]  # report
    mx, my = statistics.mean(xs), statistics.mean(ys)  # report
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)  # report


def run(ell: int, repeats: int) -> dict[str, Any]:
    n = ell - 1
    mech = compact_mechanism(n, UNIVERSE, "1", "1/20")
    gen = np.random.default_rng(ell)
    row: dict[str, Any] = {"ell": ell, "n": n, "fallback": mech.fallback is not None, "t": mech.t}
    release = None
    for label, s in (("worst", ell - 1), ("tenth", max(1, ell // 10))):
        keys = sorted({int(x) for x in gen.integers(0, 2**63, s + 16)})[:s]
        counts = {k: 1 for k in keys}
        counts[keys[0]] += n - s  # total exactly n
        seeds = iter(range(10**6))

        def build(counts: dict[int, int] = counts) -> None:
            nonlocal release
            release = compact_histogram(counts, UNIVERSE, n, mech, SeededRandom(next(seeds)), epsilon2="1/10")

        row[f"build_s_{label}"] = median_time(build, repeats)
        row[f"S_{label}"] = s
    assert release is not None
    row["m"] = release.m
    probe = [int(x) for x in gen.integers(0, 2**63, 1)]
    row["lookup_single_ms"] = 1e3 * median_time(lambda: release.lookup(probe), max(repeats, 5))  # report
    batch = [int(x) for x in gen.integers(0, 2**63, ell)]
    row["batch_keys"] = ell
    row["lookup_batch_s"] = median_time(lambda: release.lookup(batch), repeats)
    row["field_eval_batch_s"] = median_time(lambda: release.field_values(batch), repeats)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--repeats-large", type=int, default=1, help="repeats for l >= 10^5")
    ap.add_argument("--out", default="bench-results/compact.json")
    args = ap.parse_args()
    rows = []
    hdr = f"{'ell':>8} {'m':>4} {'build |S|=l-1 s':>16} {'build |S|=l/10 s':>17} {'lookup 1 ms':>12} {'batch l keys s':>15} {'field eval s':>13}"
    print(hdr)
    for ell in args.sizes:
        r = run(ell, args.repeats if ell < 100_000 else args.repeats_large)
        r["repeats"] = args.repeats if ell < 100_000 else args.repeats_large
        rows.append(r)
        print(
            f"{r['ell']:>8} {r['m']:>4} {r['build_s_worst']:>16.3f} {r['build_s_tenth']:>17.3f} "
            f"{r['lookup_single_ms']:>12.3f} {r['lookup_batch_s']:>15.3f} {r['field_eval_batch_s']:>13.3f}",
            flush=True,
        )
    sizes = [r["ell"] for r in rows]
    exps = {k: slope(sizes, [r[k] for r in rows]) for k in ("build_s_worst", "build_s_tenth", "lookup_single_ms", "lookup_batch_s", "field_eval_batch_s")}
    print("scaling exponents (log-log slope over l):", {k: None if v is None else round(v, 2) for k, v in exps.items()})
    out = {
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "loadavg": os.getloadavg()},
        "repeats": args.repeats,
        "universe": "2^64",
        "epsilon_count": "1",
        "epsilon2": "1/10",
        "rows": rows,
        "scaling_exponents": exps,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
