"""The dyadic weight table's cheap certification (dyadic.py): the cap and precision are valid, near the least
valid values, and a small-epsilon plan with k, c > 1 takes well under a second (it took 76 s on main)."""

from __future__ import annotations

import time
from fractions import Fraction

from dpspark.mechanisms.groups.aggregates import Bounds, parse_aggregate
from dpspark.mechanisms.groups.dyadic import CAP_BITS, ETA_BITS, cap_and_bits, dyadic_table
from dpspark.mechanisms.groups.laws import exp_eps_below
from dpspark.mechanisms.groups.quantile import QuantileLaw


def _least_cap(base: Fraction, count: int, above: int) -> int:
    """The least valid cap, by bisection below a valid one."""
    p, q = base.numerator, base.denominator
    lo, hi = 1, above
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if count * q**mid << CAP_BITS <= p**mid else (mid + 1, hi)
    return lo


def test_cap_and_precision_are_valid_and_near_the_least() -> None:
    # slack: 0.7 / ln 2 and bitlen C / log2 C (a few %), and ln r / (2 (r - 1) / (r + 1)) (large at a large base)
    for target, count, slack in ((Fraction(1, 2), 2, Fraction(105, 100)), (Fraction(1, 10), 65, Fraction(103, 100)),
                                 (Fraction(1, 40), 17, Fraction(103, 100)), (Fraction(3), 9, Fraction(2))):
        base = exp_eps_below(target)
        p, q = base.numerator, base.denominator
        cap, P = cap_and_bits(base, count)
        assert count * q**cap << CAP_BITS <= p**cap  # C rho^cap <= 2^-64, exactly
        assert (q**cap << P) >= cap * p**cap << ETA_BITS  # 2^P rho^cap >= cap 2^64, exactly
        least = _least_cap(base, count, cap)
        assert least <= cap <= least * slack


def test_table_entries_are_within_eta_below_the_exact_weights() -> None:
    base = exp_eps_below(Fraction(1, 7))
    cap, P, table = dyadic_table(base, 33)
    eta = Fraction(1, 1 << ETA_BITS)
    p, q = base.numerator, base.denominator
    for v in list(range(0, cap + 1, max(1, cap // 40))) + [cap]:
        exact = Fraction((1 << P) * q**v, p**v)
        assert exact * (1 - eta) <= table[v] <= exact
    assert dyadic_table(base, 33)[2] is table  # memoised


def test_small_epsilon_with_k_and_c_plans_fast() -> None:
    agg = parse_aggregate({"name": "m", "kind": "quantile", "column": "x", "lo": "0", "hi": "100", "q": "1/2",
                           "bins": 1024})
    t0 = time.perf_counter()
    law = QuantileLaw(agg, Bounds(4, 5), Fraction(1, 100), 128)
    assert time.perf_counter() - t0 < 10  # main: 76 s (p^U for U up to 2^19 in the cap search)
    assert law.cap > 100_000
