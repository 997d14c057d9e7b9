"""The price of leaving max_units out: groups and answers at the fixed cap (2^40 units) against n = 10^6.

    PYTHONPATH=$PWD .venv/bin/python scripts/bench/units_cap.py [--data /tmp/measurements.parquet] [--reps 5]

Generates the example data (scripts/gen_measurements.py: 10^6 rows, 2 * 10^5 users) unless ``--data`` exists,
then, for one groups config (count, sum, mean, median per region, k = 2, c = 3) and the two answers configs of
conf/ (gaussian, bounded_noise: 7 scalars), plans each at n = 10^6 and without max_units (the cap), interleaved:
the plan's build time (median of ``--reps`` fresh builds, each in this process after one warm-up), its bits (the
JSON of its parameters, the largest exact integer in them, FastSample's exact table bits), the error bars at
beta, then one Arrow release of each (wall seconds, median of ``--reps``). Prints a table and writes
/tmp/bench_units_cap.json. Timing code only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

GROUPS = dict(by="region", keys=["north", "south", "east", "west"], max_groups_per_unit=2, max_rows_per_group=3,
              epsilon="1", aggregates=[
                  {"name": "rows", "kind": "count"},
                  {"name": "income", "kind": "sum", "column": "income", "lo": "0", "hi": "400", "scale_bits": 4},
                  {"name": "hours", "kind": "mean", "column": "hours", "lo": "0", "hi": "80"},
                  {"name": "median_age", "kind": "quantile", "column": "age", "q": "1/2", "lo": "0", "hi": "120",
                   "bins": 120}])
QUERIES = [
    {"name": "users", "kind": "count"},
    {"name": "income_total", "kind": "sum", "column": "income", "lo": "0", "hi": "400", "scale_bits": 4},
    {"name": "hours_total", "kind": "sum", "column": "hours", "lo": "0", "hi": "200"},
    {"name": "hours_per_user", "kind": "mean", "column": "hours", "lo": "0", "hi": "400", "mean": "public_n",
     "n": 200000},
    {"name": "income_per_user", "kind": "mean", "column": "income", "lo": "0", "hi": "400"},
    {"name": "rows_capped", "kind": "count", "hi": 5},
]


def _widest(obj: Any) -> int:
    """The bit length of the largest integer written in the plan's parameters (as JSON ints or digit strings)."""
    if isinstance(obj, dict):
        return max((_widest(v) for v in obj.values()), default=0)
    if isinstance(obj, list):
        return max((_widest(v) for v in obj), default=0)
    if isinstance(obj, bool):
        return 0
    if isinstance(obj, int):
        return abs(obj).bit_length()
    if isinstance(obj, str) and obj.lstrip("-").isdigit():
        return abs(int(obj)).bit_length()
    return 0


def _bars(acc: dict[str, Any]) -> list[str]:
    """The accuracy summary's per-statistic entries (groups: per aggregate; answers: per query)."""
    return [k for k in acc if k not in ("beta", "k", "compared", "abs_bound_units", "per_query")] + \
        [f"per_query.{q}" for q in acc.get("per_query") or {}]


def _get(acc: dict[str, Any], key: str) -> Any:
    return acc["per_query"][key.split(".", 1)[1]] if key.startswith("per_query.") else acc[key]


def _bar(v: Any) -> str:
    """One entry's bar, short: an answer's R (always) or bound95, a group's "+-x per group"."""
    if isinstance(v, dict):
        for key in ("R (always)", "bound95 (all answers, w.p. >= 0.95)"):
            if v.get(key) is not None:
                return f"{key.split()[0]} {v[key]}"
        return str(next(iter(v.values())))[:30]
    return str(v)[:30]


