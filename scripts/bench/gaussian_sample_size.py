#!/usr/bin/env python3
"""The stated sample size N of the Gaussian learners next to the measured error of the real algorithm (issue 23 §1).

Usage:
    .venv/bin/python scripts/bench/gaussian_sample_size.py --dim 10 --kappa 1 --ns 5000,10000,15000 [--trials 3]
        [--alpha 1/10] [--beta 1/20] [--rho 1/2] [--out bench-results/gaussian_sample_size]

Prints N (``release_sample_size``, max_units = n) for gaussian_covariance, gaussian_mean and gaussian_learner, then
the median errors of ``gaussian_learner`` (its in-process algorithm, the real discrete Gaussian noise, max_units = n)
at each n, on the setup of scripts/bench/gaussian_vs_coinpress.py: ||mu|| = 50, R = 100,
Sigma = Q diag(geomspace(1, kappa, d)) Q^T. Writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from dpspark.mechanisms.gaussian_model.mechanism import learn_in_memory  # noqa: E402
from dpspark.mechanisms.gaussian_model.sample_size import release_sample_size  # noqa: E402

RADIUS, NORM_MU = Fraction(100), 50.0


def _whiten(sigma: np.ndarray) -> np.ndarray:
    vals, vecs = np.linalg.eigh(sigma)  # report
    return (vecs / np.sqrt(vals)) @ vecs.T  # report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dim", type=int, default=10)
    ap.add_argument("--kappa", type=int, default=1)
    ap.add_argument("--ns", default="5000,10000,20000")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--alpha", default="1/10")
    ap.add_argument("--beta", default="1/20")
    ap.add_argument("--rho", default="1/2")
    ap.add_argument("--out", default="bench-results/gaussian_sample_size")
    a = ap.parse_args()
    d, kappa, rho = a.dim, a.kappa, Fraction(a.rho)
    load0 = os.getloadavg()[0]
    sizes = {k: release_sample_size(k, d, Fraction(a.alpha), Fraction(a.beta), rho, Fraction(kappa), RADIUS)
             for k in ("gaussian_covariance", "gaussian_mean", "gaussian_learner")}
    print(f"d = {d}, kappa = {kappa}, rho = {rho}, alpha = {a.alpha}, beta = {a.beta}, R = {RADIUS}; load {load0:.1f}")
    for k, n in sizes.items():
        print(f"  N {k:<20} {n}")
    rows = []
    print(f"{'n':>10} {'cov median':>11} {'mean median':>12} {'seconds':>8}")
    for n in (int(float(v)) for v in a.ns.split(",")):
        cov, mean, t0 = [], [], time.time()
        for t in range(a.trials):
            g = np.random.default_rng(7000 + t)  # report: test data
            q, _ = np.linalg.qr(g.normal(size=(d, d)))  # report
            sigma = (q * np.geomspace(1.0, float(kappa), d)) @ q.T  # report
            mu = g.normal(size=d)  # report
            mu *= NORM_MU / np.linalg.norm(mu)  # report
            x = g.multivariate_normal(mu, sigma, size=n)  # report
            est, _ = learn_in_memory("gaussian_learner", x, RADIUS, Fraction(kappa), rho, seed=t)
            w = _whiten(sigma)  # report
            cov.append(float(np.linalg.norm(w @ est["covariance"] @ w - np.eye(d))))  # report
            mean.append(float(np.linalg.norm(w @ (est["mean"] - mu))))  # report
        row = {"n": n, "cov": cov, "mean": mean, "cov_median": float(np.median(cov)),  # report
               "mean_median": float(np.median(mean)), "seconds": round(time.time() - t0, 1)}  # report
        rows.append(row)
        print(f"{n:>10} {row['cov_median']:>11.4f} {row['mean_median']:>12.4f} {row['seconds']:>8}", flush=True)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"d{d}_kappa{kappa}.json"
    path.write_text(json.dumps({"d": d, "kappa": kappa, "rho": str(rho), "alpha": a.alpha, "beta": a.beta,
                                "sample_sizes": sizes, "rows": rows, "load_start": load0,
                                "load_end": os.getloadavg()[0]}, indent=1))
    print(f"wrote {path}; load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
