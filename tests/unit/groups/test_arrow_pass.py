"""The batch-wise rows-as-units path on Arrow (issue 35 §2): equal to the plain-Python reference in many
batches, from Parquet with text keys read as dictionaries, with limbs, quantiles, NULLs and the row cut."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpspark.engine.arrow.inputs import open_dataset
from dpspark.engine.errors import CuratorError
from dpspark.mechanisms.groups import arrow_pass
from dpspark.mechanisms.groups.aggregates import parse_aggregates
from dpspark.mechanisms.groups.arrow_stats import groups_on
from dpspark.mechanisms.groups.stage import GroupsStage
from dpspark.universe import CategoricalUniverse, TupleUniverse
from tests.unit.groups.reference_stats import reference
from tests.unit.groups.test_stats_arrow import AGGS, SECRET, _value, arrow, stage, table

WIDE = parse_aggregates([  # |L|, |H| x 2^scale_bits >= 2^43: a batch's sums need limbs (BATCH_ROWS x bound >= 2^63)
    {"name": "n", "kind": "count"},
    {"name": "s", "kind": "sum", "column": "x", "lo": str(-(2 ** 41)), "hi": str(2 ** 42), "scale_bits": 8},
    {"name": "v", "kind": "variance", "column": "x", "lo": str(-(2 ** 41)), "hi": str(2 ** 42), "scale_bits": 8},
    {"name": "w", "kind": "variance", "column": "y", "lo": "0", "hi": "1000", "scale_bits": 20},
])


def _parquet(tmp_path: Path, rows: list[dict[str, Any]], types: dict[str, pa.DataType], group: int = 17) -> Any:
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({c: pa.array([r[c] for r in rows], t) for c, t in types.items()}), path,
                   row_group_size=group)
    return open_dataset(str(path))[0]


@pytest.mark.parametrize("seed", range(3))
def test_batches_equal_the_reference(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, seed: int) -> None:
    monkeypatch.setattr(arrow_pass, "BATCH_ROWS", 23)  # many batches, each with its own keys
    rows = table(seed, rows=400)
    data = _parquet(tmp_path, rows, {"k": pa.string(), "u": pa.int64(), "x": pa.float64(), "y": pa.float64()})
    assert pa.types.is_dictionary(arrow_pass.dictionary_reader(data, stage(unit_column=None)).schema.field("k").type)
    for st in (stage(unit_column=None, max_units=10_000), stage(unit_column=None, max_units=10_000, nulls=()),
               stage(unit_column=None, max_units=10_000, aggregates=WIDE, nulls=())):
        assert arrow_pass.eligible(st)
        assert groups_on(data, st, SECRET) == reference(rows, st, SECRET)
        assert groups_on(arrow(rows), st, SECRET) == reference(rows, st, SECRET)


def test_wide_bounds_use_limbs_and_stay_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(4)
    rows = [{"k": rng.choice("abcdef"), "u": 0, "x": rng.choice([2.0 ** 42, -(2.0 ** 41), 1e30, None, 3.25]),
             "y": rng.choice([999.999, 0.5, None])} for _ in range(300)]
    st = stage(unit_column=None, max_units=10_000, aggregates=WIDE, nulls=())
    assert len(arrow_pass.limbs(pa.array([1]).to_numpy(), 1 << 50)) > 1
    monkeypatch.setattr(arrow_pass, "BATCH_ROWS", 64)
    assert groups_on(arrow(rows), st, SECRET) == reference(rows, st, SECRET)


def test_three_text_key_columns_from_parquet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(arrow_pass, "BATCH_ROWS", 50)
    rng = random.Random(11)
    a, b, c = ("n", "s", "e"), ("r", "o"), ("p1", "p2", "p3", "zz")
    rows = [{"a": rng.choice(a + (None,)), "b": rng.choice(b), "c": rng.choice(c), "x": _value(rng),
             "y": _value(rng)} for _ in range(500)]
    uni = TupleUniverse((CategoricalUniverse(a, "a"), CategoricalUniverse(b, "b"), CategoricalUniverse(c[:3], "c")))
    st = GroupsStage(("a", "b", "c"), uni, None, 10_000, 1, 1, AGGS, count_units=True)
    data = _parquet(tmp_path, rows, {"a": pa.string(), "b": pa.string(), "c": pa.string(), "x": pa.float64(),
                                     "y": pa.float64()})
    assert groups_on(data, st, SECRET) == reference(rows, st, SECRET)
    with pytest.raises(CuratorError) as err:
        groups_on(data, GroupsStage(("a", "b", "c"), uni, None, 10_000, 1, 1, AGGS, out_of_universe="error"), SECRET)
    assert "zz" not in str(err.value)


@pytest.mark.parametrize("bits", [2, 16])
def test_row_cut_in_the_batch_pass_equals_the_reference(monkeypatch: pytest.MonkeyPatch, bits: int) -> None:
    """Rule 3's row cut is applied by the batch pass itself (no fallback to a whole-input read), exactly, for n
    below, at and above the in-universe rows; coarse bins (2 bits) put many rows and ties in the cut's bin."""
    monkeypatch.setattr(arrow_pass, "BATCH_ROWS", 31)
    monkeypatch.setattr(arrow_pass, "CUT_BITS", bits)
    rows = table(3, rows=300)
    rows += [dict(rows[0]) for _ in range(25)]  # identical rows: equal keyed row hashes (ties in the cut order)
    for n in (1, 40, 150, 299, 10_000):
        st = stage(unit_column=None, max_units=n)
        got = arrow_pass.rows_pass(arrow(rows), st, SECRET)
        assert got == reference(rows, st, SECRET)
        assert groups_on(arrow(rows), st, SECRET) == got


