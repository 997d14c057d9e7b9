"""Grouped aggregates from exact per-group statistics: the plan (data-free) and the release (docs/groups.md §A, §G).

Boundary with the engine. :func:`plan_groups` takes public parameters only and returns a
:class:`GroupsPlan` (every law calibrated, the budget split, the privacy statement): the Mechanism
class builds it before any data is read. The engine then supplies, per group, a :class:`GroupStats`:
the key, the number of distinct units that kept it (private selection only) and, per aggregate name,
the raw integer tuple of :func:`dpspark.mechanisms.groups.aggregates.derive` (count (N,), sum and mean
(N, T), variance (N, T, Q), quantile the B + 1 cell counts), computed after each unit keeps at most k
groups and c rows per group. :func:`release_planned` returns, per group and aggregate, a
:class:`GroupValue`: the exact noisy value, its error bar and confidence.

Parts. The release draws a set of distinct noisy statistics (:mod:`dpspark.mechanisms.groups.basis`: a
count of rows, centred sums, ...), each once per group and charged once, plus one exponential mechanism
per quantile; aggregates are post-processing of them (a sum centred on the released count, a mean). The
budget is split over the parts by :mod:`dpspark.mechanisms.groups.split`.

Keys. Public keys: every key of the public list is released (a key without rows gets zero statistics).
Private keys: when the plan draws a pure noisy count of rows, that draw selects the keys
(:class:`~dpspark.mechanisms.groups.threshold.ThresholdSelection`: no epsilon of its own), unless
``selection="units"`` (with c > 1 a new key may bring c rows, so that threshold is c times higher in rows);
otherwise the separate law decides each observed key from its number of distinct units (sensitivity 1 per
key) on its own share: :class:`~dpspark.mechanisms.groups.selection.SelectionLaw` for k = 1,
:class:`~dpspark.mechanisms.groups.weighted_selection.WeightedSelection` (weighted scores) for k > 1. The row
statistics are released as before. The other statistics are drawn for the kept keys only. The loop over observed keys is the one
data-dependent loop count (the stability-histogram convention); per key the work is fixed.

Draw order (public, fixed): the selection's draws over every observed key (private keys), then each part
in plan order over the released keys (the threshold's count is not drawn twice), then each quantile.

Values (targets are the statistics of the clipped fixed-point values v = clip(round(x S), L, H)):

* count: round(N~) = floor(N~ + 1/2), an integer (the grid G = c/g makes N~ a multiple of 2.5 at c = 5), with
  the bar floor(e_N + 1/2) (integer_counts.py); with public keys and a mean of a column that imputes NULLs,
  N~ = (a~ + b~) / g0 read off the mean's pair at no cost (the pair takes the count's share), bar
  floor(2 e / g0 + 1/2) with |Z_a|, |Z_b| <= e each at beta/2 (union bound); sum: T~ / S (plain), or (Y~ + C N~) / 2S centred on the count it shares,
  error (e_Y + |C| e_N) / 2S with each at beta/2 (union bound);
* mean: C/2S + Y~ / (2 S N~) clamped to [L/S, H/S], with Y the centred sum; when N >= 1 and N~ > 0,
  |error| <= min(D/S, (e_Y + D e_N) / (2 S N~)) with probability >= 1 - beta (each statistic at beta/2;
  |Y/N| <= D gives it). Conditional: never stated for N = 0; N~ <= 0 releases the midpoint with D/2S;
* variance: from N~, Y~ and R~ (R = 2 sum y^2 - N D^2): var_y = clamp((R~/N~ + D^2)/2 - m^2, 0, D^2),
  m = clamp(Y~/N~, -D, D); error (e_R + D^2 e_N)/(2 N~) + e_m (2|m| + e_m), e_m = min(2D, (e_Y + D e_N)/N~),
  over 4 S^2, each statistic at beta/3, same condition;
* quantile: the released candidate point; its error bar is in rows of rank (quantile.py). Several quantiles of
  one column on one grid: one joint law per group (joint_family.py, joint_split.py) drawn at the first member's
  turn, each member its coordinate and the joint bar.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Mapping, NamedTuple, Sequence

import numpy as np

from dpspark.exact import parse_rational
from dpspark.mechanisms.groups.aggregates import Aggregate, Bounds, GroupsError, Kind, parse_aggregates
from dpspark.mechanisms.groups.basis import Basis, Part, check_columns, models, part_values, plan_parts, solo_override
from dpspark.mechanisms.groups.columns import GroupColumns, GroupStats, count_absent, gather
from dpspark.mechanisms.groups.integer_counts import integer_bar
from dpspark.mechanisms.groups.joint_family import JointMember, families, joint_law
from dpspark.mechanisms.groups.noise_choice import Share, StatisticNoise, choose, pure_epsilon, shares_of
from dpspark.mechanisms.groups.quantile import QuantileLaw
from dpspark.mechanisms.groups.selection import SelectionLaw
from dpspark.mechanisms.groups.split import selection_weight, solo, split
from dpspark.mechanisms.groups.threshold import ThresholdSelection
from dpspark.mechanisms.groups.weighted_selection import WeightedSelection
from dpspark.privacy import AddRemove, PrivacyStatement, PureDP, ZCDP, compose_statements, measure_from_budget
from dpspark.privacy.measures import ApproxDP, Measure
from dpspark.rng import DEFAULT_LAMBDA, RandomSource


class GroupValue(NamedTuple):
    """One released value: exact ``value`` (None: undefined), ``error`` holding w.p. >= ``confidence``.

    ``always``: a probability-1 bound (bounded noise) or None. ``error_unit``: "value" or "rank_rows".
    ``condition``: when the bound holds (empty: always). (A named tuple: a release makes one per group and
    aggregate.)
    """

    value: Fraction | None
    error: Fraction | None
    confidence: Fraction
    always: Fraction | None = None
    error_unit: str = "value"
    condition: str = ""


@dataclass
class AggregateLaws:
    """The noise view of one additive aggregate: its basis, the laws of its parts and their common kind."""

    basis: Basis
    laws: list[Any]
    kind: str


@dataclass
class GroupsPlan:
    """Every public, data-free part of a groups release."""

    aggregates: tuple[Aggregate, ...]
    bounds: Bounds
    max_units: int
    beta: Fraction
    lam: int
    parts: list[Part]
    noises: list[StatisticNoise]
    basis: dict[str, Basis]
    laws: dict[str, Any]
    selection: SelectionLaw | ThresholdSelection | WeightedSelection | None
    statement: PrivacyStatement
    statements: list[PrivacyStatement] = field(default_factory=list)
    #: per aggregate: the per-group error bar(s) in fixed-point units (quantile: rank rows)
    errors: dict[str, Any] = field(default_factory=dict)
    #: the exact fraction of the budget of every part, quantile (by name) and the separate selection
    shares: dict[str, Fraction] = field(default_factory=dict)
    threshold_part: int | None = None
    _bars: dict[tuple[int, Fraction], Fraction] = field(default_factory=dict)

    def bar(self, part: int, beta: Fraction) -> Fraction:
        """Part ``part``'s per-group error bar at ``beta`` (cached; exact)."""
        key = (part, beta)
        if key not in self._bars:
            self._bars[key] = self.noises[part].law.error(beta)
        return self._bars[key]

    def describe(self) -> dict[str, Any]:
        """Exact, JSON-ready plan (the manifest's parameters)."""
        out: dict[str, Any] = {"max_groups_per_unit": self.bounds.k, "max_rows_per_group": self.bounds.c,
                               "max_units": self.max_units, "beta": str(self.beta), "statistics": [],
                               "aggregates": []}
        for p, nz in zip(self.parts, self.noises):
            out["statistics"].append({"statistic": p.key.text(), "share": str(self.shares[p.key.text()]),
                                      "noise": nz.kind, "reason": nz.reason, "law": nz.law.describe(),
                                      "statement": nz.statement(self.max_units, p.key.text()).text()})
        for agg in self.aggregates:
            law = self.laws[agg.name]
            row = agg.describe()
            if isinstance(law, QuantileLaw):
                row.update(noise="exponential_mechanism", share=str(self.shares[agg.name]), law=law.describe(),
                           statement="exponential mechanism, pure DP")
            elif isinstance(law, JointMember):
                row.update(noise="joint_exponential_mechanism", quantiles="joint", share=str(self.shares[agg.name]),
                           law=law.describe(), statement="one joint exponential mechanism for "
                           f"{', '.join(law.names)} (their shares summed), pure DP")
            else:
                row.update(noise=law.kind, form=law.basis.form,
                           statistics=[self.parts[i].key.text() for i in law.basis.parts])
            out["aggregates"].append(row)
        out["selection"] = None if self.selection is None else self.selection.describe()
        if "selection" in self.shares:
            out["selection_share"] = str(self.shares["selection"])
        out["statement"] = self.statement.text()
        return out


