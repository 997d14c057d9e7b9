"""The Spark groups kernel's partition and driver steps, run on Arrow batches without Spark.

Rows are split into "partitions" by unit (as ``repartition(unit)`` does), each partition runs
:func:`~dpspark.mechanisms.groups.spark_stats.partition_stats`, the rows are summed per (index, stat, shift)
as the Spark ``groupBy`` does (Python ints here), and the driver step must give the plain-Python reference
and the Arrow kernel. The truncation thresholds are computed here from the reference's own order.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from dpspark.engine.arrow.counts import spark_hash
from dpspark.engine.keyed import keyed_mix
from dpspark.mechanisms.groups import core, parts, spark_stats
from dpspark.mechanisms.groups.arrow_stats import groups_on
from dpspark.mechanisms.groups.spark_stats import (INDEX, OUTSIDE, SHIFT, STAT, UNIT_HASH, VALUE, RowCut,
                                                   UnitCut, partition_stats, summed_stats)
from tests.unit.groups import reference_stats
from tests.unit.groups.reference_stats import reference
from tests.unit.groups.test_stats_arrow import CASES, SECRET, arrow, stage, table


def _signed(u: int) -> int:
    return u - (1 << 64) if u >= 1 << 63 else u


def _with_unit_hash(tab: pa.Table, st: Any, hashes: dict[Any, int] | None = None) -> pa.Table:
    """The Spark job's rows: NULL keys and units dropped, UNIT_HASH = xxhash64(unit) (or ``hashes``)."""
    import pyarrow.compute as pc

    for c in [*st.key_columns, *([st.unit_column] if st.unit_column else [])]:
        tab = tab.filter(pc.is_valid(tab.column(c)))
    if st.unit_column is None:
        return tab
    units = tab.column(st.unit_column)
    h = spark_hash(units).view(np.int64)
    if hashes:
        h = np.array([hashes.get(u, x) for u, x in zip(units.to_pylist(), h.tolist())], dtype=np.int64)
    return tab.append_column(UNIT_HASH, pa.array(h, pa.int64()))


def _run(tab: pa.Table, st: Any, partitions: int = 3, ucut: UnitCut | None = None,
         rcut: RowCut | None = None, batch: int = 37) -> tuple[list[Any], list[pa.RecordBatch]]:
    """partition_stats per partition (whole units), the groupBy sum in Python ints, the driver step."""
    if st.unit_column is not None:
        part_of = np.array([hash(u) % partitions for u in tab.column(st.unit_column).to_pylist()])
    else:
        part_of = np.arange(tab.num_rows) % partitions
    emitted = []
    for p in range(partitions):
        sub = tab.filter(pa.array(part_of == p))
        emitted += list(partition_stats(st, SECRET, ucut, rcut)(iter(sub.to_batches(max_chunksize=batch))))
    sums: dict[tuple[bytes, int, int], int] = {}
    for b in emitted:
        for w, s, h, v in zip(*(b.column(c).to_pylist() for c in (INDEX, STAT, SHIFT, VALUE))):
            sums[(w, s, h)] = sums.get((w, s, h), 0) + v
    keys = list(sums)
    summed = pa.table({INDEX: pa.array([k[0] for k in keys], pa.binary()),
                       STAT: pa.array([k[1] for k in keys], pa.int32()),
                       SHIFT: pa.array([k[2] for k in keys], pa.int32()),
                       VALUE: pa.array([sums[k] for k in keys], pa.int64())})
    return summed_stats(summed, st, SECRET, rcut), emitted


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("case", [i for i, c in enumerate(CASES) if c.get("max_units", 100) >= 100])
def test_partitions_equal_the_reference(seed: int, case: int) -> None:
    rows = table(seed)
    st = stage(**CASES[case])
    got, emitted = _run(_with_unit_hash(arrow(rows), st), st)
    assert got == reference(rows, st, SECRET) == groups_on(arrow(rows), st, SECRET)
    for b in emitted:  # one row per (index, stat, shift) per partition, |value| < 2^32: the int64 sum is safe
        v = np.asarray(b.column(VALUE).to_numpy())
        assert (np.abs(v) < 1 << 32).all() and (v != 0).all()
        ks = list(zip(*(b.column(c).to_pylist() for c in (INDEX, STAT, SHIFT))))
        assert len(set(ks)) == len(ks)


