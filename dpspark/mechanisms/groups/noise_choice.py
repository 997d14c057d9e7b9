"""Per noisy statistic: which integer noise, at what share of the budget, and its privacy statement (docs/groups.md §C, §D).

Shares. The release budget (pure eps, (eps, delta) or rho) is split over the *parts* of the plan - the
distinct noisy statistics, the quantiles, and a separate key selection when there is one - by the exact
fractions of :func:`dpspark.mechanisms.groups.split.split`. delta is reserved in equal parts of
delta / (parts + 1) for the statistics that may use it (Gaussian, bounded); private key selection takes
every delta the statistics left.

Parallel composition over disjoint groups. A unit changes at most k groups, and every law below is
calibrated on the *vector* of one statistic over all groups with k coordinates changed, so a statistic is
charged once, whatever the number of groups (:mod:`dpspark.mechanisms.groups.laws`). Statistics see the
same rows, so they compose sequentially (Dwork-Roth basic composition; zCDP adds rho); an aggregate built
from several statistics is post-processing of them.

Default noise (``noise="auto"``): for each statistic, the candidate laws its share admits (pure: always;
Gaussian: a zCDP budget, or (eps, delta) through the certified CKS20 conversion; bounded: an (eps, delta)
budget) are built, and the one with the smallest error bar at beta, relative to the sensitivity, is chosen
(ties: pure, then Gaussian, then bounded: the stronger guarantee first). The Gaussian and bounded candidates
are not built for k <= 4 changed coordinates under an (eps, delta) share with delta <= 1e-6 and beta >= 1/20: there
the pure law's bar is smaller (about k ln(1/beta) against sqrt(k ln(1/delta)) ln(1/beta)^(1/2) per
unit of eps, and bounded noise pays a larger constant still; tests/unit/groups/test_plan.py checks the rule on
a grid), and certifying the Gaussian's rho or calibrating bounded noise costs most of the plan time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from fractions import Fraction
from math import isqrt
from typing import Any

from dpspark.mechanisms.groups.aggregates import Bounds, GroupsError, Statistic
from dpspark.mechanisms.groups.laws import BoundedLaw, GaussianLaw, PureLaw, bounded_calibration
from dpspark.privacy import AddRemove, ApproxDP, PrivacyStatement, PureDP, ZCDP, compose
from dpspark.privacy.measures import Measure

NOISES = ("auto", "pure", "gaussian", "bounded")
_ORDER = ("pure", "gaussian", "bounded")


@dataclass(frozen=True)
class Share:
    """One part's share of the budget: exactly one of the forms is set."""

    epsilon: Fraction | None = None
    delta: Fraction = Fraction(0)
    rho: Fraction | None = None


def shares_of(measure: Measure, fractions: list[Fraction], delta_parts: int) -> list[Share]:
    """The exact share of each part: eps (or rho) times its fraction, delta / delta_parts reserved each."""
    if isinstance(measure, ZCDP):
        return [Share(rho=measure.rho * f) for f in fractions]
    if measure.epsilon.exp != 1:
        raise GroupsError("the budget's epsilon must be a rational")
    eps = measure.epsilon.as_fraction()
    reserve = measure.delta / delta_parts if measure.delta and delta_parts else Fraction(0)  # 0 parts: quantiles only
    return [Share(epsilon=eps * f, delta=reserve) for f in fractions]


@dataclass
class StatisticNoise:
    """The law of one noisy statistic, its statement and why it was chosen."""

    stat: Statistic
    kind: str
    law: Any
    measure: Measure
    delta_used: Fraction = Fraction(0)
    reason: str = ""
    candidates: dict[str, str] = field(default_factory=dict)

    def statement(self, max_units: int, label: str) -> PrivacyStatement:
        """The statistic's statement under AddRemove(max_units)."""
        return PrivacyStatement(self.measure, AddRemove(max_units), _THEOREM[self.kind],
                                f"statistic {label}: charged once over all groups (a unit changes at most k groups)")

    def score(self, beta: Fraction) -> Fraction:
        """Per-group error bar at beta over the sensitivity (the choice's metric)."""
        return self.law.error(beta) / self.law.delta


_THEOREM = {
    "pure": "FastSample (Balcer-Vadhan Thm 4.10, tight t*) per grid unit; k-coordinate group privacy",
    "gaussian": "discrete Gaussian (CKS20, certified implemented law); zCDP composition over k coordinates",
    "bounded": "Dagan-Kur bounded noise (DK COLT 2022, Lemmas 10.1-10.2, certified) for k adaptive queries",
}

#: the Gaussian screen (module docstring): not built for k up to this, delta share <= 1e-6, beta >= 1/20
GAUSS_MAX_SKIP_K = 4


@lru_cache(maxsize=32)
def _rho_within(epsilon: Fraction, delta: Fraction) -> Fraction:
    """The largest rho (2^-30 grid) whose certified CKS20 conversion is <= (epsilon, delta); cached."""
    from dpspark.mechanisms.zcdp_budget import rho_within

    return rho_within(epsilon, delta)


def _largest_pure_eps(rho: Fraction) -> Fraction:
    """A rational eps with eps^2 / 2 <= rho (pure eps-DP is eps^2/2-zCDP, Bun-Steinke Prop. 1.4)."""
    scale = 1 << 40
    return Fraction(isqrt((2 * rho * scale * scale).__floor__()), scale)


def pure_epsilon(share: Share) -> Fraction:
    """The pure epsilon a part runs at under its share (a zCDP share: the largest eps with eps^2/2 <= rho)."""
    return share.epsilon if share.rho is None else _largest_pure_eps(share.rho)