def _fits(total: Measure, budget: Measure) -> bool:
    if isinstance(budget, ZCDP):
        return isinstance(total, ZCDP) and total.rho <= budget.rho
    if isinstance(total, ZCDP):
        return False
    return total.epsilon.le(budget.epsilon) and total.delta <= budget.delta


def _weights(raw: Sequence[Any] | None, n: int, separate: bool) -> list[Fraction] | None:
    """Importance per aggregate (+ the separate selection), exact and positive; None: all 1."""
    if raw is None:
        return None
    w = [parse_rational(x, "weight") for x in raw]
    if len(w) not in (n, n + 1) or any(x <= 0 for x in w):
        raise GroupsError(f"weights: give {n} positive exact weights (one per aggregate), and optionally one more "
                          "for a separate key selection")
    if separate:  # no weight for the selection: its default share (split.selection_weight, half the budget)
        return w if len(w) == n + 1 else w + [selection_weight(w)]
    return w[:n]


def _plan_once(aggs: tuple[Aggregate, ...], measure: Measure, *, max_units: int, bounds: Bounds,
               private_keys: bool, threshold: int | None, noise: str, beta: Fraction,
               weights: Sequence[Any] | None, lam: int, parts: list[Part], basis: dict[str, Basis]) -> GroupsPlan | None:
    """One planning attempt; None when a threshold plan finds a part that is not pure (the caller falls back)."""
    quants = [a for a in aggs if a.kind is Kind.QUANTILE]
    additive = [a for a in aggs if a.kind is not Kind.QUANTILE]
    separate = private_keys and threshold is None
    P = len(parts)
    ones = [Fraction(1)] * len(aggs)
    w = _weights(weights, len(aggs), separate) or ones + ([selection_weight(ones)] if separate else [])
    by_name = dict(zip([a.name for a in aggs], w))
    total = sum(w, Fraction(0))
    # quantiles (and a separate selection) read no statistic another aggregate reads: each gets its equal
    # (weighted) share, as alone; the additive aggregates pool the rest over the statistics they share
    fractions = [Fraction(0)] * P + [by_name[a.name] / total for a in quants] + ([w[-1] / total] if separate else [])
    if P:
        pool = sum((by_name[a.name] for a in additive), Fraction(0)) / total
        ms = models(aggs, parts, basis, bounds)
        norms = [(x if x is not None else solo(m)) / float(by_name[a.name])  # report (heuristic: chooses shares only)
                 for m, x, a in zip(ms, solo_override(aggs, basis, bounds), additive)]
        fractions[:P] = [pool * f for f in split(P, ms, norms)]
    shares = shares_of(measure, fractions, P + (1 if private_keys else 0))
    relation = AddRemove(max_units)
    noises: list[StatisticNoise] = []
    for i, p in enumerate(parts):
        forced = "pure" if (threshold is not None and noise == "auto" and i == threshold) else noise
        nz = choose(p.stat, shares[i], bounds, max_units, beta, lam, forced)
        if threshold is not None and nz.kind != "pure":
            return None
        noises.append(nz)
    statements = [nz.statement(max_units, p.key.text()) for p, nz in zip(parts, noises)]
    laws: dict[str, Any] = {}
    share_of = {a.name: shares[P + i] for i, a in enumerate(quants)}
    for fam in families(quants, bounds.c * max_units):
        eps = _summed_epsilon([share_of[a.name] for a in fam])
        laws.update(joint_law(fam, bounds, eps, lam, bounds.c * max_units))
        statements.append(PrivacyStatement(PureDP(laws[fam[0].name].law.epsilon()), relation,
                                           "joint exponential mechanism over non-decreasing tuples with the split "
                                           "score (McSherry-Talwar 2007, Thm 6; joint_split.py), exact dyadic "
                                           f"weights; aggregates {', '.join(repr(a.name) for a in fam)}, k groups by "
                                           "basic composition"))
    for i, agg in enumerate(quants):
        if agg.name in laws:
            continue
        law = QuantileLaw(agg, bounds, pure_epsilon(shares[P + i]), lam)
        laws[agg.name] = law
        statements.append(PrivacyStatement(PureDP(law.epsilon()), relation,
                                           "exponential mechanism (McSherry-Talwar 2007, Thm 6), exact dyadic "
                                           f"weights; aggregate {agg.name!r}, k groups by basic composition"))
    for agg in aggs:
        if agg.kind is not Kind.QUANTILE:
            b = basis[agg.name]
            kinds = {noises[i].kind for i in b.parts}
            laws[agg.name] = AggregateLaws(b, [noises[i].law for i in b.parts],
                                           kinds.pop() if len(kinds) == 1 else "mixed")
    delta_used = sum((nz.delta_used for nz in noises), Fraction(0))
    selection: SelectionLaw | ThresholdSelection | WeightedSelection | None = None
    if private_keys:
        left = measure.delta - delta_used
        if threshold is not None:
            selection = ThresholdSelection(noises[threshold].law, bounds.c, bounds.k, left, lam)
            statements.append(PrivacyStatement(ApproxDP(0, selection.delta()), relation,
                                               "keys: threshold on the released noisy count (stability-histogram "
                                               "argument on the implemented law, k keys; no epsilon of its own)"))
        else:
            sel_share = shares[-1]
            assert sel_share.epsilon is not None
            if bounds.k > 1:  # issue 34 §2: one Gaussian for the unit's l2 ball instead of eps/k per key
                selection = WeightedSelection(sel_share.epsilon, left, bounds.k)
                statements.append(PrivacyStatement(ApproxDP(selection.epsilon(), selection.delta()), relation,
                                                   "weighted Gaussian key selection (integer l2 weights, certified "
                                                   "discrete Gaussian, CKS20 conversion; weighted_selection.py)"))
            else:
                selection = SelectionLaw(sel_share.epsilon, left, bounds.k, max_units)
                statements.append(PrivacyStatement(ApproxDP(selection.epsilon(), selection.delta()), relation,
                                                   "optimal keep law (Desfontaines et al. 2022), exact dyadic "
                                                   "table; k keys by basic composition"))
    statement = compose_statements(statements) if len(statements) > 1 else statements[0]
    if not _fits(statement.measure, measure):
        raise GroupsError("internal error: the planned release exceeds its budget")
    names = [p.key.text() for p in parts] + [a.name for a in quants] + (["selection"] if separate else [])
    assert sum(fractions) == 1
    plan = GroupsPlan(aggs, bounds, max_units, beta, lam, parts, noises, basis, laws, selection, statement,
                      statements, shares=dict(zip(names, fractions)), threshold_part=threshold)
    for agg in aggs:
        law = laws[agg.name]
        if isinstance(law, QuantileLaw):
            plan.errors[agg.name] = law.rank_error(beta)
            continue
        if isinstance(law, JointMember):  # one bar for every member at once (joint_split.py)
            plan.errors[agg.name] = law.law.rank_error(beta)
            continue
        b = law.basis
        if b.form == "pairsum":  # (|H| e_a + |L| e_b) / g0 + G/2; with L = 0 only a's noise matters
            pl = law.laws[0]
            L, H = b.centre, agg.H
            e = plan.bar(b.parts[0], beta if L == 0 else beta / 2)
            plan.errors[agg.name] = [Fraction((abs(H) + abs(L)) * e, pl.g0) + pl.G / 2]
            continue
        if b.form == "pairmean":
            plan.errors[agg.name] = [Fraction(plan.bar(b.parts[0], beta / 2))]
            continue
        if b.form == "paircount":  # |Z_a|, |Z_b| <= e at beta/2 each: |N~ - N| <= 2e / g0, then the integer bar
            plan.errors[agg.name] = [integer_bar(Fraction(2 * plan.bar(b.parts[0], beta / 2), law.laws[0].g0))]
            continue
        m = len(b.parts)
        bars = [plan.bar(i, beta / m) for i in b.parts]
        if b.form == "count":
            plan.errors[agg.name] = [integer_bar(bars[0])]
            continue
        if b.form in ("centred", "zero"):
            plan.errors[agg.name] = [(bars[1] + abs(b.centre) * bars[0]) / 2]
        else:
            plan.errors[agg.name] = bars
    return plan


