"""The ``pure_groups`` release's table and section (docs/groups.md §H): the ``groups`` kind's layout
(:mod:`dpspark.mechanisms.groups.writer`), one row per released key that a column value can take, with the
pure mechanism's bars and conditions. Post-processing of the sampler's output only.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any, NamedTuple

from dpspark.mechanisms.groups.aggregates import Aggregate, Kind

if TYPE_CHECKING:
    import pyarrow as pa

#: the noise name the release's section gives each value
NOISE = "pure_sparse"
CONDITION = {"count": "per key: Pr[the key is released and its count is off by more than the bar] <= beta (the "
                      "count before selection; a released key's count is among the n + 1 largest)",
             "sum": "per key: Pr[the key is released and its sum is off by more than the bar from the key's true "
                    "sum, 0 if it has no rows] <= beta (the sum's noise is independent of the selection)"}


class _Table(NamedTuple):
    """What :func:`dpspark.mechanisms.groups.writer.groups_table` reads of a plan and a release."""

    aggregates: tuple[Aggregate, ...]
    values: list[dict[str, Any]]


def released_table(mech: Any, rel: Any) -> "pa.Table":
    """The table of a :class:`~dpspark.mechanisms.histogram.pure_sparse_sums.SumsRelease`: exact values (a count,
    each sum G (a_lo + s) / S in value units), the plan's bars; keys no column value has are left out, and with
    ``privacy.trim`` the rows whose noisy count is at most the simultaneous bar."""
    from dpspark.mechanisms.groups.algorithm import GroupValue
    from dpspark.mechanisms.groups.writer import groups_table

    aggs = mech.aggs.aggregates
    count = next(a.name for a in aggs if a.kind is Kind.COUNT)
    conf, bars = 1 - mech.beta, mech.bars()
    columns: dict[str, list[Fraction]] = {count: [Fraction(y) for y in rel.counts]}
    for (name, law), col in zip(mech.sum_laws.items(), rel.sums):
        scale = next(a.scale for a in aggs if a.name == name)
        columns[name] = [law.G * (law.a_lo + s) / scale for s in col]
    rows = [(i, mech.key_of(x)) for i, x in enumerate(rel.indices)]
    floor = mech.simultaneous[0] if mech.trim else None  # a public bar on released counts
    rows = [(i, key) for i, key in rows if key is not None and (floor is None or rel.counts[i] > floor)]
    values = [{a.name: GroupValue(columns[a.name][i], bars[a.name], conf) for a in aggs} for i, _ in rows]
    types = [part.arrow_type() for part in mech.universe.parts]
    view = _Table(aggs, values)
    return groups_table(view, view, mech.groups.by, [key for _, key in rows], types)


def pure_section(mech: Any, rows: int, units: dict[str, Any] | None) -> dict[str, Any]:
    """The release's section: the groups kind's, with pure_sparse noise and its conditions."""
    from dpspark.mechanisms.groups.writer import NULLS_TEXT, TABLE

    aggs = [{"name": a.name, "kind": a.kind.value, "error_unit": "value", "noise": NOISE,
             "condition": CONDITION[a.kind.value]} for a in mech.aggs.aggregates]
    return {"table": TABLE, "by": list(mech.groups.by), "keys": "private", "groups": rows,
            "universe": mech.universe.to_dict(), "aggregates": aggs, "beta": str(mech.beta),
            "bounds": ("each released key's <name>_error holds with probability >= <name>_confidence in the sense "
                       "of the aggregate's condition (per key, before selection)"),
            "nulls": NULLS_TEXT,
            "composition": ("pure DP: one sparse release of every key's count and sums over the whole universe "
                            "(a unit changes at most max_groups_per_unit keys), then the noisy unit count"),
            **({"units": units} if units is not None else {})}
