#!/usr/bin/env python3
"""Phase transitions of the private samplers (RSSS; issue 11): TV between the output law and P versus n.

Usage: .venv/bin/python scripts/bench/samplers.py [--parts kary,bernoulli,...] [--out bench-results/samplers]
Every ``bench_<part>(args) -> dict`` in this module is a part; main runs the ones named (default: all),
prints a table per part and writes <out>/samplers.json and one PNG per part.

* kary: RSSS Alg 3 at k = 100, eps = 1 on RSSS's hard instance (alpha0 = 1/100: 0.4 on one symbol, 0.6
  uniform on 50 of the other 99). The sampler is the implemented one (GeoSample draws, exact clip and
  normalise); Q = E[w/W] is estimated by T trials of (data, noise). P and Q are both uniform inside the
  three classes (special, support, off-support) by symmetry, so TV = 1/2 sum over classes |Q_c - P_c|
  exactly from three class means (each +-3 standard errors shown). Crossings of 0.1 and 0.01 are
  log-log interpolated and printed next to the bound k / (alpha sinh eps~).
* bernoulli: the bounded-bias product at d in {10, 100, 1000} with every bias 1/3 (the edge of
  [1/3, 2/3]). The number of ones is sufficient for both product laws, so the product's TV is
  TV(Bin(d, E p~), Bin(d, 1/3)) - computed from the exact Binomial law of c (floats, report). The n
  needed for eps = 1 is the smallest max_units the mechanism's plan accepts, for the pure statement
  (d ln r(n) <= 1) and with privacy.delta = 1e-6 (each column ln r-DP => (ln r)^2/2-zCDP, composed,
  CKS20 conversion certified <= 1).
All floats here are reporting only.
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


def _crossing(ns: list[float], tvs: list[float], level: float) -> float | None:
    """The n where the TV curve first falls to ``level`` (log-log interpolation; None if it never does)."""
    for (n0, t0), (n1, t1) in zip(zip(ns, tvs), zip(ns[1:], tvs[1:])):
        if t0 > level >= t1 and t1 > 0:
            a = (math.log(level) - math.log(t0)) / (math.log(t1) - math.log(t0))  # report
            return math.exp(math.log(n0) + a * (math.log(n1) - math.log(n0)))  # report
    return None


# ------------------------------------------------------------------------------------------------ k-ary
def hard_instance(k: int = 100) -> np.ndarray:
    """RSSS's instance: 0.4 on symbol 0, 0.6 uniform on symbols 1..k/2, 0 elsewhere (floats: data only)."""
    p = np.zeros(k)
    p[0] = 0.4
    p[1: k // 2 + 1] = 0.6 / (k // 2)
    return p


def bench_kary(args: argparse.Namespace) -> dict[str, Any]:
    """TV(Q, P) versus n for the k-ary sampler at k = 100, eps = 1 (hard instance)."""
    from dpspark.rng import SystemRandom
    from dpspark.mechanisms.samplers.kary import kary_counting, mean_abs_noise

    k, eps, T = 100, Fraction(1), args.trials
    P = hard_instance(k)
    support = slice(1, k // 2 + 1)
    off = slice(k // 2 + 1, k)
    data_rng = np.random.default_rng(args.seed)
    noise_rng = SystemRandom()
    ns = [25, 50, 100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600]
    rows = []
    exp_eps = kary_counting(2, eps).exp_eps
    for n in ns:
        mech = kary_counting(n, eps)
        t0 = time.perf_counter()
        counts = data_rng.multinomial(n, P, size=T)
        w = mech.draw_many(counts.reshape(-1), noise_rng).reshape(T, k).astype(np.float64)  # report
        W = w.sum(axis=1)
        pt = np.where(W[:, None] > 0, w / np.maximum(W, 1)[:, None], 1.0 / k)  # report: post-processing
        cls = {"special": pt[:, 0], "support": pt[:, support].sum(1), "off": pt[:, off].sum(1)}
        target = {"special": 0.4, "support": 0.6, "off": 0.0}
        means = {c: float(v.mean()) for c, v in cls.items()}
        ses = {c: float(v.std(ddof=1) / math.sqrt(T)) for c, v in cls.items()}
        tv = 0.5 * sum(abs(means[c] - target[c]) for c in cls)
        se = 0.5 * sum(ses.values())
        bound = k * float(mean_abs_noise(mech.exp_eps)) / n
        rows.append({"n": n, "tv": tv, "tv_3se": 3 * se, "q_off": means["off"], "bound": min(1.0, bound),
                     "w_zero_rate": float((W == 0).mean()), "seconds": time.perf_counter() - t0})
        print(f"  kary n={n:6d}  TV={tv:.5f} +-{3 * se:.5f}  off-support mass={means['off']:.5f}  "
              f"bound k/(n sinh eps~)={bound:.4f}", flush=True)
    tvs = [r["tv"] for r in rows]
    sinh = float((exp_eps - 1 / exp_eps) / 2)
    cross = {}
    for level in (0.1, 0.01):
        cross[str(level)] = {"measured_n": _crossing(ns, tvs, level),
                             "bound_n": k / (level * sinh),
                             "laplace_substitute_2k_over_alpha_eps": 2 * k / (level * float(eps))}
    return {"k": k, "epsilon": str(eps), "exp_eps": str(exp_eps), "sinh_eps_tilde": sinh, "trials": T,
            "instance": "0.4 on symbol 0, 0.6 uniform on symbols 1..50 (k = 100)", "rows": rows, "crossings": cross}


def plot_kary(res: dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ns = [r["n"] for r in res["rows"]]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.errorbar(ns, [r["tv"] for r in res["rows"]], yerr=[r["tv_3se"] for r in res["rows"]], marker="o",
                label="measured TV(Q, P) (+-3 s.e.)")
    ax.plot(ns, [r["bound"] for r in res["rows"]], "--", label="bound k/(n sinh eps~)")
    for level in (0.1, 0.01):
        ax.axhline(level, color="grey", lw=0.6)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n (units)")
    ax.set_ylabel("d_TV(output law, P)")
    ax.set_title(f"k-ary sampler, k = 100, eps = 1 (e^eps~ = {res['exp_eps']}), hard instance")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ------------------------------------------------------------------------------------------------ bernoulli
def _log_binom_pmf(n: int, p: float) -> np.ndarray:
    c = np.arange(n + 1)
    lg = np.array([math.lgamma(x + 1) for x in range(n + 1)])
    return lg[n] - lg - lg[::-1] + c * math.log(p) + (n - c) * math.log1p(-p)  # report


def clipped_mean(n: int, p: float) -> float:
    """E[p~] = E[clip(c/n, [1/4, 3/4])] for c ~ Bin(n, p) (float, report)."""
    c = np.arange(n + 1)
    pt = np.clip(4 * c, n, 3 * n) / (4 * n)
    return float(np.exp(_log_binom_pmf(n, p)) @ pt)  # report


def product_tv(d: int, q: float, p: float) -> float:
    """TV between product(Ber(q))^d and product(Ber(p))^d = TV(Bin(d, q), Bin(d, p)) (float, report)."""
    if q == p:
        return 0.0
    return 0.5 * float(np.abs(np.exp(_log_binom_pmf(d, q)) - np.exp(_log_binom_pmf(d, p))).sum())  # report


def n_zcdp(d: int, eps: Fraction, delta: Fraction) -> int:
    """Smallest n the mechanism accepts with privacy.delta: d rho0(n) certified, CKS20 conversion <= eps."""
    from dpspark.mechanisms.zcdp_budget import converted_epsilon
    from dpspark.privacy import LogEpsilon, PureDP, pure_to_zcdp
    from dpspark.rng import DEFAULT_LAMBDA, bias_epsilon
    from dpspark.mechanisms.samplers.bernoulli import column_bias_draws, column_ratio

    def ok(n: int) -> bool:
        col = LogEpsilon(column_ratio(n), bias_epsilon(column_bias_draws(n), DEFAULT_LAMBDA))
        return converted_epsilon(d * pure_to_zcdp(PureDP(col)).rho, delta) <= eps

    from dpspark.mechanisms.samplers.mechanism import smallest_n

    return smallest_n(ok)


def bench_bernoulli(args: argparse.Namespace) -> dict[str, Any]:
    """n needed by the bounded-bias product at d in {10, 100, 1000}: privacy (pure, zCDP) and TV <= alpha."""
    from dpspark.exact import exp_lower_bound
    from dpspark.mechanisms.samplers.bernoulli import min_n_for_epsilon

    p = 1 / 3
    out: dict[str, Any] = {"bias": "1/3 in every column", "epsilon": "1", "zcdp_delta": "1e-6", "per_d": []}
    ns = sorted({int(round(10 ** (1 + 0.1 * i))) for i in range(31)})  # 10 .. 10^4
    for d in (10, 100, 1000):
        t0 = time.perf_counter()
        tvs = [product_tv(d, clipped_mean(n, p), p) for n in ns]
        need = {}
        for alpha in (0.1, 0.01, 0.001):
            lo = 1
            hi = 16
            while product_tv(d, clipped_mean(hi, p), p) > alpha:
                hi *= 2
            while lo < hi:  # TV is decreasing in n on these grids (checked on the printed curve)
                mid = (lo + hi) // 2
                lo, hi = (lo, mid) if product_tv(d, clipped_mean(mid, p), p) <= alpha else (mid + 1, hi)
            need[str(alpha)] = lo
        n_pure = min_n_for_epsilon(exp_lower_bound(Fraction(1)), d)
        nz = n_zcdp(d, Fraction(1), Fraction(1, 10**6))
        rec = {"d": d, "n_privacy_pure_eps1": n_pure, "n_privacy_zcdp_eps1_delta1e-6": nz, "n_accuracy": need,
               "n_needed_pure": {a: max(n_pure, v) for a, v in need.items()},
               "n_needed_zcdp": {a: max(nz, v) for a, v in need.items()},
               "curve": {"n": ns, "tv": tvs}, "seconds": time.perf_counter() - t0}
        out["per_d"].append(rec)
        print(f"  bernoulli d={d:5d}  n for eps=1: pure {n_pure}, zCDP(delta=1e-6) {nz};  n for TV<=0.1/0.01/0.001: "
              f"{need['0.1']}/{need['0.01']}/{need['0.001']}", flush=True)
    return out


def plot_bernoulli(res: dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for rec in res["per_d"]:
        line, = ax.plot(rec["curve"]["n"], [max(t, 1e-12) for t in rec["curve"]["tv"]], label=f"d = {rec['d']}")
        ax.axvline(rec["n_privacy_pure_eps1"], color=line.get_color(), ls="--", lw=0.8)
        ax.axvline(rec["n_privacy_zcdp_eps1_delta1e-6"], color=line.get_color(), ls=":", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(1e-8, 1.5)
    ax.set_xlabel("n (units)")
    ax.set_ylabel("d_TV(product output law, P)")
    ax.set_title("bounded-bias product, biases 1/3\n(-- n for eps = 1, pure; : zCDP route, delta = 1e-6)", fontsize=10)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ------------------------------------------------------------------------------------------------ main
def parts() -> dict[str, Callable[[argparse.Namespace], dict[str, Any]]]:
    """Every ``bench_<name>`` function of this module, by name."""
    return {name[len("bench_"):]: fn for name, fn in globals().items() if name.startswith("bench_") and callable(fn)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", default=None, help=f"comma-separated, default all of: {','.join(parts())}")
    ap.add_argument("--out", default="bench-results/samplers")
    ap.add_argument("--trials", type=int, default=20000, help="k-ary: (data, noise) trials per n")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    todo = args.parts.split(",") if args.parts else list(parts())
    os.makedirs(args.out, exist_ok=True)
    json_path = os.path.join(args.out, "samplers.json")
    results: dict[str, Any] = {}
    if os.path.exists(json_path):
        with open(json_path, encoding="utf-8") as fh:
            results = json.load(fh)  # keep other parts' results
    for name in todo:
        fn = parts()[name]
        print(f"[{name}] load {os.getloadavg()}", flush=True)
        t0 = time.perf_counter()
        res = fn(args)
        res["meta"] = {"seconds": time.perf_counter() - t0, "load_after": os.getloadavg(),
                       "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        results[name] = res
        plot = globals().get(f"plot_{name}")
        if plot is not None:
            plot(res, os.path.join(args.out, f"{name}.png"))
    with open(json_path, "w", encoding="utf-8") as fh:
        json.dump(results, fh, indent=1, default=str)
    if "kary" in todo:
        print("\nk-ary crossings (k = 100, eps = 1):  level | measured n | bound k/(alpha sinh eps~) | 2k/(alpha eps)")
        for level, c in results["kary"]["crossings"].items():
            m = "n/a" if c["measured_n"] is None else f"{c['measured_n']:.0f}"
            print(f"  {level:>5} | {m:>10} | {c['bound_n']:.0f} | {c['laplace_substitute_2k_over_alpha_eps']:.0f}")
    if "bernoulli" in todo:
        print("\nbounded-bias product (biases 1/3, eps = 1):  d | n pure | n zCDP | n for TV 0.1 / 0.01 / 0.001")
        for r in results["bernoulli"]["per_d"]:
            a = r["n_accuracy"]
            print(f"  {r['d']:5d} | {r['n_privacy_pure_eps1']:6d} | {r['n_privacy_zcdp_eps1_delta1e-6']:6d} | "
                  f"{a['0.1']} / {a['0.01']} / {a['0.001']}")
    print(f"\nwrote {json_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
