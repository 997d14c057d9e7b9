"""Spark SQL index columns equal the pure-Python encoder for every universe kind and edge value.

Cases run five to a Spark job: one DataFrame carrying every case at once makes
a plan whose optimisation and code generation take far longer than the jobs,
and one job per case pays the per-job overhead 25 times.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from dpspark.engine.spark.encode import with_universe_index
from dpspark.universe import (
    BytesUniverse,
    CategoricalUniverse,
    HashedUniverse,
    IntRangeUniverse,
    OutOfUniverseError,
    StringUniverse,
    TupleUniverse,
)

I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1


def _table(rows: int = 160) -> pa.Table:
    rng = np.random.default_rng(20261122)
    i64 = [I64_MIN, I64_MAX, -1, 0, 1, -100, 100, -101, 101, None, 1 << 40, (1 << 41) + 1, -(1 << 62), 65535, 65536]
    i32 = [-(1 << 31), (1 << 31) - 1, -5, 1000, 1001, -6, 0, None, 70000, 69999, 65536, 1]
    s = ["", "a", "é", "€", "😀", "x" * 15, "x" * 16, "ÿ" * 7, "ÿ" * 8, None, "\x00", "DE", "FR", "é€😀"]
    s += ["\x7f" * 20, "y" * 21]
    b = [b"", b"\x00", b"\xff", b"\xff" * 15, b"\xff" * 16, b"\x00" * 15, b"\xff" * 31, b"\x00" * 31, b"\xff" * 32]
    b += [None, b"\x01\x02\x03"]
    c = ["DE", "FR", "IT", "de", "", None, "é", "ZZ"]
    n = [7, -2, 1 << 40, 3, None, 0]
    alphabet = np.array(["a", "é", "€", "😀", "Z", "\x00", "ÿ"])

    def fill(edges, draw):
        out = list(edges)
        while len(out) < rows:
            out.append(draw())
        return out

    cols = {
        "id": list(range(rows)),
        "i64": fill(i64, lambda: int(rng.integers(-150, 150) if rng.random() < 0.5 else rng.integers(I64_MIN, I64_MAX))),
        "i32": fill(i32, lambda: int(rng.integers(-10, 70010))),
        "s": fill(s, lambda: "".join(rng.choice(alphabet, int(rng.integers(0, 9))))),
        "b": fill(b, lambda: rng.bytes(int(rng.integers(0, 33)))),
        "c": fill(c, lambda: str(rng.choice(["DE", "FR", "IT", "XX"]))),
        "n": fill(n, lambda: int(rng.choice([7, -2, 1 << 40, 5]))),
    }
    types = {"i32": pa.int32(), "s": pa.string(), "b": pa.binary(), "c": pa.string()}
    return pa.table({k: pa.array(v, types.get(k, pa.int64())) for k, v in cols.items()})


CAT = CategoricalUniverse(("DE", "FR", "IT", "é", ""))
CAT_INT = CategoricalUniverse((7, -2, 1 << 40))

# name -> (universe, key columns, categorical_literal_max)
CASES: dict[str, tuple] = {
    "int_full": (IntRangeUniverse(I64_MIN, I64_MAX), ["i64"], 64),
    "int_small": (IntRangeUniverse(-100, 100), ["i64"], 64),
    "int_i32": (IntRangeUniverse(-5, 1000), ["i32"], 64),
    "int_wide": (IntRangeUniverse(-(1 << 200), 1 << 200), ["i64"], 64),
    "int_top": (IntRangeUniverse((1 << 63) - (1 << 128), I64_MAX), ["i64"], 64),  # INT64_MAX -> zero word
    "int_none": (IntRangeUniverse(1 << 64, 1 << 65), ["i64"], 64),  # no int64 is a member
    "cat_literal": (CAT, ["c"], 64),
    "cat_join": (CAT, ["c"], 2),
    "cat_int_literal": (CAT_INT, ["n"], 64),
    "cat_int_join": (CAT_INT, ["n"], 1),
    "str15": (StringUniverse(15), ["s"], 64),
    "str20": (StringUniverse(20), ["s"], 64),
    "str0": (StringUniverse(0), ["s"], 64),
    "bytes15": (BytesUniverse(15), ["b"], 64),
    "bytes31": (BytesUniverse(31), ["b"], 64),
    "hash_s128": (HashedUniverse(128, "string"), ["s"], 64),
    "hash_s7": (HashedUniverse(7, "string"), ["s"], 64),
    "hash_b200": (HashedUniverse(200, "bytes"), ["b"], 64),
    "hash_i64": (HashedUniverse(64, "int"), ["i64"], 64),
    "hash_i32": (HashedUniverse(61, "int"), ["i32"], 64),
    "hash_i256": (HashedUniverse(256, "int"), ["i64"], 64),
    "tuple_cat_int_str": (
        TupleUniverse(
            (CategoricalUniverse(CAT.values, column="c"), IntRangeUniverse(-100, 100, "i64"), StringUniverse(15, "s"))
        ),
        ["c", "i64", "s"],
        64,
    ),
    "tuple_hash_hash": (
        TupleUniverse((HashedUniverse(64, "int", "i64"), HashedUniverse(64, "string", "s"))),
        ["i64", "s"],
        64,
    ),
    "tuple_halves": (
        TupleUniverse(
            (IntRangeUniverse(0, 70000, "i32"), CategoricalUniverse(CAT_INT.values, column="n"), BytesUniverse(3, "b"))
        ),
        ["i32", "n", "b"],
        64,
    ),
    "tuple_join": (
        TupleUniverse((CategoricalUniverse(CAT.values, column="c"), BytesUniverse(15, "b"))),
        ["c", "b"],
        2,
    ),
}


def _expected(universe, table: pa.Table, cols: list[str]) -> tuple[list, list]:
    """Per-row scalar encode: (index words, in_universe flags)."""
    words, flags = [], []
    columns = [table[c].to_pylist() for c in cols]
    for row in zip(*columns):
        if any(v is None for v in row):
            words.append(None)
            flags.append(None)
            continue
        try:
            words.append(universe.index_bytes(row if len(cols) > 1 else row[0]))
            flags.append(True)
        except OutOfUniverseError:
            words.append(None)
            flags.append(False)
    return words, flags


@pytest.fixture(scope="module")
def source(spark) -> tuple[pa.Table, object]:
    table = _table()
    return table, spark.createDataFrame(table)


GROUP_SIZE = 5  # cases per Spark job: fewer jobs, yet plans small enough for whole-stage codegen


@pytest.fixture(scope="module")
def spark_results(source) -> dict[str, pa.Table]:
    """Lazily computed per group of cases; one Spark job per group."""
    cache: dict[str, pa.Table] = {}

    def get(name: str) -> pa.Table:
        if name not in cache:
            names = list(CASES)
            start = names.index(name) // GROUP_SIZE * GROUP_SIZE
            group = names[start : start + GROUP_SIZE]
            table, df = source
            for case in group:
                universe, cols, literal_max = CASES[case]
                df = with_universe_index(
                    df, universe, cols, index_col=f"{case}_idx", in_universe_col=f"{case}_in",
                    categorical_literal_max=literal_max,
                )
            out = df.toArrow()
            out = out.take(pa.array(np.argsort(np.array(out["id"].to_pylist()))))  # joins may reorder rows
            for case in group:
                cache[case] = out.select(table.column_names + [f"{case}_in", f"{case}_idx"]).rename_columns(
                    table.column_names + ["in", "idx"]
                )
            assert out.num_columns == len(table.column_names) + 2 * len(group)  # temporaries dropped
        return cache[name]

    return get


@pytest.mark.spark
@pytest.mark.parametrize("name", list(CASES))
def test_spark_index_equals_python_encode(source, spark_results, name):
    table, _ = source
    universe, cols, _ = CASES[name]
    out = spark_results(name)
    words, flags = _expected(universe, table, cols)
    assert out["id"].to_pylist() == table["id"].to_pylist()
    assert out["in"].to_pylist() == flags
    assert out["idx"].to_pylist() == words
    assert out.schema.field("idx").type == pa.binary()
    assert any(flags) or name == "int_none", "case should contain members"


def test_edge_rows_are_decided_as_intended():
    """Guards the test data: the interesting edges are present (checked on the Python side,
    which the Spark test compares against)."""
    table = _table()
    top, _ = _expected(CASES["int_top"][0], table, ["i64"])
    assert top[1] == bytes(16)  # INT64_MAX has index 2^128
    full, _ = _expected(CASES["int_full"][0], table, ["i64"])
    assert full[:2] == [bytes(15) + b"\x01", (1 << 64).to_bytes(16, "big")]
    b31, _ = _expected(CASES["bytes31"][0], table, ["b"])
    assert b31[6] == BytesUniverse(31).size.to_bytes(32, "big")
    _, s15 = _expected(CASES["str15"][0], table, ["s"])
    assert s15[5:7] == [True, False]  # 15 bytes in, 16 bytes out
    _, cat = _expected(CAT, table, ["c"])
    assert cat[:6] == [True, True, True, False, True, None]


@pytest.mark.spark
def test_spark_plan_uses_no_python(spark):
    df = spark.createDataFrame(pa.table({"s": ["a"], "i": pa.array([1], pa.int64())}))
    u = TupleUniverse((StringUniverse(15, "s"), HashedUniverse(64, "int", "i")))
    plan = with_universe_index(df, u)._jdf.queryExecution().executedPlan().toString()
    assert "Python" not in plan and "ArrowEval" not in plan


@pytest.mark.spark
def test_spark_type_and_column_errors(spark):
    df = spark.createDataFrame(pa.table({"s": ["a"], "i": pa.array([1], pa.int64()), "f": [1.5]}))
    # a string column is read as text integers (a CSV's keys; dpspark.universe.keytypes), a double is refused
    with pytest.raises(TypeError, match="column 'f' has type DoubleType, expected an integral type"):
        with_universe_index(df, IntRangeUniverse(0, 5), ["f"])
    assert with_universe_index(df, IntRangeUniverse(0, 5), ["s"]).select("dp_in_universe").collect()[0][0] is None  # "a": a NULL key
    with pytest.raises(TypeError, match="expected BinaryType"):
        with_universe_index(df, BytesUniverse(5), ["s"])
    with pytest.raises(ValueError, match="no column"):
        with_universe_index(df, IntRangeUniverse(0, 5), ["missing"])
    with pytest.raises(ValueError, match="need 1 key column"):
        with_universe_index(df, IntRangeUniverse(0, 5))  # universe has no column name
    with pytest.raises(ValueError, match="method must be"):
        with_universe_index(df, IntRangeUniverse(0, 5), ["i"], method="udf")


@pytest.mark.spark
def test_spark_arrow_method_matches_sql(spark):
    pytest.importorskip("pandas", minversion="2.2", reason="pyspark's mapInArrow requires pandas >= 2.2")
    table = _table(40)
    df = spark.createDataFrame(table)
    u = TupleUniverse((CategoricalUniverse(CAT.values, column="c"), StringUniverse(15, "s")))
    sql = with_universe_index(df, u, index_col="x", in_universe_col="xin")
    arrow = with_universe_index(sql, u, index_col="y", in_universe_col="yin", method="arrow").toArrow()
    assert arrow["x"].to_pylist() == arrow["y"].to_pylist()
    assert arrow["xin"].to_pylist() == arrow["yin"].to_pylist()


@pytest.mark.spark
def test_spark_odd_column_names_and_default_output_columns(spark):
    table = pa.table({"user.name x": ["ab", "é", None, "toolong"], "n`1": pa.array([1, 2, 3, 4], pa.int64())})
    u = TupleUniverse((StringUniverse(3, "user.name x"), IntRangeUniverse(1, 3, "n`1")))
    out = with_universe_index(spark.createDataFrame(table), u).toArrow()
    assert out.column_names == ["user.name x", "n`1", "dp_in_universe", "dp_index"]
    assert out["dp_in_universe"].to_pylist() == [True, True, None, False]
    assert out["dp_index"].to_pylist() == [u.index_bytes(("ab", 1)), u.index_bytes(("é", 2)), None, None]


def _python_counts(universe, rows) -> dict[bytes, int]:
    counts: dict[bytes, int] = {}
    for key in rows:
        if key is None or (isinstance(key, tuple) and None in key):
            continue
        try:
            word = universe.index_bytes(key)
        except OutOfUniverseError:
            continue
        counts[word] = counts.get(word, 0) + 1
    return counts


@pytest.mark.spark
@pytest.mark.parametrize(
    "universe",
    [
        TupleUniverse((StringUniverse(3, "s"), IntRangeUniverse(0, 3, "n"))),
        HashedUniverse(2, "string", "s"),  # 4 bins for 6 distinct keys: collisions are certain
    ],
    ids=["tuple", "hashed-collisions"],
)
def test_count_universe_indexes_matches_python(spark, universe):
    from dpspark.engine.spark.encode import count_universe_indexes

    s = ["a", "a", "b", "é", None, "toolong", "a", "c", "d", "e", "b"]
    n = [0, 0, 1, 2, 3, 1, 4, None, 3, 2, 1]
    df = spark.createDataFrame(pa.table({"s": s, "n": pa.array(n, pa.int64())}))
    out = count_universe_indexes(df, universe).toArrow()
    assert out.column_names == ["dp_index", "count"]
    got = dict(zip(out["dp_index"].to_pylist(), out["count"].to_pylist()))
    keys = list(zip(s, n)) if isinstance(universe, TupleUniverse) else s
    expected = _python_counts(universe, keys)
    assert got == expected
    if not universe.is_bijection:
        assert len(expected) < len({k for k in s if k is not None})  # 7 distinct keys, 4 bins


@pytest.mark.spark
def test_count_universe_indexes_fail_mode(spark):
    from dpspark.engine.spark.encode import count_universe_indexes

    df = spark.createDataFrame(pa.table({"s": ["ok", SECRET_KEY, None]}))
    with pytest.raises(OutOfUniverseError, match="column 's'.*outside the universe") as info:
        count_universe_indexes(df, StringUniverse(2, "s"), on_out_of_universe="fail")
    assert SECRET_KEY not in str(info.value)
    ok = count_universe_indexes(df, StringUniverse(31, "s"), on_out_of_universe="fail").toArrow()
    assert sorted(ok["count"].to_pylist()) == [1, 1]


SECRET_KEY = "SECRET-KEY-5521"


@pytest.mark.spark
def test_halves_join_into_the_sql_words(source):
    """with_universe_halves + halves_to_words give the bytes with_universe_index writes (16- and 32-byte words,
    tuples, a zero word, negative halves), NULL halves off the universe; the counting stage relies on it."""
    from dpspark.engine.spark.encode import halves_to_words, index_half_names, with_universe_halves

    table, df = source
    cases = ["int_full", "int_wide", "int_top", "str20", "bytes31", "tuple_cat_int_str", "tuple_halves"]
    for case in cases:
        universe, cols, literal_max = CASES[case]
        df = with_universe_halves(df, universe, cols, index_col=f"{case}_idx", in_universe_col=f"{case}_in",
                                  categorical_literal_max=literal_max)
    out = df.toArrow()
    out = out.take(pa.array(np.argsort(np.array(out["id"].to_pylist()))))
    for case in cases:
        universe, cols, _ = CASES[case]
        words, flags = _expected(universe, table, cols)
        names = index_half_names(f"{case}_idx", universe)
        assert len(names) == universe.index_width // 8 and out[f"{case}_in"].to_pylist() == flags
        kept = [i for i, f in enumerate(flags) if f]
        assert [i for i, v in enumerate(out[names[0]].to_pylist()) if v is not None] == kept
        got = halves_to_words([out[n].take(pa.array(kept, pa.int64())) for n in names]).to_pylist()
        assert got == [words[i] for i in kept], case
    assert halves_to_words([pa.array([], pa.int64())] * 2).to_pylist() == []
