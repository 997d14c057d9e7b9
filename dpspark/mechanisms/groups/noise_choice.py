"""Per aggregate: which integer noise, at what share of the budget, and the privacy statement (docs/groups.md §C, §D).

Budget split. The release budget (pure eps, (eps, delta) or rho) is split by exact weights: each
aggregate gets weight 1 and private key selection weight 1 (``weights`` overrides), so
eps_i = eps w_i / sum w. delta goes to the aggregates that need it (Gaussian, bounded) in equal parts of
delta / (number of aggregates + selection); private selection takes all that the aggregates left, so
with pure-DP noise it has the whole delta.

Parallel composition over disjoint groups. A unit changes at most k groups, and every law below is
calibrated on the *vector* of one statistic over all groups with k coordinates changed, so an aggregate
is charged once, whatever the number of groups (:mod:`dpspark.mechanisms.groups.laws`). Aggregates see
the same rows, so they compose sequentially (Dwork-Roth basic composition; zCDP adds rho).

Default noise (``noise="auto"``): for each aggregate, the candidate laws the budget admits (pure:
always; Gaussian: a zCDP budget, or (eps, delta) through the certified CKS20 conversion; bounded: an
(eps, delta) budget) are built at the aggregate's share, and the one with the smallest per-group error
bar at beta, relative to the sensitivity, is chosen (ties: pure, then Gaussian, then bounded: the
stronger guarantee first). The reason, with every candidate's figure, is kept in the plan.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from fractions import Fraction
from math import isqrt
from typing import Any, Sequence

from dpspark.mechanisms.groups.aggregates import Aggregate, Bounds, GroupsError, Kind
from dpspark.mechanisms.groups.laws import BoundedLaw, GaussianLaw, PureLaw, bounded_calibration
from dpspark.privacy import AddRemove, ApproxDP, PrivacyStatement, PureDP, ZCDP, compose
from dpspark.privacy.measures import Measure

NOISES = ("auto", "pure", "gaussian", "bounded")
_ORDER = ("pure", "gaussian", "bounded")


@dataclass(frozen=True)
class Share:
    """One aggregate's (or the selection's) share of the budget: exactly one of the forms is set."""

    epsilon: Fraction | None = None
    delta: Fraction = Fraction(0)
    rho: Fraction | None = None


def split_budget(measure: Measure, n_aggregates: int, selection: bool,
                 weights: Sequence[Any] | None = None) -> tuple[list[Share], Share | None, Fraction]:
    """(aggregate shares, selection share or None, delta reserve per delta-using aggregate); exact."""
    from dpspark.exact import parse_rational

    parts = n_aggregates + (1 if selection else 0)
    w = [Fraction(1)] * parts if weights is None else [parse_rational(x, "weight") for x in weights]
    if len(w) != parts or any(x <= 0 for x in w):
        raise GroupsError(f"weights: give {parts} positive exact weights (aggregates, then selection)")
    total = sum(w)
    if isinstance(measure, ZCDP):
        if selection:
            raise GroupsError("private key selection needs an (epsilon, delta) budget; a zCDP budget fits "
                              "public keys only")
        return [Share(rho=measure.rho * x / total) for x in w], None, Fraction(0)
    eps = measure.epsilon.as_fraction()
    delta = measure.delta
    if selection and delta == 0:
        raise GroupsError("private key selection needs delta > 0 (it is approximate DP)")
    if measure.epsilon.exp != 1:
        raise GroupsError("the budget's epsilon must be a rational")
    reserve = delta / parts if delta else Fraction(0)
    shares = [Share(epsilon=eps * x / total, delta=reserve) for x in w]
    return shares[:n_aggregates], (shares[-1] if selection else None), reserve


@dataclass
class AggregateNoise:
    """The laws of one aggregate (one per statistic), its statement and why it was chosen."""

    aggregate: Aggregate
    kind: str
    laws: list[Any]
    measure: Measure
    delta_used: Fraction = Fraction(0)
    reason: str = ""
    candidates: dict[str, str] = field(default_factory=dict)

    def statement(self, max_units: int) -> PrivacyStatement:
        """The aggregate's statement under AddRemove(max_units)."""
        return PrivacyStatement(self.measure, AddRemove(max_units), _THEOREM[self.kind],
                                f"aggregate {self.aggregate.name!r}: {len(self.laws)} statistic(s), each charged "
                                "once over all groups (a unit changes at most k groups)")

    def score(self, beta: Fraction) -> Fraction:
        """Per-group error bar at beta / m of the first statistic, over its sensitivity (the choice's metric)."""
        law = self.laws[0]
        return law.error(beta / len(self.laws)) / law.delta


_THEOREM = {
    "pure": "FastSample (Balcer-Vadhan Thm 4.10, tight t*) per grid unit; k-coordinate group privacy; basic composition",
    "gaussian": "discrete Gaussian (CKS20, certified implemented law); zCDP composition over k coordinates and statistics",
    "bounded": "Dagan-Kur bounded noise (DK COLT 2022, Lemmas 10.1-10.2, certified) for k m adaptive queries",
}


@lru_cache(maxsize=32)
def _rho_within(epsilon: Fraction, delta: Fraction) -> Fraction:
    """The largest rho (2^-30 grid) whose certified CKS20 conversion is <= (epsilon, delta); cached."""
    from dpspark.mechanisms.zcdp_budget import rho_within

    return rho_within(epsilon, delta)


