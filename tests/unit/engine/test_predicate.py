"""The filter grammar (:mod:`dpspark.engine.predicate`): what it accepts, what it refuses, and that Arrow and
Spark give every row the same three-valued answer."""

from __future__ import annotations

import math
from fractions import Fraction

import pyarrow as pa
import pytest

from dpspark.engine.predicate import (MAX_DEPTH, MAX_FILTER_CHARS, MAX_IN_ITEMS, Cmp, InList, IsNull, Not,
                                      PredicateError, literal_double, parse_predicate)

TABLE = pa.table({
    "x": pa.array([None, 0.1, 1.0, float("nan"), float("inf"), 3.0, -float("inf"), 2.5, 0.30000000000000004, -7.0],
                  pa.float64()),
    "i": pa.array([1, 2, None, 4, 5, 6, 7, 8, 2**53 + 1, -3], pa.int64()),
    "g": pa.array(["a", "b", None, "b", "é", "a", "", "b'c", "B", "a"]),
    "s": pa.array(["1.5", "abc", None, "2", "inf", "NaN", "3e0", "", "-1", "7"]),  # text holding numbers
    "f": pa.array([True, False, None, True, False, True, None, False, True, True]),
    "a.b": pa.array(list(range(10)), pa.int32()),
})

FILTERS = [
    "x > 1", "x >= 1", "x < 1", "x <= 1", "x = 0.1", "x != 0.1", "x <> 3", "x == 2.5", "x = 0.30000000000000004",
    "x > 1e400", "x < -1e400", "x BETWEEN -1.5 AND 2.5", "x NOT BETWEEN -1.5 AND 2.5", "x IN (1, 3, 0.1)",
    "x NOT IN (1, 3)", "x IS NULL", "x IS NOT NULL", "NOT x > 1", "3 < x", "-7 = x",
    "i > 2 AND i < 8", "i = 9007199254740993", "i IN (2, 4, 6.5)", "i IS NULL OR g = 'a'",
    "g = 'a'", "g != 'a'", "g > 'a'", "g IN ('a', 'b''c', '')", "g = 'é'", "g IS NULL", "g NOT IN ('a')",
    "s > 1", "s = 2", "s IS NULL", "s BETWEEN 0 AND 10",
    "f = true", "f != true", "f IN (false)", "NOT (f = false)",
    "`a.b` >= 5 AND (g = 'a' OR x IS NULL)", "((x > 0) AND NOT (g = 'b')) OR i <= 2",
    "x > 0 and g = 'a' or NOT f = TRUE",
]


def test_accepts_the_grammar() -> None:
    for text in FILTERS:
        p = parse_predicate(text)
        assert p.text == text and p.columns()
    p = parse_predicate("NOT (x IN (1, 2.5)) OR `we``ird` IS NOT NULL")
    assert p.tree.items[0] == Not(InList("x", (Fraction(1), Fraction(5, 2))))
    assert p.tree.items[1] == Not(IsNull("we`ird"))
    assert parse_predicate("50 < x").tree == Cmp("x", ">", Fraction(50))
    assert parse_predicate("x = -1.5e-1").tree == Cmp("x", "=", Fraction(-3, 20))
    assert parse_predicate("g = 'it''s'").tree == Cmp("g", "=", "it's")


@pytest.mark.parametrize("text, words", [
    ("raise_error('boom')", "function calls such as raise_error"),
    ("x > 1 AND raise_error('boom') IS NULL", "function calls"),
    ("CASE WHEN x > 1 THEN true ELSE raise_error('x') END", "CASE is not part"),
    ("x / 0 > 1", "division"),
    ("x > 1 / 0", "division"),
    ("x + 1 > 2", "expected a comparison"),
    ("x > 1 + 1", "unexpected"),
    ("x > abs(-1)", "function calls such as abs"),
    ("my_udf(x) = 1", "function calls such as my_udf"),
    ("cast(x as int) = 1", "function calls such as cast"),
    ("x > y", "a column compares only with literals"),
    ("x = \"a\"", "double-quoted"),
    ("x > 1; DROP TABLE t", "statement separator"),
    ("x LIKE 'a%'", "expected a comparison"),
    ("t.x = 1", "qualified or nested"),
    ("x = NULL", "expected a literal"),
    ("x IN ()", "expected a literal"),
    ("x >", "ends where a literal"),
    ("(x > 1", "expected ')'"),
    ("x > 1)", "unexpected"),
    ("and = 1", "expected a column name"),
    ("x > 1e999", "exponent"),
    ("x = 1 x = 2", "unexpected"),
    ("", "non-empty"),
])
def test_refuses_everything_else(text: str, words: str) -> None:
    with pytest.raises(PredicateError, match=words.replace("(", r"\(").replace(")", r"\)")):
        parse_predicate(text)


