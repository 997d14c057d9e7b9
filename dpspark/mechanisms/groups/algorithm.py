"""Grouped aggregates from exact per-group statistics: the plan (data-free) and the release (docs/groups.md §A, §G).

Boundary with the engine. :func:`plan_groups` takes public parameters only and returns a
:class:`GroupsPlan` (every law calibrated, the budget split, the privacy statement): the Mechanism
class builds it before any data is read. The engine then supplies, per group, a :class:`GroupStats`:
the key, the number of distinct units that kept it (private selection only) and, per aggregate name,
the raw integer tuple of :func:`dpspark.mechanisms.groups.aggregates.derive` (count (N,), sum and mean
(N, T), variance (N, T, Q), quantile the B cell counts), computed after each unit keeps at most k
groups and c rows per group. :func:`release_planned` returns, per group and aggregate, a
:class:`GroupValue`: the exact noisy value, its error bar and confidence.

Keys. Public keys: every key of the public list is released (a key without rows gets zero statistics),
so the loops run over the public list. Private keys: :class:`~dpspark.mechanisms.groups.selection.SelectionLaw`
decides each observed key; aggregates are drawn for the kept keys only. This is post-processing of
the (conceptual) noisy aggregates of every key of the universe, which have the same law whether drawn
or not, so selection and aggregates compose sequentially. The loop over observed keys is the one
data-dependent loop count (the stability-histogram convention); per key the work is fixed.

Values (targets are the statistics of the clipped fixed-point values v = clip(round(x S), L, H)):

* count: N~ (error e_N at beta); sum: T~ / S;
* mean: C/2S + Y~ / (2 S N~) clamped to [L/S, H/S], with Y the centred sum; when N >= 1 and N~ > 0,
  |error| <= min(D/S, (e_Y + D e_N) / (2 S N~)) with probability >= 1 - beta (each statistic at beta/2;
  |Y/N| <= D gives it). Conditional: never stated for N = 0; N~ <= 0 releases the midpoint with D/2S;
* variance: from N~, Y~ and R~ (R = 2 sum y^2 - N D^2): var_y = clamp((R~/N~ + D^2)/2 - m^2, 0, D^2),
  m = clamp(Y~/N~, -D, D); error (e_R + D^2 e_N)/(2 N~) + e_m (2|m| + e_m), e_m = min(2D, (e_Y + D e_N)/N~),
  over 4 S^2,
  each statistic at beta/3, same condition;
* quantile: the released grid point; its error bar is in rows of rank beyond the best grid point.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Mapping, Sequence

from dpspark.exact import parse_rational
from dpspark.mechanisms.groups.aggregates import Aggregate, Bounds, GroupsError, Kind, check_raw, derive, parse_aggregates
from dpspark.mechanisms.groups.noise_choice import AggregateNoise, choose, quantile_epsilon, split_budget
from dpspark.mechanisms.groups.quantile import QuantileLaw
from dpspark.mechanisms.groups.selection import SelectionLaw
from dpspark.privacy import AddRemove, PrivacyStatement, PureDP, ZCDP, compose_statements, measure_from_budget
from dpspark.privacy.measures import ApproxDP, Measure
from dpspark.rng import DEFAULT_LAMBDA, RandomSource


@dataclass(frozen=True)
class GroupStats:
    """One group's exact statistics from the engine: key, units (private selection) and raw tuples by aggregate."""

    key: Any
    stats: Mapping[str, Sequence[int]]
    units: int | None = None


@dataclass(frozen=True)
class GroupValue:
    """One released value: exact ``value`` (None: undefined), ``error`` holding w.p. >= ``confidence``.

    ``always``: a probability-1 bound (bounded noise) or None. ``error_unit``: "value" or "rank_rows".
    ``condition``: when the bound holds (empty: always).
    """

    value: Fraction | None
    error: Fraction | None
    confidence: Fraction
    always: Fraction | None = None
    error_unit: str = "value"
    condition: str = ""


@dataclass
class GroupsPlan:
    """Every public, data-free part of a groups release."""

    aggregates: tuple[Aggregate, ...]
    bounds: Bounds
    max_units: int
    beta: Fraction
    lam: int
    laws: dict[str, Any]
    selection: SelectionLaw | None
    statement: PrivacyStatement
    parts: list[PrivacyStatement] = field(default_factory=list)
    #: per aggregate: each statistic's error bar at beta / m (additive) or the rank error (quantile)
    errors: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        """Exact, JSON-ready plan (the manifest's parameters)."""
        out: dict[str, Any] = {"max_groups_per_unit": self.bounds.k, "max_rows_per_group": self.bounds.c,
                               "max_units": self.max_units, "beta": str(self.beta), "aggregates": []}
        for agg in self.aggregates:
            law = self.laws[agg.name]
            row = {**agg.describe(), "statement": law.statement(self.max_units).text()
                   if isinstance(law, AggregateNoise) else "exponential mechanism, pure DP"}
            if isinstance(law, AggregateNoise):
                row.update(noise=law.kind, reason=law.reason, laws=[x.describe() for x in law.laws])
            else:
                row.update(noise="exponential_mechanism", law=law.describe())
            out["aggregates"].append(row)
        out["selection"] = None if self.selection is None else self.selection.describe()
        out["statement"] = self.statement.text()
        return out


