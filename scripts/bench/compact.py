"""Benchmark of dpspark.mechanisms.compact: build time, single-key and batch lookups (m = 128).

Usage:
    .venv/bin/python scripts/bench/compact.py [--sizes 1000 10000 100000] [--repeats 3] [--out bench-results/compact.json]
    .venv/bin/python scripts/bench/compact.py --lookups-only      # the lookup targets alone (about 3 min)

Lookup section (always run; ``--lookups-only`` skips the builds): random
coefficients written to a real coefficient file and read back through
dpspark.mechanisms.compact.coefficients (as the lookup library does), then
dpspark.mechanisms.compact.evaluation.evaluate timed on fresh random keys: single-key
median over ``--lookup-repeats`` keys at l = 10^4, 10^5, 10^6 (m = 128) and
at l = 10^6 for m = 64, 192, 256, and one batch of ``--batch-keys`` keys at
l = ``--batch-ell`` (m = 128). Wall and CPU (process) time are both reported,
with the load average, because the machine is shared. JIT cost is kept out of
the timed calls (one warm-up call each) and reported separately: the first
lookup in a fresh process with numba's on-disk cache (warm) and with an empty
cache directory (cold compile).

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

from dpspark.mechanisms.compact import compact_histogram, compact_mechanism  # noqa: E402
from dpspark.rng import SeededRandom  # noqa: E402

UNIVERSE = 2**64


CPU: list[float] = []


def median_time(fn: Any, repeats: int) -> float:
    """Median wall seconds of fn over repeats (the median process CPU seconds go to CPU[-1])."""
    out, cpu = [], []
    for _ in range(repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)  # report
        cpu.append(time.process_time() - c0)  # report
    CPU.append(statistics.median(cpu))  # report
    return statistics.median(out)  # report


def slope(sizes: list[int], secs: list[float]) -> float | None:
    """Least-squares slope of log(time) on log(size)."""
    if len(sizes) < 2:
        return None
    xs = [math.log(s) for s in sizes]  # report
    ys = [math.log(max(t, 1e-9)) for t in secs]  # report
    mx, my = statistics.mean(xs), statistics.mean(ys)  # report
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)  # report


def peak_rss_mb() -> float:
    """This process's peak resident set size so far, in MiB (Linux ru_maxrss is in KiB)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # report


BASELINE = False


class baseline_algorithms:
    """Context: SubproductTree as before the scaled remainder tree (vzGG 10.5 division tree, no cached spectra)."""

    def __enter__(self) -> None:
        from dpspark.gf.subproduct import SubproductTree

        self.saved = (SubproductTree.evaluate, SubproductTree._full_spectra)
        SubproductTree.evaluate = SubproductTree.evaluate_by_division  # type: ignore[method-assign]
        SubproductTree._full_spectra = lambda self, *a: None  # type: ignore[method-assign]

    def __exit__(self, *exc: object) -> None:
        from dpspark.gf.subproduct import SubproductTree

        SubproductTree.evaluate, SubproductTree._full_spectra = self.saved  # type: ignore[method-assign]


def run(ell: int, repeats: int, batch_max: int) -> dict[str, Any]:
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
        row[f"build_cpu_s_{label}"] = CPU[-1]
        if BASELINE:
            with baseline_algorithms():
                row[f"build_s_{label}_baseline"] = median_time(build, repeats)
                row[f"build_cpu_s_{label}_baseline"] = CPU[-1]
        row[f"S_{label}"] = s
        row[f"peak_rss_mb_after_{label}"] = peak_rss_mb()  # sizes run in ascending order: the peak is this size's
    assert release is not None
    row["m"] = release.m
    probe = [int(x) for x in gen.integers(0, 2**63, 1)]
    row["lookup_single_ms"] = 1e3 * median_time(lambda: release.lookup(probe), max(repeats, 5))  # report
    if ell <= batch_max:
        batch = [int(x) for x in gen.integers(0, 2**63, ell)]
        row["batch_keys"] = ell
        row["lookup_batch_s"] = median_time(lambda: release.lookup(batch), repeats)
        row["field_eval_batch_s"] = median_time(lambda: release.field_values(batch), repeats)
    return row


# ---------------------------------------------------------------- lookups


def _coefficients(m: int, ell: int, seed: int, tmp: Path) -> np.ndarray:
    """Random coefficients through the release coefficient file (write, memory-map, read back)."""
    from dpspark.gf import GF2m

    F = GF2m(m)
    c = np.random.default_rng(seed).integers(0, 2**64, (ell, F.w), dtype=np.uint64)
    try:
        from dpspark.mechanisms.compact.coefficients import DEFAULT_BATCH_ROWS, read_coefficient_file, write_coefficient_file
    except ImportError:  # reader not available: a read-only view stands in for it
        c.setflags(write=False)
        return c
    path = tmp / f"coefficients-{m}-{ell}.arrow"
    write_coefficient_file(path, c, m)
    back = read_coefficient_file(path, m, ell, DEFAULT_BATCH_ROWS)
    path.unlink()
    assert np.array_equal(back, c)
    return back


