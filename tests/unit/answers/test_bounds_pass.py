"""The answers' bounds pre-pass (mechanisms/answers/bounds_pass.py) on the Arrow engine: exact cells of the units'
totals, and its law's sensitivity (adding one unit moves the histogram by at most 1) on the real pre-pass."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pyarrow as pa
import pytest

from dpspark.bounds import CELLS, cell_of
from dpspark.mechanisms.answers.bounds_pass import (PRE_BOUND, PRE_SCALE_BITS, cell_of_total, cells_of_totals,
                                                    pre_scalar, unit_cells_arrow)
from dpspark.mechanisms.answers.queries import parse_query


def _edge_values() -> list[int]:
    from dpspark.bounds.cells import EDGES

    out = [0, 1, -1, 3, 4, 5, -4, -5, PRE_BOUND, -PRE_BOUND]
    for e in EDGES:  # every edge that is an integer in range at the pre-pass scale, and its neighbours
        t = e * (1 << PRE_SCALE_BITS)
        if t.denominator == 1 and abs(t) <= PRE_BOUND:
            out += [int(t) - 1, int(t), int(t) + 1]
    return [t for t in out if abs(t) <= PRE_BOUND]


def test_cell_of_total_is_cells_cell_of_exactly() -> None:
    rng = np.random.default_rng(1)
    values = _edge_values() + [int(x) for x in rng.integers(-PRE_BOUND, PRE_BOUND, 3000)]
    values += [int(x) for x in rng.integers(-5000, 5000, 2000)]
    want = [cell_of(Fraction(t, 1 << PRE_SCALE_BITS)) for t in values]
    assert [cell_of_total(t) for t in values] == want
    assert cells_of_totals(np.array(values, dtype=np.int64)).tolist() == want


def _query() -> object:
    return parse_query({"name": "s", "kind": "sum", "column": "v", "lo": 0, "hi": 1, "filter": "k <> 'x'"}, 0)


def _table(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    v = rng.choice([0.25, 3.0, 70.0, -8.5, 1e12, None], n).tolist()
    return pa.table({"u": rng.integers(0, n // 3, n), "v": pa.array(v, pa.float64()), "k": rng.choice(["a", "x"], n)})


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_unit_moves_the_prepass_histogram_by_at_most_one(seed: int) -> None:
    s = pre_scalar(_query())
    base = _table(600, seed)
    rng = np.random.default_rng(seed + 10)
    extra = pa.table({"u": np.full(50, 10**6), "v": pa.array(rng.choice([0.5, 9.0, 1e15, -3.0], 50), pa.float64()),
                      "k": rng.choice(["a", "x"], 50)})
    h0 = unit_cells_arrow(base, [s], "u")[0]
    h1 = unit_cells_arrow(pa.concat_tables([base, extra.cast(base.schema)]), [s], "u")[0]
    assert len(h0) == CELLS and sum(h0) == len(set(base.column("u").to_pylist()))  # every unit in one cell
    assert sum(abs(a - b) for a, b in zip(h0, h1)) == 1  # the law's sensitivity: exactly one unit, one cell
    rows = unit_cells_arrow(base, [s], None)[0]  # every row a unit
    assert sum(rows) == base.num_rows


def test_prepass_totals_are_the_units_filtered_sums() -> None:
    t = pa.table({"u": [1, 1, 2, 2, 3], "v": [1.5, 2.0, -8.0, None, 5.0], "k": ["a", "a", "a", "a", "x"]})
    h = unit_cells_arrow(t, [pre_scalar(_query())], "u")[0]
    want = [cell_of(Fraction(7, 2)), cell_of(Fraction(-8)), cell_of(Fraction(0))]  # unit 3 filtered out: 0
    assert h == [want.count(j) for j in range(CELLS)]