def test_the_row_cut_runs_whatever_the_row_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """One code path (rule 4): the same steps run, batch for batch, whether the input holds fewer or more
    in-universe rows than max_units (the cut always runs; it keeps everything when nothing is over n)."""
    monkeypatch.setattr(arrow_pass, "BATCH_ROWS", 37)
    calls: list[str] = []
    for name in ("row_keys", "reduce_batch"):
        real = getattr(arrow_pass, name)

        def spy(*a: Any, _real: Any = real, _name: str = name, **k: Any) -> Any:
            calls.append(_name)
            return _real(*a, **k)

        monkeypatch.setattr(arrow_pass, name, spy)
    rows = table(5, rows=200)
    trace = []
    for n in (10, 10_000):
        calls.clear()
        st = stage(unit_column=None, max_units=n)
        assert groups_on(arrow(rows), st, SECRET) == reference(rows, st, SECRET)
        trace.append(list(calls))
    assert trace[0] == trace[1] and trace[0].count("row_keys") == 2 * -(-200 // 37)


def test_the_data_pass_is_batch_wise(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows as units never read the whole input as one table (memory O(keys + batch), issue 35 §2)."""
    import dpspark.engine.arrow.inputs as inputs

    def whole(*_a: Any, **_k: Any) -> None:
        raise AssertionError("the whole input was read as one table")

    monkeypatch.setattr(inputs, "scan_table", whole)
    monkeypatch.setattr(arrow_pass, "BATCH_ROWS", 40)
    rows = table(6, rows=200)
    st = stage(unit_column=None, max_units=10_000)
    assert groups_on(arrow(rows), st, SECRET) == reference(rows, st, SECRET)


@pytest.mark.parametrize("seed", range(2))
def test_units_read_text_keys_as_dictionaries(tmp_path: Path, seed: int) -> None:
    """With a unit column (the whole-input path), Parquet text keys are read as one unified dictionary per column
    and its indices are the key ids (no string hashed per row): the same statistics as the reference."""
    rng = random.Random(seed)
    a, b = ("n", "s", "e", "zz"), ("r", "o", "p")
    rows = [{"a": rng.choice(a + (None,)), "b": rng.choice(b), "u": rng.randrange(30), "x": _value(rng),
             "y": _value(rng)} for _ in range(600)]
    uni = TupleUniverse((CategoricalUniverse(a[:3], "a"), CategoricalUniverse(b, "b")))
    data = _parquet(tmp_path, rows, {"a": pa.string(), "b": pa.string(), "u": pa.int64(), "x": pa.float64(),
                                     "y": pa.float64()}, group=37)
    st = GroupsStage(("a", "b"), uni, "u", 20, 2, 3, AGGS, count_units=True)
    assert not arrow_pass.eligible(st)
    assert groups_on(data, st, SECRET) == reference(rows, st, SECRET)


def test_batches_a_filter_empties_take_the_same_steps() -> None:
    """No shortcut for an empty batch: the reduction of zero rows is a Reduced with nothing in it."""
    st = stage(unit_column=None, max_units=10_000)
    empty = arrow(table(1))[:0].select(["k", "x", "y"])
    red = arrow_pass.reduce_batch(empty, st, arrow_pass.quantile_thresholds(st))
    assert red.rows == 0 and len(red.words) == 0 and not red.outside


def test_row_keys_hash_is_the_row_hash_of_the_stage() -> None:
    """The cut's per-row hash (index word hashed once per key, the chain in place) is core.row_hash as defined:
    xxhash64 over (42, word, each value's bits), then keyed_mix (the Spark engine's and the golden's order)."""
    import numpy as np

    from dpspark.engine.keyed import keyed_mix
    from dpspark.engine.xxhash64 import hash_fixed, hash_long
    from dpspark.mechanisms.groups import core

    rows = [r for r in table(8, rows=300) if r["k"] is not None]  # the pass drops NULL keys before (rule 1)
    st = stage(unit_column=None, max_units=10)
    keyed = arrow_pass.row_keys(arrow(rows), st, SECRET)
    x = {c: np.array([rows[i][c] if rows[i][c] is not None else np.nan for i in keyed.rows], dtype=np.float64)
         for c in st.value_columns}
    h = hash_fixed(keyed.words, seed=42)
    for c in st.value_columns:
        h = hash_long(core.value_bits(x[c]), seed=h)
    assert len(keyed.rows) > 100 and np.array_equal(keyed.hash, keyed_mix(h, core.row_key(SECRET)).view(np.int64))


@pytest.mark.parametrize("n", [0, 1, 7, 50, 199, 200, 10_000])
def test_first_n_is_the_first_n_of_the_full_sort(n: int) -> None:
    """The units' cut (every unit kept at most n: always run, rule 4) keeps exactly lexsort((tie, ranked))[:n],
    ties in ranked (many) and in both (position order) included."""
    import numpy as np

    from dpspark.engine.arrow.counts import first_n

    rng = np.random.default_rng(n)
    ranked = rng.integers(0, 20, 200).astype(np.int64)
    tie = rng.integers(0, 5, 200).astype(np.int64)
    want = np.zeros(200, dtype=bool)
    want[np.lexsort((tie, ranked))[:n]] = True
    assert np.array_equal(first_n(ranked, tie, n), want)


def test_a_read_failure_is_a_fixed_error_without_context(tmp_path: Path) -> None:
    """Rule 4: the reader's exception is data; the pass's InputError carries no __cause__ and no __context__."""
    import numpy as np
    import pyarrow.parquet as pq

    from dpspark.engine.errors import InputError

    path = tmp_path / "damaged.parquet"
    pq.write_table(pa.table({"g": np.arange(200_000) % 7, "x": np.linspace(0, 1, 200_000)}), path)
    raw = bytearray(path.read_bytes())
    for i in range(100, len(raw) // 2, 7):  # damage the data pages, keep the footer (the dataset opens)
        raw[i] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(InputError) as got:
        for _ in arrow_pass._batches(str(path), ["g", "x"]):
            pass
    assert got.value.__cause__ is None and got.value.__context__ is None
