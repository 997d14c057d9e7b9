"""The privacy budget ledger: exact composition, refusal before spending, no refunds, clear errors."""

from __future__ import annotations

import sqlite3
from fractions import Fraction
from pathlib import Path

import pytest

from dpspark.ledger import (
    STATUS_FAILED,
    STATUS_RELEASED,
    STATUS_SPENT,
    BudgetExceeded,
    BudgetNotConfigured,
    Ledger,
    LedgerError,
    LedgerUnreadable,
)


@pytest.fixture()
def ledger(tmp_path: Path) -> Ledger:
    led = Ledger(tmp_path / "ledger.sqlite")
    led.set_total("sales-2024", "1", "1/1000000")
    return led


def test_spends_compose_exactly_with_fractions(ledger: Ledger) -> None:
    ledger.spend("sales-2024", "1/10", "1/10000000", "StabilityHistogram", "/out/a")
    ledger.spend("sales-2024", "1/5", 0, "BasicHistogram", "/out/b")
    ledger.spend("sales-2024", Fraction(1, 3), "2^-30", "PureSparseHistogram", "/out/c")
    spent = ledger.spent("sales-2024")
    assert spent.epsilon == Fraction(1, 10) + Fraction(1, 5) + Fraction(1, 3)  # 19/30: no float could give this
    assert spent.delta == Fraction(1, 10**7) + Fraction(1, 2**30)
    left = ledger.remaining("sales-2024")
    assert left is not None and left.epsilon == Fraction(11, 30)
    assert left.delta == Fraction(1, 10**6) - spent.delta
    recs = ledger.releases("sales-2024")
    assert [r.mechanism for r in recs] == ["StabilityHistogram", "BasicHistogram", "PureSparseHistogram"]
    assert [r.release_path for r in recs] == ["/out/a", "/out/b", "/out/c"]
    assert all(r.status == STATUS_SPENT and r.created_at.endswith("+00:00") for r in recs)


def test_stored_amounts_are_exact_rational_strings(ledger: Ledger) -> None:
    ledger.spend("sales-2024", "0.1", "1e-7", "m", "/out")
    con = sqlite3.connect(ledger.path)
    row = con.execute("SELECT epsilon, delta FROM releases").fetchone()
    con.close()
    assert row == ("1/10", "1/10000000")


def test_exceeding_spend_is_refused_with_exact_remaining_and_nothing_recorded(ledger: Ledger) -> None:
    ledger.spend("sales-2024", "2/3", 0, "m", "/out/1")
    with pytest.raises(BudgetExceeded) as info:
        ledger.spend("sales-2024", "1/2", 0, "m", "/out/2")
    msg = str(info.value)
    assert "epsilon = 1/3" in msg and "sales-2024" in msg and "epsilon = 1/2" in msg
    assert info.value.remaining == (Fraction(1, 3), Fraction(1, 10**6))
    assert len(ledger.releases("sales-2024")) == 1
    # the exact boundary is allowed: 2/3 + 1/3 == 1
    ledger.spend("sales-2024", "1/3", 0, "m", "/out/3")
    assert ledger.remaining("sales-2024").epsilon == 0  # type: ignore[union-attr]
    with pytest.raises(BudgetExceeded):
        ledger.spend("sales-2024", "2^-200", 0, "m", "/out/4")


def test_delta_budget_is_enforced_separately(ledger: Ledger) -> None:
    with pytest.raises(BudgetExceeded) as info:
        ledger.spend("sales-2024", "1/100", "1/999999", "m", "/out")
    assert "delta = 1/1000000" in str(info.value)


def test_failed_release_keeps_its_spend(ledger: Ledger) -> None:
    with pytest.raises(RuntimeError, match="boom"):
        with ledger.spending("sales-2024", "1/2", 0, "m", "/out/x") as rec:
            assert rec.status == STATUS_SPENT
            raise RuntimeError("boom")
    with ledger.spending("sales-2024", "1/4", 0, "m", "/out/y"):
        pass
    recs = ledger.releases("sales-2024")
    assert [r.status for r in recs] == [STATUS_FAILED, STATUS_RELEASED]
    assert all(r.finished_at is not None for r in recs)
    assert ledger.spent("sales-2024").epsilon == Fraction(3, 4)  # the failed 1/2 is never refunded
    with pytest.raises(LedgerError, match="already failed"):
        ledger.mark_released(recs[0].id)


def test_spend_without_total_is_refused(tmp_path: Path) -> None:
    led = Ledger(tmp_path / "l.sqlite")
    with pytest.raises(BudgetNotConfigured, match="no total privacy budget"):
        led.spend("other", "1/10", 0, "m", "/out")
    assert led.releases("other") == []


