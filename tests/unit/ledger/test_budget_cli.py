"""Issue 33 s2: `dpspark budget` sets totals in rho, principal limits, per-query limits and refresh, and shows
spent and left per principal and in total (readably, and as --json); `dpspark release --principal` charges
the named analyst and is refused before anything runs when her limit cannot pay."""

from __future__ import annotations

import json
from fractions import Fraction as F
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpspark.cli.app import main as cli
from dpspark.ledger import Ledger

RHO = F(267921, 536870912)


def _spend(path: Path, n: int, **kw: object) -> None:
    led = Ledger(path)
    for i in range(n):
        led.spend("d", "171/1000", "1/1000000000", "gaussian", f"/r{i}", rho=RHO, **kw)  # type: ignore[arg-type]


def test_budget_shows_the_rule_rho_and_principals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "l.sqlite"
    assert cli(["budget", "d", "--ledger", str(path), "--total", "2", "--delta-total", "1/1000000000",
                "--rule", "zcdp"]) == 0
    assert cli(["budget", "d", "--ledger", str(path), "--principal", "alice", "--limit", "1",
                "--delta-limit", "1/1000000000", "--rule", "zcdp"]) == 0
    _spend(path, 10, principal="alice")
    capsys.readouterr()
    assert cli(["budget", "d", "--ledger", str(path)]) == 0
    out = capsys.readouterr().out
    spent = Ledger(path).spent("d")
    assert f"spent     epsilon = {spent.epsilon}" in out and f"rho = {10 * RHO} of it in zCDP" in out
    assert "converted once (CKS20, certified upward)" in out and "rho left in the rho part" in out
    assert "alice" in out and "epsilon = 1 (~1), delta = 1/1000000000" in out
    assert cli(["budget", "d", "--ledger", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["spent"]["rule"] == "zcdp" and F(doc["spent"]["rho"]) == 10 * RHO
    assert F(doc["spent"]["epsilon"]) == spent.epsilon and F(doc["left"]["epsilon"]) == 2 - spent.epsilon
    more = F(doc["left"]["rho_for_one_more_zcdp_release"])
    led = Ledger(path)
    led.check_spend("d", "1000", "1/1000000000", rho=more)  # fits (its charged eps is generous: rho is what counts)
    with pytest.raises(Exception, match="budget exceeded"):
        led.check_spend("d", "1000", "1/1000000000", rho=more * (1 + F(1, 1000)))
    (alice,) = doc["principals"]
    assert alice["principal"] == "alice" and alice["releases"] == 10 and alice["limit"]["epsilon"] == "1"
    from dpspark.ledger.compose import corner_rho
    assert F(alice["rho_left"]) == corner_rho(F(1), F(1, 10**9)) - 10 * RHO > 0  # issue 33 item 4
    assert doc["filter"]["rule"] == "zcdp" and F(doc["filter"]["rho_part"]) == corner_rho(F(2), F(1, 10**9))
    assert [r["kind"] for r in doc["releases"]] == ["zcdp"] * 10


def test_budget_sets_rho_totals_query_limits_and_refresh(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "l.sqlite"
    assert cli(["budget", "d", "--ledger", str(path), "--total-rho", "1/100", "--delta-total", "1/1000000000"]) == 0
    assert "total     rho = 1/100" in capsys.readouterr().out
    assert cli(["budget", "d", "--ledger", str(path), "--max-rho-per-query", "1/1000"]) == 0
    assert "per query rho = 1/1000" in capsys.readouterr().out
    assert cli(["budget", "d", "--ledger", str(path), "--refresh", "monthly"]) == 2
    assert "--allow-increase" in capsys.readouterr().err
    assert cli(["budget", "d", "--ledger", str(path), "--refresh", "monthly", "--allow-increase"]) == 0
    assert "no guarantee across windows" in capsys.readouterr().out
    _spend(path, 2)
    assert cli(["budget", "d", "--ledger", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["total_declared_in"] == "rho" and F(doc["left"]["rho"]) == F(1, 100) - 2 * RHO
    assert doc["refresh"] == "monthly" and doc["per_query_limit"]["rho"] == "1/1000"
    assert cli(["budget", "d", "--ledger", str(path), "--limit", "1"]) == 2
    assert "--principal" in capsys.readouterr().err


def _config(tmp_path: Path, ledger: Path) -> Path:
    data = tmp_path / "in.parquet"
    pq.write_table(pa.table({"x": [float(i % 7) for i in range(300)]}), data)
    cfg = tmp_path / "a.toml"
    cfg.write_text(f'[input]\npath = "{data}"\n[privacy]\nmechanism = "gaussian"\nepsilon = "1"\n'
                   f'delta = "1/1000000"\nmax_units = 300\n[[queries]]\nname = "total"\nkind = "sum"\n'
                   f'column = "x"\nlo = "0"\nhi = "7"\n[budget]\nledger = "{ledger}"\ndataset = "d"\n'
                   f'[output]\npath = "{tmp_path / "rel"}"\n')
    return cfg


def test_release_charges_the_principal_and_her_limit_refuses_before_anything(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    ledger = tmp_path / "l.sqlite"
    led = Ledger(ledger)
    led.set_total("d", "10", "1/1000")
    led.set_principal_limit("d", "alice", rho="1/1000")  # far below one release's rho
    led.set_principal_limit("d", "bob", "5", "1/1000")
    cfg = _config(tmp_path, ledger)
    assert cli(["release", "--config", str(cfg), "--principal", "alice", "--dry-run"]) == 2
    assert "(principal 'alice')" in capsys.readouterr().err
    assert cli(["release", "--config", str(cfg), "--principal", "alice"]) == 2
    assert not (tmp_path / "rel").exists() and led.releases("d") == []
    monkeypatch.setenv("DPSPARK_PRINCIPAL", "bob")
    assert cli(["release", "--config", str(cfg)]) == 0
    (rec,) = led.releases("d")
    assert rec.principal == "bob" and rec.rho is not None and rec.status == "released"
