"""The numpy filter masks (answers' Arrow and Spark kernels) equal the predicate module's Arrow masks, and the
shared per-batch arithmetic (sorted groups, per-unit runs across chunks) equals its plain definition.

Deterministic: fixed seeds and hand-picked hostile values (NULL, NaN, +-inf, -0.0, text that is not a
number, quotes, non-ASCII); no statistical test here.
"""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pytest

from dpspark.engine.predicate import parse_predicate
from dpspark.mechanisms.answers.arrow_masks import ArrowRows, filter_mask
from dpspark.mechanisms.answers.queries import parse_queries, scalars_of

N = 300
XS = [1.5, -2.5, 0.5, 2.5, -0.0, 0.0, float("nan"), float("inf"), float("-inf"), None, 1e300, 3.0, -1.0, 7.25]
TS = ["1.5", "abc", "", " 3", "-0", "1e400", None, "2", "0.5", "x1", "+4", ".5"]
GS = ["a", "b", "b'c", "é", "Z", None, "", "ab"]
BS = [True, False, None]


def table() -> pa.Table:
    rng = random.Random(5)
    return pa.table({
        "x": pa.array([rng.choice(XS) for _ in range(N)], pa.float64()),
        "t": pa.array([rng.choice(TS) for _ in range(N)], pa.string()),
        "g": pa.array([rng.choice(GS) for _ in range(N)], pa.string()),
        "b": pa.array([rng.choice(BS) for _ in range(N)], pa.bool_()),
        "i": pa.array([rng.choice([None, 0, 1, 2, 5, -3]) for _ in range(N)], pa.int32()),
        "z": pa.nulls(N, pa.null()),
        "d": pa.array([rng.choice(["a", "b", None]) for _ in range(N)], pa.string()).dictionary_encode(),
        "u": pa.array([rng.randrange(40) for _ in range(N)], pa.int64()),
    })


def _leaf(rng: random.Random) -> str:
    num = rng.choice(["0", "-0", "1.5", "2.5", "-1", "3", "1e300", "0.5", "7.25", "2"])
    col = rng.choice(["x", "t", "i"])
    kind = rng.randrange(9)
    if kind == 0:
        return f"{col} {rng.choice(['=', '!=', '<', '<=', '>', '>=', '<>'])} {num}"
    if kind == 1:
        return f"{col} {'NOT ' if rng.random() < .5 else ''}IN ({', '.join(rng.sample(['0', '1.5', '2', '-1', '3', '7.25', '0.5', '4', '5', '6', '8', '9', '10'], rng.randint(1, 13)))})"
    if kind == 2:
        return f"{col} BETWEEN {num} AND {rng.choice(['3', '1e300', '0'])}"
    if kind == 3:
        return f"{rng.choice(['x', 't', 'g', 'b', 'i', 'z', 'd'])} IS {'NOT ' if rng.random() < .5 else ''}NULL"
    if kind == 4:
        lit = rng.choice(["a", "b''c", "é", "Z", "", "ab"])
        return f"{rng.choice(['g', 'd'])} {rng.choice(['=', '!=', '<', '>=', '>'])} '{lit}'"
    if kind == 5:
        return f"g {'NOT ' if rng.random() < .5 else ''}IN ('a', 'b''c', 'é', '')"
    if kind == 6:
        return f"b {rng.choice(['=', '!='])} {rng.choice(['true', 'false'])}"
    if kind == 7:
        return f"z {rng.choice(['=', '<'])} 1"
    return f"{num} {rng.choice(['<', '>='])} x"


def _expr(rng: random.Random, depth: int = 0) -> str:
    r = rng.random()
    if depth > 2 or r < 0.35:
        return _leaf(rng)
    if r < 0.5:
        return f"NOT ({_expr(rng, depth + 1)})"
    op = "AND" if r < 0.75 else "OR"
    return f"({_expr(rng, depth + 1)} {op} {_expr(rng, depth + 1)})"


FILTERS = [_expr(random.Random(k)) for k in range(400)]


def test_numpy_masks_equal_the_arrow_masks() -> None:
    """400 random filters: the numpy Kleene evaluation = fill_null(predicate.arrow_mask, False), also on a
    permuted view; only the IN-list over -0.0 differs, where numpy follows Spark (-0.0 IN (0) is TRUE)."""
    import pyarrow.compute as pc

    t = table()
    batch = t.to_batches()[0]
    order = np.random.default_rng(3).permutation(N)
    rows = ArrowRows(batch)
    view = rows.take(order)
    from dpspark.engine.numeric import arrow_numeric

    negzero = np.zeros(N, dtype=bool)  # rows where a numeric reading is -0.0
    for c in ("x", "t"):
        x = np.asarray(arrow_numeric(t.column(c)).to_numpy(zero_copy_only=False), dtype=np.float64)
        negzero |= (x == 0) & np.signbit(x)
    assert negzero.any()
    naive_differs = 0
    for text in FILTERS:
        pred = parse_predicate(text)
        want = np.asarray(pc.fill_null(pred.arrow_mask(batch), False).to_numpy(zero_copy_only=False), dtype=bool)
        got = filter_mask(pred, rows)
        if "IN (" in text:  # Arrow's is_in tells -0.0 from 0.0; Spark does not
            differ = got != want
            assert not (differ & ~negzero).any(), text
        else:
            assert (got == want).all(), text
        assert (filter_mask(pred, view) == got[order]).all(), text
        naive_differs += int((_naive(pred.tree, t) != got).any())
    assert naive_differs >= 20  # two-valued logic (NULL as FALSE under NOT) would fail many of these


