"""Issue 33: the ledger composes zCDP entries in rho (converted once), takes totals in rho or (epsilon, delta),
limits per principal and per query, refreshes only when told, and opens ledgers written by older dpspark."""

from __future__ import annotations

import shutil
import sqlite3
from fractions import Fraction as F
from pathlib import Path

import pytest

from dpspark.errors import DPSparkError, ParameterError
from dpspark.ledger import (
    Budget,
    BudgetExceeded,
    BudgetNotConfigured,
    Ledger,
    LedgerError,
    TotalMismatch,
)
from dpspark.ledger.store import SCHEMA_ID, total_from
from dpspark.privacy.mixed_composition import converted_upper

RHO = F(267921, 536870912)  # rho_within("0.171", "1e-9"): what a Gaussian release configured (0.171, 1e-9) runs at
OLD = Path(__file__).parent / "data" / "ledger-schema3-6010be4.sqlite"  # written by main at 6010be4


@pytest.fixture()
def led(tmp_path: Path) -> Ledger:
    return Ledger(tmp_path / "l.sqlite")


def _gauss(led: Ledger, i: int, **kw: object) -> None:
    led.spend("d", "171/1000", "1/1000000000", "gaussian", f"/r{i}", rho=RHO, **kw)  # type: ignore[arg-type]


# --- section 1: composition ---------------------------------------------------------------------------------
def test_zcdp_entries_compose_in_rho_where_basic_composition_refused_the_second(led: Ledger) -> None:
    """Total (2, 1e-9): the basic filter (default) runs out of delta after one release; the zcdp filter
    declared with the total composes 40 in rho (eps ~ 1.17)."""
    led.set_total("b", "2", "1/1000000000")
    led.spend("b", "171/1000", "1/1000000000", "gaussian", "/b0", rho=RHO)
    with pytest.raises(BudgetExceeded, match="basic filter"):
        led.spend("b", "171/1000", "1/1000000000", "gaussian", "/b1", rho=RHO)
    led.set_total("d", "2", "1/1000000000", rule="zcdp")
    for i in range(40):
        _gauss(led, i)
    spent = led.spent("d")
    assert spent.rho == 40 * RHO and spent.delta == F(1, 10**9)
    assert spent.epsilon == converted_upper(40 * RHO, F(1, 10**9)) and spent.epsilon < F(12, 10)
    assert led.summary("d").rule == "zcdp"


def test_the_spend_that_would_exceed_the_converted_total_is_refused(led: Ledger) -> None:
    led.set_total("d", "1", "1/1000000000", rule="zcdp")
    fits = 0
    while True:
        try:
            _gauss(led, fits)
        except BudgetExceeded as err:
            assert "left of its rho part" in str(err) and err.requested == (F(171, 1000), F(1, 10**9))
            break
        fits += 1
    assert converted_upper(fits * RHO, F(1, 10**9)) <= 1 < converted_upper((fits + 1) * RHO, F(1, 10**9))
    assert len(led.releases("d")) == fits


def test_mixed_entries_convert_rho_at_the_delta_the_approx_entries_leave(led: Ledger) -> None:
    led.set_total("d", "3", "1/1000000", rule="zcdp", share=("1/4", "1/10000000"))
    led.spend("d", "1/2", 0, "hist", "/p")                    # pure: rho part, eps^2/2
    led.spend("d", "1/4", "1/10000000", "stability", "/a")    # (eps, delta): the share
    _gauss(led, 0)
    s = led.summary("d")
    assert s.spent.delta == F(1, 10**6)
    assert s.spent.epsilon == F(1, 4) + converted_upper(RHO + F(1, 8), F(9, 10**7))
    assert s.remaining is not None and s.remaining.delta == 0  # the share's delta is used up
    with pytest.raises(BudgetExceeded, match="share"):
        led.spend("d", "1/100", "1/100000000", "stability", "/a2")


def test_a_zcdp_spend_must_be_charged_what_its_rho_converts_to(led: Ledger) -> None:
    led.set_total("d", "10", "1/1000")
    with pytest.raises(ParameterError, match="must hold for its rho"):
        led.spend("d", "1/10", "1/1000000000", "gaussian", "/r", rho=RHO)
    assert led.releases("d") == []


