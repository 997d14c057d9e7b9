"""A private join without GROUP BY (issue 32 §4): global answers over the rows of two private tables joined on the
unit. It compiles to groups' one public group (``Session.groups(by=[], keys=[[]], join=...)``: k = 1, c the rows a
unit adds after the join), so the SQL and the Session.groups call give the same files under one seed (TOML too, and
the SQL refusals: tests/unit/sql/test_joins_private.py), equal to a GROUP BY over a constant column, and the
release reads as one row of global answers. Every refusal comes before the spend."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tests.unit.sql.test_joins_private import SEED, UNIT, data_files, orders_table, session, users_table

OPTS = "epsilon = 1, delta = 1e-9, privacy_unit_column = customer_id"
GLOBAL = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS ({opts}) COUNT(*) AS n, SUM(amount) AS total, AVG(age) AS "
          "mean_age FROM orders JOIN users USING (customer_id){where}")
WHERE = " WHERE channel != 'phone'"
AGGS = [{"name": "n", "kind": "count"}, {"name": "total", "kind": "sum", "column": "amount"},
        {"name": "mean_age", "kind": "mean", "column": "age"}]


def query(where: str = "", opts: str = OPTS) -> str:
    return GLOBAL.format(opts=opts, where=where)


def api(s: Any, out: Path, where: str | None = None, **kw: Any) -> Any:
    return s.groups(by=[], keys=[[]], epsilon="1", delta="1e-9", output=out, where=where, aggregates=AGGS,
                    join={"table": "users", "on": UNIT, "how": "inner", "private": True}, **kw)


@pytest.mark.parametrize("where", ["", WHERE])
def test_sql_equals_session_groups_under_one_seed(tmp_path: Path, where: str) -> None:
    """On main the query is refused ("global answers read the FROM table alone")."""
    with session() as s:
        by_sql = s.sql(query(where), output=tmp_path / "sql")
    with session() as s:
        api(s, tmp_path / "api", where[len(" WHERE "):] or None)
    assert data_files(tmp_path / "sql") == data_files(tmp_path / "api")
    frame = by_sql.to_pandas()
    assert len(frame) == 1 and list(frame.columns[:6]) == ["n", "n_error", "total", "total_error", "mean_age",
                                                            "mean_age_error"]
    assert set(by_sql.chosen_bounds()["columns"]) == {"amount", "age"}  # SUM/AVG without bounds: chosen privately
    with session() as s:  # the comparison has teeth: another seed, other files
        from dpspark.rng import SeededRandom

        s.rng = SeededRandom(SEED + 1)
        s.sql(query(where), output=tmp_path / "other")
    assert data_files(tmp_path / "other") != data_files(tmp_path / "sql")


def test_one_group_equals_group_by_a_constant_column(tmp_path: Path) -> None:
    """The one public group is groups' own path: the same exact values and bars as GROUP BY a constant column of
    the data (key 0, public keys [0]) under one seed; with the WHERE, the other values (the filter bites)."""
    import pyarrow.compute as pc

    orders = orders_table()
    const = orders.append_column("one", pa.repeat(pa.scalar(0, pa.int64()), orders.num_rows))
    tables = {"orders": const, "users": users_table()}
    opts = dict(epsilon="1", delta="1e-9", max_rows_per_group=2, noise="zcdp",
                join={"table": "users", "on": UNIT, "private": True},
                aggregates=[{"name": "n", "kind": "count"},
                            {"name": "total", "kind": "sum", "column": "amount", "lo": "0", "hi": "100"},
                            {"name": "mean_age", "kind": "mean", "column": "age", "lo": "18", "hi": "90"}])
    with session(tables=tables) as s:
        one = s.groups(by=[], output=tmp_path / "one", **opts)
    with session(tables=tables) as s:
        by_const = s.groups(by=["one"], keys=[0], output=tmp_path / "const", **opts)
    with session(tables=tables) as s:
        filtered = s.groups(by=[], where="channel = 'web'", output=tmp_path / "web", **opts)
    exact = [c for c in one.to_pandas().columns if c.endswith("_exact")]
    assert exact and one.to_pandas()[exact].equals(by_const.to_pandas()[exact])
    assert "one" in by_const.to_pandas().columns and "_global" not in one.to_pandas().columns
    assert one.lookup() == one.lookup(0) == by_const.lookup(0)
    assert not filtered.to_pandas()[exact].equals(one.to_pandas()[exact])
    # c = 2 rows per unit after the join: the count is at most 2 per unit (the bound is applied after the join)
    assert int(pc.count_distinct(orders.column(UNIT)).as_py()) * 2 + 4 * one.lookup()["n"].error >= \
        one.lookup()["n"].value


def test_global_release_reads_as_global_answers(tmp_path: Path) -> None:
    from dpspark.lookup import open_release

    with session() as s:
        s.sql(query(WHERE), output=tmp_path / "rel")
    rel = open_release(tmp_path / "rel")
    assert rel.is_global and rel.manifest.parameters["join"]["global_key"] == "_global"
    assert rel.describe_lines()[0] == ("groups", "global (no GROUP BY): one public group, the rows of the private "
                                                 "join with users")
    assert list(rel.lookup()) == ["n", "total", "mean_age"] and len(rel.to_pandas()) == 1
    assert rel.plot_bars(5)[0]["labels"] == ["global"]


def test_the_cli_looks_up_a_global_release_without_a_key(tmp_path: Path, capsys: Any) -> None:
    """`dpspark lookup REL` with no KEY answers the one group (no key to type), as `dpspark lookup REL 0` does."""
    from dpspark.cli.app import main as cli

    with session() as s:
        s.sql(query(WHERE), output=tmp_path / "rel")
    capsys.readouterr()
    assert cli(["lookup", str(tmp_path / "rel")]) == 0
    bare = capsys.readouterr().out
    assert cli(["lookup", str(tmp_path / "rel"), "0"]) == 0
    assert bare == capsys.readouterr().out and "mean_age" in bare


def test_auto_rows_per_unit_after_the_join(tmp_path: Path) -> None:
    """max_rows_per_group = auto: c (the rows a unit adds after the join) is chosen privately, and stated."""
    with session() as s:
        rel = s.sql(query(opts=OPTS + ", max_rows_per_group = auto"), output=tmp_path / "auto")
    assert "max_rows_per_group" in rel.limits_words()
    assert rel.manifest.parameters["limits_auto"] == ["max_rows_per_group"]


def test_session_groups_refusals_leave_the_ledger_unchanged(tmp_path: Path) -> None:
    """by = [] is one public group over a private join only; each misuse is refused before the spend."""
    from dpspark.errors import DPSparkError
    from dpspark.ledger import Ledger

    join = {"table": "users", "on": UNIT, "private": True}
    cases = [({"join": None}, "reads a private join"),
             ({"join": {"table": pa.table({"channel": ["web"], "seg": ["a"]}), "on": ["channel"]}},
              "reads a private join"),
             ({"max_groups_per_unit": 2}, "max_groups_per_unit is 1"),
             ({"max_groups_per_unit": "auto"}, "max_groups_per_unit is 1"),
             ({"keys": ["north"]}, "its one public group is the empty key"),
             ({"selection": "units"}, "one public group has none")]
    ledger = tmp_path / "ledger.sqlite"
    Ledger(ledger).set_total("orders+users", "4", "1e-6")
    with session(ledger=ledger) as s:
        for extra, words in cases:
            kw = {"keys": [[]], "join": join, **extra}
            with pytest.raises(DPSparkError, match=re.escape(words)):
                s.groups(by=[], epsilon="1", output=tmp_path / "out", aggregates=[{"name": "n", "kind": "count"}],
                         **kw)
    clash = users_table().append_column("_global", pa.array([1] * users_table().num_rows))
    with session(ledger=ledger, tables={"orders": orders_table(), "users": clash}) as s:
        with pytest.raises(DPSparkError, match="the constant key of one public group"):
            s.groups(by=[], epsilon="1", output=tmp_path / "out", join=join,
                     aggregates=[{"name": "n", "kind": "count"}])
    assert Ledger(ledger).releases("orders+users") == [] and not (tmp_path / "out").exists()
