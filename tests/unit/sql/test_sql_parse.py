"""The DP dialect parses BigQuery's DP clause and DP arguments into the tree, strictly; literals stay exact."""

from __future__ import annotations

from fractions import Fraction

import pytest
import sqlglot
from sqlglot import ErrorLevel

from dpspark.sql import SqlError, check_query
from dpspark.sql.dialect import DPAggregate, DPClause, parse_query

Q = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1e-1, delta = 1e-9, privacy_unit_column = u, "
     "max_groups_contributed = 2, beta = '1/40') g, SUM(x, contribution_bounds_per_group => (-0.5, 5e1)) AS s "
     "FROM t WHERE x BETWEEN 0.1 AND 3 GROUP BY g")


def test_plain_bigquery_refuses_the_dp_clause_and_drops_the_bounds_when_lenient() -> None:
    """Why the dialect exists (and why it never parses leniently): sqlglot 30's BigQuery as it is."""
    with pytest.raises(sqlglot.errors.ParseError):
        sqlglot.parse_one("SELECT SUM(x, contribution_bounds_per_group => (0, 50)) FROM t", read="bigquery")
    lenient = sqlglot.parse_one("SELECT SUM(x, contribution_bounds_per_group => (0, 50)) AS s FROM t",
                                read="bigquery", error_level=ErrorLevel.IGNORE)
    assert "50" not in lenient.sql()


def test_the_clause_and_the_bounds_are_in_the_tree() -> None:
    tree = parse_query(Q)
    clause = tree.args["hint"]
    assert isinstance(clause, DPClause) and len(clause.expressions) == 5
    agg = tree.find(DPAggregate)
    assert agg.function == "SUM" and agg.expressions[1].this.name == "contribution_bounds_per_group"


def test_numbers_are_read_from_their_text_never_as_floats() -> None:
    q = check_query(Q, private=["t"])
    assert q.options.epsilon == "1e-1" and q.options.delta == "1e-9" and q.options.beta == "1/40"
    assert (q.aggregates[0].lo, q.aggregates[0].hi) == ("-0.5", "5e1")
    lo, hi = (c.value for c in q.where.tree.items)
    assert (lo, hi) == (Fraction(1, 10), Fraction(3))  # 0.1 exactly, not the double nearest to it


@pytest.mark.parametrize("text", ["", "   ", None, 3, "SELECT 1; SELECT 2", "SELECT (", "x" * 20_000])
def test_malformed_text_is_a_named_sql_error(text: object) -> None:
    with pytest.raises(SqlError):
        parse_query(text)


def test_where_becomes_the_filter_grammar_node_by_node() -> None:
    q = check_query("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) COUNT(*) AS n FROM t AS a WHERE "
                    "a.x NOT IN ('p', 'q\\'s') AND NOT (y IS NOT NULL OR 3 < z) AND w = TRUE AND v != -2",
                    private=["t"])
    assert q.where.text == ("((NOT `x` IN ('p', 'q''s')) AND (NOT (((NOT `y` IS NULL) OR 3 < `z`))) AND `w` = true "
                            "AND `v` != -2)")
    assert q.where.columns() == ("x", "y", "z", "w", "v")


def test_a_long_and_chain_is_one_level_of_the_grammar() -> None:
    cond = " AND ".join(f"c{i} = {i}" for i in range(100))
    q = check_query(f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) COUNT(*) AS n FROM t WHERE {cond}",
                    private=["t"])
    assert len(q.where.columns()) == 100


def test_a_backquoted_name_survives_the_round_trip() -> None:
    q = check_query("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) `my col`, COUNT(*) AS n FROM t "
                    "WHERE `odd``name` = 'a' GROUP BY `my col`", private=["t"])
    assert q.by == ("my col",) and q.where.columns() == ("odd`name",)