def _call(name: str) -> dict[str, Any]:
    if name.startswith("groups"):
        g = dict(GROUPS)
        aggs = g.pop("aggregates")
        by = g.pop("by")
        section = {"by": [by], **{k: v for k, v in g.items() if k != "epsilon"}}
        section["keys"] = [[k] for k in section["keys"]]
        call = {"mechanism": "groups", "epsilon": g["epsilon"], "sections": {"groups": section, "aggregates": aggs}}
        if name == "groups_gaussian":  # the discrete Gaussian forced: its window is the bound nearest the cap
            section["noise"] = "gaussian"
            call["delta"] = "1e-8"
        return call
    return {"mechanism": name, "epsilon": "1", "delta": "1e-8", "sections": {"queries": QUERIES}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/tmp/bench_units_cap_measurements.parquet")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    if not Path(args.data).exists():
        subprocess.run([sys.executable, str(ROOT / "scripts/gen_measurements.py"), args.data], check=True,
                       stdout=subprocess.DEVNULL)

    import dpspark
    from dpspark.engine.plan import build_mechanism
    from dpspark.rng import SeededRandom

    sizes = {"n=10^6": 10**6, "no max_units": None}
    rows: list[dict[str, Any]] = []
    for family in ("groups", "groups_gaussian", "gaussian", "bounded_noise"):
        call = _call(family)
        got: dict[str, dict[str, Any]] = {}
        for label, n in sizes.items():
            with dpspark.Session(args.data, max_units=n, unit_column="user_id") as s:
                spec = s.spec(**call, certify=False)
                build_mechanism(spec)  # warm-up: imports and cached calibrations
                plan_s, builds = [], []
                for _ in range(args.reps):
                    t = time.perf_counter()
                    mech = build_mechanism(spec)
                    plan = mech.plan()
                    plan_s.append(time.perf_counter() - t)  # report
                    builds.append(mech)
                mech = builds[-1]
                text = json.dumps(plan, default=str)
                d_bits = sum(int(b) for b in re.findall(r'"d_bits": (\d+)', text))  # FastSample's exact tables
                got[label] = {"plan_s": statistics.median(plan_s), "plan_json_bytes": len(text),  # report
                              "fastsample_d_bits": d_bits,
                              "widest_int_bits": _widest(json.loads(text)),
                              "accuracy": json.loads(json.dumps(mech.accuracy_summary(), default=str))}
        for _ in range(args.reps):  # the releases, interleaved (the load moves)
            for label, n in sizes.items():
                with dpspark.Session(args.data, max_units=n, unit_column="user_id",
                                     rng=SeededRandom(b"units-cap-bench".ljust(32, b"."))) as s:
                    out = Path(tempfile.mkdtemp(prefix="bench-units-cap-")) / "r"
                    t = time.perf_counter()
                    s.release(**call, output=out)
                    got[label].setdefault("release_s", []).append(time.perf_counter() - t)  # report
        for label in sizes:
            got[label]["release_s"] = statistics.median(got[label]["release_s"])  # report
            rows.append({"family": family, "n": label, **got[label]})
    print(f"load: {open('/proc/loadavg').read().split()[:3]}")  # report
    print(f"{'family':<16} {'n':<13} {'plan s':>8} {'release s':>10} {'plan JSON B':>12} {'widest int':>11} "
          f"{'FastSample d bits':>18}")
    for r in rows:
        print(f"{r['family']:<16} {r['n']:<13} {r['plan_s']:8.3f} {r['release_s']:10.2f} "  # report
              f"{r['plan_json_bytes']:12d} {r['widest_int_bits']:10d}b {r['fastsample_d_bits']:18d}")
    print("error bars at beta (n = 10^6 | no max_units), and whether the accuracy summaries are identical:")
    for family in dict.fromkeys(r["family"] for r in rows):
        a, b = (r["accuracy"] for r in rows if r["family"] == family)
        print(f"  {family:<16} identical: {a == b}; " + "; ".join(f"{k}: {_bar(_get(a, k))} | {_bar(_get(b, k))}"
                                                               for k in _bars(a)))
    Path("/tmp/bench_units_cap.json").write_text(json.dumps({"load": os.getloadavg(), "rows": rows}, indent=1,  # report
                                                            default=str))
    print("wrote /tmp/bench_units_cap.json")


if __name__ == "__main__":
    main()
