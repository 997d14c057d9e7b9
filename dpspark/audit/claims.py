"""The privacy claim under audit and the neighbour relations it is stated for.

A claim is (eps, delta)-DP with e^eps = ``exp_eps`` * e^``bias_epsilon`` (the
form of :class:`dpspark.mechanisms.histogram.PrivacyStatement`), for a neighbour relation:

* ``"add/remove"`` (the project's primary relation): D' is D with one unit
  added or removed, so exactly one key's count differs, by exactly one;
* ``"replacement"``: one unit changed, so one key loses one and another gains
  one (equal totals). A release stated for add/remove is, by group privacy
  over the two steps, (2 eps, (1 + e^eps) delta)-DP for replacement:
  :meth:`Claim.for_replacement`.

Datasets as the auditor sees them are counts: an int (one counting query) or
a mapping {key: count} (a histogram of units). Other dataset types (e.g. rows
for a Spark pipeline) are accepted with ``relation=None`` (not checked).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from dpspark.exact import RationalLike, parse_rational

RELATIONS = ("add/remove", "replacement")


@dataclass(frozen=True)
class Claim:
    """(eps, delta)-DP with e^eps = exp_eps * e^bias_epsilon, exact parameters."""

    exp_eps: Fraction
    delta: Fraction = Fraction(0)
    bias_epsilon: Fraction = Fraction(0)

    def __post_init__(self) -> None:
        if not isinstance(self.exp_eps, Fraction) or self.exp_eps < 1:
            raise ValueError("exp_eps must be a Fraction >= 1")
        if not 0 <= self.delta < 1 or self.bias_epsilon < 0:
            raise ValueError("need 0 <= delta < 1 and bias_epsilon >= 0")

    @classmethod
    def of(cls, exp_eps: RationalLike, delta: RationalLike = 0, bias_epsilon: RationalLike = 0) -> "Claim":
        """Build a claim from exact rationals (strings, ints or Fractions)."""
        return cls(parse_rational(exp_eps, "exp_eps"), parse_rational(delta, "delta"), parse_rational(bias_epsilon, "bias_epsilon"))

    @classmethod
    def from_statement(cls, statement: Any) -> "Claim":
        """The claim a release makes (a PrivacyStatement: exp_eps, bias_epsilon, delta)."""
        return cls(statement.exp_eps, statement.delta, statement.bias_epsilon)

    @property
    def epsilon(self) -> float:
        """eps = ln(exp_eps) + bias_epsilon as a float (analysis only)."""
        return math.log(self.exp_eps.numerator) - math.log(self.exp_eps.denominator) + float(self.bias_epsilon)  # report

    @property
    def e_epsilon(self) -> float:
        """e^eps as a float (analysis only)."""
        return float(self.exp_eps) * math.exp(float(self.bias_epsilon))  # report

    def for_replacement(self) -> "Claim":
        """Group privacy over the two add/remove steps: (2 eps, (1 + e^eps) delta), exact upper bounds.

        e^bias <= 1 + 2 bias for bias <= 1 bounds the delta factor by a rational.
        """
        if self.bias_epsilon > 1:
            raise ValueError("bias_epsilon > 1 is not a sensible claim")
        grow = 1 + self.exp_eps * (1 + 2 * self.bias_epsilon)
        return Claim(self.exp_eps**2, self.delta * grow, 2 * self.bias_epsilon)


def _as_counts(dataset: Any) -> dict[Any, int]:
    if isinstance(dataset, bool):
        raise TypeError("a dataset is a count (int) or a mapping {key: count}")
    if isinstance(dataset, int):
        return {None: dataset}
    if isinstance(dataset, Mapping):
        return {k: int(v) for k, v in dataset.items() if v != 0}
    raise TypeError(f"cannot check neighbours of a {type(dataset).__name__}; pass relation=None")


def check_neighbours(d: Any, d_prime: Any, relation: str) -> None:
    """Raise ValueError unless D and D' are neighbours under ``relation`` ("add/remove" or "replacement")."""
    if relation not in RELATIONS:
        raise ValueError(f"relation must be one of {RELATIONS}, got {relation!r}")
    a, b = _as_counts(d), _as_counts(d_prime)
    if isinstance(d, int) and isinstance(d_prime, int):  # one counting query: a unit moves the count by one
        if d < 0 or d_prime < 0 or abs(d - d_prime) != 1:
            raise ValueError("counts D and D' must be >= 0 and differ by exactly one")
        return
    if any(v < 0 for v in (*a.values(), *b.values())):
        raise ValueError("counts must be >= 0")
    diff = {k: a.get(k, 0) - b.get(k, 0) for k in set(a) | set(b)}
    diff = {k: v for k, v in diff.items() if v}
    if relation == "add/remove":
        ok = len(diff) == 1 and abs(next(iter(diff.values()))) == 1
    else:
        ok = sorted(diff.values()) == [-1, 1]
    if not ok:
        raise ValueError(f"D and D' are not neighbours under {relation}")
