"""Issue 33 s2: tables that share a unit are one dataset (one budget, one filter), a table in one dataset only,
and racing charges to `orders` and `orders+users` never overspend `shop`."""

from __future__ import annotations

import json
import multiprocessing as mp
import sqlite3
from fractions import Fraction
from pathlib import Path

import pytest

from dpspark.errors import ParameterError
from dpspark.ledger import BudgetExceeded, Ledger, LedgerError
from dpspark.ledger.tables import resolve_dataset
from tests.support.race import run_racers


def test_resolve_dataset_rules() -> None:
    m = {"orders": "shop", "users": "shop", "clicks": "web"}
    assert resolve_dataset("orders", m) == "shop"
    assert resolve_dataset("users+orders", m) == "shop"
    assert resolve_dataset("orders+users+orders", m) == "shop"
    assert resolve_dataset("shop", m) == "shop" and resolve_dataset("other", m) == "other"
    assert resolve_dataset("a+b", m) == "a+b"  # no declared part: itself
    with pytest.raises(ParameterError, match="different datasets"):
        resolve_dataset("orders+clicks", m)
    with pytest.raises(ParameterError, match="different datasets"):
        resolve_dataset("orders+products", m)  # a declared table joined with an undeclared one


def test_charges_to_tables_and_joins_go_to_one_budget(tmp_path: Path) -> None:
    led = Ledger(tmp_path / "l.sqlite")
    assert led.declare_tables("shop", ["orders", "users"]) == {"orders": "shop", "users": "shop"}
    led.set_total("shop", "1", "0")
    led.spend("orders", "1/2", 0, "m", "/o/1")
    rec = led.spend("users+orders", "1/4", 0, "m", "/o/2")
    assert rec.dataset_id == "shop"
    with pytest.raises(BudgetExceeded):
        led.spend("orders+users", "1/2", 0, "m", "/o/3")  # 1/2 + 1/4 + 1/2 > 1: one filter for all of them
    with pytest.raises(BudgetExceeded):
        led.check_spend("users", "1/2", 0)
    s = led.summary("orders")  # reading a table shows its dataset
    assert s.dataset_id == "shop" and s.spent.epsilon == Fraction(3, 4) and s.tables == ("orders", "users")
    assert [r.dataset_id for r in led.releases("shop")] == ["shop", "shop"]
    assert led.releases("orders") == []  # nothing is stored under a table's own name
    assert led.dataset_of("orders+users") == "shop" and led.dataset_of("x") == "x"


def test_a_table_belongs_to_one_dataset_and_has_no_settings_of_its_own(tmp_path: Path) -> None:
    led = Ledger(tmp_path / "l.sqlite")
    led.declare_tables("shop", ["orders", "users"])
    led.declare_tables("shop", ["orders"])  # again: a no-op
    with pytest.raises(LedgerError, match="already belongs to dataset 'shop'"):
        led.declare_tables("web", ["clicks", "orders"])
    assert led.table_map() == {"orders": "shop", "users": "shop"}  # nothing of the refused one was written
    with pytest.raises(LedgerError, match="belongs to dataset 'shop'"):
        led.set_total("orders", "5", "0")
    with pytest.raises(LedgerError, match="belongs to dataset 'shop'"):
        led.set_principal_limit("orders+users", "alice", "5")
    with pytest.raises(LedgerError, match="names table 'orders'"):
        led.declare_tables("orders", ["x"])
    with pytest.raises(LedgerError, match="names table 'orders'"):
        led.declare_tables("orders+x", ["x"])
    with pytest.raises(ParameterError, match="contains"):
        led.declare_tables("shop", ["a+b"])
    with pytest.raises(ParameterError, match="joins tables of different datasets"):
        led.spend("orders+clicks", "1/10", 0, "m", "/o")


def test_a_table_with_history_of_its_own_is_refused(tmp_path: Path) -> None:
    """Declaring `orders` after it (or a join naming it) was charged on its own would let that history escape
    `shop`'s budget: refused, nothing declared."""
    led = Ledger(tmp_path / "l.sqlite")
    led.set_total("orders+items", "1", "0")
    led.spend("orders+items", "1/2", 0, "m", "/o")
    with pytest.raises(LedgerError, match="history would escape"):
        led.declare_tables("shop", ["users", "orders"])
    assert led.table_map() == {}


def test_an_older_schema5_ledger_gains_the_table_map_on_a_writable_open(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    Ledger(path).set_total("shop", "1", "0")
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE dataset_tables")  # as written by this schema before the table map
    assert Ledger(path, read_only=True).table_map() == {}
    led = Ledger(path)
    led.declare_tables("shop", ["orders"])
    assert led.dataset_of("orders") == "shop"


def test_cli_declares_tables_and_shows_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from dpspark.cli.app import main

    path = str(tmp_path / "l.sqlite")
    assert main(["budget", "shop", "--ledger", path, "--tables", "orders,users", "--total", "1"]) == 0
    assert "tables    orders, users" in capsys.readouterr().out
    assert main(["budget", "users", "--ledger", path, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["dataset"] == "shop" and data["tables"] == ["orders", "users"]
    assert main(["budget", "web", "--ledger", path, "--tables", "users"]) == 2
    assert "already belongs to dataset 'shop'" in capsys.readouterr().err


def _race(path: str, barrier: "mp.synchronize.Barrier", results: "mp.Queue[str]", worker: int) -> None:
    ledger = Ledger(path)
    name = "orders" if worker % 2 else "orders+users"
    barrier.wait()
    try:
        ledger.spend(name, "1/10", 0, "m", f"/out/{worker}")
    except BudgetExceeded:
        results.put("refused")
    else:
        results.put("spent")


def test_processes_racing_on_a_table_and_a_join_never_overspend_the_dataset(tmp_path: Path) -> None:
    """shop's total 3/10: of eight processes charging 1/10 to `orders` or `orders+users`, exactly 3 spend."""
    path = str(tmp_path / "race.sqlite")
    led = Ledger(path)
    led.declare_tables("shop", ["orders", "users"])
    led.set_total("shop", "3/10", "0")
    outcomes = run_racers(_race, path, 8)
    assert outcomes.count("spent") == 3
    s = Ledger(path).summary("shop")
    assert s.spent.epsilon == Fraction(3, 10) and len(s.releases) == 3
    assert Ledger(path).datasets() == ["shop"]


def test_sessions_on_a_table_and_on_a_join_share_the_datasets_budget(tmp_path: Path) -> None:
    """A Session charging `orders+users` (several private tables) and one charging `orders` pay shop's one
    total; the Session's named total is checked against shop's."""
    import pandas as pd

    import dpspark

    path = tmp_path / "l.sqlite"
    Ledger(path).declare_tables("shop", ["orders", "users"])
    df = pd.DataFrame({"x": [float(i % 5) for i in range(200)]})
    q = {"name": "total", "kind": "sum", "column": "x", "lo": "0", "hi": "4"}
    joined = dpspark.Session(df, max_units=200, ledger=path, dataset="orders+users",
                             total={"epsilon": "1", "delta": "1/1000000"})
    joined.answers(k=1, mechanism="gaussian", epsilon="3/5", delta="1/1000000000").answer(q)
    alone = dpspark.Session(df, max_units=200, ledger=path, dataset="orders")
    with pytest.raises(BudgetExceeded):
        alone.answers(k=1, mechanism="gaussian", epsilon="3/5", delta="1/1000000000").answer(q)
    s = Ledger(path).summary("shop")
    assert s.total is not None and s.total.epsilon == 1 and len(s.releases) == 1
    assert Ledger(path).datasets() == ["shop"]
