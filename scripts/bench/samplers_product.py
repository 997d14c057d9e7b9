#!/usr/bin/env python3
"""Phase transitions of the product sampler (RSSS Alg 4) and the product learner (KLSU Alg 7); issue 11.

Usage: .venv/bin/python scripts/bench/samplers_product.py [--parts product_sampler,product_learner]
       [--out bench-results/samplers] [--trials T] [--seed S]
(Its own command; scripts/bench/samplers.py covers the k-ary and bounded-bias samplers.)

* product_sampler: d = 64, rho = 1/2, biases cycling {1/2, 0.2, 1/d, 1e-3, 0}. For n on a log grid the
  implemented sampler runs T times on simulated counts (:class:`dpspark.mechanisms.product.simulate.SimulatedCounts`:
  hash batches as Binomial slices, rows i.i.d. from P); q_j = E[y_j] is estimated by the mean of the exact
  Pr[y_j = 1 | noisy counts], pooled over the columns of one bias (they are exchangeable under the
  algorithm, so they share q_j). The output law is a product, so TV <= sum_j |q_j - p_j|; the table shows
  that sum (+- 2 standard errors), where it crosses 0.1, and the plan's n_needed at alpha = 0.1.
* product_learner: d in {100, 1000}, biases around 1/d (1/(2d), 1/d, 2/d cycling), rho = 1/2. KLSU Alg 7
  (as implemented) against the naive Gaussian-noised empirical mean at the same rho (one round on all n:
  q = clip((c + Z)/n, 0, 1), Z ~ the certified N_Z(0, d/(2 rho)) since Delta^2 = d under replacement). TV
  between the products is bounded by Le Cam's sqrt(1 - BC^2) with the Bhattacharyya coefficient
  BC = prod_j (sqrt(p q) + sqrt((1-p)(1-q))), exact for products; "n needed" is the smallest n on the grid
  (factor 2^(1/4)) whose 90th percentile over T runs is <= 0.1. KLSU predict d/(alpha sqrt(rho)) (up to
  logs) against d^1.5 for the naive estimator. ``--rho`` (default 1/2) changes the learner part's rho.
All floats here are reporting only; the noise is the implemented certified discrete Gaussian.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from fractions import Fraction
from typing import Any

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

RHO = Fraction(1, 2)


def _sampler_biases(d: int) -> np.ndarray:
    cycle = [0.5, 0.2, 1 / d, 1e-3, 0.0]  # report
    return np.array([cycle[j % 5] for j in range(d)])


def bench_product_sampler(args: argparse.Namespace) -> dict[str, Any]:
    """TV of the product sampler's output law versus n at d = 64, rho = 1/2 (module docstring)."""
    from dpspark.mechanisms.product.sampler import SamplerPlan, run_sampler
    from dpspark.mechanisms.product.simulate import SimulatedCounts
    from dpspark.rng import SeededRandom

    d, alpha = 64, Fraction(1, 10)
    p = _sampler_biases(d)
    trials = getattr(args, "product_trials", None) or 200
    gen = np.random.default_rng(getattr(args, "seed", 1))
    ns = [int(round(10 ** (3.5 + 0.25 * i))) for i in range(13)]  # 3e3 .. 3e6
    rows = []
    for n in ns:
        plan = SamplerPlan.build(d, n, RHO, alpha, enforce=False)
        probs = np.zeros((trials, d))
        for t in range(trials):
            run = run_sampler(plan, SimulatedCounts(p, n, gen), SeededRandom(f"ps-{n}-{t}"))
            probs[t] = [float(x) for x in run.probabilities]  # report
        # columns with the same bias are exchangeable under the algorithm, so they share q: pool each class
        by_bias, two_se = {}, 0.0
        for b in sorted(set(p.tolist()), reverse=True):
            cls = p == b
            per_trial = probs[:, cls].mean(axis=1)  # report: one pooled estimate of q_class per trial
            k = int(cls.sum())
            by_bias[str(b)] = k * abs(float(per_trial.mean()) - b)  # report
            two_se += 2 * k * float(per_trial.std(ddof=1)) / math.sqrt(trials)  # report
        tv = sum(by_bias.values())
        rows.append({"n": n, "tv_upper": tv, "two_se": two_se, "by_bias": by_bias})
        print(f"  n = {n:>9d}  sum|q - p| = {tv:.4f} (+- {two_se:.4f})  " +
              " ".join(f"{k[:6]}:{v:.4f}" for k, v in by_bias.items()), flush=True)
    full = SamplerPlan.build(d, 10**7, RHO, alpha)
    crossing = _crossing([r["n"] for r in rows], [r["tv_upper"] for r in rows], 0.1)
    return {"d": d, "rho": str(RHO), "trials": trials, "biases": "1/2, 0.2, 1/d, 1e-3, 0 (cycling)",
            "rows": rows, "crossing_0.1": crossing, "plan_n_needed_alpha_0.1": full.n_needed,
            "d_over_alpha_sqrt_rho": d / (0.1 * math.sqrt(0.5))}  # report