def _largest_pure_eps(rho: Fraction) -> Fraction:
    """A rational eps with eps^2 / 2 <= rho (pure eps-DP is eps^2/2-zCDP, Bun-Steinke Prop. 1.4)."""
    scale = 1 << 40
    return Fraction(isqrt((2 * rho * scale * scale).__floor__()), scale)


def build(agg: Aggregate, kind: str, share: Share, bounds: Bounds, max_units: int, lam: int) -> AggregateNoise:
    """The laws of ``agg`` under ``kind`` at ``share`` (data-free; GroupsError when the share cannot pay)."""
    stats = agg.statistics()
    if not stats:
        raise GroupsError(f"aggregate {agg.name!r}: a quantile uses the exponential mechanism, not additive noise")
    m, k, rows = len(stats), bounds.k, bounds.c * max_units
    spans = [(s.sensitivity(bounds), *s.range(rows)) for s in stats]
    if kind == "pure":
        eps = share.epsilon if share.rho is None else _largest_pure_eps(share.rho)
        laws = [PureLaw(d, lo, hi, k, eps / m, lam) for d, lo, hi in spans]
        measure: Measure = compose([PureDP(law.epsilon()) for law in laws])
        if share.rho is not None:
            measure = compose([ZCDP(0), measure])  # stated as zCDP: eps^2/2 (certified up)
        return AggregateNoise(agg, kind, laws, measure)
    if kind == "gaussian":
        if share.rho is not None:
            rho, delta = share.rho, Fraction(0)
        else:
            if not share.delta:
                raise GroupsError(f"aggregate {agg.name!r}: Gaussian noise needs delta > 0 or a zCDP budget")
            rho, delta = _rho_within(share.epsilon, share.delta), share.delta
        laws = [GaussianLaw(d, lo, hi, k, rho / m) for d, lo, hi in spans]
        measure = ZCDP(sum((law.rho for law in laws), Fraction(0)))
        if delta:
            from dpspark.privacy.conversions import zcdp_to_approx_dp_cks

            measure = zcdp_to_approx_dp_cks(measure, delta)
        return AggregateNoise(agg, kind, laws, measure, delta)
    if kind == "bounded":
        if share.epsilon is None or not share.delta:
            raise GroupsError(f"aggregate {agg.name!r}: bounded noise needs an (epsilon, delta) budget with delta > 0")
        from dpspark.noise.bounded import MAX_TABLE_M, BoundedNoiseError

        try:
            cal = bounded_calibration(k * m, share.epsilon, share.delta, "p2")
        except BoundedNoiseError as err:
            raise GroupsError(f"aggregate {agg.name!r}: bounded-noise calibration refused: {err}") from None
        if cal.M > MAX_TABLE_M:
            raise GroupsError(f"aggregate {agg.name!r}: bounded noise needs M = {cal.M} > 2^24")
        noise = cal.noise()
        laws = [BoundedLaw(d, lo, hi, cal, noise) for d, lo, hi in spans]
        return AggregateNoise(agg, kind, laws, ApproxDP(cal.epsilon, cal.certified_delta), cal.certified_delta)
    raise GroupsError(f"noise must be one of {NOISES}, got {kind!r}")


def admissible(share: Share) -> tuple[str, ...]:
    """The noise kinds a share can pay for."""
    if share.rho is not None:
        return ("pure", "gaussian")
    return _ORDER if share.delta else ("pure",)


def choose(agg: Aggregate, share: Share, bounds: Bounds, max_units: int, beta: Fraction, lam: int,
           noise: str = "auto") -> AggregateNoise:
    """The aggregate's noise: ``noise`` if forced, else the smallest relative error bar at beta (module docstring)."""
    if noise != "auto":
        if noise not in admissible(share):
            raise GroupsError(f"aggregate {agg.name!r}: noise {noise!r} does not fit this budget "
                              f"(admissible: {admissible(share)})")
        out = build(agg, noise, share, bounds, max_units, lam)
        out.reason = f"noise = {noise!r} was requested"
        return out
    built, figures = [], {}
    for kind in admissible(share):
        try:
            cand = build(agg, kind, share, bounds, max_units, lam)
        except GroupsError as err:
            figures[kind] = f"unavailable ({err})"
            continue
        built.append((cand.score(beta), _ORDER.index(kind), cand))
        figures[kind] = f"error bar {float(built[-1][0]):.4g} x sensitivity"  # report
    if not built:
        raise GroupsError(f"aggregate {agg.name!r}: no noise fits this budget ({figures})")
    built.sort(key=lambda t: (t[0], t[1]))
    best = built[0][2]
    best.candidates = figures
    best.reason = (f"{best.kind}: the smallest per-group error bar at beta = {beta} for this share "
                   f"({'; '.join(f'{k}: {v}' for k, v in figures.items())})")
    return best


def quantile_epsilon(share: Share) -> Fraction:
    """The pure epsilon a quantile's exponential mechanism runs at under its share."""
    return share.epsilon if share.rho is None else _largest_pure_eps(share.rho)


def is_additive(agg: Aggregate) -> bool:
    """True for aggregates released with additive noise (all but quantiles)."""
    return agg.kind is not Kind.QUANTILE
