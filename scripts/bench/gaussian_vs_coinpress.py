#!/usr/bin/env python3
"""dpspark's gaussian_learner against CoinPress (Biswas, Dong, Kamath, Ullman 2020), side by side (issue 23 §1).

Usage (CoinPress is not on PyPI and is never copied into this repository: export its two modules into a
throwaway directory outside the repository, then point --coinpress at it):

    mkdir -p /tmp/coinpress && git -C <a clone of github.com/twistedcubic/coin-press> archive HEAD algos.py utils.py \\
        | tar x -C /tmp/coinpress
    .venv/bin/python scripts/bench/gaussian_vs_coinpress.py --coinpress /tmp/coinpress [--trials 3] \\
        [--dims 10,50,100] [--kappas 1,100,10000] [--ns 100000,1000000] [--out bench-results/gaussian_vs_coinpress]

CoinPress's code runs unmodified. It imports torch; when torch is not importable, a small numpy stand-in
with torch's semantics (``svd`` returns V, not V^T; ``sum(keepdim=)``; ``t()``; ``diag_embed()``) is put in
its place (:func:`torch_standin`).

Setup (as issue 23): X ~ N(mu, Sigma), ||mu|| = 50, public R = 100, Sigma = Q diag(geomspace(1, kappa, d)) Q^T,
so I <= Sigma <= kappa I. Per trial both tools see the same array.
* dpspark: ``gaussian_learner``'s algorithm in process (exact aggregates of every row as one unit, the real
  discrete Gaussian noise), rho = 1/2 under add/remove, max_units = n.
* CoinPress, at rho_repl = 2 (dpspark's own replacement statement, 4 rho) and at rho_repl = 1/2 (never more
  budget than dpspark): 3/4 of it to ``cov_est`` on the n/2 pair differences (X_2i - X_2i+1)/sqrt 2 with
  u = kappa and t = 2, 3, 4 steps at kappa = 1, 100, 10^4 (budget 1/4 over the first t - 1 steps, 3/4 the
  last, as its experiments; ``--oracle`` also keeps the best t in 2..5 per trial); 1/4 to ``multivariate_mean_iterative`` on all n rows whitened by its covariance
  estimate (eigenvalues floored at 1, as Sigma >= I is public), c = 0, r = R, t = 3, budget [1/8, 1/8, 3/4].
Metrics (medians over trials): mean ||Sigma^-1/2 (mu^ - mu)||, covariance ||Sigma^-1/2 Sigma^ Sigma^-1/2 - I||_F;
and the privacy cost alone, against the sample mean xbar and covariance S of the same array ("-x", "-S"):
||Sigma^-1/2 (mu^ - xbar)|| and ||Sigma^-1/2 (Sigma^ - S) Sigma^-1/2||_F. Where both tools sit at the
non-private error (the mean at large n) the first metric differs by a random sign from trial to trial;
the second shows which tool adds less.
Prints a table (with the load average) and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import types
from fractions import Fraction

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import numpy as np  # noqa: E402

from dpspark.mechanisms.gaussian_model.mechanism import learn_in_memory  # noqa: E402

RADIUS, MU_NORM = 100.0, 50.0


def torch_standin() -> types.ModuleType:
    """A numpy module with the torch calls CoinPress's algos.py and utils.py make, with torch's semantics."""

    class Tensor(np.ndarray):
        def sum(self, axis=None, keepdim=False, **kw):  # type: ignore[no-untyped-def,override]  # noqa: A003
            return np.ndarray.sum(self, axis=axis, keepdims=keepdim, **kw)

        def t(self):  # type: ignore[no-untyped-def]
            return self.T

        def diag_embed(self):  # type: ignore[no-untyped-def]
            return np.diag(np.asarray(self)).view(Tensor)

        def diag(self):  # type: ignore[no-untyped-def]
            return np.diag(np.asarray(self)).view(Tensor)

        def inverse(self):  # type: ignore[no-untyped-def]
            return np.linalg.inv(np.asarray(self)).view(Tensor)

        def svd(self):  # type: ignore[no-untyped-def]
            return svd(self)

        def sqrt(self):  # type: ignore[no-untyped-def]
            return np.sqrt(np.asarray(self)).view(Tensor)

        def diagonal(self, *a, **k):  # type: ignore[no-untyped-def]
            return np.asarray(self).diagonal(*a, **k).copy().view(Tensor)

    def svd(a):  # type: ignore[no-untyped-def]
        u, s, vt = np.linalg.svd(np.asarray(a))  # report
        return u.view(Tensor), s.view(Tensor), vt.T.copy().view(Tensor)  # torch.svd returns V, not V^T

    mod = types.ModuleType("torch")
    mod.Tensor = Tensor
    mod.svd = svd
    mod.mm = lambda a, b: (np.asarray(a) @ np.asarray(b)).view(Tensor)
    mod.eye = lambda d: np.eye(d).view(Tensor)
    mod.randn = lambda *shape: np.random.standard_normal(shape).view(Tensor)
    mod.triu = lambda a, diagonal=0: np.triu(np.asarray(a), k=diagonal).view(Tensor)
    mod.inverse = lambda a: np.linalg.inv(np.asarray(a)).view(Tensor)
    mod.clamp = lambda a, min=None, max=None: np.clip(np.asarray(a), min, max).view(Tensor)  # noqa: A002
    mod.from_numpy = lambda a: np.asarray(a, dtype=np.float64).view(Tensor)
    return mod


def load_coinpress(path: str):  # type: ignore[no-untyped-def]
    """CoinPress's algos module from ``path`` (outside this repository), with torch or the stand-in."""
    if os.path.commonpath([os.path.abspath(path), os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))]) \
            == os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")):
        raise SystemExit("--coinpress must be a throwaway directory outside the repository")
    try:
        import torch  # noqa: F401
        standin = False
    except ImportError:
        sys.modules["torch"] = torch_standin()
        standin = True
    sys.path.insert(0, os.path.abspath(path))
    import algos  # type: ignore[import-not-found]

    return algos, standin


