"""Private key selection over huge universes: a threshold on a noisy count of units (docs/groups.md §F).

Input: for every key observed in the data, u = the number of distinct units that kept it (after each
unit keeps at most k keys). Adding or removing a unit moves at most k of these counts by 1.

The law (per key). A key with u units is kept with probability pi(u), where pi is the optimal
(eps1, delta1) keep law of Desfontaines-Voss-Gipson-Mandayam 2022 ("Differentially private partition
selection", PoPETs; the law behind PipelineDP's truncated-geometric selection), computed exactly on a
dyadic grid: with e^eps1 = p/q rational (certified <= e^(eps / k)), delta1 = delta / k and
2^Lb = 2^PI_BITS,

    pi(0) = 0,   pi(u) = floor(2^Lb min(1, (p/q) pi(u-1) + delta1, 1 - (q/p)(1 - pi(u-1) - delta1))) / 2^Lb.

Equivalently, the key is released iff u + Z > tau for a truncated-geometric Z: a threshold on a noisy
count, as in the stability histogram. Each bound is an *upper* bound on pi(u) given pi(u-1), so rounding
down keeps both DP inequalities between u-1 and u (keep: pi(u) <= e^eps1 pi(u-1) + delta1; drop:
1 - pi(u-1) <= e^eps1 (1 - pi(u)) + delta1); the other two directions hold because pi is
non-decreasing. :meth:`SelectionLaw.exact_delta` recomputes the smallest delta of the implemented law
at e^eps1 = p/q from the table, exactly. Draw: keep iff X < 2^Lb pi(u), X = rng.bits(Lb) (exact, no
bias). A unit changes at most k keys, independent coordinates: **(k eps1, k delta1)-DP**
(basic composition), i.e. (ln((p/q)^k), k delta_impl) with delta_impl <= delta1.

Strict time: the table is public (u up to saturation, at most max_units entries); each observed key
costs one look-up and one draw. The loop runs over the observed keys: their number is the one
data-dependent loop count, the convention of the stability histogram (BV Alg. 5.4 releases noisy
counts for supp(D) only).

Against PipelineDP (same (eps, delta), k = 1): both run the optimal law; ours rounds e^eps down to p/q
with a relative error below 2^-SELECTION_EXTRA_BITS of eps and pi down to 2^-PI_BITS, so its keep
probability is at most ~1e-9 relatively below, and equal once it saturates
(tests/unit/groups/test_selection.py compares them). PipelineDP spends delta1 = 1 - (1 - delta)^(1/k) per key for k > 1, a relative (k - 1) delta / 2
more than delta / k; our release instead gives selection every delta the pure-DP aggregates leave,
so at the issue's three-way split it has 3x PipelineDP's delta and keeps more keys.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Sequence

from dpspark.mechanisms.groups.aggregates import GroupsError
from dpspark.mechanisms.groups.laws import exp_eps_below
from dpspark.privacy import LogEpsilon
from dpspark.rng import RandomSource

#: resolution of the keep probabilities: 2^-PI_BITS (far below any delta a release may use)
PI_BITS = 128
#: denominator bits of e^eps1 beyond 1/eps1 (the table is small, so it can afford a near-exact eps)
SELECTION_EXTRA_BITS = 48


class SelectionLaw:
    """The exact per-key keep law and its (eps, delta) statement (module docstring)."""

    def __init__(self, epsilon: Fraction, delta: Fraction, k: int, max_units: int) -> None:
        if epsilon <= 0 or not 0 < delta < 1:
            raise GroupsError("key selection needs epsilon > 0 and delta in (0, 1)")
        if delta < Fraction(1, 1 << (PI_BITS - 8)):
            raise GroupsError(f"key selection needs delta >= 2^-{PI_BITS - 8}")
        self.k = k
        self.exp_eps = exp_eps_below(epsilon / k, SELECTION_EXTRA_BITS)
        self.delta1 = delta / k
        self.table = self._table(max_units)

    def _table(self, max_units: int) -> list[int]:
        """2^Lb pi(u) for u = 0.. until pi reaches 1 (or max_units; a public bound)."""
        one, r, d1 = 1 << PI_BITS, self.exp_eps, self.delta1
        out = [0]
        while out[-1] < one and len(out) <= max_units:
            prev = Fraction(out[-1], one)
            up = min(Fraction(1), r * prev + d1, 1 - (1 - prev - d1) / r)
            out.append((up * one).__floor__())
        return out

    @property
    def saturation(self) -> int:
        """The least u kept with probability 1 (or the table's end)."""
        return len(self.table) - 1

    def keep_probability(self, units: int) -> Fraction:
        """pi(u), exactly."""
        return Fraction(self.table[min(units, len(self.table) - 1)], 1 << PI_BITS)

    def exact_delta(self) -> Fraction:
        """The least delta with which the implemented law is (ln(p/q), delta)-DP between u and u + 1, exactly."""
        r, worst = self.exp_eps, Fraction(0)
        pis = [self.keep_probability(u) for u in range(len(self.table) + 1)]
        for lo_, hi_ in zip(pis, pis[1:]):
            worst = max(worst, hi_ - r * lo_, lo_ - r * hi_, (1 - lo_) - r * (1 - hi_), (1 - hi_) - r * (1 - lo_))
        return worst

    def epsilon(self) -> LogEpsilon:
        """ln((p/q)^k): k changed keys."""
        return LogEpsilon(self.exp_eps ** self.k)

    def delta(self) -> Fraction:
        """k times the implemented law's exact delta."""
        return self.k * self.exact_delta()

    def keep(self, units: int, rng: RandomSource) -> bool:
        """One exact draw: X < 2^Lb pi(u) with X uniform on [0, 2^Lb)."""
        if isinstance(units, bool) or not isinstance(units, int) or units < 1:
            raise GroupsError("an observed key's unit count must be an int >= 1 (an engine bug; no value is shown)")
        return rng.bits(PI_BITS) < self.table[min(units, len(self.table) - 1)]

    def select(self, units: Sequence[int], rng: RandomSource) -> list[bool]:
        """Keep decisions for the observed keys, in the order given (one draw each)."""
        return [self.keep(u, rng) for u in units]

    def describe(self) -> dict[str, Any]:
        return {"selection": "optimal threshold law (truncated geometric), exact dyadic table",
                "exp_eps_per_key": str(self.exp_eps), "delta_per_key": str(self.delta1),
                "saturation_units": self.saturation, "pi_bits": PI_BITS}