def test_a_rho_total_sums_rho_and_pure_eps_squared_and_refuses_approx(led: Ledger) -> None:
    led.set_total("d", rho_total="1/100")
    assert led.total("d").rho == F(1, 100)  # type: ignore[union-attr]
    _gauss(led, 0)
    led.spend("d", "1/10", 0, "hist", "/p")  # 1/200
    assert led.spent("d").rho == RHO + F(1, 200)
    with pytest.raises(BudgetExceeded, match="no rho bounds"):
        led.spend("d", "1/10", "1/1000000", "stability", "/a")
    with pytest.raises(BudgetExceeded, match="rho"):
        led.spend("d", "1/10", 0, "hist", "/p2")  # 1/200 more: over 1/100
    assert len(led.releases("d")) == 2
    assert led.remaining("d").rho == F(1, 100) - RHO - F(1, 200)  # type: ignore[union-attr]


def test_changing_a_totals_form_is_an_explicit_act(led: Ledger) -> None:
    led.set_total("d", "1", "1/1000000")
    with pytest.raises(LedgerError, match="allow-increase"):
        led.set_total("d", rho_total="1/1000")
    led.set_total("d", rho_total="1/1000", allow_increase=True)
    with pytest.raises(ParameterError):
        led.set_total("d", "1", rho_total="1/2")
    with pytest.raises(TotalMismatch, match="declared in rho"):
        _gauss(led, 0, config_total_epsilon="1")


def test_per_query_limit_caps_each_charge(led: Ledger) -> None:
    led.set_total("d", "4", "1/1000000")
    led.set_query_limit("d", "1/2", "1/1000000000")
    with pytest.raises(BudgetExceeded, match="per-query limit epsilon = 1/2"):
        led.spend("d", "1", 0, "hist", "/big")
    with pytest.raises(BudgetExceeded, match="per-query"):
        led.spend("d", "1/4", "1/100000000", "stability", "/bigdelta")
    _gauss(led, 0)
    led.set_query_limit("d", rho="1/10000")
    with pytest.raises(BudgetExceeded, match="per-query limit rho"):
        _gauss(led, 1)  # RHO ~ 1/2004 > 1/10000
    led.set_query_limit("d")
    _gauss(led, 2)
    assert len(led.releases("d")) == 2


# --- section 2: principals and refresh ---------------------------------------------------------------------
def test_principal_limits_sit_under_the_total(led: Ledger) -> None:
    led.set_total("d", "2", "1/1000000")
    _gauss(led, 0)  # no limits yet: an unnamed spend is fine
    led.set_principal_limit("d", "alice", "1/2", "1/1000000")
    led.set_principal_limit("d", "bob", rho="1/1000")
    with pytest.raises(BudgetNotConfigured, match="names no principal"):
        _gauss(led, 1)
    with pytest.raises(BudgetNotConfigured, match="'carol' has none"):
        _gauss(led, 1, principal="carol")
    led.spend("d", "1/4", 0, "hist", "/a1", principal="alice")
    led.spend("d", "1/4", 0, "hist", "/a2", principal="alice")
    with pytest.raises(BudgetExceeded) as err:
        led.spend("d", "1/100", 0, "hist", "/a3", principal="alice")
    assert err.value.principal == "alice" and "principal's limit" in str(err.value)
    _gauss(led, 2, principal="bob")
    _gauss(led, 3, principal="bob")  # 2 * RHO ~ 1/1002 <= 1/1000
    with pytest.raises(BudgetExceeded, match="principal"):
        _gauss(led, 4, principal="bob")
    rows = {p.principal: p for p in led.summary("d").principals}
    assert rows["alice"].spent.epsilon == F(1, 2) and rows["alice"].remaining.epsilon == 0  # type: ignore[union-attr]
    assert rows["bob"].spent.rho == 2 * RHO and rows[None].releases == 1
    with pytest.raises(LedgerError, match="allow-increase"):
        led.set_principal_limit("d", "alice", "1", "1/1000000")
    with pytest.raises(ParameterError, match="principal"):
        _gauss(led, 5, principal="not a name")


def test_the_principal_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from dpspark.ledger import resolve_principal

    monkeypatch.setenv("DPSPARK_PRINCIPAL", "alice")
    assert resolve_principal(None) == "alice" and resolve_principal("bob") == "bob"
    monkeypatch.setenv("DPSPARK_PRINCIPAL", "../etc")
    with pytest.raises(ParameterError):
        resolve_principal(None)


