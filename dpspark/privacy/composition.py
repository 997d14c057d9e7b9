"""Sequential and parallel composition of measures, exactly (derivations: docs/privacy.md section 6).

Sequential (every step sees the same dataset, possibly chosen adaptively):
* pure: eps_1 + ... + eps_k (Dwork-Roth 2014, basic composition);
* approximate (pure counted as delta = 0): (sum eps_i, sum delta_i), delta capped at 1
  (Dwork-Roth 2014, basic composition, which holds for adaptive choices);
* zCDP: rho_1 + ... + rho_k (Bun-Steinke 2016, composition lemma); a pure step joins as
  eps^2/2 (:func:`~dpspark.privacy.conversions.pure_to_zcdp`).
Approximate DP and zCDP do not mix without choosing a delta for the zCDP part:
convert it first with :func:`~dpspark.privacy.conversions.zcdp_to_approx_dp` (or the CKS form).

Parallel (the steps run on disjoint batches of units, and a unit's batch is a
function of its id and of data-independent public or secret randomness only):
under AddRemove, Unbounded or Substitute one neighbouring step changes one
batch, so the guarantee is the worst single step: max eps (pure), (max eps,
max delta) (approximate), max rho (zCDP).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Iterable

from dpspark.privacy.conversions import DEFAULT_BITS, pure_to_zcdp
from dpspark.privacy.epsilon import LogEpsilon, max_epsilon
from dpspark.privacy.errors import IncompatibleMeasures, PrivacyError
from dpspark.privacy.measures import ApproxDP, Measure, PureDP, ZCDP


def _classify(measures: list[Measure]) -> type:
    """The measure type the composition is stated in: ZCDP if any step is zCDP, else ApproxDP if any, else PureDP."""
    if not measures:
        raise PrivacyError("composition of no measures")
    for m in measures:
        if not isinstance(m, (PureDP, ApproxDP, ZCDP)):
            raise TypeError(f"not a privacy measure: {type(m).__name__}")
    has_z = any(isinstance(m, ZCDP) for m in measures)
    has_a = any(isinstance(m, ApproxDP) for m in measures)
    if has_z and has_a:
        raise IncompatibleMeasures(
            "cannot compose approximate DP with zCDP exactly: convert the zCDP part to (eps, delta)-DP "
            "with a chosen delta first (zcdp_to_approx_dp or zcdp_to_approx_dp_cks)"
        )
    return ZCDP if has_z else ApproxDP if has_a else PureDP


def _as_zcdp(m: Measure, bits: int) -> ZCDP:
    return m if isinstance(m, ZCDP) else pure_to_zcdp(m, bits)  # type: ignore[arg-type]


def compose(measures: Iterable[Measure], bits: int = DEFAULT_BITS) -> Measure:
    """Sequential composition: exact sums per measure; pure steps join zCDP as eps^2/2 (certified up)."""
    ms = list(measures)
    kind = _classify(ms)
    if kind is PureDP:
        return PureDP(sum((m.epsilon for m in ms), LogEpsilon.zero()))  # type: ignore[union-attr]
    if kind is ApproxDP:
        eps = sum((m.epsilon for m in ms), LogEpsilon.zero())  # type: ignore[union-attr]
        delta = sum((m.delta for m in ms), Fraction(0))  # type: ignore[union-attr]
        return ApproxDP(eps, min(Fraction(1), delta))
    return ZCDP(sum((_as_zcdp(m, bits).rho for m in ms), Fraction(0)))


def parallel(measures: Iterable[Measure], bits: int = DEFAULT_BITS) -> Measure:
    """Parallel composition over disjoint batches of units: the worst single step, exactly."""
    ms = list(measures)
    kind = _classify(ms)
    if kind is PureDP:
        return PureDP(max_epsilon([m.epsilon for m in ms]))  # type: ignore[union-attr]
    if kind is ApproxDP:
        return ApproxDP(max_epsilon([m.epsilon for m in ms]), max(m.delta for m in ms))  # type: ignore[union-attr]
    return ZCDP(max(_as_zcdp(m, bits).rho for m in ms))
