#!/usr/bin/env python3
"""Gaussian covariance estimation: error vs n with and without preconditioning rounds, and the non-private
estimate (driver backend; gaussian_covariance's algorithm, :func:`learn_in_memory`).

Usage: .venv/bin/python scripts/bench/gaussian.py [--quick] [--trials 5] [--dims 100] [--out bench-results/gaussian]

Grid: d in {10, 50, 100} (--quick: {10, 50}), kappa in {1, 1e2, 1e4}, rho in {0.1, 0.5}, n on a log grid.
Data: N(mu, Sigma), Sigma = Q diag(geomspace(1, kappa, d)) Q^T; the private estimates run on the exact
driver-side aggregates (dpspark.mechanisms.gaussian_model.source.ArraySource: the same integers Spark computes) with the
real discrete Gaussian noise. Errors (floats, reporting only):
  mahalanobis = ||Sigma^-1/2 Sigma^ Sigma^-1/2 - I||_F   (the KLSU guarantee; TV <= O(this))
  frobenius   = ||Sigma^ - Sigma||_F / ||Sigma||_F
Per cell the 0.9-quantile over trials; "n for 0.1" is the smallest n of the grid whose 0.9-quantile
Mahalanobis error is <= 0.1, else an extrapolation from the largest n (error ~ 1/n when the privacy noise
dominates, ~ 1/sqrt(n) for the non-private estimate; marked "~"). Writes JSON, PNG and a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from fractions import Fraction

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import numpy as np  # noqa: E402

from dpspark.mechanisms.gaussian_model import covariance as cv  # noqa: E402
from dpspark.mechanisms.gaussian_model.mechanism import learn_in_memory  # noqa: E402


def one_pass(x: np.ndarray, kappa: int, rho: Fraction, seed: str) -> np.ndarray:
    """gaussian_covariance without preconditioning rounds (the naive estimate at kappa)."""
    saved, cv.MAX_ROUNDS = cv.MAX_ROUNDS, 0
    try:
        return learn_in_memory("gaussian_covariance", x, Fraction(20), Fraction(kappa), rho, seed=seed)[0]["covariance"]
    finally:
        cv.MAX_ROUNDS = saved

KEY = bytes(range(16))


def problem(d: int, kappa: float, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    g = np.random.default_rng(seed)  # report: synthetic data
    q, _ = np.linalg.qr(g.normal(size=(d, d)))  # report
    sigma = (q * np.geomspace(1.0, kappa, d)) @ q.T if d > 1 else np.array([[kappa]])  # report
    mu = g.normal(size=d)  # report
    mu *= 10.0 / np.linalg.norm(mu)  # report
    z = g.standard_normal((n, d)) @ np.linalg.cholesky(sigma).T + mu  # report
    return z, sigma


def errors(est: np.ndarray, sigma: np.ndarray) -> tuple[float, float]:
    vals, vecs = np.linalg.eigh(sigma)  # report
    w = (vecs / np.sqrt(vals)) @ vecs.T  # report
    maha = float(np.linalg.norm(w @ est @ w - np.eye(len(sigma))))  # report
    return maha, float(np.linalg.norm(est - sigma) / np.linalg.norm(sigma))  # report


def n_for(ns: list[int], q90: list[float], target: float, rate: float) -> str:
    for n, e in zip(ns, q90):
        if e <= target:
            return str(n)
    e, n = q90[-1], ns[-1]
    return f"~{int(n * (e / target) ** (1 / rate)):.3g}"  # report


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--trials", type=int, default=None)
    ap.add_argument("--out", default="bench-results/gaussian")
    ap.add_argument("--dims", default=None, help="comma-separated dimensions (default: 10,50,100; --quick: 10,50)")
    args = ap.parse_args()
    quick = args.quick
    dims = [int(x) for x in args.dims.split(",")] if args.dims else ([10, 50] if quick else [10, 50, 100])
    kappas = [1.0, 1e2, 1e4]
    rhos = [Fraction(1, 10), Fraction(1, 2)]
    trials = args.trials or (3 if quick else 10)
    grid = {10: [10_000, 100_000, 400_000], 50: [100_000, 400_000], 100: [200_000, 800_000]}
    if not quick:
        grid = {10: [10_000, 30_000, 100_000, 300_000, 1_000_000], 50: [100_000, 300_000, 1_000_000],
                100: [300_000, 1_000_000]}
    os.makedirs(args.out, exist_ok=True)
    started = time.time()
    load = os.getloadavg()
    results = []
    for d in dims:
        for kappa in kappas:
            for n in grid[d]:
                cell: dict[str, list[tuple[float, float]]] = {}
                for t in range(trials):
                    x, sigma = problem(d, kappa, n, seed=1000 * d + 10 * t + int(math.log10(kappa)))
                    cell.setdefault("non-private", []).append(errors(np.cov(x.T), sigma))
                    for rho in rhos:
                        tag = f"{d}-{kappa}-{n}-{t}-{rho}"
                        full = learn_in_memory("gaussian_covariance", x, Fraction(20), Fraction(int(kappa)), rho, seed=tag)[0]
                        cell.setdefault(f"one pass rho={rho}", []).append(errors(one_pass(x, int(kappa), rho, tag), sigma))
                        cell.setdefault(f"rounds rho={rho}", []).append(errors(full["covariance"], sigma))
                for method, errs in cell.items():
                    m = np.array(errs)  # report
                    results.append({"d": d, "kappa": kappa, "n": n, "method": method, "trials": trials,
                                    "maha_q90": float(np.quantile(m[:, 0], 0.9)), "maha_median": float(np.median(m[:, 0])),
                                    "frob_q90": float(np.quantile(m[:, 1], 0.9))})  # report
                print(f"d={d} kappa={kappa:g} n={n} done at {time.time() - started:.0f} s", flush=True)
    elapsed = time.time() - started
    lines = ["| d | kappa | method | " + " | ".join(f"n={n}" for n in sorted({r['n'] for r in results})) + " | n for 0.1 (q90) |"]
    table = []
    for d in dims:
        for kappa in kappas:
            methods = sorted({r["method"] for r in results if r["d"] == d and r["kappa"] == kappa})
            for method in methods:
                rows = sorted((r for r in results if r["d"] == d and r["kappa"] == kappa and r["method"] == method), key=lambda r: r["n"])
                ns = [r["n"] for r in rows]
                q = [r["maha_q90"] for r in rows]
                need = n_for(ns, q, 0.1, 0.5 if method == "non-private" else 1.0)
                table.append({"d": d, "kappa": kappa, "method": method, "n_for_0.1": need})
                cells = {r["n"]: f"{r['maha_q90']:.3g}" for r in rows}
                allns = sorted({r['n'] for r in results})
                lines.append(f"| {d} | {kappa:g} | {method} | " + " | ".join(cells.get(n, "") for n in allns) + f" | {need} |")
    md = "\n".join(lines)
    header = (f"Mahalanobis error ||S^-1/2 S^ S^-1/2 - I||_F, 0.9-quantile over {trials} trials; "
              f"loadavg at start {load[0]:.1f}; {elapsed:.0f} s total\n\n")
    with open(os.path.join(args.out, "gaussian.md"), "w") as fh:
        fh.write(header + md + "\n")
    with open(os.path.join(args.out, "gaussian.json"), "w") as fh:
        json.dump({"results": results, "n_for_0.1": table, "trials": trials, "quick": quick, "seconds": elapsed,
                   "loadavg_start": load, "loadavg_end": os.getloadavg()}, fh, indent=1)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(2, len(dims) * len(kappas), figsize=(4 * len(dims) * len(kappas), 7), squeeze=False)
        for c, (d, kappa) in enumerate([(d, k) for d in dims for k in kappas]):
            for row, key in enumerate(("maha_q90", "frob_q90")):
                ax = axes[row][c]
                for method in sorted({r["method"] for r in results}):
                    rows = sorted((r for r in results if r["d"] == d and r["kappa"] == kappa and r["method"] == method), key=lambda r: r["n"])
                    if rows:
                        ax.loglog([r["n"] for r in rows], [r[key] for r in rows], marker="o", label=method)
                ax.set_title(f"d={d} kappa={kappa:g}")
                ax.set_xlabel("n")
                ax.set_ylabel("Mahalanobis (q90)" if row == 0 else "rel. Frobenius (q90)")
        axes[0][0].legend(fontsize=6)
        fig.tight_layout()
        fig.savefig(os.path.join(args.out, "gaussian.png"), dpi=90)
    except ImportError:  # pragma: no cover - matplotlib is a bench extra
        print("matplotlib missing: no PNG", file=sys.stderr)
    print(header + md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