def _unit_ranks(tab: pa.Table, st: Any) -> list[tuple[int, int, Any]]:
    """(keyed hash, unit hash, unit) of every unit, ascending: the truncation order."""
    units = sorted(set(tab.column(st.unit_column).to_pylist()))
    uh = dict(zip(tab.column(st.unit_column).to_pylist(), tab.column(UNIT_HASH).to_pylist()))
    key = spark_stats.truncation_key(SECRET)
    return sorted((_signed(int(keyed_mix(np.array([uh[u]], np.int64).view(np.uint64), key)[0])), uh[u], u)
                  for u in units)


def test_unit_cut_keeps_the_first_n_units() -> None:
    rows = table(4)
    st = stage(max_units=5)
    tab = _with_unit_hash(arrow(rows), st)
    th, tu, _ = _unit_ranks(tab, st)[4]
    got, _ = _run(tab, st, ucut=UnitCut(th, tu, (_unit_ranks(tab, st)[4][2],)))
    assert got == reference(rows, st, SECRET) == groups_on(arrow(rows), st, SECRET)
    wrong = _unit_ranks(tab, st)[5]  # mutant: a threshold one unit too far
    assert _run(tab, st, ucut=UnitCut(wrong[0], wrong[1], (wrong[2],)))[0] != got