def test_budget_is_keyed_by_declared_id_not_path(ledger: Ledger) -> None:
    ledger.spend("sales-2024", "1", 0, "m", "/data/v1/out")
    # a copy of the data under another path is still the same declared dataset
    with pytest.raises(BudgetExceeded):
        ledger.spend("sales-2024", "1/100", 0, "m", "/copy/renamed/out")
    with pytest.raises(ValueError, match="not a file path"):
        ledger.spend("/data/sales.parquet", "1/100", 0, "m", "/out")


def test_raising_a_total_needs_an_explicit_flag(ledger: Ledger) -> None:
    ledger.set_total("sales-2024", "1", "1/1000000")  # same total again: fine
    with pytest.raises(LedgerError, match="allow_increase"):
        ledger.set_total("sales-2024", "2", "1/1000000")
    ledger.set_total("sales-2024", "1/2", "1/1000000")  # lowering is fine
    ledger.set_total("sales-2024", "2", "1/1000000", allow_increase=True)
    assert ledger.total("sales-2024").epsilon == 2  # type: ignore[union-attr]


@pytest.mark.parametrize("bad", [0.1, -1, "1/0", "abc"])
def test_amounts_must_be_exact_and_nonnegative(ledger: Ledger, bad: object) -> None:
    with pytest.raises((TypeError, ValueError)):
        ledger.spend("sales-2024", bad, 0, "m", "/out")  # type: ignore[arg-type]
    assert ledger.releases("sales-2024") == []


def test_persists_across_instances(tmp_path: Path) -> None:
    path = tmp_path / "p.sqlite"
    Ledger(path).set_total("d1", "1")
    Ledger(path).spend("d1", "3/4", 0, "m", "/o")
    with pytest.raises(BudgetExceeded):
        Ledger(path).spend("d1", "1/2", 0, "m", "/o")
    assert Ledger(path, create=False).datasets() == ["d1"]


def test_garbage_file_is_reported_by_name(tmp_path: Path) -> None:
    path = tmp_path / "garbage.sqlite"
    path.write_bytes(b"this is not an sqlite database at all" * 100)
    with pytest.raises(LedgerUnreadable, match="garbage.sqlite"):
        Ledger(path)


def test_truncated_ledger_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "trunc.sqlite"
    Ledger(path).set_total("d", "1")
    con = sqlite3.connect(path)
    con.executemany("INSERT INTO budgets (dataset_id, epsilon_total, delta_total, updated_at) VALUES (?, '1', '0', 'x')", [(f"d{i}",) for i in range(2000)])
    con.commit()
    con.close()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2 + 100])
    with pytest.raises(LedgerUnreadable, match="trunc.sqlite"):
        Ledger(path).summary("d")


def test_foreign_sqlite_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "foreign.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    with pytest.raises(LedgerUnreadable, match="not a dpspark budget ledger"):
        Ledger(path)


def test_tampered_amount_is_reported(ledger: Ledger) -> None:
    ledger.spend("sales-2024", "1/10", 0, "m", "/out")
    con = sqlite3.connect(ledger.path)
    con.execute("UPDATE releases SET epsilon = '0.1.2'")
    con.commit()
    con.close()
    with pytest.raises(LedgerUnreadable, match="malformed epsilon"):
        ledger.spent("sales-2024")


def test_read_only_ledger_shows_but_never_writes(tmp_path: Path) -> None:
    path = tmp_path / "ro.sqlite"
    led = Ledger(path)
    led.set_total("d", "1")
    rec = led.spend("d", "1/3", 0, "m", "/o")
    ro = Ledger(path, read_only=True)
    assert ro.summary("d").spent.epsilon == Fraction(1, 3)
    for write in (lambda: ro.spend("d", "1/3", 0, "m", "/o"), lambda: ro.set_total("d", "1"), lambda: ro.mark_failed(rec.id)):
        with pytest.raises(LedgerError, match="read-only"):
            write()
    assert led.releases("d")[0].status == STATUS_SPENT and len(led.releases("d")) == 1
    with pytest.raises(LedgerUnreadable, match="no budget ledger"):
        Ledger(tmp_path / "absent.sqlite", read_only=True)


def test_missing_ledger_is_not_created_in_read_mode(tmp_path: Path) -> None:
    with pytest.raises(LedgerUnreadable, match="no budget ledger"):
        Ledger(tmp_path / "absent.sqlite", create=False)
    assert not (tmp_path / "absent.sqlite").exists()