def test_refresh_is_off_by_default_and_monthly_counts_only_this_month(led: Ledger) -> None:
    led.set_total("d", "1", "0")
    led.spend("d", "1", 0, "hist", "/old")
    with sqlite3.connect(led.path) as conn:  # last month's spend
        conn.execute("UPDATE releases SET created_at = '2000-01-31T23:59:59.000000+00:00'")
    with pytest.raises(BudgetExceeded):
        led.spend("d", "1/2", 0, "hist", "/now")  # no refresh: every spend counts forever
    with pytest.raises(LedgerError, match="allow-increase"):
        led.set_refresh("d", "monthly")
    led.set_refresh("d", "monthly", allow_increase=True)
    led.spend("d", "1/2", 0, "hist", "/now")
    s = led.summary("d")
    assert s.spent.epsilon == F(1, 2) and s.refresh == "monthly" and s.window_start is not None
    led.set_refresh("d", None)
    assert led.spent("d").epsilon == F(3, 2)


# --- Session(total=...) ---------------------------------------------------------------------------------------
def test_a_named_total_is_set_when_missing_and_must_match_afterwards(led: Ledger) -> None:
    led.declare_total("d", total_from({"rho": "1/100"}))
    led.declare_total("d", total_from({"rho": "1/100"}))
    with pytest.raises(TotalMismatch, match="session names"):
        led.declare_total("d", total_from({"epsilon": "1", "delta": "1/1000"}))
    with pytest.raises(TypeError):
        total_from({"epsilon": 1.0})
    with pytest.raises(ParameterError):
        total_from({"eps": "1"})


def test_session_total_and_principal_are_charged_like_the_clis(tmp_path: Path) -> None:
    import pandas as pd

    import dpspark

    path = tmp_path / "l.sqlite"
    df = pd.DataFrame({"x": [float(i % 5) for i in range(200)]})
    s = dpspark.Session(df, max_units=200, ledger=path, dataset="people", total={"epsilon": "2", "delta": "1/1000000"},
                        principal="alice")
    a = s.answers(k=2, mechanism="gaussian", epsilon="1/2", delta="1/1000000000")
    a.answer({"name": "total", "kind": "sum", "column": "x", "lo": "0", "hi": "4"})
    (rec,) = Ledger(path).releases("people")
    assert rec.principal == "alice" and rec.rho is not None and rec.rho == a.statement.measure.rho
    assert Ledger(path).total("people").epsilon == 2  # type: ignore[union-attr]
    with pytest.raises(TotalMismatch):
        dpspark.Session(df, max_units=200, ledger=path, dataset="people", total={"rho": "1/2"})
    with pytest.raises(DPSparkError, match="ledger"):
        dpspark.Session(df, max_units=200, total={"rho": "1/2"})


def test_a_session_budget_in_rho_is_charged_the_releases_rho() -> None:
    """Issue 33 item 4: Session(budget={"rho": ...}) pays a rho-stated release its rho (main charged the configured
    (epsilon, delta), which a rho budget cannot absorb); a pure release pays eps^2/2; an overspend is refused."""
    import pandas as pd

    import dpspark
    from dpspark.api.charge import SessionBudgetExceeded
    from dpspark.privacy.measures import ZCDP

    df = pd.DataFrame({"x": [float(i % 5) for i in range(200)]})
    s = dpspark.Session(df, max_units=200, budget={"rho": "1/50"})
    a = s.answers(k=2, mechanism="gaussian", epsilon="1/2", delta="1/1000000000")
    a.answer({"name": "total", "kind": "sum", "column": "x", "lo": "0", "hi": "4"})
    rho = a.statement.measure.rho
    assert isinstance(s.budget.spent, ZCDP) and s.budget.spent.rho == rho  # type: ignore[union-attr]
    assert s.budget.remaining.rho == F(1, 50) - rho  # type: ignore[union-attr]
    with pytest.raises(SessionBudgetExceeded, match="session budget"):
        b = s.answers(k=2, mechanism="gaussian", epsilon="3", delta="1/1000000000")
        b.answer({"name": "total", "kind": "sum", "column": "x", "lo": "0", "hi": "4"})
    assert s.budget.spent.rho == rho  # type: ignore[union-attr]


# --- section 3: migration --------------------------------------------------------------------------------------
def test_a_ledger_written_by_main_opens_read_only_and_keeps_its_history() -> None:
    s = Ledger(OLD, read_only=True).summary("sales")
    assert [(r.id, r.status) for r in s.releases] == [(1, "released"), (2, "failed"), (3, "spent"), (4, "released")]
    assert all(r.rho is None and r.principal is None and r.release_id is None for r in s.releases)
    assert (s.spent.epsilon, s.spent.delta) == (F(23, 20), F(3, 25000000))  # basic, as main stated it
    assert s.unit == "column:user"