def plot_product_sampler(res: dict[str, Any], path: str) -> None:
    """TV upper bound versus n (log-log) with the crossing and the plan's n_needed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ns = [r["n"] for r in res["rows"]]
    tv = [max(r["tv_upper"], 1e-6) for r in res["rows"]]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.loglog(ns, tv, "o-", label="sum_j |E y_j - p_j| (>= TV)")
    ax.axvline(res["plan_n_needed_alpha_0.1"], color="red", ls="--", label="plan n_needed (alpha 0.1)")
    _finish(fig, ax, path, "TV upper bound", f"product sampler, d = {res['d']}, rho = {res['rho']}")


def _finish(fig: Any, ax: Any, path: str, ylabel: str, title: str) -> None:
    """The TV = 0.1 line, labels and legend, then the PNG."""
    import matplotlib.pyplot as plt

    ax.axhline(0.1, color="grey", ls=":")
    ax.set_xlabel("n")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


from samplers import _crossing  # noqa: E402  (scripts/bench is on sys.path when run as a script)


def tv_upper(p: np.ndarray, q: np.ndarray) -> float:
    """Le Cam: TV(P, Q) <= sqrt(1 - BC^2), BC = prod_j (sqrt(p q) + sqrt((1-p)(1-q))) (products, report)."""
    bc = np.sqrt(p * q) + np.sqrt((1 - p) * (1 - q))  # report
    log_bc = float(np.log(np.clip(bc, 1e-300, 1.0)).sum())  # report
    return math.sqrt(max(0.0, 1 - math.exp(2 * log_bc)))  # report


def _rho() -> Fraction:
    return Fraction(os.environ.get("PRODUCT_BENCH_RHO", "1/2"))


def _naive(p: np.ndarray, n: int, gen: np.random.Generator, rng: Any) -> np.ndarray:
    """The naive estimator: all n rows, one noisy sum per column at Delta^2 = d, clipped mean."""
    from dpspark.mechanisms.product import rounds as rd

    d = len(p)
    sigma = rd.noise_sigma(d, d, _rho(), n)
    c = gen.binomial(n, p)
    noisy = np.array(rd.release_round([int(x) for x in c], rd.gaussian(sigma, n), rng), dtype=float)  # report
    return np.clip(noisy / n, 0, 1)  # report


def _klsu(p: np.ndarray, n: int, gen: np.random.Generator, rng: Any) -> np.ndarray:
    from dpspark.mechanisms.product.learner import LearnerPlan, run_learner
    from dpspark.mechanisms.product.simulate import SimulatedCounts

    plan = LearnerPlan.build(len(p), n, _rho(), Fraction(1, 10), Fraction(1, 10), enforce=False)
    run = run_learner(plan, SimulatedCounts(p, n, gen), rng)
    return np.array([float(x) for x in run.q])  # report


def _n_needed(method: Any, p: np.ndarray, trials: int, gen: np.random.Generator, tag: str) -> dict[str, Any]:
    """Smallest n on the 2^(k/4) grid whose 90th percentile TV bound over ``trials`` runs is <= 0.1."""
    from dpspark.rng import SeededRandom

    seen: dict[int, float] = {}

    def q90(k: int) -> float:
        if k not in seen:
            n = int(round(2 ** (k / 4)))
            tvs = [tv_upper(p, method(p, n, gen, SeededRandom(f"{tag}-{n}-{t}"))) for t in range(trials)]
            seen[k] = float(np.quantile(tvs, 0.9))  # report
            print(f"    {tag} n = {n:>11d}  TV90 = {seen[k]:.4f}", flush=True)
        return seen[k]

    k = 40  # 2^10
    while q90(k) > 0.1 and k < 160:  # coarse: factor 4
        k += 8
    lo = k - 8
    while k - lo > 1:  # refine on the 2^(1/4) grid (the curve is monotone up to noise)
        mid = (lo + k) // 2
        if q90(mid) <= 0.1:
            k = mid
        else:
            lo = mid
    return {"n": int(round(2 ** (k / 4))), "curve": {str(int(round(2 ** (j / 4)))): v for j, v in sorted(seen.items())}}


def bench_product_learner(args: argparse.Namespace) -> dict[str, Any]:
    """n needed for TV <= 0.1 w.p. 0.9: KLSU Alg 7 versus the naive Gaussian mean, d in {100, 1000}."""
    trials = getattr(args, "product_learner_trials", None) or 40
    gen = np.random.default_rng(getattr(args, "seed", 1))
    out = []
    for d in getattr(args, "product_dims", None) or (100, 1000):
        p = np.array([(0.5, 1.0, 2.0)[j % 3] / d for j in range(d)])  # report
        t0 = time.perf_counter()
        klsu = _n_needed(_klsu, p, trials, gen, f"klsu-d{d}")
        naive = _n_needed(_naive, p, trials, gen, f"naive-d{d}")
        out.append({"d": d, "klsu_n": klsu["n"], "naive_n": naive["n"], "ratio_naive_over_klsu": naive["n"] / klsu["n"],
                    "klsu_curve": klsu["curve"], "naive_curve": naive["curve"],
                    "seconds": time.perf_counter() - t0})
        print(f"  d = {d}: KLSU n = {klsu['n']}, naive n = {naive['n']}", flush=True)
    return {"rho": str(_rho()), "trials": trials, "level": 0.1, "quantile": 0.9, "per_d": out}


def plot_product_learner(res: dict[str, Any], path: str) -> None:
    """90th-percentile TV bound versus n for both estimators, per d."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for r in res["per_d"]:
        for key, style in (("klsu_curve", "o-"), ("naive_curve", "s--")):
            pts = sorted((int(n), v) for n, v in r[key].items())
            ax.loglog([a for a, _ in pts], [max(b, 1e-4) for _, b in pts], style,
                      label=f"{key.split('_')[0]} d={r['d']}")
    _finish(fig, ax, path, "90th percentile of the TV bound", f"product learner vs naive Gaussian mean, rho = {res['rho']}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", default="product_sampler,product_learner")
    ap.add_argument("--out", default="bench-results/samplers")
    ap.add_argument("--trials", dest="product_trials", type=int, default=200, help="sampler runs per n")
    ap.add_argument("--learner-trials", dest="product_learner_trials", type=int, default=40)
    ap.add_argument("--dims", default="100,1000")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rho", default="1/2", help="rho of the learner part (exact)")
    args = ap.parse_args()
    os.environ["PRODUCT_BENCH_RHO"] = args.rho
    args.product_dims = tuple(int(x) for x in args.dims.split(","))
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "samplers_product.json")
    results: dict[str, Any] = {}
    for name in args.parts.split(","):
        print(f"[{name}] load {os.getloadavg()}", flush=True)
        t0 = time.perf_counter()
        res = globals()[f"bench_{name}"](args)
        res["meta"] = {"seconds": time.perf_counter() - t0, "load_after": os.getloadavg(),
                       "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        results[name] = res
        globals()[f"plot_{name}"](res, os.path.join(args.out, f"{name}.png"))
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(results, fh, indent=1, default=str)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
