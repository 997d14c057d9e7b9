"""Issue 15, section 1: a config never changes a total, the privacy unit is pinned, a failed release says its spend is kept."""

from __future__ import annotations

import sqlite3
from fractions import Fraction
from pathlib import Path

import pytest

from dpspark.api.config import load_config
from dpspark.errors import DPSparkError
from dpspark.ledger import (
    BudgetExceeded,
    BudgetNotConfigured,
    Ledger,
    LedgerError,
    TotalMismatch,
    UnitMismatch,
)
from tests.support.configs import dense_toml


@pytest.fixture()
def led(tmp_path: Path) -> Ledger:
    return Ledger(tmp_path / "l.sqlite")


def test_config_total_sets_a_missing_total_and_is_accepted_when_equal(led: Ledger) -> None:
    led.spend("d", "1/4", 0, "m", "/r1", config_total_epsilon="1", config_total_delta="1/1000")
    assert (led.total("d").epsilon, led.total("d").delta) == (1, Fraction(1, 1000))  # type: ignore[union-attr]
    led.spend("d", "1/4", 0, "m", "/r2", config_total_epsilon="1", config_total_delta="1/1000")
    assert led.spent("d").epsilon == Fraction(1, 2)


def test_config_total_that_differs_is_refused_before_any_spend(led: Ledger) -> None:
    """The issue's case: total 1, spent 1/2, a config saying 1/4 used to lower the total (left = -1/4)."""
    led.set_total("d", "1", "1/1000")
    led.spend("d", "1/2", 0, "m", "/r1")
    for eps, delta in (("1/4", None), ("2", None), ("1", "1/2000"), (None, "1/10")):
        with pytest.raises(TotalMismatch, match="dpspark budget d --total") as err:
            led.spend("d", "1/100", 0, "m", "/r2", config_total_epsilon=eps, config_total_delta=delta)
        assert "Nothing was spent" in str(err.value)
        assert isinstance(err.value, DPSparkError)
    assert led.total("d") is not None and led.total("d").epsilon == 1  # type: ignore[union-attr]
    assert led.total("d").delta == Fraction(1, 1000)  # type: ignore[union-attr]
    assert len(led.releases("d")) == 1 and led.remaining("d").epsilon == Fraction(1, 2)  # type: ignore[union-attr]


def test_a_total_the_config_does_not_name_stays_unchanged(led: Ledger) -> None:
    led.set_total("d", "1", "1/1000")
    led.spend("d", "1/4", "1/2000", "m", "/r", config_total_epsilon="1")  # no total_delta named
    assert led.total("d").delta == Fraction(1, 1000)  # type: ignore[union-attr]  (was silently set to 0)
    led.spend("d", "1/4", "1/4000", "m", "/r", config_total_delta="1/1000")  # only delta named, equal
    assert led.total("d").epsilon == 1  # type: ignore[union-attr]


def test_config_naming_only_delta_cannot_create_a_total(led: Ledger) -> None:
    with pytest.raises(BudgetNotConfigured, match="only total_delta"):
        led.spend("d", "1/4", 0, "m", "/r", config_total_delta="1/1000")
    assert led.total("d") is None and led.releases("d") == []


def test_a_refused_spend_does_not_leave_the_config_total_behind(led: Ledger) -> None:
    with pytest.raises(BudgetExceeded):
        led.spend("d", "2", 0, "m", "/r", config_total_epsilon="1")
    assert led.total("d") is None  # one transaction: the total is set only together with a spend


def test_privacy_unit_is_pinned_at_the_first_spend(led: Ledger) -> None:
    led.set_total("d", "4")
    assert led.unit("d") is None
    led.spend("d", "1", 0, "m", "/r1", unit="user")
    assert led.unit("d") == "column:user"
    led.spend("d", "1", 0, "m", "/r2", unit="user")
    with pytest.raises(UnitMismatch, match="row level") as err:
        led.spend("d", "1", 0, "m", "/r3")  # row level
    assert "k*epsilon" in str(err.value) and "Nothing was spent" in str(err.value)
    with pytest.raises(UnitMismatch, match="'account'"):
        led.spend("d", "1", 0, "m", "/r4", unit="account")
    assert len(led.releases("d")) == 2
    led.set_total("e", "4")
    led.spend("e", "1", 0, "m", "/r")
    assert led.unit("e") == "row"
    with pytest.raises(UnitMismatch):
        led.spend("e", "1", 0, "m", "/r", unit="row")  # a column named "row" is not row level


def test_check_spend_raises_like_spend_and_writes_nothing(led: Ledger) -> None:
    led.set_total("d", "1")
    led.spend("d", "1/2", 0, "m", "/r", unit="u")
    led.check_spend("d", "1/2", 0, unit="u", config_total_epsilon="1")
    for kwargs, exc in (
        ({"unit": None}, UnitMismatch),
        ({"unit": "u", "config_total_epsilon": "2"}, TotalMismatch),
        ({"unit": "u", "epsilon": "3/4"}, BudgetExceeded),
    ):
        args = {"dataset_id": "d", "epsilon": "1/2", "delta": 0, **kwargs}
        with pytest.raises(exc):
            led.check_spend(**args)  # type: ignore[arg-type]
    assert len(led.releases("d")) == 1