def _fits(total: Measure, budget: Measure) -> bool:
    if isinstance(budget, ZCDP):
        return isinstance(total, ZCDP) and total.rho <= budget.rho
    if isinstance(total, ZCDP):
        return False
    return total.epsilon <= budget.epsilon and total.delta <= budget.delta


def plan_groups(aggregates: Sequence[Any], budget: Any, *, max_units: int, bounds: Bounds = Bounds(),
                private_keys: bool = False, noise: str = "auto", beta: Any = "1/20",
                weights: Sequence[Any] | None = None, lam: int = DEFAULT_LAMBDA) -> GroupsPlan:
    """Calibrate every law and state the release's privacy under AddRemove(max_units); no data."""
    aggs = parse_aggregates(list(aggregates))
    if isinstance(max_units, bool) or not isinstance(max_units, int) or max_units < 1:
        raise GroupsError(f"max_units must be an int >= 1, got {max_units!r}")
    b = parse_rational(beta, "beta")
    if not 0 < b < 1:
        raise GroupsError("beta must lie in (0, 1)")
    measure = measure_from_budget(budget)
    shares, sel_share, reserve = split_budget(measure, len(aggs), private_keys, weights)
    laws: dict[str, Any] = {}
    parts: list[PrivacyStatement] = []
    relation = AddRemove(max_units)
    delta_used = Fraction(0)
    for agg, share in zip(aggs, shares):
        if agg.kind is Kind.QUANTILE:
            law = QuantileLaw(agg, bounds, quantile_epsilon(share), lam)
            laws[agg.name] = law
            parts.append(PrivacyStatement(PureDP(law.epsilon()), relation,
                                          "exponential mechanism (McSherry-Talwar 2007, Thm 6), exact weights; "
                                          "k groups by basic composition"))
        else:
            chosen = choose(agg, share, bounds, max_units, b, lam, noise)
            laws[agg.name] = chosen
            delta_used += chosen.delta_used
            parts.append(chosen.statement(max_units))
    selection = None
    if sel_share is not None:
        left = measure.delta - delta_used  # selection takes every delta the aggregates left (>= its reserve)
        assert left >= reserve
        selection = SelectionLaw(sel_share.epsilon, left, bounds.k, max_units)
        parts.append(PrivacyStatement(ApproxDP(selection.epsilon(), selection.delta()), relation,
                                      "optimal keep law (Desfontaines et al. 2022), exact dyadic table; "
                                      "k keys by basic composition"))
    statement = compose_statements(parts) if len(parts) > 1 else parts[0]
    if not _fits(statement.measure, measure):
        raise GroupsError("internal error: the planned release exceeds its budget")
    errors: dict[str, Any] = {}
    for agg in aggs:
        law = laws[agg.name]
        errors[agg.name] = (law.rank_error(b) if isinstance(law, QuantileLaw)
                            else [x.error(b / len(law.laws)) for x in law.laws])
    return GroupsPlan(aggs, bounds, max_units, b, lam, laws, selection, statement, parts, errors)


def _zero(agg: Aggregate) -> tuple[int, ...]:
    return (0,) * agg.raw_arity()


