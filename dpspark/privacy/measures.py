"""Privacy measures as types: pure DP, approximate DP and rho-zCDP, with exact amounts.

* ``PureDP(epsilon)``: Pr[M(x) in S] <= e^eps Pr[M(x') in S] for neighbours x, x'.
* ``ApproxDP(epsilon, delta)``: Pr[M(x) in S] <= e^eps Pr[M(x') in S] + delta.
* ``ZCDP(rho)``: D_alpha(M(x) || M(x')) <= alpha rho for every alpha > 1
  (Bun-Steinke 2016, Def. 1.1).

epsilon is a :class:`~dpspark.privacy.epsilon.LogEpsilon` (a rational, or an
exact ln(r) + f); delta and rho are Fractions (a rho produced by a conversion
is a certified rational upper bound on the true value). Every amount is
given as str, int or Fraction; a float raises TypeError (see
:func:`dpspark.exact.parse_rational`).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Union

from dpspark.exact import parse_rational
from dpspark.privacy._encode import dec_frac, enc_frac, require_keys
from dpspark.privacy.epsilon import EpsilonLike, LogEpsilon
from dpspark.privacy.errors import DescriptionError, PrivacyError


def _delta(value: Any) -> Fraction:
    d = parse_rational(value, "delta")
    if not 0 <= d <= 1:
        raise PrivacyError(f"delta must lie in [0, 1], got {d}")
    return d


@dataclass(frozen=True, init=False)
class PureDP:
    """epsilon-DP (pure). ``PureDP("1")``, ``PureDP(LogEpsilon(p_over_q, bias))``."""

    epsilon: LogEpsilon

    def __init__(self, epsilon: EpsilonLike) -> None:
        object.__setattr__(self, "epsilon", LogEpsilon.of(epsilon))

    @property
    def delta(self) -> Fraction:
        """0: pure DP is approximate DP with delta = 0."""
        return Fraction(0)

    def describe(self) -> dict[str, Any]:
        """JSON-ready exact form."""
        return {"measure": "pure", "epsilon": self.epsilon.describe()}

    def text(self) -> str:
        """The guarantee in words."""
        return f"eps = {self.epsilon} (~{self.epsilon.float_approx():.6g}), pure DP"  # report


@dataclass(frozen=True, init=False)
class ApproxDP:
    """(epsilon, delta)-DP. ``ApproxDP("1", "1e-9")``."""

    epsilon: LogEpsilon
    delta: Fraction

    def __init__(self, epsilon: EpsilonLike, delta: Any) -> None:
        object.__setattr__(self, "epsilon", LogEpsilon.of(epsilon))
        object.__setattr__(self, "delta", _delta(delta))

    def describe(self) -> dict[str, Any]:
        """JSON-ready exact form."""
        return {"measure": "approx", "epsilon": self.epsilon.describe(), "delta": enc_frac(self.delta)}

    def text(self) -> str:
        """The guarantee in words."""
        return f"eps = {self.epsilon} (~{self.epsilon.float_approx():.6g}), delta = {self.delta} (~{float(self.delta):.3g})"  # report


@dataclass(frozen=True, init=False)
class ZCDP:
    """rho-zCDP (Bun-Steinke 2016). ``ZCDP("1/2")``."""

    rho: Fraction

    def __init__(self, rho: Any) -> None:
        r = parse_rational(rho, "rho")
        if r < 0:
            raise PrivacyError(f"rho must be >= 0, got {r}")
        object.__setattr__(self, "rho", r)

    def describe(self) -> dict[str, Any]:
        """JSON-ready exact form."""
        return {"measure": "zcdp", "rho": enc_frac(self.rho)}

    def text(self) -> str:
        """The guarantee in words."""
        return f"rho = {self.rho} (~{float(self.rho):.6g}), zCDP"  # report


Measure = Union[PureDP, ApproxDP, ZCDP]


def measure_from_description(obj: Any, where: str = "measure") -> Measure:
    """Inverse of ``describe()`` for the three measures."""
    d = require_keys(obj, ("measure",), where)
    decode = _DECODERS.get(d["measure"]) if isinstance(d["measure"], str) else None
    if decode is None:
        raise DescriptionError(f"{where}: unknown measure {d['measure']!r}")
    try:
        return decode(d, where)
    except DescriptionError:
        raise
    except PrivacyError as exc:
        raise DescriptionError(f"{where}: {exc}") from None


def _eps(d: Any, where: str) -> LogEpsilon:
    return LogEpsilon.from_description(require_keys(d, ("epsilon",), where)["epsilon"], f"{where}.epsilon")


#: the ``measure`` tag of a description -> its decoder
_DECODERS: dict[str, Any] = {
    "pure": lambda d, where: PureDP(_eps(d, where)),
    "approx": lambda d, where: ApproxDP(_eps(d, where), dec_frac(require_keys(d, ("delta",), where)["delta"], f"{where}.delta")),
    "zcdp": lambda d, where: ZCDP(dec_frac(require_keys(d, ("rho",), where)["rho"], f"{where}.rho")),
}


def measure_from_budget(budget: Any) -> Measure:
    """A measure from a config-style dict: {"epsilon"}, {"epsilon", "delta"} or {"rho"} (exact values)."""
    if isinstance(budget, (PureDP, ApproxDP, ZCDP)):
        return budget
    if not isinstance(budget, dict):
        raise PrivacyError('a budget is a measure or a dict such as {"epsilon": "1", "delta": "1e-9"} or {"rho": "1/2"}')
    keys = set(budget)
    if keys == {"rho"}:
        return ZCDP(budget["rho"])
    if keys == {"epsilon"}:
        return PureDP(budget["epsilon"])
    if keys == {"epsilon", "delta"}:
        delta = _delta(budget["delta"])
        return PureDP(budget["epsilon"]) if delta == 0 else ApproxDP(budget["epsilon"], delta)
    raise PrivacyError(f"a budget needs exactly {{epsilon}}, {{epsilon, delta}} or {{rho}}, got {sorted(keys)}")
