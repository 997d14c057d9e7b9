"""Dense with max_rows_per_key: the noise step, this tree against a baseline git ref, in one run (issue 24 §5).

Usage:
    .venv/bin/python scripts/bench/dense_rows.py [--kc 10x20 10x50] [--bins 1458] [--units 5000]
        [--baseline-ref main] [--repeats 1] [--out bench-results/dense-rows.json]

The baseline is the ``dpspark`` package of ``--baseline-ref`` extracted with ``git archive`` into a
temporary directory. Each case runs in a fresh child process per side, the sides alternating, so both
see the same machine load. A case is ``KxC`` (max_keys_per_unit x max_rows_per_key): a dense release
over ``--bins`` bins (an int_range universe), ``--units`` units, epsilon 1, beta 1/20, fixed counts
(total <= k c n) and a fixed seed. Timed in the child:

* plan: ``ReleaseSpec.from_dict`` and ``construct`` (data-free; both build the counting mechanism);
* noise: ``release_from_counts`` from the exact counts (the noisy counts of every bin and the exact
  statements; the counting pass itself is not included: it is the same on both sides).

Before the change the mechanism's scalar CDF table was built in the plan when it fit (k c = 200: seconds)
and the batched sampler's table in the noise step when it did not (k c = 500: tens of seconds), so the
table also prints plan + noise.

The sha256 of the released counts, the error bar and the privacy statement must be identical on both
sides (the run fails otherwise). Wall and CPU figures are medians over ``--repeats`` children per side,
with the load average before each. Floats here are timing reports only.
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


def child(k: int, c: int, bins: int, units: int) -> None:
    """Run one case in this process and print its JSON line."""
    import numpy as np

    from dpspark.api.config import ReleaseSpec
    from dpspark.mechanisms.registry import construct
    from dpspark.rng import SeededRandom

    raw = {"keys": {"columns": ["k"]}, "universe": {"kind": "int_range", "lo": 1, "hi": bins},
           "privacy": {"mechanism": "dense", "epsilon": "1", "max_units": units, "unit_column": "u",
                       "max_keys_per_unit": k, "max_rows_per_key": c},
           "output": {"path": str(Path(tempfile.gettempdir()) / "dense-rows-bench")}}
    gen = np.random.default_rng(bins)
    counts = gen.integers(0, 3 * units * k * c // (2 * bins), bins).tolist()  # total about 3/4 of k c n
    counts[0] = 0
    assert sum(counts) <= k * c * units
    load = os.getloadavg()[0]
    c0, w0 = time.process_time(), time.perf_counter()
    spec = ReleaseSpec.from_dict(raw, base_dir=Path(tempfile.gettempdir()), input_given=True)
    mech = construct(spec)
    plan_wall, plan_cpu = time.perf_counter() - w0, time.process_time() - c0  # report
    c0, w0 = time.process_time(), time.perf_counter()
    release = mech.release_from_counts(list(range(bins)), counts, SeededRandom(b"dense-rows"), lambda _m: None)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0  # report
    text = repr((release.counts, release.accuracy.describe(), release.privacy.describe()))
    digest = hashlib.sha256(text.encode()).hexdigest()
    print(json.dumps({"digest": digest, "plan_wall_s": plan_wall, "plan_cpu_s": plan_cpu, "wall_s": wall,
                      "cpu_s": cpu, "load": load, "t": mech.counting.describe().get("t"),
                      "d_bits": mech.counting.d.bit_length()}))


def _run_child(tree: Path, k: int, c: int, bins: int, units: int) -> dict[str, Any]:
    return run_child(__file__, tree, [str(k), str(c), str(bins), str(units)])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kc", nargs="+", default=["10x20", "10x50"], help="cases KxC (max_keys_per_unit x max_rows_per_key)")
    ap.add_argument("--bins", type=int, default=1458)
    ap.add_argument("--units", type=int, default=5000)
    ap.add_argument("--baseline-ref", default="main")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--out", default="bench-results/dense-rows.json")
    ap.add_argument("--child", nargs=4, type=int, metavar=("K", "C", "BINS", "UNITS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    cases = [tuple(int(v) for v in kc.lower().split("x")) for kc in args.kc]
    rows = []
    with tempfile.TemporaryDirectory() as td:
        base = Path(td)
        extract(args.baseline_ref, base)
        for k, c in cases:
            def show(side: str, r: dict[str, Any], k: int = k, c: int = c) -> None:
                print(f"  k c = {k}x{c} {side:6} noise {r['wall_s']:7.2f} s wall {r['cpu_s']:7.2f} s cpu; "
                      f"plan {r['plan_wall_s']:6.2f} s wall; load {r['load']:.1f}", flush=True)

            runs = ab_runs(base, args.repeats, lambda tree, k=k, c=c: _run_child(tree, k, c, args.bins, args.units),
                           show, f"k c = {k}x{c}")
            row: dict[str, Any] = {"k": k, "c": c, "bins": args.bins, "units": args.units, "identical": True,
                                   "t": runs["after"][0]["t"], "d_bits": runs["after"][0]["d_bits"]}
            for side, rs in runs.items():
                for key in ("wall_s", "cpu_s", "plan_wall_s", "plan_cpu_s"):
                    row[f"{side}_{key}"] = statistics.median(r[key] for r in rs)  # report
                row[f"{side}_load"] = [r["load"] for r in rs]
            for side in runs:
                row[f"{side}_total_wall_s"] = statistics.median(r["wall_s"] + r["plan_wall_s"] for r in runs[side])  # report
            row["speedup_wall"] = row["before_wall_s"] / row["after_wall_s"]  # report
            row["speedup_cpu"] = row["before_cpu_s"] / row["after_cpu_s"]  # report
            row["speedup_total_wall"] = row["before_total_wall_s"] / row["after_total_wall_s"]  # report
            rows.append(row)
    print()
    print("| k x c | t / d bits | noise before wall / cpu | noise after wall / cpu | speed-up wall / cpu "
          "| plan before / after (wall) | plan + noise before / after (wall) | load (before; after) | identical |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        loads = "; ".join(", ".join(f"{x:.1f}" for x in r[f"{s}_load"]) for s in ("before", "after"))
        print(
            f"| {r['k']} x {r['c']} = {r['k'] * r['c']} | {r['t']} / {r['d_bits']} "
            f"| {r['before_wall_s']:.2f} s / {r['before_cpu_s']:.2f} s | {r['after_wall_s']:.2f} s / {r['after_cpu_s']:.2f} s"
            f" | {r['speedup_wall']:.1f}x / {r['speedup_cpu']:.1f}x | {r['before_plan_wall_s']:.2f} s / {r['after_plan_wall_s']:.2f} s"
            f" | {r['before_total_wall_s']:.2f} s / {r['after_total_wall_s']:.2f} s ({r['speedup_total_wall']:.1f}x)"
            f" | {loads} | {r['identical']} |"
        )
    out = ROOT / args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"baseline_ref": args.baseline_ref, "cpus": os.cpu_count(), "bins": args.bins, "units": args.units}
    out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