def test_a_ledger_written_by_main_migrates_and_takes_zcdp_entries(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    shutil.copy(OLD, path)
    led = Ledger(path)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0] == SCHEMA_ID
    assert len(led.releases("sales")) == 4 and led.total("sales").epsilon == 2  # type: ignore[union-attr]
    assert led.pinned_max_units("sales") == 1000
    led.spend("sales", "171/1000", "1/1000000000", "gaussian", "/out/r5", rho=RHO, unit="user", max_units=1000,
              principal="alice", release_id="ab" * 16)
    s = led.summary("sales")
    assert s.releases[-1].rho == RHO and s.releases[-1].release_id == "ab" * 16
    # the old (eps, delta) entries stay (eps, delta): the zCDP one is converted at the delta they leave
    old_delta = F(1, 10**7) + 2 * F(1, 10**8)
    assert s.spent.epsilon <= F(23, 20) + F(171, 1000)
    assert s.remaining is not None and s.remaining.delta in (F(1, 10**6) - old_delta, F(1, 10**6) - old_delta - F(1, 10**9))


OLD4 = Path(__file__).parent / "data" / "ledger-schema4-25fafe0.sqlite"  # written by main at 25fafe0 (schema 4)


def test_a_schema4_ledger_opens_read_only_and_keeps_its_history() -> None:
    """Issue 33 item 6: totals, limits, rho, principals and release ids of a main-25fafe0 ledger read back; its
    (epsilon, delta) total is now a basic filter (main composed it by the least of rules)."""
    led = Ledger(OLD4, read_only=True)
    s = led.summary("sales")
    assert [(r.id, r.status, r.principal) for r in s.releases] == [
        (1, "spent", "alice"), (2, "failed", "bob"), (3, "spent", "alice"), (4, "spent", "alice"),
        (5, "spent", "alice")]
    assert [r.rho for r in s.releases] == [None, None, RHO, RHO, RHO]
    assert s.releases[0].release_id == "01" * 16 and s.total is not None and s.total.rule == "basic"
    assert (s.spent.epsilon, s.spent.delta) == (F(1, 2) + F(1, 4) + 3 * F(171, 1000), F(1, 10**7) + 3 * F(1, 10**9))
    assert s.rule == "basic" and s.query_limit is not None and s.query_limit.epsilon == 1
    assert {p.principal: p.limit for p in s.principals}["alice"] == Budget(F(1), F(1, 10**6))
    v = led.summary("survey")
    assert v.total is not None and v.total.rho == F(1, 100) and v.spent.rho == RHO + F(1, 800)
    assert {p.principal: p.limit for p in v.principals}["carol"].rho == F(1, 200)  # type: ignore[union-attr]


def test_a_schema4_ledger_migrates_to_schema5_and_can_be_declared_zcdp(tmp_path: Path) -> None:
    path = tmp_path / "old4.sqlite"
    shutil.copy(OLD4, path)
    led = Ledger(path)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0] == SCHEMA_ID
        assert {"rule", "share_epsilon", "share_delta"} <= {r[1] for r in conn.execute("PRAGMA table_info(budgets)")}
        assert "law" in {r[1] for r in conn.execute("PRAGMA table_info(releases)")}
    assert len(led.releases("sales")) == 5 and led.total("sales").rule == "basic"  # type: ignore[union-attr]
    led.spend("survey", "171/1000", "1/1000000000", "gaussian", "/out/s3", rho=RHO, principal="carol")
    assert led.spent("survey").rho == 2 * RHO + F(1, 800)
    with pytest.raises(LedgerError, match="allow-increase"):
        led.set_total("sales", "2", "1/1000000", rule="zcdp", share=("1", "1/10000000"))
    led.set_total("sales", "2", "1/1000000", rule="zcdp", share=("1", "2/10000000"), allow_increase=True)
    s = led.summary("sales")  # history replayed into the declared corner: zCDP in rho, the rest in the share
    assert s.rule == "zcdp" and s.remaining is not None
    assert s.spent.rho == 3 * RHO and s.remaining.delta == F(1, 10**7)  # pure 1/2 (rho 1/8) fits only the share
