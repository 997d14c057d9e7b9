"""Counts and sums released column-wise (ExactColumn), their texts, the key columns, and the pass's columns.

The column-wise release must equal the per-group one value for value and byte for byte in the table (the
goldens check the same on a whole release); each test names the broken variant it catches.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import pyarrow as pa
import pytest

from dpspark.mechanisms.groups.aggregates import Bounds, Kind, parse_aggregates
from dpspark.mechanisms.groups.algorithm import ExactColumn, GroupStats, _rounded, plan_groups, release_planned
from dpspark.mechanisms.groups.columns import GroupColumns
from dpspark.mechanisms.groups.integer_counts import integer_count
from dpspark.mechanisms.groups.writer import exact_texts, groups_table, key_columns
from dpspark.rng import SeededRandom
from dpspark.universe import CategoricalUniverse, IntRangeUniverse, TupleUniverse


@pytest.mark.parametrize("den", [1, 2, 6, 7 * 2**64, 3**45])
def test_exact_texts_are_the_fractions_texts_and_floats(den: int) -> None:
    """Reduced "p/q" (or "p") and the correctly rounded float, as Fraction's own; an unreduced text fails."""
    nums = [0, 1, -1, 2, -3, 6, -12, den, -den, 2 * den + 1, 3**50, -(2**80) - 1, 10**30 * den]
    small = [x for x in nums if abs(x) <= 2**53]  # the numpy way (when den <= 2^53), and the Python-int way
    for xs in (nums, small, [2**53 - 1, -(2**53), 3, 2**53 + 1]):
        texts, floats = exact_texts(xs, den)
        assert texts.type == pa.string() and floats.type == pa.float64()
        assert texts.to_pylist() == [str(Fraction(x, den)) for x in xs]
        assert floats.to_pylist() == [float(Fraction(x, den)) for x in xs]  # report
        if den % 2 == 0:
            assert "2/" + str(den) not in texts.to_pylist()  # the unreduced mutant would show 2/den


def test_rounded_is_integer_count_on_ties_and_negatives() -> None:
    """floor(num u / den + 1/2) in Python ints equals integer_count of the Fraction (ties go up); the
    truncating variant int(num u / den + 1/2) differs on negatives."""
    for num, den in ((5, 2), (1, 1), (3, 4), (7, 10), (1, 3)):
        us = list(range(-25, 26)) + [2**70 + 1, -(2**70) - 1]
        assert _rounded(num, den, us) == [int(integer_count(Fraction(num * u, den))) for u in us]
    assert _rounded(1, 2, [-1, 1]) == [0, 1]  # -1/2 -> 0 and 1/2 -> 1 (ties up); truncation gives 0, 1 too,
    assert _rounded(1, 4, [-3]) == [-1]  # but -3/4 + 1/2 = -1/4 floors to -1, truncates to 0


_SUM = {"kind": "sum", "column": "x", "lo": "0", "hi": "5/2"}
_MEAN = {"kind": "mean", "column": "x", "lo": "0", "hi": "5/2"}
#: (aggregates, pairs) reaching every column-wise form: count, zero, plain, centred, paircount, pairsum
CASES = {
    "count-zero": ([{"name": "n", "kind": "count"}, {"name": "s", **_SUM},
                    {"name": "t", "kind": "sum", "column": "x", "lo": "-2", "hi": "5"}], None),
    "plain-centred": ([{"name": "s", **_SUM}, {"name": "t", **_SUM, "lo": "-1"},
                       {"name": "m", **_MEAN, "lo": "-1"}], False),
    "pairs": ([{"name": "n", "kind": "count"}, {"name": "s", **_SUM}, {"name": "m", **_MEAN}], True),
}