def plan_groups(aggregates: Sequence[Any], budget: Any, *, max_units: int, bounds: Bounds = Bounds(),
                private_keys: bool = False, noise: str = "auto", beta: Any = "1/20",
                weights: Sequence[Any] | None = None, lam: int = DEFAULT_LAMBDA,
                nulls: Mapping[str, Any] | None = None, pairs: bool | None = None,
                selection: str = "auto") -> GroupsPlan:
    """Calibrate every law and state the release's privacy under AddRemove(max_units); no data.

    ``selection`` (private keys): "rows" thresholds the released noisy count of rows when the plan draws a pure
    one (no epsilon of its own); "units" selects on the distinct units per key with the separate law on its own
    share (half the budget unless ``weights`` says otherwise: split.selection_weight); "auto" is "rows" when
    units are rows (k = c = 1) and "units" otherwise (issue 34 §1: at share 1/2 units keep more keys unless a
    unit brings a key more than about 0.85 c rows on average, docs/groups.md §F). The separate path uses the
    weighted Gaussian law when k > 1 (issue 34 §2) and the optimal per-key law when k = 1.

    ``nulls``: the null rule of each value column (:class:`dpspark.engine.numeric.NullRule`; default drop).
    ``pairs``: means read the distance pair (pair.py); default: whenever the noise may be pure.
    """
    aggs = parse_aggregates(list(aggregates))
    if isinstance(max_units, bool) or not isinstance(max_units, int) or max_units < 1:
        raise GroupsError(f"max_units must be an int >= 1, got {max_units!r}")
    b = parse_rational(beta, "beta")
    if not 0 < b < 1:
        raise GroupsError("beta must lie in (0, 1)")
    measure = measure_from_budget(budget)
    if private_keys:
        if isinstance(measure, ZCDP):
            raise GroupsError("private key selection needs an (epsilon, delta) budget; a zCDP budget fits "
                              "public keys only")
        if measure.delta == 0:
            raise GroupsError("private key selection needs delta > 0 (it is approximate DP)")
    use_pairs = noise in ("auto", "pure") if pairs is None else pairs and noise in ("auto", "pure")
    parts, basis = plan_parts(aggs, dict(nulls or {}), pairs=use_pairs, count_pair=not private_keys)
    common = dict(max_units=max_units, bounds=bounds, private_keys=private_keys, noise=noise, beta=b,
                  weights=weights, lam=lam, parts=parts, basis=basis)
    if selection not in ("auto", "rows", "units"):
        raise GroupsError(f"selection must be 'auto', 'rows' or 'units', got {selection!r}")
    # the released count's threshold is free of epsilon, but with c > 1 a new key may bring c rows, so it is c
    # times higher in rows; "units" selects on distinct units per key instead (sensitivity 1 per key, its own
    # share, issue 34 §1) and the row statistics keep their values. Which keeps more keys depends on the rows a
    # unit brings per key (data the plan cannot see). "auto": rows when units are rows (k = c = 1: free, and a new
    # key brings one row); units otherwise: at k = 1 with half the budget units win below ~0.85 c rows per unit
    # (bench, units of 1-5 rows, c = 5: 1.5x the keys of the row threshold), and at k > 1 the row threshold pays
    # k c per unit and the weighted law the unit's l2 norm (127 keys against 33 on Zipf at k = 4, 482 against 0)
    rows = selection == "rows" or (selection == "auto" and bounds.k == 1 and bounds.c == 1)
    if private_keys and noise in ("auto", "pure") and rows:
        counts = [i for i, p in enumerate(parts) if p.key.label == "rows"]
        counts += [i for i, p in enumerate(parts) if p.key.label == "n"]
        if counts:
            plan = _plan_once(aggs, measure, threshold=counts[0], **common)  # type: ignore[arg-type]
            if plan is not None:
                return plan
    plan = _plan_once(aggs, measure, threshold=None, **common)  # type: ignore[arg-type]
    assert plan is not None
    return plan