def _values(plan: GroupsPlan, agg: Aggregate, raw: tuple[int, ...], rng: RandomSource) -> GroupValue:
    law = plan.laws[agg.name]
    beta, conf = plan.beta, 1 - plan.beta
    if isinstance(law, QuantileLaw):
        return GroupValue(law.release(raw, rng), Fraction(plan.errors[agg.name]), conf, None, "rank_rows",
                          "rank error beyond the best grid point's")
    xs = derive(agg, raw)
    ys = [lw.release(x, rng) for lw, x in zip(law.laws, xs)]  # one draw per statistic, always
    errs = plan.errors[agg.name]
    sure = [lw.always for lw in law.laws]
    S, D, C = agg.scale, agg.D, agg.L + agg.H
    if agg.kind is Kind.COUNT:
        return GroupValue(ys[0], errs[0], conf, sure[0])
    if agg.kind is Kind.SUM:
        return GroupValue(ys[0] / S, errs[0] / S, conf, None if sure[0] is None else sure[0] / S)
    cond = "the group has >= 1 row; the bound uses the released noisy count"
    n = ys[0]
    if n <= 0:
        half = Fraction(D, 2 * S) if agg.kind is Kind.MEAN else Fraction(D * D, 8 * S * S)
        mid = Fraction(C, 2 * S) if agg.kind is Kind.MEAN else half
        return GroupValue(mid, half, Fraction(1), half, "value", cond)
    m_y = min(max(ys[1] / n, Fraction(-D)), Fraction(D))
    e_m = min((errs[1] + D * errs[0]) / n, Fraction(2 * D))
    s_m = None if None in sure[:2] else min((sure[1] + D * sure[0]) / n, Fraction(2 * D))
    if agg.kind is Kind.MEAN:
        bound = lambda e: min(Fraction(D, S), e / (2 * S))  # noqa: E731
        return GroupValue((C + m_y) / (2 * S), bound(e_m), conf, None if s_m is None else bound(s_m), "value", cond)
    second = min(max((ys[2] / n + D * D) / 2, Fraction(0)), Fraction(D * D))
    var_y = min(max(second - m_y * m_y, Fraction(0)), Fraction(D * D))
    top = Fraction(D * D, 4 * S * S)

    def bound_v(e_r: Fraction, e_n: Fraction, em: Fraction) -> Fraction:
        # |m_y^2 - (Y/N)^2| <= |m_y - Y/N| (2 |m_y| + |m_y - Y/N|): uses only released values
        return min(top, ((e_r + D * D * e_n) / (2 * n) + em * (2 * abs(m_y) + em)) / (4 * S * S))

    always = None if s_m is None or sure[2] is None else bound_v(sure[2], sure[0], s_m)
    return GroupValue(var_y / (4 * S * S), bound_v(errs[2], errs[0], e_m), conf, always, "value", cond)


@dataclass
class GroupsRelease:
    """Released keys (in input order) with one :class:`GroupValue` per aggregate, and the statement."""

    keys: list[Any]
    values: list[dict[str, GroupValue]]
    statement: PrivacyStatement
    plan: GroupsPlan


def release_planned(plan: GroupsPlan, groups: Sequence[GroupStats], rng: RandomSource,
                    keys: Sequence[Any] | None = None) -> GroupsRelease:
    """The noisy release. ``keys`` (public) lists every released key; None: private selection on ``groups``."""
    if rng.lam < plan.lam:
        raise GroupsError(f"the random source's lam ({rng.lam}) is below the plan's ({plan.lam})")
    rows = plan.bounds.c * plan.max_units
    if keys is not None:
        if plan.selection is not None:
            raise GroupsError("the plan selects keys privately; do not pass public keys")
        by_key = {g.key: g for g in groups}
        extra = set(by_key) - set(keys)
        if extra:  # never released: the engine filters to the key set (count only, no value shown)
            raise GroupsError(f"{len(extra)} group(s) outside the public key list (an engine bug)")
        chosen = [(k, by_key.get(k)) for k in keys]
    else:
        if plan.selection is None:
            raise GroupsError("public keys are required unless the plan selects keys privately")
        for g in groups:
            if g.units is None:
                raise GroupsError("private selection needs each observed group's unit count")
        decide = plan.selection.select([g.units for g in groups], rng)
        chosen = [(g.key, g) for g, keep in zip(groups, decide) if keep]
    out_keys, out_vals = [], []
    for key, g in chosen:
        vals = {}
        for agg in plan.aggregates:
            raw = _zero(agg) if g is None or agg.name not in g.stats else check_raw(agg, tuple(g.stats[agg.name]), rows)
            vals[agg.name] = _values(plan, agg, raw, rng)
        out_keys.append(key)
        out_vals.append(vals)
    return GroupsRelease(out_keys, out_vals, plan.statement, plan)


def release_groups(stats: Sequence[GroupStats], aggregates: Sequence[Any], budget: Any, rng: RandomSource, *,
                   max_units: int, keys: Sequence[Any] | None = None, bounds: Bounds = Bounds(),
                   noise: str = "auto", beta: Any = "1/20", weights: Sequence[Any] | None = None) -> GroupsRelease:
    """Plan, then release: public ``keys``, or private selection over the observed groups when keys is None."""
    plan = plan_groups(aggregates, budget, max_units=max_units, bounds=bounds, private_keys=keys is None,
                       noise=noise, beta=beta, weights=weights, lam=rng.lam)
    return release_planned(plan, stats, rng, keys)
