"""Private joins on the unit from SQL, Session.groups and TOML: the same release under one seed; joins of two
private tables on anything but the unit refused before the spend (ledger unchanged); the private tables that
share the unit are one ledger dataset, charged once per release."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

SEED = 23
UNIT = "customer_id"
Q = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-9, privacy_unit_column = customer_id, "
     "max_groups_contributed = 2, max_rows_per_group = 3) ")
JOINED = (Q + "region, COUNT(*) AS orders, SUM(amount, contribution_bounds_per_group => (0, 100)) AS amount "
          "FROM orders {how}JOIN users USING (customer_id) WHERE channel != 'phone' GROUP BY region")


def orders_table(rows: int = 5000, units: int = 900) -> pa.Table:
    import numpy as np

    rng = np.random.default_rng(4)
    return pa.table({UNIT: rng.integers(0, units, rows), "amount": rng.gamma(2.0, 20.0, rows).round(2),
                     "channel": rng.choice(["web", "app", "phone"], rows)})


def users_table(units: int = 1000) -> pa.Table:
    import numpy as np

    rng = np.random.default_rng(5)
    ids = np.concatenate([np.arange(0, units, 1), np.arange(0, 50)])  # 50 users have two rows
    return pa.table({UNIT: ids, "region": rng.choice(["north", "south", "east"], len(ids)),
                     "age": rng.integers(18, 90, len(ids))})


def session(**kw: Any) -> Any:
    import dpspark
    from dpspark.rng import SeededRandom

    tables = kw.pop("tables", {"orders": orders_table(), "users": users_table()})
    return dpspark.Session(tables=tables, max_units=100_000, unit_column=UNIT, rng=SeededRandom(SEED), **kw)


def api(s: Any, out: Path, how: str = "inner") -> Any:
    return s.groups(by=["region"], universe={"kind": "string", "max_bytes": 31, "column": "region"}, epsilon="1",
                    delta="1e-9", max_groups_per_unit=2, max_rows_per_group=3, where="channel != 'phone'",
                    output=out, join={"table": "users", "on": UNIT, "how": how, "private": True},
                    aggregates=[{"name": "orders", "kind": "count"},
                                {"name": "amount", "kind": "sum", "column": "amount", "lo": "0", "hi": "100"}])


def data_files(rel: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(rel.iterdir())
            if p.is_file() and "manifest" not in p.name}


@pytest.mark.parametrize("how", ["inner", "left"])
def test_sql_equals_session_groups_under_one_seed(tmp_path: Path, how: str) -> None:
    query = JOINED.format(how="LEFT " if how == "left" else "")
    with session() as s:
        by_sql = s.sql(query, output=tmp_path / "sql")
    with session() as s:
        by_api = api(s, tmp_path / "api", how)
    assert data_files(tmp_path / "sql") == data_files(tmp_path / "api")
    assert sorted(by_sql.keys()) == ["east", "north", "south"]
    join = by_sql.manifest.parameters["join"]
    assert join["private"] is True and join["on"] == [UNIT] and join["max_rows_per_unit"] == [1000, 1000]
    with session() as s:  # the comparison has teeth: another seed, other files
        from dpspark.rng import SeededRandom

        s.rng = SeededRandom(SEED + 1)
        s.sql(query, output=tmp_path / "other")
    assert data_files(tmp_path / "other") != data_files(tmp_path / "sql")


def test_options_max_rows_per_unit_is_the_private_joins_bound(tmp_path: Path) -> None:
    """OPTIONS (max_rows_per_unit = 2) is the join's max_rows_per_unit (both tables keep 2 rows per unit): the
    same release as Session.groups with it, stated in the manifest, and (the truncation bites) other files than
    the default's; without a private join the option is refused before the spend (on main: an unknown option)."""
    from dpspark.sql import SqlError

    query = JOINED.format(how="").replace("max_rows_per_group = 3", "max_rows_per_group = 3, max_rows_per_unit = 2")
    with session() as s:
        rel = s.sql(query, output=tmp_path / "sql")
    assert rel.manifest.parameters["join"]["max_rows_per_unit"] == [2, 2]
    with session() as s:
        s.groups(by=["region"], universe={"kind": "string", "max_bytes": 31, "column": "region"}, epsilon="1",
                 delta="1e-9", max_groups_per_unit=2, max_rows_per_group=3, where="channel != 'phone'",
                 output=tmp_path / "api", join={"table": "users", "on": UNIT, "private": True, "max_rows_per_unit": 2},
                 aggregates=[{"name": "orders", "kind": "count"},
                             {"name": "amount", "kind": "sum", "column": "amount", "lo": "0", "hi": "100"}])
    with session() as s:
        s.sql(JOINED.format(how=""), output=tmp_path / "default")
    assert data_files(tmp_path / "sql") == data_files(tmp_path / "api") != data_files(tmp_path / "default")
    alone = Q.replace("max_rows_per_group = 3", "max_rows_per_unit = 2") + "COUNT(*) AS n FROM orders"
    with session(budget={"epsilon": "5", "delta": "1e-6"}) as s:
        before = s.remaining.measure
        with pytest.raises(SqlError, match="max_rows_per_unit bounds a private join"):
            s.sql(alone, output=tmp_path / "alone")
        assert s.remaining.measure == before and not (tmp_path / "alone").exists()


