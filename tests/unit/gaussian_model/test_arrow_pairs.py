"""The Arrow kernel of the Gaussian pairs against a plain-Python reference on small in-memory tables.

The reference drops NULL units, applies the null rule per row, rounds v 2^b half to even and clamps it to
+-(2^31 - 1) in Python integers, buckets unit u by splitmix_key(xxhash64(u)) mod B (plain Python), and forms
pairs (buckets of exactly two rows), singles (units of one row) and rows alone in their bucket with dicts;
every aggregate is then computed with Python ints.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pytest

from dpspark.engine.arrow.backend import ArrowBackend
from dpspark.engine.numeric import NullRule
from dpspark.mechanisms.gaussian_model.stage import GaussianPairsStage
from dpspark.rng import SeededRandom
from tests.unit.product.test_arrow_rounds import ref_batch

BOUND = (1 << 31) - 1


def ref_fixed(v: float, bits: int) -> int:
    if math.isinf(v):
        return BOUND if v > 0 else -BOUND
    return max(-BOUND, min(BOUND, round(v * (1 << bits))))  # round(): half to even, as numpy's rint


def reference(table: pa.Table, cols: list[str], bits: int, buckets: int, secret: bytes, nulls: NullRule):
    rows = []
    for r in table.to_pylist():
        if r["uid"] is None:
            continue
        vals = [r[c] for c in cols]
        missing = [v is None or (isinstance(v, float) and math.isnan(v)) for v in vals]
        if any(missing) and nulls.drop:
            continue
        vals = [float(nulls.value) if m else v for v, m in zip(vals, missing)]
        rows.append((r["uid"], [ref_fixed(v, bits) for v in vals]))
    per_bucket: dict[int, list[list[int]]] = {}
    per_unit: dict[int, list[list[int]]] = {}
    for u, x in rows:
        per_bucket.setdefault(ref_batch(u, secret, buckets), []).append(x)
        per_unit.setdefault(u, []).append(x)
    pairs = [[a - b for a, b in zip(*xs)] for xs in per_bucket.values() if len(xs) == 2]
    singles = [xs[0] for xs in per_unit.values() if len(xs) == 1]
    alone = [xs[0] for xs in per_bucket.values() if len(xs) == 1]
    return pairs, singles, alone


def apply(m: list[list[int]], x: list[int]) -> list[int]:
    return [sum(a * b for a, b in zip(row, x)) for row in m]


def ref_moments(pairs, m, t):  # type: ignore[no-untyped-def]
    ys = [y for y in (apply(m, p) for p in pairs) if sum(v * v for v in y) <= t]
    d = len(m)
    return len(ys), tuple(sum(y[i] * y[j] for y in ys) for i in range(d) for j in range(i, d))


def ref_bins(rows, m, lo, width, bins):  # type: ignore[no-untyped-def]
    out = [[0] * bins for _ in m]
    for x in rows:
        for j, v in enumerate(apply(m, x)):
            out[j][min(bins - 1, max(0, (v - lo[j]) // width))] += 1
    return out


def ref_centred(rows, m, c, r):  # type: ignore[no-untyped-def]
    return [sum(max(-r, min(r, apply(m, x)[j] - c[j])) for x in rows) for j in range(len(m))]


def ref_clip(y: list[int], t: int) -> list[int]:
    n2 = sum(v * v for v in y)
    if n2 <= t:
        return y
    s, q = math.isqrt(t), math.isqrt(n2 - 1) + 1
    return [(1 if v >= 0 else -1) * (abs(v) * s // q) for v in y]


def ref_clipped(rows, m, c, t):  # type: ignore[no-untyped-def]
    ys = [ref_clip([v - cj for v, cj in zip(apply(m, x), c)], t) for x in rows]
    d = len(m)
    upper = tuple(sum(y[i] * y[j] for y in ys) for i in range(d) for j in range(i, d))
    return upper, [sum(y[j] for y in ys) for j in range(d)]


def table_of(rows: int, seed: int) -> pa.Table:
    g = np.random.default_rng(seed)  # test input only
    uid = [None if g.random() < 0.05 else int(v) for v in g.integers(0, rows * 2 // 3, rows)]
    a = g.normal(0, 4, rows).tolist()
    b = (g.integers(-8, 8, rows) / 4 + 0.125).tolist()  # exact halves: round half to even binds
    for i in g.choice(rows, 8, replace=False):
        a[int(i)] = None
    a[0], a[1], b[2] = float("nan"), float("inf"), -1e300
    return pa.table({"uid": pa.array(uid, pa.int64()), "a": pa.array(a, pa.float64()), "b": pa.array(b)})


@pytest.mark.parametrize("nulls,bits,seed", [(NullRule(None), 2, 1), (NullRule(Fraction(3, 4)), 8, 2),
                                             (NullRule(Fraction(0)), 0, 3)])
def test_pairs_match_python_reference(nulls: NullRule, bits: int, seed: int) -> None:
    table = table_of(400, seed)
    cols = ["a", "b"]
    backend = ArrowBackend(table, SeededRandom(b"g%d" % seed))
    src = backend.compute(GaussianPairsStage(tuple(cols), "uid", bits, 120, 400, nulls))
    pairs, singles, alone = reference(table, cols, bits, 120, backend.batch_secret(), nulls)
    assert src.pair_count() == len(pairs) > 0
    eye, m = [[1, 0], [0, 1]], [[2, -1], [1, 3]]
    for mat, t in ((eye, 10**3 << (2 * bits)), (m, 10**4 << (2 * bits)), (eye, 1 << 70)):
        got = src.second_moments(mat, t)
        assert (got.kept, got.upper) == ref_moments(pairs, mat, t)
    for c, t in (([0, 0], 10**3 << (2 * bits)), ([5, -7], 4 << (2 * bits)), ([1, 1], 1 << 70)):
        upper, sums = ref_clipped(singles, m, c, t)
        assert src.clipped_moments(m, c, t).upper == upper
        assert src.clipped_sums(m, c, t) == sums
    for rows in (singles, alone):
        assert src.single_count() == len(rows) > 0
        lo, width = [-(5 << bits), -(9 << bits)], max(1, 2 << bits)
        assert src.bin_counts(m, lo, width, 8).tolist() == ref_bins(rows, m, lo, width, 8)
        assert src.centred_sums(m, [1, -2], 3 << bits) == ref_centred(rows, m, [1, -2], 3 << bits)
        src.unpaired_singles()
    # passes as the Spark source counts them: the counts too
    assert src.passes == backend.passes_run == 1 + 3 + 2 * 3 + 3 * 2
    src.close()
