#!/usr/bin/env python3
"""The product learner and the product sampler against the naive Gaussian mean (issue 23 §2), in one run.

Usage: .venv/bin/python scripts/bench/samplers_product.py [--parts learner,sampler,sampler_curve]
       [--cells 1/2:100,1/2:1000,1/200:1000] [--out bench-results/samplers] [--trials T] [--seed S]
(Its own command; scripts/bench/samplers.py covers the k-ary and bounded-bias samplers.)

Data: biases around 1/d (1/(2d), 1/d, 2/d cycling), rows i.i.d., simulated at the count level
(:class:`dpspark.mechanisms.product.simulate.SimulatedCounts`: keyed-hash slices as Binomial draws, rounds
that read the same slice read the same units). Every number below comes from the implemented mechanisms
(their certified discrete Gaussians, ceilings, groups and noisy unit counts) at plans built with
``enforce=False`` (the proven n_needed is far above these n; the table is about what the data need).

* learner: n for TV <= 0.1 with probability 0.9, learner (KLSU Alg 7, sequential rounds) against the naive
  mean at the same rho (one round on all n: q = clip((c + Z)/n, 0, 1), Z the certified N_Z(0, d/(2 rho)),
  Delta^2 = d under replacement; it divides by the exact n). TV between the products is bounded by Le Cam's
  sqrt(1 - BC^2), BC = prod_j (sqrt(p q) + sqrt((1-p)(1-q))); "n needed" is the smallest n on the grid
  (factor 2^(1/4)) whose 90th percentile over T runs is <= 0.1.
* sampler: n for sum_j |E[y_j] - p_j| <= 0.1 (the TV of the output law when it is a product; the sampler's
  shared noisy count makes it a mixture of products, which the proof handles), sampler against the naive-
  mean sampler (y_j ~ Ber(clip((c + Z)/n, 0, 1)), same noise as the naive mean). E[y_j] is the mean over T
  runs of the exact Pr[y_j = 1 | noisy counts], pooled over the columns of one bias (exchangeable); at least
  40000/d runs per n (the estimate is a mean: cheap runs get more of them).
* sampler_curve: the sampler's TV bound against n at d = 64, rho = 1/2, biases {1/2, 0.2, 1/d, 1e-3, 0}
  (the older table), with the plan's chosen schedule and proven n_needed.
Each part prints its table, the load average before and after, and the JSON goes to --out.
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
from typing import Any, Callable

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

ALPHA = Fraction(1, 10)
GOAL = {(Fraction(1, 2), 100): 1.0, (Fraction(1, 2), 1000): 0.5, (Fraction(1, 200), 1000): 0.5}  # issue 23 §2


def light_biases(d: int) -> np.ndarray:
    """1/(2d), 1/d, 2/d cycling (the issue's biases about 1/d; floats: data only)."""
    return np.array([(0.5, 1.0, 2.0)[j % 3] / d for j in range(d)])  # report


def tv_upper(p: np.ndarray, q: np.ndarray) -> float:
    """Le Cam: TV(P, Q) <= sqrt(1 - BC^2), BC = prod_j (sqrt(p q) + sqrt((1-p)(1-q))) (products, report)."""
    bc = np.sqrt(p * q) + np.sqrt((1 - p) * (1 - q))  # report
    log_bc = float(np.log(np.clip(bc, 1e-300, 1.0)).sum())  # report
    return math.sqrt(max(0.0, 1 - math.exp(2 * log_bc)))  # report


def _naive_noisy(p: np.ndarray, n: int, rho: Fraction, gen: np.random.Generator, rng: Any) -> np.ndarray:
    """c + Z on all n rows, one certified discrete Gaussian per column at Delta^2 = d (no truncation)."""
    from dpspark.mechanisms.product import rounds as rd

    d = len(p)
    sigma = rd.noise_sigma(d, d, rho, n)
    noise = rd.RoundNoise(((d, d),), (sigma,), None, n)
    noisy, _ = rd.release_round([int(x) for x in gen.binomial(n, p)], noise, rng)
    return np.array(noisy, dtype=float)  # report


def naive_mean(p: np.ndarray, n: int, rho: Fraction, gen: np.random.Generator, rng: Any) -> np.ndarray:
    """The naive estimator: clip((c + Z)/n, 0, 1) with the exact n."""
    return np.clip(_naive_noisy(p, n, rho, gen, rng) / n, 0, 1)  # report


def learner(p: np.ndarray, n: int, rho: Fraction, gen: np.random.Generator, rng: Any,
            cache: dict[Any, Any] = {}) -> np.ndarray:  # noqa: B006 - a per-process plan cache
    from dpspark.mechanisms.product.learner import LearnerPlan, run_learner
    from dpspark.mechanisms.product.simulate import SimulatedCounts

    key = ("L", len(p), n, rho)
    if key not in cache:
        cache[key] = LearnerPlan.build(len(p), n, rho, ALPHA, Fraction(1, 10), enforce=False)
    run = run_learner(cache[key], SimulatedCounts(p, n, gen), rng)
    return np.array([float(x) for x in run.q])  # report


def naive_sampler_probs(p: np.ndarray, n: int, rho: Fraction, gen: np.random.Generator, rng: Any) -> np.ndarray:
    """Pr[y_j = 1 | noisy counts] of the naive-mean sampler: clip((c + Z)/n, 0, 1)."""
    return naive_mean(p, n, rho, gen, rng)


def sampler_probs(p: np.ndarray, n: int, rho: Fraction, gen: np.random.Generator, rng: Any,
                  cache: dict[Any, Any] = {}) -> np.ndarray:  # noqa: B006 - a per-process plan cache
    from dpspark.mechanisms.product.sampler import SamplerPlan, run_sampler
    from dpspark.mechanisms.product.simulate import SimulatedCounts

    key = ("S", len(p), n, rho)
    if key not in cache:
        cache[key] = SamplerPlan.build(len(p), n, rho, ALPHA, enforce=False)
    run = run_sampler(cache[key], SimulatedCounts(p, n, gen), rng)
    return np.array([float(x) for x in run.probabilities])  # report


def pooled_tv(p: np.ndarray, probs: np.ndarray) -> float:
    """sum_j |mean_t Pr[y_j = 1] - p_j|, pooled over the columns of one bias (they share E[y_j])."""
    total = 0.0
    for b in set(p.tolist()):
        cls = p == b
        total += int(cls.sum()) * abs(float(probs[:, cls].mean()) - b)  # report
    return total


def n_needed(stat: Callable[[int], float], tag: str, start_k: int = 40) -> dict[str, Any]:
    """Smallest n on the 2^(k/4) grid with stat(n) <= 0.1 (coarse factor 4, then refine; stat ~ monotone)."""
    seen: dict[int, float] = {}

    def at(k: int) -> float:
        if k not in seen:
            n = int(round(2 ** (k / 4)))
            t0 = time.perf_counter()
            seen[k] = stat(n)
            print(f"    {tag:<22} n = {n:>9d}  stat = {seen[k]:.4f}  ({time.perf_counter() - t0:.0f} s)", flush=True)
        return seen[k]

    k = start_k
    while at(k) > 0.1 and k < 100:
        k += 8
    lo = k - 8
    while k - lo > 1:
        mid = (lo + k) // 2
        if at(mid) <= 0.1:
            k = mid
        else:
            lo = mid
    return {"n": int(round(2 ** (k / 4))), "curve": {str(int(round(2 ** (j / 4)))): v for j, v in sorted(seen.items())}}


def _cells(args: argparse.Namespace) -> list[tuple[Fraction, int]]:
    return [(Fraction(c.split(":")[0]), int(c.split(":")[1])) for c in args.cells.split(",")]


def bench_learner(args: argparse.Namespace) -> dict[str, Any]:
    """n for TV <= 0.1 w.p. 0.9: the learner against the naive mean at every cell."""
    out = []
    for rho, d in _cells(args):
        p = light_biases(d)
        gen = np.random.default_rng(args.seed)
        from dpspark.rng import SeededRandom

        def q90(method: Any, tag: str) -> Callable[[int], float]:
            def stat(n: int) -> float:
                tvs = [tv_upper(p, method(p, n, rho, gen, SeededRandom(f"{tag}-{n}-{t}"))) for t in range(args.trials)]
                return float(np.quantile(tvs, 0.9))  # report
            return stat

        t0 = time.perf_counter()
        ours = n_needed(q90(learner, f"learner d{d} rho{rho}"), f"learner d={d} rho={rho}")
        naive = n_needed(q90(naive_mean, f"naive d{d} rho{rho}"), f"naive d={d} rho={rho}")
        ratio = ours["n"] / naive["n"]  # report
        out.append({"rho": str(rho), "d": d, "learner_n": ours["n"], "naive_n": naive["n"], "ratio": ratio,
                    "goal_ratio": GOAL.get((rho, d)), "learner_curve": ours["curve"], "naive_curve": naive["curve"],
                    "seconds": time.perf_counter() - t0})
        print(f"  rho={rho} d={d}: learner n = {ours['n']}, naive n = {naive['n']}, ratio {ratio:.2f}", flush=True)
    return {"trials": args.trials, "level": 0.1, "quantile": 0.9, "cells": out}


def bench_sampler(args: argparse.Namespace) -> dict[str, Any]:
    """n for sum_j |E y_j - p_j| <= 0.1: the product sampler against the naive-mean sampler at every cell."""
    from dpspark.mechanisms.product.sampler import SamplerPlan
    from dpspark.rng import SeededRandom

    out = []
    for rho, d in _cells(args):
        p = light_biases(d)
        gen = np.random.default_rng(args.seed + 1)

        trials = max(args.trials, 40 * 1000 // d)  # more runs where they are cheap: the TV estimate is a mean

        def tv(method: Any, tag: str) -> Callable[[int], float]:
            def stat(n: int) -> float:
                probs = np.array([method(p, n, rho, gen, SeededRandom(f"{tag}-{n}-{t}")) for t in range(trials)])
                return pooled_tv(p, probs)
            return stat

        t0 = time.perf_counter()
        ours = n_needed(tv(sampler_probs, f"sampler d{d} rho{rho}"), f"sampler d={d} rho={rho}", 32)
        naive = n_needed(tv(naive_sampler_probs, f"naive-s d{d} rho{rho}"), f"naive sampler d={d} rho={rho}", 32)
        plan = SamplerPlan.build(d, ours["n"], rho, ALPHA, enforce=False)
        ratio = ours["n"] / naive["n"]  # report
        out.append({"rho": str(rho), "d": d, "trials": trials, "sampler_n": ours["n"], "naive_n": naive["n"], "ratio": ratio,
                    "goal_ratio": GOAL.get((rho, d)), "schedule_at_n": {"ladder_share": str(plan.split / plan.batches),
                                                                       "ladder_rounds": plan.K},
                    "sampler_curve": ours["curve"], "naive_curve": naive["curve"], "seconds": time.perf_counter() - t0})
        print(f"  rho={rho} d={d}: sampler n = {ours['n']}, naive sampler n = {naive['n']}, ratio {ratio:.2f} "
              f"(schedule at n: share {plan.split / plan.batches:.3f}, {plan.K} ladder rounds)", flush=True)
    return {"trials": args.trials, "level": 0.1, "cells": out}


def bench_sampler_curve(args: argparse.Namespace) -> dict[str, Any]:
    """TV of the product sampler's output law versus n at d = 64, rho = 1/2 (module docstring)."""
    from dpspark.mechanisms.product.sampler import SamplerPlan
    from dpspark.rng import SeededRandom

    d, rho = 64, Fraction(1, 2)
    cycle = [0.5, 0.2, 1 / d, 1e-3, 0.0]  # report
    p = np.array([cycle[j % 5] for j in range(d)])
    gen = np.random.default_rng(args.seed + 2)
    rows = []
    for n in [int(round(10 ** (2.5 + 0.25 * i))) for i in range(13)]:  # 3e2 .. 3e5
        probs = np.array([sampler_probs(p, n, rho, gen, SeededRandom(f"ps-{n}-{t}")) for t in range(args.trials)])
        plan = SamplerPlan.build(d, n, rho, ALPHA, enforce=False)
        rows.append({"n": n, "tv_upper": pooled_tv(p, probs), "ladder_share": plan.split / plan.batches,
                     "ladder_rounds": plan.K})
        print(f"  n = {n:>8d}  sum|E y - p| = {rows[-1]['tv_upper']:.4f}  schedule ({rows[-1]['ladder_share']:.3f}, "
              f"{plan.K})", flush=True)
    full = SamplerPlan.build(d, 10**7, rho, ALPHA, enforce=False)
    return {"d": d, "rho": str(rho), "rows": rows, "plan_n_needed_alpha_0.1": full.n_needed}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", default="learner,sampler,sampler_curve")
    ap.add_argument("--cells", default="1/2:100,1/2:1000,1/200:1000", help="rho:d pairs")
    ap.add_argument("--out", default="bench-results/samplers")
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "samplers_product.json")
    results: dict[str, Any] = {}
    for name in args.parts.split(","):
        load = os.getloadavg()
        print(f"[{name}] load {load}", flush=True)
        t0 = time.perf_counter()
        res = globals()[f"bench_{name}"](args)
        res["meta"] = {"seconds": time.perf_counter() - t0, "load_before": load, "load_after": os.getloadavg(),
                       "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        results[name] = res
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(results, fh, indent=1, default=str)
    print("\n| part | rho | d | dpspark n | naive n | ratio | goal |")
    print("|---|---|---|---|---|---|---|")
    for name in ("learner", "sampler"):
        for c in results.get(name, {}).get("cells", []):
            ours = c.get("learner_n", c.get("sampler_n"))
            goal = f"<= {c['goal_ratio']}" if c["goal_ratio"] is not None else ""
            print(f"| {name} | {c['rho']} | {c['d']} | {ours} | {c['naive_n']} | {c['ratio']:.2f} | {goal} |")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