#: a private join without GROUP BY (one public group: tests/unit/sql/test_join_global.py)
GLOBAL_JOIN = (Q.replace(", max_groups_contributed = 2", "") + "COUNT(*) AS n, SUM(amount) AS total, AVG(age) AS "
               "mean_age FROM orders JOIN users USING (customer_id) WHERE channel != 'phone'")


@pytest.mark.parametrize("query", [JOINED.format(how=""), GLOBAL_JOIN], ids=["group by", "global"])
def test_toml_equals_session_sql(tmp_path: Path, query: str) -> None:
    import pyarrow.parquet as pq

    from dpspark.api.config import load_config
    from dpspark.engine.runner import plan_release, run_release
    from dpspark.rng import SeededRandom

    pq.write_table(orders_table(), tmp_path / "orders.parquet")
    pq.write_table(users_table(), tmp_path / "users.parquet")
    with session(tables={"orders": tmp_path / "orders.parquet", "users": tmp_path / "users.parquet"}) as s:
        s.sql(query, output=tmp_path / "sql")
    toml = tmp_path / "q.toml"
    toml.write_text(f'[sql]\nquery = """{query}"""\nmax_units = 100000\n'
                    f'[tables.orders]\npath = "orders.parquet"\n[tables.users]\npath = "users.parquet"\n'
                    f'[output]\npath = "toml"\n[budget]\nledger = "ledger.sqlite"\ntotal_epsilon = "5"\n'
                    f'total_delta = "1e-6"\n', encoding="utf-8")
    spec = load_config(toml)
    assert spec.budget.dataset == "orders+users"  # the private tables sharing the unit: one dataset
    run_release(plan_release(spec, engine="arrow"), rng=SeededRandom(SEED))
    assert data_files(tmp_path / "toml") == data_files(tmp_path / "sql")


