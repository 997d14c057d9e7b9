"""GroupColumns reads as the list of GroupStats it replaces; gather gives the release's columns exactly."""

from __future__ import annotations

import numpy as np

from dpspark.mechanisms.groups.aggregates import parse_aggregates
from dpspark.mechanisms.groups.algorithm import GroupStats
from dpspark.mechanisms.groups.columns import GroupColumns, gather

AGGS = parse_aggregates([{"name": "n", "kind": "count"},
                         {"name": "s", "kind": "sum", "column": "x", "lo": "0", "hi": "1"},
                         {"name": "q", "kind": "quantile", "column": "x", "lo": "0", "hi": "1", "q": "1/2", "bins": 2}])


def _both() -> tuple[GroupColumns, list[GroupStats]]:
    big = (1 << 70) + 5  # a Python-int slot (the decode's slow path)
    cols = GroupColumns([3, 7], ["n", "s", "q"],
                        {"n": [np.array([2, 1], dtype=np.int64)],
                         "s": [np.array([2, 1], dtype=np.int64), np.array([big, 200], dtype=object)]},
                        {"q": [(1, 0, 1), (0, 1, 0)]}, [2, 1])
    rows = [GroupStats(3, {"n": (2,), "s": (2, big), "q": (1, 0, 1)}, 2),
            GroupStats(7, {"n": (1,), "s": (1, 200), "q": (0, 1, 0)}, 1)]
    return cols, rows


def test_reads_as_the_list_of_group_stats() -> None:
    cols, rows = _both()
    assert cols == rows and rows == cols and list(cols) == rows
    assert cols[-1] == rows[-1] and cols[0:1] == rows[0:1] and len(cols) == 2
    assert GroupColumns([], ["n"], {"n": [np.zeros(0, dtype=np.int64)]}, {}, None) == []
    assert cols != rows[:1]


def test_gather_is_the_same_from_either_form_and_fills_missing_keys_with_zeros() -> None:
    cols, rows = _both()
    for keys in (None, [7, 9, 3]):
        a, b = gather(cols, AGGS, 1 << 62, keys), gather(rows, AGGS, 1 << 62, keys)  # wide bounds: Python ints
        assert a.keys == b.keys and a.cells == b.cells
        assert a.units == b.units or keys is not None
        for name in ("n", "s"):
            assert [c.tolist() for c in a.raw[name]] == [c.tolist() for c in b.raw[name]]
    g = gather(cols, AGGS, 1 << 62, [9])
    assert g.raw["n"][0].tolist() == [0] and g.cells["q"] == [(0, 0, 0)]
    import pytest

    from dpspark.mechanisms.groups.aggregates import GroupsError

    with pytest.raises(GroupsError, match="no value is shown"):  # 2^70 cannot be a sum of 10 rows
        gather(cols, AGGS, 10)


def test_positions_and_absent_keys_by_binary_search_equal_the_dictionary_way() -> None:
    """int64 keys found by binary search, wide (Python-int) or unsorted keys by a dictionary: the same
    positions (len where absent) and the same count of groups outside the list; an off-by-one search fails."""
    from dpspark.mechanisms.groups.columns import count_absent, positions

    big = 1 << 70
    for have, want in (([2, 5, 9, 40], [9, 1, 40, 41, 2, 6]), ([2, 5, big], [big, 5, 3]), ([5, 2], [2, 5, 7]),
                       ([], [1, 2]), ([3], [])):
        where = {k: i for i, k in enumerate(have)}
        assert positions(have, want).tolist() == [where.get(k, len(have)) for k in want]
        assert count_absent(have, want) == sum(1 for k in have if k not in set(want))