def _timed_calls(fn: Any, args_list: list[Any]) -> dict[str, float]:
    walls, cpus = [], []
    for a in args_list:
        c0, w0 = time.process_time(), time.perf_counter()
        fn(a)
        walls.append(time.perf_counter() - w0)  # report
        cpus.append(time.process_time() - c0)  # report
    return {
        "median_wall_ms": 1e3 * statistics.median(walls),  # report
        "median_cpu_ms": 1e3 * statistics.median(cpus),  # report
        "min_wall_ms": 1e3 * min(walls),  # report
        "max_wall_ms": 1e3 * max(walls),  # report
        "calls": len(walls),
    }


_FIRST_CALL = (
    "import time, sys; t0 = time.perf_counter()\n"
    "import numpy as np, importlib\n"
    "from dpspark.gf import GF2m\n"
    "L = importlib.import_module('dpspark.mechanisms.compact.evaluation')\n"
    "F = GF2m(128); c = np.ones((1000, 2), np.uint64); c.setflags(write=False)\n"
    "t1 = time.perf_counter(); L.evaluate(F, c, [12345]); t2 = time.perf_counter()\n"
    "L.evaluate(F, np.ascontiguousarray(c), [1, 2]); t3 = time.perf_counter()\n"
    "print(t1 - t0, t2 - t1, t3 - t2)\n"
)


def first_call_costs() -> dict[str, float]:
    """Seconds for import and the first single-key (and first batch) lookup in a fresh process."""
    import subprocess
    import tempfile

    root = str(Path(__file__).resolve().parents[2])
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as cold:
        for label, extra in (("cold_compile", {"NUMBA_CACHE_DIR": cold}), ("warm_cache", {})):
            env = dict(os.environ, PYTHONPATH=root, **extra)
            if label == "warm_cache":
                env.pop("NUMBA_CACHE_DIR", None)
            res = subprocess.run([sys.executable, "-c", _FIRST_CALL], env=env, capture_output=True, text=True, check=True, cwd=root)
            imp, single, batch = (float(v) for v in res.stdout.split())  # report
            out[f"{label}_import_s"] = imp
            out[f"{label}_first_single_s"] = single
            out[f"{label}_first_batch_s"] = batch
    return out


def lookup_bench(args: argparse.Namespace) -> dict[str, Any]:
    """Single-key and batch lookup timings through dpspark.mechanisms.compact.evaluation.evaluate."""
    import importlib
    import tempfile

    from dpspark.gf import GF2m

    L = importlib.import_module("dpspark.mechanisms.compact.evaluation")
    res: dict[str, Any] = {"loadavg_start": os.getloadavg()}
    gen = np.random.default_rng(4)
    cases = [(128, ell) for ell in (10**4, 10**5, 10**6)] + [(m, 10**6) for m in (64, 192, 256)]
    singles = []
    with tempfile.TemporaryDirectory() as td:
        tmp = Path(td)
        for m, ell in cases:
            F = GF2m(m)
            coeffs = _coefficients(m, ell, m + ell, tmp)
            L.evaluate(F, coeffs, [1])  # warm-up (JIT / cache load)
            keys = [[int(v)] for v in gen.integers(0, 2**63, args.lookup_repeats)]
            row = {"m": m, "ell": ell, **_timed_calls(lambda k: L.evaluate(F, coeffs, k), keys)}
            singles.append(row)
            print(
                f"  single key  m={m:<4} l={ell:<8} median {row['median_wall_ms']:8.2f} ms wall {row['median_cpu_ms']:8.2f} ms cpu"
                f"  (min {row['min_wall_ms']:.2f}, max {row['max_wall_ms']:.2f}, {row['calls']} keys)",
                flush=True,
            )
        res["single"] = singles
        F = GF2m(128)
        ell, k = args.batch_ell, args.batch_keys
        coeffs = _coefficients(128, ell, 99, tmp)
        L.evaluate(F, coeffs[:5000], [int(v) for v in gen.integers(0, 2**63, 300)])  # warm-up
        batch = [int(v) for v in gen.integers(0, 2**63, k)]
        c0, w0 = time.process_time(), time.perf_counter()
        vals = L.evaluate(F, coeffs, batch)
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0  # report
        spot = [int(i) for i in gen.choice(k, 3, replace=False)]
        agree = all(vals[i] == L.evaluate(F, coeffs, [batch[i]])[0] for i in spot)
        path = "multipoint" if L.use_multipoint(k, ell) else "horner_many"
        res["batch"] = {"m": 128, "ell": ell, "keys": k, "path": path, "wall_s": wall, "cpu_s": cpu, "spot_check_agrees": agree}
        print(f"  batch       m=128  l={ell:<8} {k} keys ({path}): {wall:.1f} s wall, {cpu:.1f} s cpu, spot check {agree}", flush=True)
    res["first_call"] = first_call_costs()
    res["loadavg_end"] = os.getloadavg()
    return res