REFUSED = {
    "join on another column": (JOINED.format(how="").replace("USING (customer_id)", "ON orders.age = users.age"),
                               "on the privacy unit column only"),
    "join on the unit and more": (JOINED.format(how="").replace("USING (customer_id)", "USING (customer_id, age)"),
                                  "JOIN users on customer_id, age"),
    "from the other table": (JOINED.format(how="").replace("FROM orders JOIN users", "FROM users JOIN orders"),
                             "FROM users: the session's data is the private table 'orders'"),
    # without GROUP BY a private join is one public group (tests/unit/sql/test_join_global.py); k is not an option
    "without group by, max_groups_contributed": (Q + "COUNT(*) AS n FROM orders JOIN users USING (customer_id)",
                                                 "OPTIONS max_groups_contributed applies to GROUP BY queries"),
    "global, bounds_share 1": (GLOBAL_JOIN.replace("privacy_unit_column", "bounds_share = 1, privacy_unit_column"),
                               "must lie in (0, 1)"),
    "global, count of a column": (GLOBAL_JOIN.replace("COUNT(*)", "COUNT(age)"),
                                  "write COUNT(*) and add age IS NOT NULL"),
    "self join": (Q + "region, COUNT(*) AS n FROM orders JOIN orders USING (customer_id) GROUP BY region",
                  "with itself"),
    "right join": (Q + "region, COUNT(*) AS n FROM orders RIGHT JOIN users USING (customer_id) GROUP BY region",
                   "RIGHT JOIN"),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_refusals_leave_the_ledger_unchanged(tmp_path: Path, name: str) -> None:
    from dpspark.errors import DPSparkError
    from dpspark.ledger import Ledger

    query, words = REFUSED[name]
    ledger = tmp_path / "ledger.sqlite"
    Ledger(ledger).set_total("orders+users", "4", "1e-6")
    with session(ledger=ledger) as s:
        with pytest.raises(DPSparkError, match=re.escape(words)):
            s.sql(query, output=tmp_path / "out")
    assert Ledger(ledger).releases("orders+users") == [] and not (tmp_path / "out").exists()


def test_session_groups_refusals_leave_the_ledger_unchanged(tmp_path: Path) -> None:
    from dpspark.errors import DPSparkError
    from dpspark.ledger import Ledger

    ledger = tmp_path / "ledger.sqlite"
    Ledger(ledger).set_total("orders+users", "4", "1e-6")
    cases = [({"table": "users", "on": "age", "private": True}, "on the privacy unit column only"),
             ({"table": "nobody", "on": UNIT, "private": True}, "another private table of the session"),
             ({"table": users_table(), "on": UNIT, "private": True}, "another private table of the session"),
             ({"path": "/etc/passwd", "on": UNIT, "private": True}, "another private table of the session")]
    with session(ledger=ledger) as s:
        for join, words in cases:
            with pytest.raises(DPSparkError, match=re.escape(words)):
                s.groups(by=["region"], keys=["north"], epsilon="1", join=join, output=tmp_path / "out",
                         aggregates=[{"name": "n", "kind": "count"}])
    assert Ledger(ledger).releases("orders+users") == [] and not (tmp_path / "out").exists()


def test_several_private_tables_need_the_unit() -> None:
    import dpspark
    from dpspark.api.session import SessionInputError

    with pytest.raises(SessionInputError, match="share a privacy unit"):
        dpspark.Session(tables={"orders": orders_table(), "users": users_table()}, max_units=10)


def test_the_tables_sharing_the_unit_are_one_dataset_charged_once(tmp_path: Path) -> None:
    """A release joining orders and users, and one reading orders alone, are both charged to orders+users,
    once each (the unit's budget is shared by every table it has rows in)."""
    from dpspark.ledger import Ledger

    ledger = tmp_path / "ledger.sqlite"
    Ledger(ledger).set_total("orders+users", "4", "1e-6")
    with session(ledger=ledger) as s:
        assert s.dataset == "orders+users"
        s.sql(JOINED.format(how=""), output=tmp_path / "joined")
        assert len(Ledger(ledger).releases("orders+users")) == 1
        s.groups(by=["channel"], keys=["web", "app"], epsilon="1/2", output=tmp_path / "alone",
                 aggregates=[{"name": "n", "kind": "count"}])
    assert len(Ledger(ledger).releases("orders+users")) == 2
    spent = Ledger(ledger).spent("orders+users")
    assert spent.epsilon == pytest.approx(1.5) and Ledger(ledger).releases("orders") == []


def test_cli_joins_two_private_tables_charged_once_to_their_dataset(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from dpspark.cli.app import main
    from dpspark.ledger import Ledger

    pq.write_table(orders_table(), tmp_path / "orders.parquet")
    pq.write_table(users_table(), tmp_path / "users.parquet")
    ledger = tmp_path / "ledger.sqlite"
    Ledger(ledger).set_total("orders+users", "4", "1e-6")
    assert main(["sql", JOINED.format(how=""), "--table", f"orders={tmp_path / 'orders.parquet'}", "--table",
                 f"users={tmp_path / 'users.parquet'}", "--max-units", "100000", "--ledger", str(ledger),
                 "--output", str(tmp_path / "cli")]) == 0
    assert len(Ledger(ledger).releases("orders+users")) == 1
    from dpspark.lookup import open_release

    assert open_release(tmp_path / "cli").manifest.parameters["join"]["table"] == "users"


def test_a_table_is_charged_under_one_dataset_only(tmp_path: Path) -> None:
    """orders shares its unit with users: once orders+users is charged, a session on orders alone (dataset
    "orders") is refused before the spend, when opened and (opened earlier) at its release; dataset=
    "orders+users" charges the one dataset. Each refusal leaves the ledger as it was (on main the session on
    orders alone was charged to a second dataset, "orders", splitting the unit's budget)."""
    import dpspark
    from dpspark.api.session_sql import DatasetSplitError
    from dpspark.ledger import Ledger
    from dpspark.rng import SeededRandom

    ledger = tmp_path / "ledger.sqlite"

    def alone(**kw: Any) -> Any:
        return dpspark.Session(tables={"orders": orders_table()}, max_units=100_000, unit_column=UNIT,
                               rng=SeededRandom(SEED), ledger=ledger, **kw)

    def count(s: Any, out: str) -> Any:
        return s.groups(by=["channel"], keys=["web", "app"], epsilon="1/2", output=tmp_path / out,
                        aggregates=[{"name": "n", "kind": "count"}])

    early = alone()  # opened before the ledger has a dataset: "orders" (not refused yet)
    assert early.dataset == "orders"
    Ledger(ledger).set_total("orders+users", "4", "1e-6")
    with session(ledger=ledger) as s:
        s.sql(JOINED.format(how=""), output=tmp_path / "joined")
    with pytest.raises(DatasetSplitError, match="'orders' is charged under the ledger's dataset 'orders\\+users'"):
        alone()
    with pytest.raises(DatasetSplitError, match="dataset='orders\\+users'"):
        count(early, "early")
    assert not (tmp_path / "early").exists() and Ledger(ledger).datasets() == ["orders+users"]
    with alone(dataset="orders+users") as s:  # the curator names the table's one dataset
        count(s, "named")
    assert len(Ledger(ledger).releases("orders+users")) == 2 and Ledger(ledger).releases("orders") == []


def test_a_dataset_id_names_every_private_table_of_the_session(tmp_path: Path) -> None:
    """dataset= for several private tables names them all (no data: refused when the session is opened);
    and a table charged alone first cannot join a group later (its budget is already split)."""
    from dpspark.api.session_sql import DatasetSplitError
    from dpspark.ledger import Ledger

    ledger = tmp_path / "ledger.sqlite"
    with pytest.raises(DatasetSplitError, match="does not name the private table\\(s\\) 'users'.*'orders\\+users'"):
        session(ledger=ledger, dataset="orders")
    with pytest.raises(DatasetSplitError, match="'orders', 'users'"):
        session(ledger=ledger, dataset="shop")
    assert not ledger.exists()
    Ledger(ledger).set_total("orders", "4", "1e-6")
    with pytest.raises(DatasetSplitError, match="'orders' is charged under the ledger's dataset 'orders'"):
        session(ledger=ledger)
    assert Ledger(ledger).datasets() == ["orders"]


def test_cli_refuses_a_table_of_another_dataset_before_the_spend(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    import pyarrow.parquet as pq

    from dpspark.cli.app import main
    from dpspark.ledger import Ledger

    pq.write_table(orders_table(), tmp_path / "orders.parquet")
    ledger = tmp_path / "ledger.sqlite"
    Ledger(ledger).set_total("orders+users", "4", "1e-6")
    query = (Q + "channel, COUNT(*) AS n FROM orders GROUP BY channel")
    assert main(["sql", query, "--table", f"orders={tmp_path / 'orders.parquet'}", "--max-units", "100000",
                 "--ledger", str(ledger), "--output", str(tmp_path / "cli")]) != 0
    assert re.search("budget.dataset: table 'orders' is charged under .*'orders\\+users'", capsys.readouterr().err)
    assert not (tmp_path / "cli").exists() and Ledger(ledger).releases("orders+users") == []
    assert Ledger(ledger).datasets() == ["orders+users"]