# ------------------------------------------------------------------------------------------------ release
@dataclass(frozen=True)
class ExactColumn:
    """One aggregate's released values for every group, column-wise: group i's value is ``nums[i] / den``
    exactly (``den`` > 0, public), every group with the same bars (a count's or a sum's noise scale is the
    aggregate's, not the group's). Equal to the :class:`GroupValue` list :meth:`group_values` gives; kept as
    Python ints so that 10^6 groups cost no Fraction each (the writer reduces each value once, to its text)."""

    nums: list[int]
    den: int
    error: Fraction | None
    confidence: Fraction
    always: Fraction | None = None

    def __len__(self) -> int:
        return len(self.nums)

    def group_values(self) -> list[GroupValue]:
        """One GroupValue per group (exact Fractions)."""
        e, c, a, d = self.error, self.confidence, self.always, self.den
        return [GroupValue(Fraction(x, d), e, c, a) for x in self.nums]


Column = ExactColumn | list[GroupValue]


@dataclass
class GroupsRelease:
    """Released keys (in input order) with each aggregate's values (``columns``: an :class:`ExactColumn` or one
    :class:`GroupValue` per group), and the statement; ``values`` reads them per group."""

    keys: list[Any]
    columns: dict[str, Column]
    statement: PrivacyStatement
    plan: GroupsPlan

    @property
    def values(self) -> list[dict[str, GroupValue]]:
        """One {aggregate: GroupValue} per released group, in key order (built on each call)."""
        names = list(self.columns)
        cols = [c.group_values() if isinstance(c, ExactColumn) else c for c in self.columns.values()]
        return [dict(zip(names, vs)) for vs in zip(*cols)] if self.keys else []