def build(stat: Statistic, kind: str, share: Share, bounds: Bounds, max_units: int, lam: int) -> StatisticNoise:
    """The law of ``stat`` under ``kind`` at ``share`` (data-free; GroupsError when the share cannot pay)."""
    k, rows = bounds.k, bounds.c * max_units
    d, lo, hi = stat.sensitivity(bounds), *stat.range(rows)
    if stat.label == "pair":  # the distance pair: pure only (pair.py)
        from dpspark.mechanisms.groups.pair import PairLaw

        if kind != "pure":
            raise GroupsError("the distance pair takes pure noise only")
        pair = PairLaw(stat.row_hi, bounds.c, k, rows, pure_epsilon(share), lam)
        measure_p: Measure = PureDP(pair.epsilon())
        if share.rho is not None:
            measure_p = compose([ZCDP(0), measure_p])
        return StatisticNoise(stat, kind, pair, measure_p)
    if kind == "pure":
        law = PureLaw(d, lo, hi, k, pure_epsilon(share), lam)
        measure: Measure = PureDP(law.epsilon())
        if share.rho is not None:
            measure = compose([ZCDP(0), measure])  # stated as zCDP: eps^2/2 (certified up)
        return StatisticNoise(stat, kind, law, measure)
    if kind == "gaussian":
        if share.rho is not None:
            rho, delta = share.rho, Fraction(0)
        else:
            if not share.delta:
                raise GroupsError(f"statistic {stat.label!r}: Gaussian noise needs delta > 0 or a zCDP budget")
            rho, delta = _rho_within(share.epsilon, share.delta), share.delta
        law = GaussianLaw(d, lo, hi, k, rho)
        measure = ZCDP(law.rho)
        if delta:
            from dpspark.privacy.conversions import zcdp_to_approx_dp_cks

            measure = zcdp_to_approx_dp_cks(measure, delta)
        return StatisticNoise(stat, kind, law, measure, delta)
    if kind == "bounded":
        if share.epsilon is None or not share.delta:
            raise GroupsError(f"statistic {stat.label!r}: bounded noise needs an (epsilon, delta) budget with delta > 0")
        from dpspark.noise.bounded import MAX_TABLE_M, BoundedNoiseError

        try:
            cal = bounded_calibration(k, share.epsilon, share.delta, "p2")
        except BoundedNoiseError as err:
            raise GroupsError(f"statistic {stat.label!r}: bounded-noise calibration refused: {err}") from None
        if cal.M > MAX_TABLE_M:
            raise GroupsError(f"statistic {stat.label!r}: bounded noise needs M = {cal.M} > 2^24")
        law = BoundedLaw(d, lo, hi, cal, cal.noise())
        return StatisticNoise(stat, kind, law, ApproxDP(cal.epsilon, cal.certified_delta), cal.certified_delta)
    raise GroupsError(f"noise must be one of {NOISES}, got {kind!r}")


def admissible(share: Share) -> tuple[str, ...]:
    """The noise kinds a share can pay for."""
    if share.rho is not None:
        return ("pure", "gaussian")
    return _ORDER if share.delta else ("pure",)


def gaussian_considered(share: Share, bounds: Bounds, beta: Fraction) -> bool:
    """The auto rule's screen (module docstring): skip the Gaussian and bounded candidates for k <= GAUSS_MAX_SKIP_K,
    an (eps, delta) share with delta <= 1e-6 and beta >= 1/20, where pure noise's bar is the smaller one (tests
    check it on a grid)."""
    if share.rho is not None or not share.delta:
        return True
    return not (bounds.k <= GAUSS_MAX_SKIP_K and share.delta <= Fraction(1, 10**6) and beta >= Fraction(1, 20))


def choose(stat: Statistic, share: Share, bounds: Bounds, max_units: int, beta: Fraction, lam: int,
           noise: str = "auto") -> StatisticNoise:
    """The statistic's noise: ``noise`` if forced, else the smallest relative error bar at beta (module docstring)."""
    if stat.label == "pair":
        out = build(stat, "pure", share, bounds, max_units, lam)
        out.reason = "pure: the distance pair (count and sum at one budget) is pure noise"
        return out
    if noise != "auto":
        if noise not in admissible(share):
            raise GroupsError(f"statistic {stat.label!r}: noise {noise!r} does not fit this budget "
                              f"(admissible: {admissible(share)})")
        out = build(stat, noise, share, bounds, max_units, lam)
        out.reason = f"noise = {noise!r} was requested"
        return out
    built, figures = [], {}
    for kind in admissible(share):
        if kind != "pure" and not gaussian_considered(share, bounds, beta):
            figures[kind] = f"not built (k <= {GAUSS_MAX_SKIP_K}, delta <= 1e-6, beta >= 1/20: pure noise wins there)"
            continue
        try:
            cand = build(stat, kind, share, bounds, max_units, lam)
        except GroupsError as err:
            figures[kind] = f"unavailable ({err})"
            continue
        built.append((cand.score(beta), _ORDER.index(kind), cand))
        figures[kind] = f"error bar {float(built[-1][0]):.4g} x sensitivity"  # report
    if not built:
        raise GroupsError(f"statistic {stat.label!r}: no noise fits this budget ({figures})")
    built.sort(key=lambda t: (t[0], t[1]))
    best = built[0][2]
    best.candidates = figures
    best.reason = (f"{best.kind}: the smallest per-group error bar at beta = {beta} for this share "
                   f"({'; '.join(f'{k}: {v}' for k, v in figures.items())})")
    return best