@dataclass
class _PerGroup:
    """The writer's per-group input (as pure_table gives it): GroupValues only, no columns."""

    aggregates: Any
    values: Any


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_column_release_is_the_per_group_release_byte_for_byte(case: str) -> None:
    """A seeded release over 40 public keys (6 without rows): counts and sums as ExactColumns (means per
    group); the table from the columns equals the table from the per-group values, column by column."""
    specs, pairs = CASES[case]
    aggs = parse_aggregates(specs)
    plan = plan_groups(aggs, {"epsilon": "1"}, max_units=400, bounds=Bounds(1, 4), pairs=pairs)
    forms = {n: law.basis.form for n, law in plan.laws.items()}
    stats = []
    for k in range(34):
        n = k % 5
        sums = (n, 2 * n)  # raw (N, T) at each aggregate's scale: inside the public ranges for c = 4
        stats.append(GroupStats(k, {a.name: (n,) if a.kind is Kind.COUNT else sums for a in aggs}))
    keys = list(range(40))
    rel = release_planned(plan, stats, SeededRandom(case.encode()), keys)
    exact = {n for n, f in forms.items() if f in ("count", "plain", "centred", "zero", "pairsum", "paircount")}
    assert exact and {n for n, c in rel.columns.items() if isinstance(c, ExactColumn)} == exact
    for name in exact:
        col = rel.columns[name]
        assert isinstance(col, ExactColumn) and len(col) == 40
        assert [v[name].value for v in rel.values] == [Fraction(x, col.den) for x in col.nums]
        if forms[name] in ("count", "paircount"):  # counts are integers
            assert col.den == 1
    by, types = ["key"], [pa.int64()]
    rows = [(k,) for k in keys]
    fast = groups_table(rel.plan, rel, by, rows, types)
    assert len(set(fast.column(f'{sorted(exact)[0]}').to_pylist())) > 3  # the values differ by group
    slow = groups_table(rel.plan, _PerGroup(rel.plan.aggregates, rel.values), by, rows, types)
    assert fast.schema == slow.schema
    for name in fast.column_names:
        assert fast.column(name).equals(slow.column(name)), name


def test_key_columns_decode_as_key_of() -> None:
    """Column-wise decoding equals the key-by-key decode for one column and for a tuple of three kinds; a
    divmod with the multipliers reversed decodes other keys."""
    cat = CategoricalUniverse(("b", "a", "zz", "é"), column="s")
    ints = CategoricalUniverse((7, -3, 2**40), column="i")
    rng_ = IntRangeUniverse(-2, 4, "r")
    for uni in (cat, ints, rng_, TupleUniverse((cat, ints, rng_))):
        idx = list(range(uni.size))[::-1][: 50]
        types = [p.arrow_type() for p in uni.parts]
        got = key_columns(uni, idx, types)
        assert got is not None
        decoded = [uni.decode(i + 1) for i in idx]
        rows = [tuple(d) if len(uni.parts) > 1 else (d,) for d in decoded]
        for j, (col, t) in enumerate(zip(got, types)):
            assert col.equals(pa.array([r[j] for r in rows], type=t))
    assert key_columns(cat, [], [pa.string()]) is None


def test_the_pass_keeps_its_statistics_column_wise() -> None:
    """The Arrow pass's PassStats is a GroupColumns (no GroupStats per group) that still reads as the list;
    on main it was a list of GroupStats, which cost 4.8 CPU s for 632k groups."""
    from dpspark.mechanisms.groups.arrow_stats import groups_on
    from dpspark.mechanisms.groups.stage import GroupsStage

    aggs = parse_aggregates([{"name": "n", "kind": "count"}])
    uni = CategoricalUniverse(("east", "north", "west"), column="region")
    stage = GroupsStage(("region",), uni, None, 100, 1, 1, aggs)
    got = groups_on(pa.table({"region": ["north", "east", "north", None]}), stage, b"k" * 16)
    assert isinstance(got, GroupColumns) and got.units_read == 3
    assert [(g.key, g.stats["n"]) for g in got] == [(0, (1,)), (1, (2,))]