Drawn = tuple[Fraction, list[int]]  # a part's grid G and the released grid units (value = G u), per group


def _scaled(drawn: Drawn, den: int) -> list[Fraction]:
    """G u / den for every released u, exactly (one Fraction each)."""
    G, units = drawn
    num, d = G.numerator, G.denominator * den
    return [Fraction(num * u, d) for u in units]


def _rounded(num: int, den: int, us: Sequence[int]) -> list[int]:
    """floor(num u / den + 1/2) for every u (den > 0): :func:`integer_count` of num u / den, in Python ints."""
    a, b = 2 * num, 2 * den
    return [(a * u + den) // b for u in us]


def _additive(plan: GroupsPlan, agg: Aggregate, drawn: Mapping[int, Drawn], n: int) -> Column:
    """The released values of one additive aggregate for n groups, from its parts' released statistics: an
    :class:`ExactColumn` when every group shares the bars (counts, sums), else one GroupValue per group."""
    law: AggregateLaws = plan.laws[agg.name]
    b = law.basis
    conf = 1 - plan.beta
    errs = plan.errors[agg.name]
    sure = [lw.always for lw in law.laws]
    S, D, C = agg.scale, agg.D, agg.L + agg.H
    # counts and sums: Python-int numerators over one public denominator (no Fraction per group)
    if b.form == "count":  # integers by post-processing; errs[0] is already the widened bar (integer_count)
        s = None if sure[0] is None else integer_bar(sure[0])
        G, us = drawn[b.parts[0]]
        return ExactColumn(_rounded(G.numerator, G.denominator, us), 1, errs[0], conf, s)
    if b.form == "plain":
        e, s = errs[0] / S, None if sure[0] is None else sure[0] / S
        G, us = drawn[b.parts[0]]
        num = G.numerator
        return ExactColumn([num * u for u in us], G.denominator * S, e, conf, s)
    if b.form == "pairsum":  # T~ = (H a~ + L b~) / g0
        pl = law.laws[0]
        a_, b_ = drawn[b.parts[0]]
        H, L = agg.H, b.centre
        return ExactColumn([H * x + L * y for x, y in zip(a_, b_)], pl.g0 * S, errs[0] / S, conf)
    if b.form == "pairmean":
        return _pair_means(plan, agg, drawn[b.parts[0]], errs[0])
    if b.form == "paircount":  # N~ = (a~ + b~) / g0 off the mean's pair (post-processing), as an integer
        g0 = law.laws[0].g0
        a_, b_ = drawn[b.parts[0]]
        return ExactColumn(_rounded(1, g0, [x + y for x, y in zip(a_, b_)]), 1, errs[0], conf)
    if b.form in ("centred", "zero"):
        e = errs[0] / S
        s = None if None in sure else (sure[1] + abs(b.centre) * sure[0]) / (2 * S)
        (gn, ns), (gy, ys) = drawn[b.parts[0]], drawn[b.parts[1]]
        # (G_Y u_Y + centre G_N u_N) / 2S over one common denominator: integers only
        a_y, a_n = gy.numerator * gn.denominator, b.centre * gn.numerator * gy.denominator
        den = gy.denominator * gn.denominator * 2 * S
        return ExactColumn([a_y * y + a_n * m for m, y in zip(ns, ys)], den, e, conf, s)
    cond = "the group has >= 1 row; the bound uses the released noisy count"
    out = []
    cols = [_scaled(drawn[i], 1) for i in b.parts]
    for j in range(n):
        ys = [c[j] for c in cols]
        n_ = ys[0]
        if n_ <= 0:
            half = Fraction(D, 2 * S) if agg.kind is Kind.MEAN else Fraction(D * D, 8 * S * S)
            mid = Fraction(C, 2 * S) if agg.kind is Kind.MEAN else half
            out.append(GroupValue(mid, half, Fraction(1), half, "value", cond))
            continue
        m_y = min(max(ys[1] / n_, Fraction(-D)), Fraction(D))
        e_m = min((errs[1] + D * errs[0]) / n_, Fraction(2 * D))
        s_m = None if None in sure[:2] else min((sure[1] + D * sure[0]) / n_, Fraction(2 * D))
        if agg.kind is Kind.MEAN:
            bound = lambda e: min(Fraction(D, S), e / (2 * S))  # noqa: E731
            out.append(GroupValue((C + m_y) / (2 * S), bound(e_m), conf, None if s_m is None else bound(s_m),
                                  "value", cond))
            continue
        second = min(max((ys[2] / n_ + D * D) / 2, Fraction(0)), Fraction(D * D))
        var_y = min(max(second - m_y * m_y, Fraction(0)), Fraction(D * D))
        top = Fraction(D * D, 4 * S * S)

        def bound_v(e_r: Fraction, e_n: Fraction, em: Fraction) -> Fraction:
            # |m_y^2 - (Y/N)^2| <= |m_y - Y/N| (2 |m_y| + |m_y - Y/N|): uses only released values
            return min(top, ((e_r + D * D * e_n) / (2 * n_) + em * (2 * abs(m_y) + em)) / (4 * S * S))

        always = None if s_m is None or sure[2] is None else bound_v(sure[2], sure[0], s_m)
        out.append(GroupValue(var_y / (4 * S * S), bound_v(errs[2], errs[0], e_m), conf, always, "value", cond))
    return out


def _pair_means(plan: GroupsPlan, agg: Aggregate, drawn: Any, e: Fraction) -> list[GroupValue]:
    """Means from the distance pair (pair.py): (L + D p~) / S, p~ = clamp(a~ / s~, 0, 1), and the honest bound."""
    law = plan.laws[agg.name].laws[0]
    S, D, L, g0 = agg.scale, agg.D, agg.L, law.g0
    conf = 1 - plan.beta
    cond = "the group has >= 1 row with a value; the bound uses the released noisy values"
    half, mid = Fraction(D, 2 * S), Fraction(agg.L + agg.H, 2 * S)
    top = Fraction(D, S)
    out = []
    for a_, b_ in zip(*drawn):
        s_ = a_ + b_
        if s_ <= 0:
            out.append(GroupValue(mid, half, Fraction(1), half, "value", cond))
            continue
        p = min(max(Fraction(a_, s_), Fraction(0)), Fraction(1))
        bound = D * (e / s_ + Fraction(1, 2 * max(g0, s_ - 2 * e))) / S
        out.append(GroupValue((L + D * p) / S, min(top, bound), conf, None, "value", cond))
    return out


def _check_cells(agg: Aggregate, cells: Sequence[Sequence[int]], rows: int) -> None:
    width = (agg.grid or 0) + 1
    for c in cells:
        if len(c) != width or any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in c) or sum(c) > rows:
            raise GroupsError(f"aggregate {agg.name!r}: the engine's statistics for a group are outside their public "
                              "range (an engine bug; no value is shown)")