def problem(d: int, kappa: float, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    g = np.random.default_rng(seed)  # report: synthetic data
    q, _ = np.linalg.qr(g.normal(size=(d, d)))  # report
    sigma = (q * np.geomspace(1.0, kappa, d)) @ q.T  # report
    mu = g.normal(size=d)  # report
    mu *= MU_NORM / np.linalg.norm(mu)  # report
    x = g.standard_normal((n, d)) @ np.linalg.cholesky(sigma).T + mu  # report
    return x, mu, sigma


def errors(mu_hat: np.ndarray, cov_hat: np.ndarray, mu: np.ndarray, sigma: np.ndarray,
           sample: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[float, ...]:
    """(mean error, covariance error) against the truth, and with ``sample`` = (xbar, S) also the privacy
    cost alone: ||Sigma^-1/2 (mu^ - xbar)|| and ||Sigma^-1/2 (Sigma^ - S) Sigma^-1/2||_F."""
    vals, vecs = np.linalg.eigh(sigma)  # report
    w = (vecs / np.sqrt(vals)) @ vecs.T  # report
    out = (float(np.linalg.norm(w @ (mu_hat - mu))), float(np.linalg.norm(w @ cov_hat @ w - np.eye(len(mu)))))  # report
    if sample is None:
        return out
    return out + (float(np.linalg.norm(w @ (mu_hat - sample[0]))), float(np.linalg.norm(w @ (cov_hat - sample[1]) @ w)))  # report


def inv_sqrt_floored(s: np.ndarray) -> np.ndarray:
    vals, vecs = np.linalg.eigh((s + s.T) / 2)  # report
    return (vecs / np.sqrt(np.maximum(vals, 1.0))) @ vecs.T  # report


def default_steps(kappa: float) -> int:
    """CoinPress's covariance steps t by kappa (its experiments use t = 1..5)."""
    return 2 if kappa <= 1 else (3 if kappa <= 100 else 4)


def coinpress_learner(algos, x: np.ndarray, kappa: float, rho_repl: float, t: int | None = None):  # type: ignore[no-untyped-def]
    """CoinPress's covariance (on pair differences, t steps) then its mean (whitened), at rho_repl in total."""
    import torch

    n, d = x.shape
    pairs = (x[0:n // 2 * 2:2] - x[1:n // 2 * 2:2]) / math.sqrt(2.0)  # report
    args = types.SimpleNamespace(n=pairs.shape[0], d=d, u=kappa)
    t = t or default_steps(kappa)
    cov_rho = 0.75 * rho_repl  # report
    args.t, args.rho = t, [cov_rho / (4 * (t - 1))] * (t - 1) + [0.75 * cov_rho]  # report
    cov = np.asarray(algos.cov_est(torch.from_numpy(pairs.copy()), args), dtype=np.float64)  # report
    m = inv_sqrt_floored(cov)
    mean_rho = rho_repl - cov_rho  # report
    c = algos.multivariate_mean_iterative((x @ m.T).copy(), np.zeros(d), RADIUS, 3, [mean_rho / 8, mean_rho / 8, 0.75 * mean_rho])
    return np.linalg.solve(m, np.asarray(c, dtype=np.float64)), cov  # report


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--coinpress", required=True, help="directory holding CoinPress's algos.py and utils.py")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--dims", default="10,50,100")
    ap.add_argument("--kappas", default="1,100,10000")
    ap.add_argument("--ns", default="100000,1000000")
    ap.add_argument("--cells", default=None, help="explicit d:kappa:n cells, comma-separated (overrides the grid)")
    ap.add_argument("--out", default="bench-results/gaussian_vs_coinpress")
    ap.add_argument("--oracle", action="store_true", help="also run CoinPress at rho_repl = 2 with t = 2..5 and keep "
                    "the t of the smallest covariance error per trial (an oracle choice, generous to CoinPress)")
    args = ap.parse_args()
    algos, standin = load_coinpress(args.coinpress)
    if args.cells:
        cells = [tuple(float(v) for v in c.split(":")) for c in args.cells.split(",")]
    else:
        cells = [(d, k, n) for n in map(float, args.ns.split(",")) for d in map(float, args.dims.split(","))
                 for k in map(float, args.kappas.split(","))]
    os.makedirs(args.out, exist_ok=True)
    rows = []
    print(f"torch: {'numpy stand-in' if standin else 'real'}; load average at start: {os.getloadavg()}", flush=True)
    head = (f"{'d':>4} {'kappa':>6} {'n':>8} | {'dp mean':>8} {'cp2 mean':>8} {'cp.5 mean':>9} {'np mean':>8} | "
            f"{'dp cov':>7} {'cp2 cov':>7} {'cp.5 cov':>8} {'np cov':>7} | {'dp-x':>7} {'cp2-x':>7} | {'dp-S':>7} {'cp2-S':>7} | "
            f"{'dp s':>6} {'cp s':>6}")
    print(head, flush=True)
    for d, kappa, n in cells:
        d, n = int(d), int(n)
        got: dict[str, list[tuple[float, float]]] = {"dpspark": [], "cp_2": [], "cp_0.5": [], "nonprivate": []}
        secs = {"dpspark": 0.0, "cp": 0.0}
        for trial in range(args.trials):
            x, mu, sigma = problem(d, kappa, n, seed=1000 * trial + d)
            t0 = time.perf_counter()
            est, _ = learn_in_memory("gaussian_learner", x, Fraction(int(RADIUS)), Fraction(int(kappa)), Fraction(1, 2),
                                     seed=trial)
            secs["dpspark"] += time.perf_counter() - t0
            sample = (x.mean(axis=0), np.cov(x.T))
            got["dpspark"].append(errors(est["mean"], est["covariance"], mu, sigma, sample))
            np.random.seed(trial)  # CoinPress draws its noise from numpy's global generator
            t0 = time.perf_counter()
            got["cp_2"].append(errors(*coinpress_learner(algos, x, kappa, 2.0), mu, sigma, sample))
            secs["cp"] += time.perf_counter() - t0
            if args.oracle:  # CoinPress at its best t for this very array (an oracle: generous to CoinPress)
                tries = [errors(*coinpress_learner(algos, x, kappa, 2.0, t), mu, sigma, sample) for t in (2, 3, 4, 5)]
                got.setdefault("cp_2_best_t", []).append(min(tries, key=lambda e: e[1]))
            got["cp_0.5"].append(errors(*coinpress_learner(algos, x, kappa, 0.5), mu, sigma, sample))
            got["nonprivate"].append(errors(sample[0], sample[1], mu, sigma, sample))
        med = {k: [float(np.median([v[i] for v in vals])) for i in range(4)] for k, vals in got.items()}  # report
        row = {"d": d, "kappa": kappa, "n": n, "trials": args.trials, "median": med, "all": got,
               "seconds_per_trial": {k: v / args.trials for k, v in secs.items()}, "load": os.getloadavg()}
        rows.append(row)
        print(f"{d:>4} {kappa:>6g} {n:>8} | {med['dpspark'][0]:>8.4f} {med['cp_2'][0]:>8.4f} {med['cp_0.5'][0]:>9.4f} "
              f"{med['nonprivate'][0]:>8.4f} | {med['dpspark'][1]:>7.4f} {med['cp_2'][1]:>7.4f} {med['cp_0.5'][1]:>8.4f} "
              f"{med['nonprivate'][1]:>7.4f} | {med['dpspark'][2]:>7.5f} {med['cp_2'][2]:>7.5f} | {med['dpspark'][3]:>7.4f} "
              f"{med['cp_2'][3]:>7.4f} | {secs['dpspark'] / args.trials:>6.1f} {secs['cp'] / args.trials:>6.1f}", flush=True)
        with open(os.path.join(args.out, "results.json"), "w") as f:
            json.dump({"rows": rows, "torch_standin": standin}, f, indent=1)
    for key in ("cp_2", "cp_2_best_t"):
        if not all(key in r["median"] for r in rows):
            continue
        for i, what in ((0, "mean"), (1, "covariance"), (2, "mean privacy cost"), (3, "covariance privacy cost")):
            wins = sum(1 for r in rows if r["median"]["dpspark"][i] <= r["median"][key][i])
            print(f"{what}: dpspark <= CoinPress ({key}) in {wins} of {len(rows)} cells")
    if any("cp_2_best_t" in r["median"] for r in rows):
        print("best-t CoinPress (oracle), medians (mean, cov): " + "; ".join(
            f"d={r['d']} k={r['kappa']:g} n={r['n']}: {r['median']['cp_2_best_t'][0]:.5f}, {r['median']['cp_2_best_t'][1]:.4f}"
            for r in rows))
    print(f"load average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