def test_schema_1_ledger_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    Ledger(path).set_total("d", "1")
    with sqlite3.connect(path) as conn:  # make it look like a schema-1 ledger
        conn.execute("DROP TABLE units")
        conn.execute("UPDATE meta SET value = 'dpspark-budget-ledger/1' WHERE key = 'schema'")
    assert Ledger(path, read_only=True).summary("d").unit is None  # read-only: readable, not migrated
    led = Ledger(path)
    led.spend("d", "1/2", 0, "m", "/r", unit="u")
    assert led.unit("d") == "column:u"


def _release_config(tmp_path: Path, budget: str, unit: str = "") -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    # a real file: its schema is read before the spend
    pq.write_table(pa.table({"q": pa.array([1, 2], pa.int64()), "user": pa.array([1, 2], pa.int64())}),
                   tmp_path / "in.parquet")
    p = tmp_path / "c.toml"
    p.write_text(dense_toml("q", unit, f'[budget]\nledger = "l.sqlite"\ndataset = "demo"\n{budget}\n'))
    return p


def test_job_passes_config_totals_and_unit_and_says_the_spend_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """job.run_release: totals/unit reach the ledger; a failure after the spend says the spend stays (1.5)."""
    import dpspark.engine.runner as job

    def boom(*args: object, **kwargs: object) -> Path:
        raise RuntimeError("simulated failure after the spend")

    monkeypatch.setattr(job, "_run", boom)
    cfg = load_config(_release_config(tmp_path, 'total_epsilon = "1"', 'unit_column = "user"'))
    assert cfg.budget is not None and cfg.budget.total_delta is None
    with pytest.raises(RuntimeError) as err:
        job.run_release(cfg, progress=lambda m: None)
    assert any("stays spent" in n and "never refunded" in n for n in err.value.__notes__)
    led = Ledger(tmp_path / "l.sqlite")
    assert led.unit("demo") == "column:user" and led.total("demo").epsilon == 1  # type: ignore[union-attr]
    assert [r.status for r in led.releases("demo")] == ["failed"]
    # a differing config total is refused before anything is spent (no Spark needed)
    cfg2 = load_config(_release_config(tmp_path, 'total_epsilon = "1/4"', 'unit_column = "user"'))
    with pytest.raises(TotalMismatch):
        job.run_release(cfg2, progress=lambda m: None)
    cfg3 = load_config(_release_config(tmp_path, 'total_epsilon = "1"'))  # row level now
    with pytest.raises(UnitMismatch):
        job.run_release(cfg3, progress=lambda m: None)
    assert len(led.releases("demo")) == 1


def test_cli_prints_the_spend_kept_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import dpspark.engine.runner as job
    from dpspark.cli.app import main

    def boom(*args: object, **kwargs: object) -> Path:
        from dpspark.engine.spark.counts import InputError

        raise InputError("simulated failure after the spend")  # a user-facing error, caught by the CLI

    monkeypatch.setattr(job, "_run", boom)
    _release_config(tmp_path, 'total_epsilon = "1"')
    assert main(["release", "--config", str(tmp_path / "c.toml")]) == 2
    err = capsys.readouterr().err
    assert "simulated failure" in err and "stays spent" in err


def test_budget_cli_names_the_flag_and_shows_the_unit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from dpspark.cli.app import main

    path = str(tmp_path / "l.sqlite")
    assert main(["budget", "d", "--ledger", path, "--total", "1/2"]) == 0
    assert "not pinned yet" in capsys.readouterr().out
    assert main(["budget", "d", "--ledger", path, "--total", "1"]) == 2
    err = capsys.readouterr().err
    assert "--allow-increase" in err and "allow_increase=True (an explicit" not in err
    Ledger(path).spend("d", "1/4", 0, "m", "/r", unit="user")
    assert main(["budget", "d", "--ledger", path]) == 0
    assert "unit column 'user'" in capsys.readouterr().out
    with pytest.raises(LedgerError):
        Ledger(path).set_total("d", "2")


def test_n_is_pinned_with_the_unit_and_older_ledgers_migrate(tmp_path: Path) -> None:
    """Spends compose under one relation: add/remove among at most the pinned n units."""
    import sqlite3

    from dpspark.ledger.store import SCHEMA_ID

    path = tmp_path / "n.sqlite"
    led = Ledger(path)
    led.set_total("ds", 4)
    led.spend("ds", 1, 0, "dense", "r1", unit="user", max_units=1000)
    assert led.pinned_max_units("ds") == 1000
    with pytest.raises(UnitMismatch, match="pinned to n = 1000 units"):
        led.check_spend("ds", 1, 0, unit="user", max_units=2000)
    with pytest.raises(UnitMismatch, match="max_units = 2000"):
        led.spend("ds", 1, 0, "dense", "r2", unit="user", max_units=2000)
    assert len(led.releases("ds")) == 1  # the refusal spent nothing
    led.spend("ds", 1, 0, "dense", "r3", unit="user", max_units=1000)
    # a schema-2 ledger (no pinned n) migrates on a writable open and pins n at its next spend
    conn = sqlite3.connect(path)
    conn.execute("ALTER TABLE units DROP COLUMN max_units")
    conn.execute("UPDATE meta SET value = 'dpspark-budget-ledger/2' WHERE key = 'schema'")
    conn.commit()
    conn.close()
    old = Ledger(path)
    assert old.pinned_max_units("ds") is None
    old.spend("ds", 1, 0, "dense", "r4", unit="user", max_units=500)
    assert old.pinned_max_units("ds") == 500
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0] == SCHEMA_ID
    conn.close()