def _summed_epsilon(shares: Sequence[Any]) -> Fraction:
    """The pure epsilon of a joint family: its members' shares summed (eps, or rho then converted)."""
    if all(s.rho is None for s in shares):
        return sum((s.epsilon for s in shares), Fraction(0))
    return pure_epsilon(Share(rho=sum((s.rho for s in shares), Fraction(0))))


def _joint_values(plan: GroupsPlan, aggs: Mapping[str, Aggregate], cells: Sequence[Sequence[int]],
                  rng: RandomSource, rows: int, member: JointMember) -> dict[str, list[GroupValue]]:
    """One joint draw per group, in order (fixed work per group), read by every member of the family."""
    law, conf = member.law, 1 - plan.beta
    _check_cells(aggs[member.first], cells, rows)
    drawn = [law.draw(c, rng) for c in cells]
    out = {}
    for name in member.names:
        j, agg, err = plan.laws[name].index, aggs[name], Fraction(plan.errors[name])
        out[name] = [GroupValue(agg.point(o[j]), err, conf, None, "rank_rows", "") for o in drawn]
    return out


def _quantile_values(plan: GroupsPlan, agg: Aggregate, cells: Sequence[Sequence[int]], rng: RandomSource,
                     rows: int) -> list[GroupValue]:
    """One draw per group, in order (fixed work per group)."""
    law: QuantileLaw = plan.laws[agg.name]
    err, conf = Fraction(plan.errors[agg.name]), 1 - plan.beta
    _check_cells(agg, cells, rows)
    if not cells:
        return []
    if law.b * rows < 1 << 62:  # public bound: the scores fit int64
        levels = law.levels_many(np.asarray(cells, dtype=np.int64))
    else:
        levels = np.array([law.levels(c) for c in cells], dtype=np.int64)
    return [GroupValue(agg.point(j), err, conf, None, "rank_rows", "") for j in law.draw_level_indexes(levels, rng)]


