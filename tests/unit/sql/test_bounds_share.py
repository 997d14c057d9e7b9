"""``OPTIONS (bounds_share = s)``: the share of epsilon for bounds chosen privately reaches the family the query
compiles to (``groups.bounds_share`` with GROUP BY, the answers' ``privacy.bounds_share`` without), and a share out
of range, or one with nothing to choose, is refused before anything is read or spent."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from dpspark.sql import SqlError, compile_query

Q = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-9, privacy_unit_column = u{o}) "


def _compile(options: str, body: str) -> Any:
    return compile_query(Q.format(o=options) + body, private=["t"], public=[], unit_column="u")


def test_the_share_reaches_groups_and_answers() -> None:
    grouped = _compile(", bounds_share = 0.2", "g, SUM(x) AS s FROM t GROUP BY g")
    assert grouped.family == "groups" and grouped.kwargs["bounds_share"] == "0.2"
    single = _compile(", bounds_share = '1/4'", "SUM(x) AS s, AVG(x) AS m FROM t")
    assert single.family == "answers" and single.kwargs["bounds_share"] == "1/4"
    assert "bounds_share" not in _compile("", "SUM(x) AS s FROM t").kwargs  # the family's default (1/10)


@pytest.mark.parametrize("options, body, words", [
    (", bounds_share = 0.6", "SUM(x) AS s FROM t", r"\(0, 1/2\] without GROUP BY"),
    (", bounds_share = 0", "SUM(x) AS s FROM t", r"\(0, 1/2\]"),
    (", bounds_share = 1", "g, SUM(x) AS s FROM t GROUP BY g", r"\(0, 1\)"),
    (", bounds_share = '-1/5'", "g, SUM(x) AS s FROM t GROUP BY g", r"\(0, 1\)"),
    (", bounds_share = 'abc'", "SUM(x) AS s FROM t", "exact fraction"),
    (", bounds_share = 0.2", "SUM(x, contribution_bounds_per_group => (0, 1)) AS s FROM t", "drop the option"),
    (", bounds_share = 0.2", "COUNT(*) AS n FROM t", "drop the option"),
])
def test_a_bad_share_is_refused_by_name(options: str, body: str, words: str) -> None:
    with pytest.raises(SqlError, match=words):
        _compile(options, body)


def test_a_half_share_is_the_answers_largest() -> None:
    assert _compile(", bounds_share = 0.5", "SUM(x) AS s FROM t").kwargs["bounds_share"] == "0.5"


def _session(tmp_path: Path) -> Any:
    import dpspark
    from dpspark.rng import SeededRandom

    t = pa.table({"u": list(range(400)), "x": [i % 37 for i in range(400)]})
    return dpspark.Session(tables={"t": t}, max_units=1000, unit_column="u", rng=SeededRandom(3),
                           budget={"epsilon": "10", "delta": "1/1000"})


def test_a_global_sum_states_the_share_and_a_bad_one_spends_nothing(tmp_path: Path) -> None:
    with _session(tmp_path) as s:
        before = s.remaining.measure
        with pytest.raises(SqlError, match="bounds_share"):
            s.sql(Q.format(o=", bounds_share = 0.7") + "SUM(x) AS s FROM t", output=tmp_path / "bad")
        assert not (tmp_path / "bad").exists() and s.remaining.measure == before
        s.sql(Q.format(o=", bounds_share = 0.3") + "SUM(x) AS s FROM t", output=tmp_path / "ok")
        assert s.remaining.measure != before
    bounds = _find(json.loads((tmp_path / "ok" / "manifest.json").read_text()), "bounds")
    assert Fraction(bounds["share"]) == Fraction(3, 10) and "s" in bounds["queries"]


def _find(tree: Any, key: str) -> Any:
    """The first value of ``key`` with a ``share`` in a JSON tree (the manifest's bounds entry)."""
    if isinstance(tree, dict):
        if isinstance(tree.get(key), dict) and "share" in tree[key]:
            return tree[key]
        for v in tree.values():
            got = _find(v, key)
            if got is not None:
                return got
    if isinstance(tree, list):
        for v in tree:
            got = _find(v, key)
            if got is not None:
                return got
    return None
