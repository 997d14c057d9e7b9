"""The engine's weighted selection scores (issue 34 §2): each kept (unit, key) pair weighs w(m), m = the unit's
kept keys, on the Arrow kernel (the Spark kernel runs the same numpy core per partition)."""

from __future__ import annotations

import pyarrow as pa

from dpspark.mechanisms.groups.aggregates import parse_aggregates
from dpspark.mechanisms.groups.arrow_stats import groups_on
from dpspark.mechanisms.groups.stage import GroupsStage
from dpspark.universe import CategoricalUniverse

KEYS = ("a", "b", "c", "d")


def _stage(weights: tuple[int, ...], k: int = 2) -> GroupsStage:
    return GroupsStage(key_columns=("k",), universe=CategoricalUniverse(KEYS, "k"), unit_column="u", max_units=100,
                       max_groups_per_unit=k, max_rows_per_group=3,
                       aggregates=parse_aggregates([{"name": "n", "kind": "count"}]), count_units=True,
                       unit_weights=weights)


def test_scores_weigh_each_unit_by_its_number_of_kept_keys() -> None:
    # unit 0: a, b (m = 2, weight 45 each; three rows of a); unit 1: a (m = 1, weight 64); unit 2: c (64)
    rows = [("a", 0), ("a", 0), ("a", 0), ("b", 0), ("a", 1), ("c", 2), ("c", 2)]
    t = pa.table({"k": [r[0] for r in rows], "u": [r[1] for r in rows]})
    by = {KEYS[g.key]: g for g in groups_on(t, _stage((64, 45)), bytes(16))}
    assert {k: g.units for k, g in by.items()} == {"a": 45 + 64, "b": 45, "c": 64}
    assert by["a"].stats["n"] == (4,)  # the row statistics are unchanged
    plain = {KEYS[g.key]: g.units for g in groups_on(t, _stage(()), bytes(16))}
    assert plain == {"a": 2, "b": 1, "c": 1}


def test_a_unit_over_k_keys_is_weighed_by_the_k_it_keeps() -> None:
    """A unit with 3 keys under k = 2 keeps 2 of them: weight w(2) each (w(3) would be a mutant's)."""
    t = pa.table({"k": ["a", "b", "c"], "u": [0, 0, 0]})
    scores = sorted(g.units for g in groups_on(t, _stage((64, 45)), bytes(16)))
    assert scores == [45, 45]