def test_an_xxhash64_collision_at_the_boundary_keeps_exactly_n_units(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = table(6)
    st = stage(max_units=6)
    plain = _with_unit_hash(arrow(rows), st)
    ranks = _unit_ranks(plain, st)
    # unit b takes the xxhash64 of unit a, a at the boundary: both sit at the n-th pair (the reference
    # breaks ties by repr, so b is chosen where repr order is value order)
    a = ranks[5][2]
    b = next(u for _h, _uh, u in ranks[7:] if (u < a) == (repr(u) < repr(a)))
    forced = {b: ranks[5][1]}
    tab = _with_unit_hash(arrow(rows), st, forced)
    ranks = _unit_ranks(tab, st)
    assert ranks[5][:2] == ranks[6][:2] and {ranks[5][2], ranks[6][2]} == {a, b}
    first = min(a, b)  # of the tied units, the first by value is kept
    got, _ = _run(tab, st, ucut=UnitCut(ranks[5][0], ranks[5][1], (first,)))
    real = spark_hash

    def colliding(values: Any, *args: Any, **kw: Any) -> np.ndarray:
        out = real(values, *args, **kw)
        vals = values.to_pylist() if hasattr(values, "to_pylist") else list(values)
        for i, u in enumerate(vals):
            if u in forced:
                out[i] = np.int64(forced[u]).view(np.uint64)
        return out

    monkeypatch.setattr(reference_stats, "spark_hash", colliding)  # the reference sorts ties by value (repr)
    assert got == reference(rows, st, SECRET)
    both = UnitCut(ranks[5][0], ranks[5][1], (a, b))  # mutant: both tied units kept (7 units)
    assert _run(tab, st, ucut=both)[0] != got


def _row_order(tab: pa.Table, st: Any) -> list[tuple]:
    """(row hash, index word, bits) of every in-universe row, ascending: the row truncation order."""
    part, _ = spark_stats._part(tab, st, SECRET, UnitCut.keep_all())
    h, words, bits = spark_stats._row_keys(part, st, SECRET)
    return sorted((int(h[i]), words[i].tobytes(), *(int(b[i]) for b in bits)) for i in range(part.rows))


@pytest.mark.parametrize("where", ["first", "inside", "last", "after"])
def test_row_cut_with_copies_of_the_boundary_row(where: str) -> None:
    rng = random.Random(5)
    rows = table(7, rows=80, oov=False)
    for r in rows[:30]:  # 30 identical rows: the n-th row is one of them, or not
        r.update(k="b", x=2.5, y=None)
    rng.shuffle(rows)
    tab = _with_unit_hash(arrow(rows), stage(unit_column=None))
    order = _row_order(tab, stage(unit_column=None))
    same = [i for i, o in enumerate(order) if o == order[[j for j, p in enumerate(order)
                                                          if order.count(p) == 30][0]]]
    n = {"first": same[0] + 1, "inside": same[0] + 12, "last": same[-1] + 1, "after": same[-1] + 2}[where]
    if n > len(order):
        n = len(order) - 1
    st = stage(unit_column=None, max_units=n)
    last = order[n - 1]
    from dpspark.mechanisms.groups.arrow_pass import cut_bins

    cut = RowCut(int(cut_bins(np.array([last[0]], np.int64))[0]), last[0], last[1], tuple(last[2:]), True)
    got, _ = _run(tab, st, rcut=cut)
    assert got == reference(rows, st, SECRET) == groups_on(arrow(rows), st, SECRET)
    assert sum(g.stats["n"][0] for g in got) == n


def test_outside_the_universe_is_one_value_free_flag() -> None:
    rows = table(2)
    st = stage(out_of_universe="error")
    tab = _with_unit_hash(arrow(rows), st)
    emitted = list(partition_stats(st, SECRET)(iter(tab.to_batches(max_chunksize=50))))
    assert [b.to_pydict() for b in emitted] == [{INDEX: [b""], STAT: [OUTSIDE], SHIFT: [0], VALUE: [1]}]
    from dpspark.engine.errors import CuratorError

    with pytest.raises(CuratorError) as err:
        _run(tab, st)
    assert "zz" not in str(err.value)
    clean = table(2, oov=False)
    assert _run(_with_unit_hash(arrow(clean), st), st)[0] == reference(clean, stage(), SECRET)


def test_text_values_read_as_on_arrow() -> None:
    rows = table(8)
    text = [{**r, "x": None if r["x"] is None else repr(r["x"]),
             "y": None if r["y"] is None else f" {r['y']}"} for r in rows]
    for r, t in zip(text[:6], ["1e400", "-1e400", "NaN", "abc", "+.5", "-0"]):
        r["x"] = t
    st = stage()
    tab = arrow(text, {"x": pa.string(), "y": pa.string()})
    got, _ = _run(_with_unit_hash(tab, st), st)
    assert got == groups_on(tab, st, SECRET)


def test_lex_below_and_carry() -> None:
    keys = [np.array([1, 1, 1, 2, 0], np.int64), np.array([5, 6, 4, 0, 9], np.uint64)]
    assert parts.lex_below(keys, [1, 5]).tolist() == [False, False, True, False, True]
    assert parts.lex_below(keys, [1, 5], or_equal=True).tolist() == [True, False, True, False, True]
    rng = random.Random(1)
    for _ in range(200):
        n = rng.randint(0, 40)
        g = np.array([rng.randrange(3) for _ in range(n)], np.int64)
        st = np.array([rng.randrange(2) for _ in range(n)], np.int64)
        sh = np.array([rng.choice([0, 21, 32, 42, 64]) for _ in range(n)], np.int64)
        v = np.array([rng.randint(-(1 << 32) + 1, (1 << 32) - 1) for _ in range(n)], np.int64)
        G, S, H, V = core.carry(g, st, sh, v)

        def total(*cols: np.ndarray) -> dict[tuple[int, int], int]:
            out: dict[tuple[int, int], int] = {}
            for a, b, c, x in zip(*(x.tolist() for x in cols)):
                out[(a, b)] = out.get((a, b), 0) + (x << c)
            return {k: x for k, x in out.items() if x}

        assert total(g, st, sh, v) == total(G, S, H, V)
        assert len(set(zip(G.tolist(), S.tolist(), H.tolist()))) == len(G)
        assert (np.abs(V) < 1 << 32).all() and (V != 0).all()


def _sum_rows(emitted: list[pa.RecordBatch], keys: list[str]) -> pa.Table:
    """The Spark ``groupBy(keys).agg(sum(VALUE))`` of emitted batches, in Python ints."""
    sums: dict[tuple, int] = {}
    for b in emitted:
        for row in zip(*(b.column(c).to_pylist() for c in keys + [VALUE])):
            sums[row[:-1]] = sums.get(row[:-1], 0) + row[-1]
    cols = {k: [key[i] for key in sums] for i, k in enumerate(keys)}
    types = {INDEX: pa.binary()}
    return pa.table({**{k: pa.array(v, types.get(k, pa.int32())) for k, v in cols.items()},
                     VALUE: pa.array(list(sums.values()), pa.int64())})


def _two_reads(tab: pa.Table, st: Any, partitions: int = 3, batch: int = 37) -> list[Any]:
    """spark_rows' two reads per partition, Spark's sum in Python ints, and its driver steps."""
    from dpspark.mechanisms.groups import spark_rows
    from dpspark.mechanisms.groups.arrow_pass import CUT_BITS

    split = [tab.filter(pa.array(np.arange(tab.num_rows) % partitions == p)) for p in range(partitions)]
    first = [b for sub in split
             for b in spark_rows.first_read(st, SECRET)(iter(sub.to_batches(max_chunksize=batch)))]
    table = _sum_rows(first, [INDEX, spark_rows.BIN, STAT, SHIFT])
    c, left = spark_rows.coarse_cut(table, st)
    edge = [b for sub in split for b in spark_stats.row_keys_of(st, SECRET, c, CUT_BITS - spark_rows.COARSE_BITS)(
        iter(sub.to_batches(max_chunksize=batch)))]
    return spark_rows.combined(table, pa.Table.from_batches(edge), c, left, st, SECRET)


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("n", [1, 7, 40, 79, 80, 10_000])
def test_rows_as_units_in_two_reads_equal_the_reference(seed: int, n: int) -> None:
    """The two-read rows-as-units path keeps exactly rule 3's first n rows (30 identical rows: the n-th is one
    of them, or not), whatever n: the same statistics as the reference and the Arrow engine."""
    rows = table(seed + 7, rows=80, oov=False)
    for r in rows[:30]:
        r.update(k="b", x=2.5, y=None)
    random.Random(seed).shuffle(rows)
    st = stage(unit_column=None, max_units=n)
    tab = _with_unit_hash(arrow(rows), st)  # the rows with a key (a NULL key is dropped)
    got = _two_reads(tab, st)
    assert got == reference(rows, st, SECRET) == groups_on(arrow(rows), st, SECRET)
    assert sum(g.stats["n"][0] for g in got) == min(n, tab.num_rows)


def test_rows_as_units_in_two_reads_take_the_same_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rule 4: the same calls whether the input holds more rows than max_units or not (every coarse bin reduced,
    the second read hashing every row)."""
    from unittest import mock

    from dpspark.mechanisms.groups import arrow_pass

    spies = mock.Mock()  # its mock_calls: the wrapped calls in order
    for name in ("row_keys", "reduce_batch"):
        spies.attach_mock(mock.Mock(wraps=getattr(arrow_pass, name)), name)
        monkeypatch.setattr(arrow_pass, name, getattr(spies, name))
    rows = table(3, rows=120, oov=False)
    traces = []
    for n in (5, 10_000):
        spies.reset_mock()
        st = stage(unit_column=None, max_units=n)
        got = _two_reads(_with_unit_hash(arrow(rows), st), st)
        traces.append([c[0] for c in spies.mock_calls])
        assert got == groups_on(arrow(rows), st, SECRET)
    # per partition (one chunk each): one hash and 16 coarse bins reduced; then one hash per partition again
    assert traces[0] == traces[1] == (["row_keys"] + ["reduce_batch"] * 16) * 3 + ["row_keys"] * 3
