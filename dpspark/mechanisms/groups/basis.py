"""Which noisy statistics a groups release draws, and how each aggregate is built from them (docs/groups.md §D).

A *part* of the plan is one distinct noisy statistic over all groups (drawn once per group, charged once);
several aggregates may share it. Parts are identified by a :class:`StatKey`:

=======  ==================================================  ==========================
label    per group                                           from the engine's raw tuple
=======  ==================================================  ==========================
rows     N_all: kept rows                                    a count aggregate: (N,)
n        N_x: kept rows with a value in column x             any additive aggregate on x
sum      T = sum of v                                        a sum on (x, L, H, S)
pair     (U, N): U = T - L N_x, the distances to lo             a mean on (x, L, H, S)
csum     Y = 2T - C N_x  (rows add 2v - C in [-D, D])         any additive aggregate on (x, L, H, S)
zsum     Y' = 2T - C' N_all (rows add 2v' - C' in [-D', D'])  a sum on (x, L, H, S) and a count
csq      R = 2(4Q - 4CT + N_x C^2) - N_x D^2                  a variance on (x, L, H, S)
=======  ==================================================  ==========================

Aggregates (values before the fixed-point scale S):

* count: N_all~; or, with public keys, when a mean of a column that imputes NULLs draws the pair, (a~ + b~) / g0
  read off that pair (``paircount``: no part of its own, the pair gets the whole share);
* sum: *centred* on the count it shares - (Y~ + C N~) / 2 with (n, csum) when a mean or variance of the same
  column and bounds draws them, else (Y'~ + C' N_all~) / 2 with (rows, zsum) when a count aggregate draws
  N_all (with an imputing null rule N_x = N_all and csum is used), else the plain T~;
* mean: the distance pair (pair.py: U = sum (v - L) and W = sum (H - v), rounded jointly, one budget);
  variance: (n, csum, csq) (docs/groups.md §G); a sum of a column and bounds a mean also asks for reads
  the mean's pair (T = U + L N).

Why centre a sum on a shared count: the count's noise is already paid for, and the centred statistic's
sensitivity is D/2 per unit of the sum instead of max(|L|, |H|) (half of it when L = 0); the sum's error
is e_Y / 2 + |C| e_N / 2, two independent noises (the bar states it by a union bound). With a count that
is released anyway, this beats a plain sum at every split (docs/groups.md §D has the figures).

:func:`models` gives the error model of every aggregate for the budget split
(:mod:`dpspark.mechanisms.groups.split`): coefficient c_as of each part s (its sensitivity times its weight
in the aggregate's formula, worst case over the data for means and variances).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from dpspark.mechanisms.groups.aggregates import Aggregate, Bounds, GroupsError, Kind, Statistic
from dpspark.mechanisms.groups.columns import INT64_SAFE, object_column


@dataclass(frozen=True)
class StatKey:
    """Identity of one noisy statistic of the plan."""

    label: str
    column: str | None = None
    L: int = 0
    H: int = 0
    scale_bits: int = 0

    def text(self) -> str:
        """A short public name, e.g. ``csum(fare; 0..25600 / 2^8)``."""
        if self.column is None:
            return self.label
        if self.label == "n":
            return f"n({self.column})"
        return f"{self.label}({self.column}; {self.L}..{self.H} / 2^{self.scale_bits})"


@dataclass(frozen=True)
class Part:
    """One noisy statistic: its key, per-row range (sensitivity, public range) and the aggregates it is read from."""

    key: StatKey
    stat: Statistic
    source: str              # the aggregate whose raw tuple gives T, N_x, Q (or N_all for rows)
    count_source: str | None = None  # zsum: the count aggregate giving N_all


@dataclass(frozen=True)
class Basis:
    """How one additive aggregate is built: ``form`` and its parts (indexes into the plan's parts)."""

    form: str                # "count", "paircount", "plain", "centred", "zero", "mean", "pairmean", "pairsum", "variance"
    parts: tuple[int, ...]
    centre: int = 0          # C (centred) or C' (zero): the sum is (Y + centre N) / 2


def _imputes(nulls: Mapping[str, Any], column: str) -> bool:
    rule = nulls.get(column)
    return rule is not None and getattr(rule, "value", None) is not None


def plan_parts(aggs: Sequence[Aggregate], nulls: Mapping[str, Any], pairs: bool = True,
               count_pair: bool = False) -> tuple[list[Part], dict[str, Basis]]:
    """The parts and each additive aggregate's basis (module docstring). Deterministic, data-free.

    ``pairs``: means (and the sums of their column and bounds) read the distance pair (pure noise only).
    ``count_pair``: a count aggregate reads the pair of the first mean whose column imputes NULLs (there the
    pair's N = (a + b) / g0 counts every kept row, N_x = N_all), ``paircount``: its count costs nothing and the
    pair gets the count's share (docs/groups.md §G). Only when no other aggregate reads the rows part (a sum
    centred on the count keeps it, and then the count too). Public keys only: private keys threshold a rows part.
    """
    parts, basis = _plan_parts(aggs, nulls, pairs, None)
    if not (pairs and count_pair):
        return parts, basis
    shared = next((a for a in aggs if a.kind is Kind.MEAN and a.column is not None and _imputes(nulls, a.column)), None)
    rows = next((i for i, p in enumerate(parts) if p.key.label == "rows"), None)
    if shared is None or rows is None or any(rows in b.parts for b in basis.values() if b.form != "count"):
        return parts, basis
    return _plan_parts(aggs, nulls, pairs, shared)


def _plan_parts(aggs: Sequence[Aggregate], nulls: Mapping[str, Any], pairs: bool,
                shared_mean: Aggregate | None) -> tuple[list[Part], dict[str, Basis]]:
    """:func:`plan_parts` with the count read off ``shared_mean``'s pair when given."""
    parts: list[Part] = []
    index: dict[StatKey, int] = {}
    count_src = next((a.name for a in aggs if a.kind is Kind.COUNT), None)

    def part(key: StatKey, stat: Statistic, source: str, count_source: str | None = None) -> int:
        if key not in index:
            index[key] = len(parts)
            parts.append(Part(key, stat, source, count_source))
        return index[key]

    def n_part(agg: Aggregate) -> int:
        assert agg.column is not None
        if count_src is not None and _imputes(nulls, agg.column):  # N_x = N_all: one statistic
            return part(StatKey("rows"), Statistic("count", 1, 1), count_src)
        return part(StatKey("n", agg.column), Statistic("count", 1, 1), agg.name)

    def vkey(agg: Aggregate, label: str) -> StatKey:
        return StatKey(label, agg.column, agg.L, agg.H, agg.scale_bits)

    basis: dict[str, Basis] = {}
    centred = {vkey(a, "csum") for a in aggs if a.kind is Kind.VARIANCE or (a.kind is Kind.MEAN and not pairs)}
    for agg in aggs:  # counts, means and variances first: sums then see what they can share
        if agg.kind is Kind.COUNT and shared_mean is not None:
            pr = part(vkey(shared_mean, "pair"), Statistic("pair", 0, shared_mean.D), shared_mean.name)
            basis[agg.name] = Basis("paircount", (pr,))
        elif agg.kind is Kind.COUNT:
            basis[agg.name] = Basis("count", (part(StatKey("rows"), Statistic("count", 1, 1), agg.name),))
        elif agg.kind is Kind.MEAN and pairs:
            pr = part(vkey(agg, "pair"), Statistic("pair", 0, agg.D), agg.name)
            basis[agg.name] = Basis("pairmean", (pr,), agg.L)
        elif agg.kind in (Kind.MEAN, Kind.VARIANCE):
            n = n_part(agg)
            y = part(vkey(agg, "csum"), Statistic("csum", -agg.D, agg.D), agg.name)
            if agg.kind is Kind.MEAN:
                basis[agg.name] = Basis("mean", (n, y), agg.L + agg.H)
            else:
                r = part(vkey(agg, "csq"), Statistic("csq", -agg.D * agg.D, agg.D * agg.D), agg.name)
                basis[agg.name] = Basis("variance", (n, y, r), agg.L + agg.H)
    for agg in aggs:
        if agg.kind is not Kind.SUM:
            continue
        assert agg.column is not None
        if vkey(agg, "pair") in index:  # a mean of the same column and bounds draws the pair: T = U + L N
            basis[agg.name] = Basis("pairsum", (index[vkey(agg, "pair")],), agg.L)
        elif vkey(agg, "csum") in centred or (count_src is not None and _imputes(nulls, agg.column)):
            n = n_part(agg)
            y = part(vkey(agg, "csum"), Statistic("csum", -agg.D, agg.D), agg.name)
            basis[agg.name] = Basis("centred", (n, y), agg.L + agg.H)
        elif count_src is not None:
            rows = part(StatKey("rows"), Statistic("count", 1, 1), count_src)
            z = part(vkey(agg, "zsum"), agg.zero_statistic(), agg.name, count_src)
            lo, hi = agg.zero_range
            basis[agg.name] = Basis("zero", (rows, z), lo + hi)
        else:
            basis[agg.name] = Basis("plain", (part(vkey(agg, "sum"), Statistic("sum", agg.L, agg.H), agg.name),))
    return parts, basis


def models(aggs: Sequence[Aggregate], parts: Sequence[Part], basis: Mapping[str, Basis],
           bounds: Bounds) -> list[dict[int, float]]:
    """Per aggregate (in order; quantiles excluded): {part: coefficient} of its error model (module docstring)."""
    out = []
    for agg in aggs:
        if agg.kind is Kind.QUANTILE:
            continue
        b = basis[agg.name]
        sens = [parts[i].stat.sensitivity(bounds) for i in b.parts]
        D = agg.D
        if b.form in ("count", "plain"):
            out.append({b.parts[0]: float(sens[0])})  # report (heuristic: chooses shares only)
        elif b.form in ("centred", "zero"):
            out.append({b.parts[0]: abs(b.centre) * sens[0] / 2 or 1e-9, b.parts[1]: sens[1] / 2})  # report
        elif b.form == "mean":
            out.append({b.parts[0]: D * sens[0] / 2, b.parts[1]: sens[1] / 2})  # report (heuristic: public shares only)
        elif b.form == "paircount":  # (Z_a + Z_b) / g0, each Z at c g0 / f grid units: sd sqrt(2) c / f
            out.append({b.parts[0]: 2 ** 0.5 * bounds.c})  # report (heuristic: public shares only)
        elif b.form == "pairmean":
            out.append({b.parts[0]: float(sens[0])})  # report (heuristic: D (p~ at its worst, 0 or 1))
        elif b.form == "pairsum":
            out.append({b.parts[0]: bounds.c * float(agg.H * agg.H + agg.L * agg.L) ** 0.5})  # report
        else:
            out.append({b.parts[0]: 2.5 * D * D * sens[0], b.parts[1]: 2.0 * D * sens[1], b.parts[2]: sens[2] / 2})
    return out


def solo_override(aggs: Sequence[Aggregate], basis: Mapping[str, Basis], bounds: Bounds) -> list[float | None]:
    """A sum's best alone is its plain form (sensitivity c max(|L|, |H|)); None: the model's own optimum."""
    out: list[float | None] = []
    for agg in aggs:
        if agg.kind is Kind.QUANTILE:
            continue
        out.append(float(bounds.c * max(abs(agg.L), abs(agg.H))) if agg.kind is Kind.SUM else None)  # report
    return out


# ------------------------------------------------------------------------------------------------ values
def _column(values: Sequence[int], int64: bool) -> np.ndarray:
    return np.array(values, dtype=np.int64) if int64 else object_column(values)


def _obj(a: np.ndarray) -> np.ndarray:
    return a if a.dtype == object else _column(a.tolist(), False)


def part_values(p: Part, aggs: Mapping[str, Aggregate], raw: Mapping[str, list[np.ndarray]], max_rows: int) -> np.ndarray:
    """The exact statistic of part ``p`` per group, from the raw columns: int64 when a public bound on every
    intermediate allows it, else Python ints."""
    label = p.key.label
    src = raw[p.source]
    if label in ("rows", "n"):
        return src[0]
    if label == "pair":  # (U, N): U = T - L N, the sum of the distances to lo (rows with a value)
        agg = aggs[p.source]
        wide = max_rows * (max(abs(agg.L), abs(agg.H)) + abs(agg.L)) >= INT64_SAFE
        N, T = (_obj(src[0]), _obj(src[1])) if wide else (src[0], src[1])
        return T - agg.L * N, N  # type: ignore[return-value]
    agg = aggs[p.source]
    N, T = src[0], src[1]
    C, D, M = agg.L + agg.H, agg.D, max(abs(agg.L), abs(agg.H))
    if label == "sum":
        return T
    if label == "csum":
        wide = max_rows * (2 * M + abs(C)) >= INT64_SAFE
        N, T = (_obj(N), _obj(T)) if wide else (N, T)
        return 2 * T - C * N
    if label == "zsum":
        assert p.count_source is not None
        lo, hi = agg.zero_range
        rows = raw[p.count_source][0]
        wide = max_rows * (2 * M + abs(lo + hi)) >= INT64_SAFE
        rows, T = (_obj(rows), _obj(T)) if wide else (rows, T)
        return 2 * T - (lo + hi) * rows
    if label == "csq":
        Q = src[2]
        wide = max_rows * (8 * M * M + 8 * abs(C) * M + 2 * C * C + D * D) >= INT64_SAFE
        N, T, Q = (_obj(N), _obj(T), _obj(Q)) if wide else (N, T, Q)
        return 2 * (4 * Q - 4 * C * T + N * C * C) - N * D * D
    raise GroupsError(f"unknown statistic {label!r}")  # pragma: no cover


def _exact(bound: int, *cols: np.ndarray) -> tuple[np.ndarray, ...]:
    """``cols`` as they are when ``bound`` (a public bound on every product formed from them) fits int64 with
    room to spare, else as Python ints: a product that could wrap is never formed in int64."""
    return cols if bound < INT64_SAFE else tuple(_obj(c) for c in cols)


def check_columns(aggs: Sequence[Aggregate], raw: Mapping[str, list[np.ndarray]], max_rows: int,
                  rows: np.ndarray | None) -> None:
    """The engine's statistics lie in their public ranges (vectorised :func:`aggregates.check_raw`); value-free.

    Exact at any size: each product (N L, N H, N top, T^2, N Q) is formed in int64 only when the public
    bounds (max_rows, L, H) prove it fits, else on Python ints; an int64 product that wraps would make a
    correct statistic look out of range, and the release fail after the spend at a data-dependent size.
    """
    for agg in aggs:
        if agg.kind is Kind.QUANTILE or agg.name not in raw:
            continue
        bad = GroupsError(f"aggregate {agg.name!r}: the engine's statistics for a group are outside their public "
                          "range (an engine bug; no value is shown)")
        cols = raw[agg.name]
        if len(cols) != agg.raw_arity():
            raise GroupsError(f"aggregate {agg.name!r}: expected {agg.raw_arity()} integers per group")
        N = cols[0]
        if len(N) and (N.min() < 0 or N.max() > max_rows):
            raise bad
        if rows is not None and len(N) and agg.kind is not Kind.COUNT and bool(np.any(N > rows)):
            raise bad
        if agg.kind is Kind.COUNT or not len(N):
            continue
        M = max(abs(agg.L), abs(agg.H))  # 0 <= N <= max_rows from here: |N L|, |N H|, |T| <= max_rows M
        N1, T = _exact(max_rows * M, N, cols[1])
        if bool(np.any(T < N1 * agg.L)) or bool(np.any(T > N1 * agg.H)):
            raise bad
        if agg.kind is Kind.VARIANCE:
            top = M * M  # max(L^2, H^2); then 0 <= Q <= N top and |T| <= N M: T^2, N Q <= (max_rows M)^2
            N2, T2, Q = _exact((max_rows * M) ** 2, N, cols[1], cols[2])
            if bool(np.any(Q < 0)) or bool(np.any(Q > N2 * top)):
                raise bad
            if bool(np.any(T2 * T2 > N2 * Q)):
                raise bad
