"""The groups pre-pass (units and per-unit contributions) and the data-free parts of the unit count and "auto" limits."""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from dataclasses import replace
from fractions import Fraction
from typing import Any

import pyarrow as pa
import pytest

from dpspark.mechanisms.groups.aggregates import GroupsError, GroupsTypeError, parse_aggregates
from dpspark.mechanisms.groups.config import LIMITS_SHARE, UNITS_SHARE, parse_groups_section
from dpspark.mechanisms.groups.stage import GroupsStage
from dpspark.mechanisms.groups.unit_profile import BUCKETS, UnitProfileStage, profile_table
from dpspark.noise.count_quantile import power_histogram
from dpspark.universe import CategoricalUniverse

REGIONS = ["north", "south", "east", "west"]


def stage_of(unit: str | None = "pid", **kw: Any) -> GroupsStage:
    return GroupsStage(key_columns=("region",), universe=CategoricalUniverse(tuple(REGIONS), "region"),
                       unit_column=unit, max_units=100, max_groups_per_unit=1, max_rows_per_group=1,
                       aggregates=parse_aggregates([{"name": "n", "kind": "count"}]), **kw)


def _reference(rows: list[tuple[int, str]]) -> tuple[int, list[int], list[int]]:
    per: dict[int, Counter] = defaultdict(Counter)
    for pid, region in rows:
        per[pid][region] += 1
    groups = [len(c) for c in per.values()]
    most = [max(c.values()) for c in per.values()]
    import numpy as np

    return len(per), power_histogram(np.array(groups), BUCKETS), power_histogram(np.array(most), BUCKETS)


@pytest.mark.parametrize("seed", range(4))
def test_profile_is_the_exact_per_unit_counts(seed: int) -> None:
    r = random.Random(seed)
    rows = [(r.randrange(60), r.choice(REGIONS + ["elsewhere"])) for _ in range(r.randrange(1, 900))]
    table = pa.table({"pid": [p for p, _ in rows], "region": [g for _, g in rows]})
    got = profile_table(table, UnitProfileStage(stage_of()))
    units, groups, most = _reference(rows)
    assert (got.units, list(got.groups_hist), list(got.rows_hist)) == (units, groups, most)
    assert sum(got.groups_hist) == sum(got.rows_hist) == got.units


def test_without_a_unit_every_row_is_a_unit() -> None:
    table = pa.table({"region": ["north"] * 5 + ["east"] * 2})
    got = profile_table(table, UnitProfileStage(stage_of(unit=None)))
    assert got.units == 7 and got.groups_hist[0] == got.rows_hist[0] == 7


def test_one_unit_moves_each_histogram_by_one_in_one_bucket() -> None:
    """The sensitivity the pre-pass's laws assume: removing a unit changes units by 1, each histogram in one bucket."""
    r = random.Random(11)
    rows = [(r.randrange(30), r.choice(REGIONS)) for _ in range(400)]
    full = profile_table(pa.table({"pid": [p for p, _ in rows], "region": [g for _, g in rows]}),
                         UnitProfileStage(stage_of()))
    for gone in range(30):
        kept = [(p, g) for p, g in rows if p != gone]
        less = profile_table(pa.table({"pid": [p for p, _ in kept], "region": [g for _, g in kept]}),
                             UnitProfileStage(stage_of()))
        assert full.units - less.units == 1
        for a, b in ((full.groups_hist, less.groups_hist), (full.rows_hist, less.rows_hist)):
            assert sorted(x - y for x, y in zip(a, b)) == [0] * (BUCKETS - 1) + [1]


def test_section_fields_and_defaults() -> None:
    g = parse_groups_section({"by": "region"})
    assert (g.auto, g.limits_share, g.units_share) == ((), 0, UNITS_SHARE)
    g = parse_groups_section({"by": "region", "max_groups_per_unit": "auto"})
    assert g.auto == ("max_groups_per_unit",) and g.limits_share == LIMITS_SHARE and g.bounds.k == 1
    g = parse_groups_section({"by": "region", "max_rows_per_group": "auto", "limits_share": "1/5",
                              "units_share": "1/100"})
    assert (g.auto, g.limits_share, g.units_share) == (("max_rows_per_group",), Fraction(1, 5), Fraction(1, 100))


@pytest.mark.parametrize("raw, error, match", [
    ({"limits_share": "1/10"}, GroupsError, "applies when a limit is"),
    ({"max_groups_per_unit": "auto", "limits_share": 0.1}, GroupsTypeError, "float"),
    ({"max_groups_per_unit": "auto", "limits_share": "1/2", "units_share": "1/10"}, GroupsError, "less than half"),
    ({"units_share": "0"}, GroupsError, r"\(0, 1/2\]"),
    ({"max_groups_per_unit": "many"}, GroupsError, "or \"auto\""),
])
def test_bad_limit_fields_are_refused(raw: dict[str, Any], error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        parse_groups_section({"by": "region", **raw})


@pytest.mark.parametrize("seed", range(6))
def test_the_groups_pass_counts_the_units_the_pre_pass_counts(seed: int) -> None:
    """The pass's exact units read (PassStats) equals the pre-pass's: NULL units and keys dropped, a filter
    applied, units truncated (max_units below the units present) or not, integer units with gaps or text."""
    from dpspark.engine.predicate import parse_predicate
    from dpspark.mechanisms.groups.arrow_stats import groups_on

    r = random.Random(seed)
    text = seed % 2 == 1
    rows = [(r.choice([None, *range(0, 400, 3)]), r.choice([None, *REGIONS, "elsewhere"]), r.randrange(100))
            for _ in range(r.randrange(1, 700))]
    pid = [None if p is None else (f"u{p}" if text else p) for p, _, _ in rows]
    table = pa.table({"pid": pid, "region": [g for _, g, _ in rows], "age": [a for _, _, a in rows]})
    for unit in ("pid", None):
        for where in (None, parse_predicate("age < 60")):
            for n in (5, 10_000):
                st = replace(stage_of(unit, filter=where), max_units=n)
                got = groups_on(table, st, b"k" * 16)
                assert got.units_read == profile_table(_read(table, st), UnitProfileStage(st)).units


def _read(table: pa.Table, st: GroupsStage) -> pa.Table:
    """The rows the stage reads (its filter, then NULL key and unit dropped), as the pre-pass's kernel reads them."""
    import pyarrow.compute as pc

    if st.filter is not None:
        table = table.filter(st.filter.arrow_mask(table), null_selection_behavior="drop")
    for c in [*st.key_columns, *([st.unit_column] if st.unit_column else [])]:
        table = table.filter(pc.is_valid(table.column(c)))
    return table


def test_units_read_is_the_distinct_units_and_rows() -> None:
    """Exact figures: 3 distinct units of 5 non-NULL rows; without a unit column, the 5 rows with a key."""
    from dpspark.mechanisms.groups.arrow_stats import groups_on

    table = pa.table({"pid": [7, 7, None, 9, 1000, 9], "region": ["north", "east", "west", "zz", "south", None]})
    assert groups_on(table, stage_of(), b"k" * 16).units_read == 3  # 7, 9, 1000 (NULL unit, NULL key dropped)
    assert groups_on(table, stage_of(unit=None), b"k" * 16).units_read == 5
