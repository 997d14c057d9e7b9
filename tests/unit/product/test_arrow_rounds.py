"""The Arrow kernel of the product rounds against a plain-Python reference on small in-memory tables.

The reference reads each value by the binary rule (non-zero / true is 1, +-inf included; NULL and NaN are the
``nulls`` bit), ORs a unit's rows in a dict, puts unit u in batch splitmix_key(xxhash64(u)) mod B with the
splitmix written out in Python integers, and truncates and sums each round with Python ints.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest

from dpspark.engine.arrow.backend import ArrowBackend
from dpspark.engine.xxhash64 import hash_long
from dpspark.mechanisms.product.rounds import RoundQuery
from dpspark.mechanisms.product.stage import ProductRoundsStage
from dpspark.rng import SeededRandom

M64 = (1 << 64) - 1


def _mix(z: int, k: int) -> int:
    z ^= k
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def ref_batch(unit: int, secret: bytes, batches: int) -> int:
    """H_key(u) mod B of an int64 unit id in plain Python (Spark's pmod of the signed keyed hash)."""
    raw = int(hash_long(np.array([unit], dtype=np.int64))[0])
    h = _mix(_mix(raw, int.from_bytes(secret[:8], "big")), int.from_bytes(secret[8:], "big"))
    return (h - (1 << 64) if h >> 63 else h) % batches


def ref_bit(v: object, nulls: int) -> int:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return nulls
    return int(v != 0)


def reference(table: pa.Table, cols: list[str], secret: bytes, batches: int, nulls: int,
              query: RoundQuery) -> list[int]:
    rec: dict[int, list[int]] = {}
    for row in table.to_pylist():
        if row["uid"] is None:
            continue
        bits = [ref_bit(row[c], nulls) for c in cols]
        old = rec.setdefault(row["uid"], [0] * len(cols))
        rec[row["uid"]] = [a | b for a, b in zip(old, bits)]
    out = [0] * len(query.active)
    units = 0
    for u, bits in rec.items():
        if not query.batch_lo <= ref_batch(u, secret, batches) < query.batch_hi:
            continue
        units += 1
        y = [bits[j] ^ int(f) for j, f in zip(query.active, query.flip)]
        start = 0
        for size, cap in query.parts:  # each group truncated at its own ceiling
            part = y[start:start + size]
            if sum(part) > cap:
                y[start:start + size] = [0] * size
            start += size
        out = [a + b for a, b in zip(out, y)]
    return out + [units] if query.count else out


def small_table(rows: int, d: int, seed: int) -> pa.Table:
    g = np.random.default_rng(seed)  # test input only
    uid = [None if g.random() < 0.05 else int(v) for v in g.integers(-40, 40, rows)]
    cols: dict[str, pa.Array] = {"uid": pa.array(uid, pa.int64())}
    for j in range(d):
        vals = g.choice([0.0, 0.0, 1.0, -2.5, float("inf"), float("nan"), None], rows).tolist()
        if j % 3 == 0:
            cols[f"x{j}"] = pa.array([None if v is None or v != v else v != 0 for v in vals], pa.bool_())
        elif j % 3 == 1:
            cols[f"x{j}"] = pa.array([None if v is None or v != v or math.isinf(v) else int(v) for v in vals], pa.int64())
        else:
            cols[f"x{j}"] = pa.array(vals, pa.float64())
    return pa.table(cols)


@pytest.mark.parametrize("d,nulls,seed", [(5, 0, 1), (67, 1, 2), (130, 0, 3)])
def test_rounds_match_python_reference(d: int, nulls: int, seed: int) -> None:
    table = small_table(300, d, seed)
    cols = [f"x{j}" for j in range(d)]
    backend = ArrowBackend(table, SeededRandom(b"ref%d" % seed))
    oracle = backend.compute(ProductRoundsStage(tuple(cols), "uid", 8, None, nulls))
    secret = backend.batch_secret()
    g = np.random.default_rng(seed)
    seen = 0
    for i, (lo, hi) in enumerate([(0, 3), (3, 4), (4, 8), (0, 8)]):
        size = int(g.integers(1, d + 1))
        active = tuple(sorted(g.choice(d, size, replace=False).tolist()))
        flip = tuple(bool(v) for v in g.random(size) < 0.4)
        q = RoundQuery(i, f"r{i}", active, flip, int(g.integers(0, size + 1)), lo, hi, 8)
        got = oracle(q)
        assert got == reference(table, cols, secret, 8, nulls, q)
        seen += sum(got)
        # the same slice in groups, each at its own ceiling, with the unit count
        cut = int(g.integers(0, size + 1))
        parts = tuple((s, int(g.integers(0, s + 1))) for s in (cut, size - cut) if s)
        grouped = RoundQuery(i, f"g{i}", active, flip, 0, lo, hi, 8, groups=parts, count=True)
        assert oracle(grouped) == reference(table, cols, secret, 8, nulls, grouped)
    assert seen > 0 and backend.passes_run == 8
    oracle.close()


def test_array_form_matches_named_columns() -> None:
    """An array column gives the words of the same bits as named columns (short and NULL arrays are missing)."""
    g = np.random.default_rng(5)
    rows, d = 200, 7
    bits = (g.random((rows, d)) < 0.4).astype(np.int64)
    lengths = g.integers(0, d + 2, rows)
    arr = [None if n == 0 else bits[i, : n - 1].tolist() for i, n in enumerate(lengths)]
    named = {f"x{j}": pa.array([None if lengths[i] - 1 <= j else int(bits[i, j]) for i in range(rows)], pa.int64())
             for j in range(d)}
    uid = pa.array(g.integers(0, 60, rows), pa.int64())
    for nulls in (0, 1):
        q = RoundQuery(0, "all", tuple(range(d)), (False,) * d, d, 0, 4, 4)
        a = ArrowBackend(pa.table({"uid": uid, "arr": pa.array(arr, pa.list_(pa.int8()))}), SeededRandom(b"a"))
        b = ArrowBackend(pa.table({"uid": uid, **named}), SeededRandom(b"a"))
        sa = a.compute(ProductRoundsStage(tuple(f"arr[{j}]" for j in range(d)), "uid", 4, "arr", nulls))(q)
        sb = b.compute(ProductRoundsStage(tuple(named), "uid", 4, None, nulls))(q)
        assert sa == sb and sum(sa) > 0


def test_missing_column_is_refused_by_name() -> None:
    from dpspark.engine.errors import InputError

    backend = ArrowBackend(pa.table({"uid": [1, 2], "x0": [0, 1]}), SeededRandom(b"m"))
    with pytest.raises(InputError, match="no column.*'x1'"):
        backend.compute(ProductRoundsStage(("x0", "x1"), "uid", 4))