def test_public_limits() -> None:
    with pytest.raises(PredicateError, match="longer than"):
        parse_predicate("x > " + "1" * MAX_FILTER_CHARS)
    with pytest.raises(PredicateError, match="IN list has more than"):
        parse_predicate("x IN (" + ", ".join(["1"] * (MAX_IN_ITEMS + 1)) + ")")
    parse_predicate("x IN (" + ", ".join(["1"] * MAX_IN_ITEMS) + ")")
    with pytest.raises(PredicateError, match="nests deeper"):
        parse_predicate("(" * (MAX_DEPTH + 2) + "x > 1" + ")" * (MAX_DEPTH + 2))
    with pytest.raises(PredicateError, match="nests deeper"):
        parse_predicate("NOT " * (MAX_DEPTH + 2) + "x > 1")


def test_literals_stand_for_their_nearest_double() -> None:
    assert literal_double(Fraction(1, 10)) == 0.1
    assert literal_double(Fraction(10) ** 400) == math.inf and literal_double(-Fraction(10) ** 400) == -math.inf
    assert literal_double(Fraction(2**53 + 1)) == 2.0**53  # ties to even, like the int64 column's double
    mask = parse_predicate("x = 0.1").arrow_mask(TABLE).to_pylist()
    assert mask[1] is True and mask[0] is None and mask[3] is None  # NULL and NaN compare NULL


def test_arrow_three_valued_logic() -> None:
    def rows(text: str) -> list:
        return parse_predicate(text).arrow_mask(TABLE).to_pylist()

    assert rows("x > 1") == [None, False, False, None, True, True, False, True, False, False]
    assert rows("NOT x > 1") == [None, True, True, None, False, False, True, False, True, True]
    assert rows("x IS NULL") == [True, False, False, True, False, False, False, False, False, False]
    assert rows("x IN (1, 3)") == [None, False, True, None, False, True, False, False, False, False]
    assert rows("x > 1 OR g = 'a'") == [True, False, None, None, True, True, False, True, False, True]
    assert rows("s > 1") == [True, None, None, True, None, None, True, None, False, True]  # text read as numbers
    assert rows("i = 9007199254740993")[8] is True  # both sides read as the same double


def test_type_check_before_any_data() -> None:
    schema = TABLE.schema
    assert parse_predicate("x > 1 AND g = 'a' AND f = true").type_problem(schema) is None
    assert "string literal" in parse_predicate("x = 'a'").type_problem(schema)
    assert "not a number" in parse_predicate("g = 1").type_problem(schema)
    assert parse_predicate("s = 1").type_problem(schema, text_input=True) is None  # CSV text holds numbers
    assert "not a number" in parse_predicate("s = 1").type_problem(schema, text_input=False)
    assert "boolean column" in parse_predicate("f = 1").type_problem(schema)
    assert "only = and !=" in parse_predicate("f > false").type_problem(schema)
    assert "does not have" in parse_predicate("nope = 1").type_problem(schema)


@pytest.mark.spark
@pytest.mark.parametrize("ansi", ["true", "false"])
def test_spark_gives_every_row_the_same_answer(spark, tmp_path, ansi: str) -> None:
    import pyarrow.parquet as pq

    path = tmp_path / "t.parquet"
    pq.write_table(TABLE.append_column("row", pa.array(range(TABLE.num_rows), pa.int64())), path)
    df = spark.read.parquet(str(path))
    types = {f.name: f.dataType for f in df.schema.fields}
    old = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", ansi)
    try:
        cols = [parse_predicate(t).spark_column(types).alias(f"p{k}") for k, t in enumerate(FILTERS)]
        got = df.select("row", *cols).orderBy("row").toArrow()
    finally:
        spark.conf.set("spark.sql.ansi.enabled", old)
    for k, text in enumerate(FILTERS):
        want = parse_predicate(text).arrow_mask(TABLE).to_pylist()
        assert got.column(f"p{k}").to_pylist() == want, text
