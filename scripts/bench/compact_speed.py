"""Compact build and batch lookup, this tree against a baseline git ref, in one run (issue 24 goal 4).

Usage:
    .venv/bin/python scripts/bench/compact_speed.py [--sizes 100000 1000000] [--baseline-ref redesign]
        [--batch-keys 100000] [--batch-ell 1000000] [--repeats 1] [--out bench-results/compact-speed.json]

The baseline is the ``dpspark`` package of ``--baseline-ref`` extracted with
``git archive`` into a temporary directory (its own numba cache there). Each
case runs in a fresh child process per side, the sides alternating, so both
see the same machine load; every child first compiles or loads its kernels
(a small build and a small multipoint lookup, untimed). Cases:

* build: compact_histogram at l = n + 1 with |S| = l - 1 (every unit its own
  key, the worst case), m = 128, |X| = 2^64, a fixed seed: wall and CPU
  seconds, and the sha256 of the released coefficients;
* batch: ``evaluation.evaluate`` of ``--batch-keys`` random keys on random
  coefficients of length ``--batch-ell`` (m = 128), with the sha256 of the values.

The two sides must give identical hashes (the run fails otherwise). Wall and
CPU figures are medians over ``--repeats`` children per side, with the load
average before each. Floats here are timing reports only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from abtree import ab_runs, extract, run_child  # scripts/bench/abtree.py: the A/B benches' shared part

ROOT = Path(__file__).resolve().parents[2]
UNIVERSE = 2**64


def _warm() -> None:
    """Compile or load every kernel the timed cases use (untimed)."""
    import numpy as np

    from dpspark.gf import GF2m, multipoint_eval

    _build(5000)
    f = GF2m(128)
    c = np.random.default_rng(0).integers(0, 2**64, (9000, 2), dtype=np.uint64)
    multipoint_eval(f, c, c[:4500])


def _build(ell: int) -> str:
    import numpy as np

    from dpspark.mechanisms.compact import compact_histogram, compact_mechanism
    from dpspark.rng import SeededRandom

    n = ell - 1
    mech = compact_mechanism(n, UNIVERSE, "1", "1/20")
    gen = np.random.default_rng(ell)
    keys = sorted({int(x) for x in gen.integers(0, 2**63, n + 16)})[:n]
    release = compact_histogram({k: 1 for k in keys}, UNIVERSE, n, mech, SeededRandom(ell), epsilon2="1/10")
    return hashlib.sha256(np.ascontiguousarray(release.coefficients).tobytes()).hexdigest()


def _batch(ell: int, keys: int) -> tuple[str, float, float]:
    import numpy as np

    from dpspark.gf import GF2m
    from dpspark.mechanisms.compact.evaluation import evaluate

    field = GF2m(128)
    gen = np.random.default_rng(ell + keys)
    coeffs = gen.integers(0, 2**64, (ell, field.w), dtype=np.uint64)
    batch = [int(v) for v in gen.integers(0, 2**63, keys)]
    c0, w0 = time.process_time(), time.perf_counter()
    vals = evaluate(field, coeffs, batch)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0  # report
    digest = hashlib.sha256(b"".join(v.to_bytes(17, "big") for v in vals)).hexdigest()
    return digest, wall, cpu


def child(case: str, size: int, keys: int) -> None:
    """Run one case in this process and print its JSON line."""
    _warm()
    load = os.getloadavg()[0]
    if case == "build":
        c0, w0 = time.process_time(), time.perf_counter()
        digest = _build(size)
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0  # report
    else:
        digest, wall, cpu = _batch(size, keys)
    print(json.dumps({"digest": digest, "wall_s": wall, "cpu_s": cpu, "load": load}))


def _run_child(tree: Path, case: str, size: int, keys: int) -> dict[str, Any]:
    return run_child(__file__, tree, [case, str(size), str(keys)], env_drop=("NUMBA_CACHE_DIR",))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--batch-keys", type=int, default=100_000)
    ap.add_argument("--batch-ell", type=int, default=1_000_000)
    ap.add_argument("--baseline-ref", default="redesign")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--no-batch", action="store_true")
    ap.add_argument("--out", default="bench-results/compact-speed.json")
    ap.add_argument("--child", nargs=3, metavar=("CASE", "SIZE", "KEYS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), int(args.child[2]))
        return
    cases = [("build", s) for s in args.sizes] + ([] if args.no_batch else [("batch", args.batch_ell)])
    rows = []
    with tempfile.TemporaryDirectory() as td:
        base = Path(td)
        extract(args.baseline_ref, base)
        for case, size in cases:
            def show(side: str, r: dict[str, Any], case: str = case, size: int = size) -> None:
                print(f"  {case:5} l={size:<8} {side:6} {r['wall_s']:7.1f} s wall {r['cpu_s']:7.1f} s cpu  "
                      f"load {r['load']:.1f}", flush=True)

            runs = ab_runs(base, args.repeats, lambda tree, case=case, size=size: _run_child(tree, case, size, args.batch_keys),
                           show, f"{case} l={size}")
            row: dict[str, Any] = {"case": case, "ell": size, "keys": args.batch_keys if case == "batch" else None, "identical": True}
            for side, rs in runs.items():
                row[f"{side}_wall_s"] = statistics.median(r["wall_s"] for r in rs)  # report
                row[f"{side}_cpu_s"] = statistics.median(r["cpu_s"] for r in rs)  # report
                row[f"{side}_load"] = [r["load"] for r in rs]
            row["speedup_wall"] = row["before_wall_s"] / row["after_wall_s"]  # report
            row["speedup_cpu"] = row["before_cpu_s"] / row["after_cpu_s"]  # report
            rows.append(row)
    print()
    print(f"| case | l | before wall / cpu | after wall / cpu | speed-up wall / cpu | load (before; after) | identical |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        what = "build |S| = l-1" if r["case"] == "build" else f"batch lookup {r['keys']} keys"
        loads = "; ".join(", ".join(f"{x:.1f}" for x in r[f"{s}_load"]) for s in ("before", "after"))
        print(
            f"| {what} | {r['ell']} | {r['before_wall_s']:.1f} s / {r['before_cpu_s']:.1f} s | {r['after_wall_s']:.1f} s / {r['after_cpu_s']:.1f} s"
            f" | {r['speedup_wall']:.2f}x / {r['speedup_cpu']:.2f}x | {loads} | {r['identical']} |"
        )
    out = ROOT / args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"baseline_ref": args.baseline_ref, "threads": os.environ.get("DPSPARK_GF_THREADS", "default"), "cpus": os.cpu_count()}
    out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