def print_lookup_table(res: dict[str, Any]) -> None:
    print(f"\nlookups via dpspark.mechanisms.compact.evaluation.evaluate (load {res['loadavg_start']} -> {res['loadavg_end']})")
    print(f"{'case':<34} {'median wall':>12} {'median cpu':>11}  target")
    for r in res["single"]:
        tgt = "<= 10 ms" if (r["m"], r["ell"]) == (128, 10**6) else ""
        print(f"{'single key m=%d l=%d' % (r['m'], r['ell']):<34} {r['median_wall_ms']:9.2f} ms {r['median_cpu_ms']:8.2f} ms  {tgt}")
    b = res["batch"]
    print(f"{'batch %d keys m=128 l=%d' % (b['keys'], b['ell']):<34} {b['wall_s']:10.1f} s {b['cpu_s']:9.1f} s  <= 300 s ({b['path']})")
    fc = res["first_call"]
    print(
        "first lookup in a fresh process: warm numba cache %.2f s (import %.2f s); cold compile %.1f s (import %.2f s)"
        % (fc["warm_cache_first_single_s"], fc["warm_cache_import_s"], fc["cold_compile_first_single_s"], fc["cold_compile_import_s"])
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--repeats-large", type=int, default=1, help="repeats for l >= 10^5")
    ap.add_argument("--lookups-only", action="store_true", help="skip the builds; only the lookup section")
    ap.add_argument("--builds-only", action="store_true", help="skip the lookup section")
    ap.add_argument("--lookup-repeats", type=int, default=21, help="random keys per single-key case")
    ap.add_argument("--batch-keys", type=int, default=100_000)
    ap.add_argument("--batch-ell", type=int, default=1_000_000)
    ap.add_argument("--batch-max", type=int, default=100_000, help="build section: batch-look-up l keys only for l <= this")
    ap.add_argument("--out", default="bench-results/compact.json")
    ap.add_argument("--baseline", action="store_true",
                    help="also time every build with the previous algorithms (division remainder tree, no cached spectra)")
    args = ap.parse_args()
    global BASELINE
    BASELINE = args.baseline
    if args.lookups_only:
        look = lookup_bench(args)
        print_lookup_table(look)
        out = {"machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "loadavg": os.getloadavg()}, "lookups": look}
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(out, indent=2))
        print(f"wrote {args.out}")
        return
    rows = []
    hdr = (f"{'ell':>8} {'m':>4} {'build |S|=l-1 s':>16} {'build |S|=l/10 s':>17} {'peak MiB':>9} {'lookup 1 ms':>12} "
           f"{'batch l keys s':>15} {'field eval s':>13}")
    run(300, 1, 0)  # warm-up: numba JIT / cache loads stay out of the timed builds
    print(hdr)
    for ell in args.sizes:
        r = run(ell, args.repeats if ell < 100_000 else args.repeats_large, args.batch_max)
        r["repeats"] = args.repeats if ell < 100_000 else args.repeats_large
        rows.append(r)
        if BASELINE:
            print(f"{'':>8} {'base':>4} {r['build_s_worst_baseline']:>16.3f} {r['build_s_tenth_baseline']:>17.3f}  (previous algorithms, same run;"
                  f" cpu {r['build_cpu_s_worst_baseline']:.1f} / {r['build_cpu_s_tenth_baseline']:.1f} s)")
        print(f"{'':>8} {'cpu':>4} {r['build_cpu_s_worst']:>16.3f} {r['build_cpu_s_tenth']:>17.3f}  (new: process cpu seconds)")
        print(
            f"{r['ell']:>8} {r['m']:>4} {r['build_s_worst']:>16.3f} {r['build_s_tenth']:>17.3f} "
            f"{max(r['peak_rss_mb_after_worst'], r['peak_rss_mb_after_tenth']):>9.0f} {r['lookup_single_ms']:>12.3f} "
            f"{r.get('lookup_batch_s', float('nan')):>15.3f} {r.get('field_eval_batch_s', float('nan')):>13.3f}",
            flush=True,
        )
    sizes = [r["ell"] for r in rows]
    exps = {k: slope(sizes, [r[k] for r in rows]) for k in ("build_s_worst", "build_s_tenth", "lookup_single_ms")}
    print("scaling exponents (log-log slope over l):", {k: None if v is None else round(v, 2) for k, v in exps.items()})
    look = None
    if not args.builds_only:
        look = lookup_bench(args)
        print_lookup_table(look)
    out = {
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "loadavg": os.getloadavg()},
        "lookups": look,
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
