"""Release objects: a partial vector plus its exact privacy and accuracy statements.

Neighbour relation (pinned by review): add or remove one unit, with at most n
units in any dataset (n public, declared). One count then changes by exactly one.
Replacement of a unit is two such steps and costs twice the epsilon (and, for
approximate DP, (1 + e^eps) times the delta) by group privacy, unless the
algorithm proves a tighter delta (``PrivacyStatement.replacement_delta``;
StabilityHistogram: the add/remove delta itself).

Privacy parameters are exact: e^{eps~} = p/q is a Fraction, the randomness
source's multiplicative bias adds ``bias_epsilon`` (counted in epsilon, never in
delta), delta is a Fraction. The statements are the shared
:class:`dpspark.privacy.PrivacyStatement` and :class:`dpspark.privacy.AccuracyStatement`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from dpspark.privacy import AccuracyStatement, AddRemove, PrivacyStatement
from dpspark.rng import bias_epsilon

ADD_REMOVE = "add/remove one unit, at most n units per dataset (n public)"


def biased_draw_factor(draws: int, lam: int) -> tuple[Fraction, Fraction]:
    """(extra epsilon, delta multiplier) for at most ``draws`` mod-N draws of bias a = 2^-lam on one path.

    Every output probability moves by a factor within [(1-a)^k, (1+a)^k], so a ratio
    bound grows by ((1+a)/(1-a))^k <= e^{bias_epsilon(k)} and an additive delta by
    (1+a)^k <= 1 + 2ka (valid for ka <= 1, checked).
    """
    if draws * 2 > (1 << lam):
        raise ValueError("too many biased draws for the rng's lambda")
    return bias_epsilon(draws, lam), 1 + Fraction(2 * draws, 1 << lam)


def add_remove_statement(
    n: int,
    *,
    exp_eps: Fraction,
    bias_epsilon: Fraction,
    delta: Fraction,
    theorem: str,
    notes: str = "",
    replacement_delta: Fraction | None = None,
) -> PrivacyStatement:
    """(eps, delta)-DP under add/remove of one unit among at most n, eps = ln(exp_eps) + bias_epsilon exactly."""
    return PrivacyStatement.from_exp_eps(exp_eps, bias_epsilon, delta, theorem, AddRemove(n), notes, replacement_delta)


def histogram_accuracy(
    *,
    a_per_query: int,
    beta_per_query: Fraction,
    per_query_above: int,
    a_simultaneous: int,
    beta_simultaneous: Fraction,
    notes: str = "",
) -> AccuracyStatement:
    """Per-query (a, beta) on counts > ``per_query_above`` (-1: every count) and simultaneous (a, beta)."""
    return AccuracyStatement.histogram(a_per_query, beta_per_query, per_query_above, a_simultaneous,
                                       beta_simultaneous, notes)


@dataclass(frozen=True)
class HistogramRelease:
    """A released partial vector: ``indices`` ascending (canonical), ``counts`` aligned; absent means 0."""

    algorithm: str
    indices: tuple[int, ...]
    counts: tuple[int, ...]
    universe_size: int
    n: int
    privacy: PrivacyStatement
    accuracy: AccuracyStatement
    parameters: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[int, int]:
        """The partial vector as {index: count}."""
        return dict(zip(self.indices, self.counts))

    def describe(self) -> dict[str, Any]:
        """Everything but the values: algorithm, sizes, privacy, accuracy, public parameters."""
        return {
            "algorithm": self.algorithm,
            "universe_size": self.universe_size,
            "n": self.n,
            "released_bins": len(self.indices),
            "privacy": self.privacy.describe(),
            "accuracy": self.accuracy.describe(),
            "parameters": self.parameters,
        }


def _frac(x: Fraction) -> dict[str, Any]:
    """Exact rational as num/den; huge parts as hex (Python refuses str() beyond 4300 digits)."""
    def enc(v: int) -> int | str:
        return v if v.bit_length() <= 128 else hex(v)

    out: dict[str, Any] = {"num": enc(x.numerator), "den": enc(x.denominator)}
    if x.denominator.bit_length() > 128:
        out["log2_approx"] = (math.log2(x.numerator) if x.numerator else float("-inf")) - math.log2(x.denominator)  # report
    return out


def _short(x: Fraction) -> str:
    """A Fraction for repr: exact when small, else an approximate power of two (display only)."""
    if max(x.numerator.bit_length(), x.denominator.bit_length()) <= 128:
        return str(x)
    if x == 0:
        return "0"
    return f"~2^{math.log2(x.numerator) - math.log2(x.denominator):.2f}"  # report
