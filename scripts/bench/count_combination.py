"""Issue 34 §3: is combining the two estimates of a group's row count worth building? (docs/groups.md §G)

The only release with two independent estimates of one N: private keys (the rows part's count N1~ = G a1~
selects the keys and is the released count) with a mean of a column that imputes NULLs (its distance pair gives
N2~ = (a~ + b~) / g0 of the same N). Everywhere else there is one estimate: public keys read the count off the
pair (form paircount), a column that drops NULLs counts N_x != N, sums and variances reuse the one N~.

For the plan's two laws (FastSample: two-sided geometric per grid unit; the uniform part, 2^-64, is ignored) this
prints, from the exact noise pmfs convolved numerically (analysis only, no sampling): the median and 95% point
of |error| of N1~ alone and of the inverse-variance combination w N1~ + (1 - w) N2~ (w = v2 / (v1 + v2)); the
stated bar today; and the two data-free bars a combination could state: the union bound
w e1(beta/2) + (1 - w) 2 e2(beta/4) (the certified per-coordinate bars) and the 1 - beta point of
w |Z1| + (1 - w) (|Za| + |Zb|) / g0 (valid whatever the clamping, which only shrinks each |error|; the signed
combination's cancellation is not, since clamping at a range end breaks it for small counts).

    PYTHONPATH=$PWD .venv/bin/python scripts/bench/count_combination.py
"""

from __future__ import annotations

import argparse
import json
from fractions import Fraction
from pathlib import Path

import numpy as np

from dpspark.engine.numeric import NullRule
from dpspark.mechanisms.groups.aggregates import Bounds
from dpspark.mechanisms.groups.algorithm import plan_groups

COUNT = {"name": "n", "kind": "count"}
MEAN = {"name": "m", "kind": "mean", "column": "x", "lo": "0", "hi": "100", "scale_bits": 0}


def _geometric(exp_eps: Fraction, radius: int) -> tuple[np.ndarray, np.ndarray]:
    """Support -radius..radius and the two-sided geometric pmf at ratio 1/exp_eps (analysis floats)."""
    r = float(1 / exp_eps)  # report
    k = np.arange(-radius, radius + 1)
    pmf = (1 - r) / (1 + r) * r ** np.abs(k)  # report
    return k, pmf / pmf.sum()  # report


def _quantile(values: np.ndarray, pmf: np.ndarray, p: float) -> float:
    order = np.argsort(values, kind="stable")
    cum = np.cumsum(pmf[order])  # report
    return float(values[order][np.searchsorted(cum, p)])  # report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default="/tmp/count_combination.json")
    args = ap.parse_args()
    rows = []
    print(f"{'eps':>5} {'c':>2} {'w':>6} {'median alone':>12} {'median comb':>11} {'q95 alone':>9} {'q95 comb':>8} "
          f"{'bar now':>7} {'union bar':>9} {'|Z| bar':>7}")
    for eps in ("1", "1/10"):
        for c in (1, 5):
            plan = plan_groups([COUNT, MEAN], {"epsilon": eps, "delta": "1e-9"}, max_units=30_000, private_keys=True,
                               nulls={"x": NullRule(value=Fraction(0))}, bounds=Bounds(1, c))
            i1, i2 = plan.basis["n"].parts[0], plan.basis["m"].parts[0]
            cl, pl = plan.noises[i1].law, plan.noises[i2].law
            beta = plan.beta
            k1, p1 = _geometric(cl.exp_eps, 4000)
            k2, p2 = _geometric(pl.exp_eps, 4000)
            e1 = k1 * float(cl.G)  # report
            s2 = np.convolve(p2, p2)  # Za + Zb
            e2 = np.arange(-8000, 8001) / pl.g0  # report
            keep1, keep2 = p1 > 1e-15, s2 > 1e-15
            e1, p1k, e2, s2k = e1[keep1], p1[keep1], e2[keep2], s2[keep2]
            v1, v2 = float(np.sum(p1k * e1 ** 2)), float(np.sum(s2k * e2 ** 2))  # report
            w = v2 / (v1 + v2)  # report
            comb = np.abs(w * e1[:, None] + (1 - w) * e2[None, :]).ravel()  # report
            pc = (p1k[:, None] * s2k[None, :]).ravel()
            # |Za| + |Zb| law, then the weighted sum with |Z1|
            a2 = np.convolve(p2[4000:] * np.r_[1, 2 * np.ones(4000)], p2[4000:] * np.r_[1, 2 * np.ones(4000)])
            a2 = a2 / a2.sum()  # report
            k_a2 = np.arange(len(a2)) / pl.g0  # report
            m1 = np.abs(e1)
            ok = a2 > 1e-15
            absv = (w * m1[:, None] + (1 - w) * k_a2[ok][None, :]).ravel()  # report
            absp = (p1k[:, None] * a2[ok][None, :]).ravel()
            union = w * float(plan.bar(i1, beta / 2)) + (1 - w) * 2 * float(pl.error(beta / 4)) / pl.g0  # report
            row = {"eps": eps, "c": c, "w": w, "median_alone": _quantile(np.abs(e1), p1k, 0.5),
                   "median_combined": _quantile(comb, pc, 0.5), "q95_alone": _quantile(np.abs(e1), p1k, 0.95),
                   "q95_combined": _quantile(comb, pc, 0.95), "bar_now": float(plan.errors["n"][0]),  # report
                   "union_bar": union, "abs_sum_bar": _quantile(absv, absp, 1 - float(beta))}  # report
            rows.append(row)
            print(f"{eps:>5} {c:>2} {w:>6.3f} {row['median_alone']:>12.2f} {row['median_combined']:>11.2f} "
                  f"{row['q95_alone']:>9.2f} {row['q95_combined']:>8.2f} {row['bar_now']:>7.1f} {union:>9.2f} "
                  f"{row['abs_sum_bar']:>7.2f}")
    Path(args.json).write_text(json.dumps(rows, indent=1))
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