def _naive(node, t: pa.Table) -> np.ndarray:  # type: ignore[no-untyped-def]
    """A deliberately wrong evaluator (NULL treated as FALSE everywhere): the mutant the test must catch."""
    from dpspark.engine.predicate import And, Not, Or

    if isinstance(node, Not):
        return ~_naive(node.item, t)
    if isinstance(node, (And, Or)):
        parts = [_naive(i, t) for i in node.items]
        out = parts[0]
        for p in parts[1:]:
            out = (out & p) if isinstance(node, And) else (out | p)
        return out
    import pyarrow.compute as pc

    from dpspark.engine.predicate import Predicate

    res = Predicate("", node).arrow_mask(t.to_batches()[0])
    return np.asarray(pc.fill_null(res, False).to_numpy(zero_copy_only=False), dtype=bool)


def test_negative_zero_is_in_a_list_of_zero() -> None:
    """Spark: -0.0 = 0 and -0.0 IN (0) are TRUE (checked on Spark by the system tests); so are the masks."""
    rows = ArrowRows(pa.record_batch({"x": pa.array([-0.0, 0.0, 1.0, None], pa.float64())}))
    for text in ("x = 0", "x IN (0)", "x IN (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)", "x BETWEEN -0 AND 0"):
        assert filter_mask(parse_predicate(text), rows).tolist()[:2] == [True, True], text
    assert filter_mask(parse_predicate("NOT x IN (0)"), rows).tolist() == [False, False, True, False]


# ----------------------------------------------------------------------------------------- arithmetic
def _queries(k: int) -> list[dict]:
    out = []
    for j in range(k):
        q = {"name": f"q{j}", "kind": "sum", "column": "x", "lo": str(Fraction(-(j % 5), 2)),
             "hi": str(Fraction(1 + j % 7, 3)), "scale_bits": 2, "filter": FILTERS[j]}
        if j % 3 == 0:
            q["nulls"] = "1/3"
        if j % 11 == 0:
            q["lo"] = "1/4"  # lo > 0: a row the filter drops still adds clip(0, lo, hi) = lo
        out.append(q)
    out.append({"name": "c", "kind": "count", "hi": 2, "filter": "g = 'a'"})
    out.append({"name": "m", "kind": "mean", "column": "t", "lo": "-2", "hi": "5", "mean": "noisy_count"})
    return out


def _reference(t: pa.Table, scalars, unit: str | None) -> list[int]:  # type: ignore[no-untyped-def]
    """The definition, row by row in Python (per-row value, per-unit total, clip, sum)."""
    import pyarrow.compute as pc

    from dpspark.engine.numeric import arrow_numeric

    t = t.combine_chunks()
    batch = t.to_batches()[0]
    read = {c: arrow_numeric(t.column(c)).to_pylist() for c in ("x", "t")}
    ids = t.column(unit).to_pylist() if unit is not None else list(range(t.num_rows))
    out = []
    for s in scalars:
        m = [True] * t.num_rows
        if s.filter is not None:
            m = pc.fill_null(s.filter.arrow_mask(batch), False).to_pylist()
        if s.filter is not None and "IN (" in s.filter.text:  # follow Spark for -0.0 (see the mask test)
            m = filter_mask(s.filter, ArrowRows(batch)).tolist()
        per: dict = {}
        for r in range(t.num_rows):
            if s.column is None:
                ok = s.present is None or read[s.present][r] is not None
                v = 1 if m[r] and ok else 0
            else:
                x = read[s.column][r]
                if x is None:
                    v = s.imputed() or 0
                else:
                    y = (Fraction(s.delta) if x == float("inf") else -Fraction(s.delta) if x == float("-inf")
                         else Fraction(x) * (1 << s.scale_bits))
                    y = max(-s.delta, min(s.delta, y))
                    v = (abs(y) + Fraction(1, 2)).__floor__() * (1 if y >= 0 else -1)
                v = v if m[r] else 0
            per[ids[r]] = per.get(ids[r], 0) + v
        out.append(sum(min(max(x, s.lo), s.hi) for x in per.values()))
    return out


@pytest.mark.parametrize("unit", [None, "u"])
def test_arrow_totals_equal_the_definition(unit: str | None, monkeypatch) -> None:
    """60 filtered sums of one column (the sorted path), small batches, = the row-by-row definition."""
    from dpspark.mechanisms.answers import arrow_kernel, arrow_totals

    t = table()
    scalars = scalars_of(parse_queries(_queries(60)))
    want = _reference(t, scalars, unit)
    monkeypatch.setattr(arrow_kernel, "BATCH_ROWS", 37)
    assert arrow_kernel.scalar_totals_arrow(t, scalars, unit) == want
    monkeypatch.setattr(arrow_totals, "SORTED_MIN", 10**9)  # every scalar by the direct path
    assert arrow_kernel.scalar_totals_arrow(t, scalars, unit) == want


def test_unit_stream_across_chunks() -> None:
    """Rows grouped by unit, cut into chunks anywhere (a unit spanning three chunks too) = the definition."""
    from dpspark.mechanisms.answers.arrow_totals import UnitStream

    t = table()
    t = t.take(pa.array(np.argsort(t.column("u").to_numpy(), kind="stable")))
    t = pa.concat_tables([t.slice(0, 100), t.slice(100, 1).take([0] * 25), t.slice(101)])  # a unit of 26+ rows
    scalars = scalars_of(parse_queries(_queries(30)))
    want = _reference(t, scalars, "u")
    for cut in (1, 7, 26, 1000):
        acc = UnitStream(scalars)
        for start in range(0, t.num_rows, cut):
            part = t.slice(start, cut).combine_chunks().to_batches()[0]
            acc.add(ArrowRows(part), part.column(part.schema.get_field_index("u")))
        assert acc.result() == want, cut
