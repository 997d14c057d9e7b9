"""A checked query compiles to exactly the Session.groups (or answers) keywords; data-free."""

from __future__ import annotations

import re

import pyarrow as pa
import pytest

from dpspark.sql import SqlError, compile_query, key_universe

DP = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1/2, delta = 1e-9, privacy_unit_column = u{extra}) "


def _call(body: str, extra: str = "", unit: str | None = "u") -> object:
    return compile_query(DP.replace("1/2", "'1/2'").format(extra=extra) + body, private=["t"], public=["dim"],
                         unit_column=unit)


def test_a_grouped_query_is_the_groups_call() -> None:
    call = _call("g, COUNT(*) AS n, PERCENTILE_CONT(x, 0.25, contribution_bounds_per_group => (0, 8)) AS p "
                 "FROM t LEFT JOIN dim USING (k) WHERE x > 1 GROUP BY g",
                 ", max_groups_contributed = 3, max_rows_per_group = 2, noise = 'zcdp', beta = '1/10'")
    assert call.family == "groups" and call.keys_table is None and call.join == ("dim", ("k",), "left")
    assert call.kwargs == {"by": ["g"], "epsilon": "1/2", "delta": "1e-9", "beta": "1/10", "max_groups_per_unit": 3,
                           "max_rows_per_group": 2, "noise": "zcdp", "where": "`x` > 1",
                           "aggregates": [{"name": "n", "kind": "count"},
                                          {"name": "p", "kind": "quantile", "column": "x", "lo": "0", "hi": "8",
                                           "q": "0.25"}]}


def test_a_global_query_is_the_answers_call() -> None:
    call = _call("COUNT(x) AS nx, AVG(x, contribution_bounds_per_group => (-1, 1)) AS m FROM t WHERE y = 'a'")
    assert call.family == "answers" and call.kwargs["mechanism"] == "bounded_noise"
    nx, m = call.kwargs["sections"]["queries"]
    assert nx == {"name": "nx", "kind": "count", "hi": 1, "filter": "(`y` = 'a') AND (NOT `x` IS NULL)"}
    assert m == {"name": "m", "kind": "mean", "column": "x", "lo": "-1", "hi": "1", "mean": "noisy_count",
                 "filter": "(`y` = 'a')"}


@pytest.mark.parametrize("body, unit, words", [
    ("COUNT(*) AS n FROM t", "v", "the session's privacy unit is v"),
    ("COUNT(*) AS n FROM t", None, "one row"),
    ("g, COUNT(x) AS n FROM t GROUP BY g", "u", "COUNT(*) and add x IS NOT NULL"),
    ("VAR_POP(x, contribution_bounds_per_group => (0, 1)) AS v FROM t", "u", "add a GROUP BY"),
    ("COUNT(*) AS n FROM t JOIN dim USING (k)", "u", "without GROUP BY"),
])
def test_what_does_not_compile_is_named(body: str, unit: str | None, words: str) -> None:
    with pytest.raises(SqlError, match=re.escape(words)):
        _call(body, unit=unit)


def test_private_keys_need_delta_and_public_keys_need_a_public_table() -> None:
    with pytest.raises(SqlError, match="needs delta"):
        compile_query("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) g, COUNT(*) AS n FROM t GROUP BY g",
                      private=["t"])
    with pytest.raises(SqlError, match="not a public table"):
        compile_query("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, keys = t) g, COUNT(*) AS n FROM t "
                      "GROUP BY g", private=["t"])


def test_the_private_key_universe_follows_the_column_types() -> None:
    schema = pa.schema([("s", pa.string()), ("d", pa.dictionary(pa.int32(), pa.string())), ("i", pa.int32()),
                        ("u", pa.uint8()), ("b", pa.bool_())])
    assert key_universe(("s",), schema) == {"kind": "string", "max_bytes": 31, "column": "s"}
    assert key_universe(("d", "i"), schema)["components"][1] == {"kind": "int_range", "lo": str(-2**31),
                                                                 "hi": str(2**31 - 1), "column": "i"}
    assert key_universe(("u",), schema)["hi"] == "255"
    with pytest.raises(SqlError, match="OPTIONS \\(keys = <table>\\)"):
        key_universe(("b",), schema)
