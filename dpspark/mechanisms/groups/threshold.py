"""Private key selection by a threshold on the released noisy count (docs/groups.md §F).

When the release already draws a noisy count of rows per group with pure noise (the ``count`` statistic of
a count, sum or mean aggregate, FastSample per grid unit: :class:`~dpspark.mechanisms.groups.laws.PureLaw`),
that same draw selects the keys: an observed key is released iff its count's output index M (the released
count is G (a_lo + M)) is at least a public threshold t, and only then are its other statistics drawn. This
is the stability-histogram argument (BV Alg. 5.4; OpenDP's group-by threshold), here on the implemented law:

* a key observed in both neighbours: its released values are post-processing of the pure-DP statistics;
* a key observed in one neighbour only has at most c rows there (its count x in [0, c], the unit's own
  rows), and it is released with probability at most

      delta_key = (1 + 2^-lam) max_{x in [0, c]} Pr[M(a(x) - a_lo) >= t]   (exact, from the scaled CDF),

  the factor covering the rng's multiply-shift bias of the one uniform the draw reads.

A unit changes at most k keys; per key the mechanism is (eps_key, delta_key)-DP with eps_key the pure loss
of that key's statistics (0 and delta_key for a new key, whose output is "not released" with probability
>= 1 - delta_key on one side and 1 on the other), and keys are independent, so by basic composition the
release is **(sum of the statistics' pure eps, k delta_key)-DP**: selection spends no epsilon of its own.
t is the least threshold with k delta_key <= the delta the statistics leave (binary search on the exact
tail, which does not increase with t).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from dpspark.mechanisms.groups.aggregates import GroupsError
from dpspark.mechanisms.groups.laws import PureLaw, round_grid


def _round_up(x: Fraction, bits: int = 64) -> Fraction:
    """The least m / 2^e >= x with m of at most ``bits`` bits (a short, still exact, upper bound)."""
    if x <= 0:
        return Fraction(0)
    e = bits - (x.numerator.bit_length() - x.denominator.bit_length())
    return Fraction(-((-x.numerator << e) // x.denominator), 1 << e) if e >= 0 else Fraction(-(-x.numerator // (x.denominator << -e)) << -e)


class ThresholdSelection:
    """Keep a key iff its count statistic's output index reaches ``t`` (module docstring)."""

    def __init__(self, law: PureLaw, rows_per_key: int, k: int, delta: Fraction, lam: int) -> None:
        if not 0 < delta < 1:
            raise GroupsError("key selection needs delta in (0, 1)")
        self.law, self.k, self.lam, self.c = law, k, lam, rows_per_key
        mech = law.mech
        # the start indices a(x) - a_lo of a new key's count x in [0, c]: a contiguous run (rounding is monotone)
        first = round_grid(0, law.delta, law.g) - law.a_lo
        last = round_grid(rows_per_key, law.delta, law.g) - law.a_lo
        self.starts = list(range(first, last + 1))
        grow = Fraction((1 << lam) + 1, 1 << lam)
        self._grow = grow

        def key_delta(t: int) -> Fraction:
            if t <= 0:
                return grow
            if t > mech.n:
                return Fraction(0)
            tail = max(mech.d - mech.scaled_cdf(a, t - 1) for a in self.starts)
            return grow * Fraction(tail, mech.d)

        lo, hi = 0, mech.n + 1  # k key_delta(n + 1) = 0 <= delta: hi always works
        while lo < hi:
            mid = (lo + hi) // 2
            if k * key_delta(mid) <= delta:
                hi = mid
            else:
                lo = mid + 1
        while lo <= mech.n and k * _round_up(key_delta(lo)) > delta:  # the rounding up may need one more step
            lo += 1
        if lo > mech.n:
            raise GroupsError("key selection: no threshold keeps a key at this delta; raise delta")
        self.t = lo
        self.delta_key = _round_up(key_delta(lo))

    def delta(self) -> Fraction:
        """k delta_key: the selection's whole privacy cost (no epsilon)."""
        return self.k * self.delta_key

    def threshold_value(self) -> Fraction:
        """The least released count that is kept: G (a_lo + t)."""
        return self.law.G * (self.law.a_lo + self.t)

    def keep(self, index: np.ndarray) -> np.ndarray:
        """Keep decisions from the count draws' output indexes (int64 or object array)."""
        return np.asarray(index >= self.t, dtype=bool)

    def describe(self) -> dict[str, Any]:
        return {"selection": "threshold on the released noisy count (same draw; no epsilon of its own)",
                "threshold_index": self.t, "threshold_count": str(self.threshold_value()),
                "delta_per_key": str(self.delta_key), "new_key_rows": self.c}
