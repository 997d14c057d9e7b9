"""Joint quantiles on dp_multiq's protocol (issue 34 §4): dpspark's exact joint exponential mechanism against
JointExp (Gillenwater et al., ICML 2021, the public google-research/dp_multiq code) and dpspark's IndExp
(one exact exponential mechanism per quantile at eps / m).

Protocol (dp_multiq/experiment.py): n = 1,000 rows, Gaussian(0, 5) or Uniform(-5, 5), data range [-100, 100],
quantiles q_i = i / (m + 1), eps = 1; error = the average over the m quantiles of the number of rows strictly
between the true quantile (numpy "lower") and the estimate. dpspark is add/remove (one row added or removed);
JointExp runs with its add/remove sensitivity (swap=False) and, as in the paper's default, swap=True.

JointExp runs from a throwaway copy of the public code (not part of dpspark) under a peer venv with scipy:
``--peer /tmp/dp_multiq_peer/run.py --peer-python /work/peer-venvs/opendp/bin/python``; without it only dpspark
runs. One command, a table on stdout, JSON to ``--json``.

    PYTHONPATH=$PWD .venv/bin/python scripts/bench/joint_quantiles.py --trials 10 --ms 1,5,10,20,29
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

from dpspark.mechanisms.groups.joint_quantile import JointQuantileLaw
from dpspark.mechanisms.groups.joint_split import MAX_TUPLES, SplitJointLaw, tuple_count
from dpspark.rng import SeededRandom

LO, HI, N = -100, 100, 1000


def _cells(data: np.ndarray, B: int) -> list[int]:
    idx = np.rint((np.clip(data, LO, HI) - LO) / (HI - LO) * B).astype(np.int64)  # report: bench data only
    return np.bincount(idx, minlength=B + 1).tolist()


def _misclassified(data: np.ndarray, true: np.ndarray, est: np.ndarray) -> float:
    return float(np.mean([abs(int(np.sum(data > t)) - int(np.sum(data > e))) for t, e in zip(true, est)]))


def _datasets(dist: str, trials: int, seed: int) -> list[np.ndarray]:
    gen = np.random.default_rng(seed)  # bench data, not noise
    if dist == "gaussian":
        return [np.sort(gen.normal(0, 5, N)) for _ in range(trials)]
    return [np.sort(gen.uniform(-5, 5, N)) for _ in range(trials)]


def _dpspark_joint(sets: list[np.ndarray], qs: list[Fraction], B: int, rng: SeededRandom) -> tuple[list[float], float]:
    law = JointQuantileLaw(qs, B, 1, 1, Fraction(1), rng.lam, max_rows=N)
    assert law.epsilon().le(Fraction(1))
    errs, t0 = [], time.perf_counter()
    for d in sets:
        true = np.quantile(d, [float(q) for q in qs], method="lower")
        o = law.draw(_cells(d, B), rng)
        est = np.array([LO + (HI - LO) * p / B for p in o])  # report
        errs.append(_misclassified(d, true, est))
    return errs, (time.perf_counter() - t0) / len(sets)


def _dpspark_split(sets: list[np.ndarray], qs: list[Fraction], B: int, rng: SeededRandom) -> list[float] | None:
    """The split-score law the groups release uses (joint_split.py): enumerative, so only where C(B + m, m) fits."""
    if tuple_count(B, len(qs)) > MAX_TUPLES:
        return None
    law = SplitJointLaw(qs, B, 1, 1, Fraction(1), rng.lam, max_rows=N)
    assert law.epsilon().le(Fraction(1))
    errs = []
    for d in sets:
        true = np.quantile(d, [float(q) for q in qs], method="lower")
        est = np.array([LO + (HI - LO) * p / B for p in law.draw(_cells(d, B), rng)])  # report
        errs.append(_misclassified(d, true, est))
    return errs


def _dpspark_ind(sets: list[np.ndarray], qs: list[Fraction], B: int, rng: SeededRandom) -> list[float]:
    from dpspark.mechanisms.groups.aggregates import Bounds, parse_aggregate
    from dpspark.mechanisms.groups.quantile import QuantileLaw

    laws = [QuantileLaw(parse_aggregate({"name": "q", "kind": "quantile", "column": "x", "lo": str(LO), "hi": str(HI),
                                         "q": str(q), "bins": B}), Bounds(1, 1), Fraction(1, len(qs)), rng.lam)
            for q in qs]
    errs = []
    for d in sets:
        true = np.quantile(d, [float(q) for q in qs], method="lower")
        cells = _cells(d, B)
        est = np.sort(np.array([LO + (HI - LO) * law.draw_index(cells, rng) / B for law in laws]))  # report
        errs.append(_misclassified(d, true, est))
    return errs


def _peer(sets: list[np.ndarray], qs: list[Fraction], swap: bool, run: str, python: str) -> list[float]:
    true = [np.quantile(d, [float(q) for q in qs], method="lower").tolist() for d in sets]
    job = {"datasets": [d.tolist() for d in sets], "true": true, "qs": [float(q) for q in qs], "swap": swap}
    out = subprocess.run([python, run], input=json.dumps(job), capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--ms", default="1,5,10,20,29")
    ap.add_argument("--bins", type=int, default=1 << 14)
    ap.add_argument("--split-bins", type=int, default=1 << 11, help="grid of the split-score law (enumerative)")
    ap.add_argument("--dists", default="gaussian,uniform")
    ap.add_argument("--peer", default="/tmp/dp_multiq_peer/run.py")
    ap.add_argument("--peer-python", default="/work/peer-venvs/opendp/bin/python")
    ap.add_argument("--json", default="/tmp/joint_quantiles.json")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    peer = Path(args.peer).exists() and Path(args.peer_python).exists()
    rows = []
    print(f"n={N} range=[{LO},{HI}] eps=1 bins={args.bins} trials={args.trials}  (mean misclassified points)")
    print(f"split-score law on bins={args.split_bins} where C(bins + m, m) <= {MAX_TUPLES} ('-' elsewhere)")
    print(f"{'data':9} {'m':>3} {'dpspark joint':>14} {'split':>7} {'dpspark ind':>12} {'JointExp a/r':>13} "
          f"{'JointExp swap':>14} {'joint s/run':>11}")
    for dist in args.dists.split(","):
        for m in (int(x) for x in args.ms.split(",")):
            qs = [Fraction(i, m + 1) for i in range(1, m + 1)]
            sets = _datasets(dist, args.trials, args.seed * 1000 + m)
            rng = SeededRandom(args.seed * 7919 + m)
            joint, secs = _dpspark_joint(sets, qs, args.bins, rng)
            split_errs = _dpspark_split(sets, qs, args.split_bins, rng)
            ind = _dpspark_ind(sets, qs, args.bins, rng)
            ar = _peer(sets, qs, False, args.peer, args.peer_python) if peer else []
            sw = _peer(sets, qs, True, args.peer, args.peer_python) if peer else []
            row = {"data": dist, "m": m, "dpspark_joint": float(np.mean(joint)), "dpspark_ind": float(np.mean(ind)),
                   "dpspark_split": None if split_errs is None else float(np.mean(split_errs)),
                   "jointexp_add_remove": float(np.mean(ar)) if ar else None,
                   "jointexp_swap": float(np.mean(sw)) if sw else None, "joint_seconds": secs}
            rows.append(row)
            fmt = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
            print(f"{dist:9} {m:>3} {row['dpspark_joint']:>14.2f} {fmt(row['dpspark_split']):>7} "
                  f"{row['dpspark_ind']:>12.2f} "
                  f"{fmt(row['jointexp_add_remove']):>13} {fmt(row['jointexp_swap']):>14} {secs:>11.2f}", flush=True)
    Path(args.json).write_text(json.dumps({"args": vars(args), "rows": rows}, indent=1))
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