def release_planned(plan: GroupsPlan, groups: Sequence[GroupStats], rng: RandomSource,
                    keys: Sequence[Any] | None = None) -> GroupsRelease:
    """The noisy release. ``keys`` (public) lists every released key; None: private selection on ``groups``."""
    if rng.lam < plan.lam:
        raise GroupsError(f"the random source's lam ({rng.lam}) is below the plan's ({plan.lam})")
    rows = plan.bounds.c * plan.max_units
    aggs = {a.name: a for a in plan.aggregates}
    if keys is not None:
        if plan.selection is not None:
            raise GroupsError("the plan selects keys privately; do not pass public keys")
        extra = count_absent(groups.keys if isinstance(groups, GroupColumns) else [g.key for g in groups], keys)
        if extra:  # never released: the engine filters to the key set (count only, no value shown)
            raise GroupsError(f"{extra} group(s) outside the public key list (an engine bug)")
    elif plan.selection is None:
        raise GroupsError("public keys are required unless the plan selects keys privately")
    table = gather(groups, plan.aggregates, rows, keys)
    count_rows = next((table.raw[a.name][0] for a in plan.aggregates if a.kind is Kind.COUNT), None)
    check_columns(plan.aggregates, table.raw, rows, count_rows)
    drawn: dict[int, Drawn] = {}
    if keys is None:
        if isinstance(plan.selection, ThresholdSelection):
            tp = plan.threshold_part
            assert tp is not None
            law = plan.noises[tp].law
            idx = law.draw_index_many(part_values(plan.parts[tp], aggs, table.raw, rows), rng)
            keep = plan.selection.keep(idx)
            kept_units = idx[keep] + law.a_lo
        else:
            assert isinstance(plan.selection, (SelectionLaw, WeightedSelection))
            units = table.units  # unit counts, or weighted scores under WeightedSelection (the stage's weights)
            if units is None or any(u is None for u in units):
                raise GroupsError("private selection needs each observed group's unit count")
            keep = np.asarray(plan.selection.select([int(u) for u in units], rng), dtype=bool).reshape(-1)
            tp, kept_units = None, None
        table = table.take(np.flatnonzero(keep))
        if tp is not None:
            drawn[tp] = (plan.noises[tp].law.G, kept_units.tolist())
    raw = table.raw
    n = len(table)
    for i, (p, nz) in enumerate(zip(plan.parts, plan.noises)):
        if i in drawn:
            continue
        if p.key.label == "pair":
            U, N = part_values(p, aggs, raw, rows)
            a_, b_ = nz.law.release_many(U, N, rng)
            drawn[i] = (a_.tolist(), b_.tolist())  # type: ignore[assignment]
            continue
        drawn[i] = (nz.law.G, nz.law.release_many(part_values(p, aggs, raw, rows), rng).tolist())
    values: dict[str, Column] = {}
    for agg in plan.aggregates:
        if agg.kind is not Kind.QUANTILE:
            values[agg.name] = _additive(plan, agg, drawn, n)
    for agg in plan.aggregates:  # each quantile, or each joint family at its first member's turn
        law = plan.laws[agg.name]
        if isinstance(law, JointMember):
            if agg.name == law.first:
                values.update(_joint_values(plan, aggs, table.cells[agg.name], rng, rows, law))
        elif agg.kind is Kind.QUANTILE:
            values[agg.name] = _quantile_values(plan, agg, table.cells[agg.name], rng, rows)
    return GroupsRelease(table.keys, {a.name: values[a.name] for a in plan.aggregates}, plan.statement, plan)


def release_groups(stats: Sequence[GroupStats], aggregates: Sequence[Any], budget: Any, rng: RandomSource, *,
                   max_units: int, keys: Sequence[Any] | None = None, bounds: Bounds = Bounds(),
                   noise: str = "auto", beta: Any = "1/20", weights: Sequence[Any] | None = None,
                   nulls: Mapping[str, Any] | None = None) -> GroupsRelease:
    """Plan, then release: public ``keys``, or private selection over the observed groups when keys is None."""
    plan = plan_groups(aggregates, budget, max_units=max_units, bounds=bounds, private_keys=keys is None,
                       noise=noise, beta=beta, weights=weights, lam=rng.lam, nulls=nulls)
    return release_planned(plan, stats, rng, keys)
