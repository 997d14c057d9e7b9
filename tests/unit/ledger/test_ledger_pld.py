"""Issue 33 item 2: the ledger records each release's noise law and states its spend by PLD where tighter.

The PLD statement is for parameters fixed in advance; admission stays the filter (test_ledger_filter.py).
"""

from __future__ import annotations

import json
from fractions import Fraction as F
from pathlib import Path

import flint
import pytest

from dpspark.cli.app import main as cli
from dpspark.errors import ParameterError
from dpspark.ledger import Ledger
from dpspark.ledger.pld_statement import statement
from dpspark.privacy.mixed_composition import Entry
from tests.unit.privacy.test_mixed_composition import _arb, true_delta

RHO = F(267921, 536870912)  # a Gaussian release configured (0.171, 1e-9)
DG = {"law": "discrete_gaussian", "sigma2": "1002", "sensitivity": "1"}  # 1/2004 <= RHO


def test_a_spend_records_its_law_and_a_law_bigger_than_the_charge_is_refused(tmp_path: Path) -> None:
    led = Ledger(tmp_path / "l.sqlite")
    led.set_total("d", rho_total="1/10", delta_total="1/1000000000")
    rec = led.spend("d", "171/1000", "1/1000000000", "gaussian", "/r", rho=RHO, law=DG)
    assert json.loads(led.releases("d")[0].law) == DG and rec.law == led.releases("d")[0].law  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="bigger release"):
        led.spend("d", "171/1000", "1/1000000000", "gaussian", "/r2", rho=RHO,
                  law={"law": "discrete_gaussian", "sigma2": "1000", "sensitivity": "1"})  # 1/2000 > RHO
    with pytest.raises(ParameterError, match="bigger release"):
        led.spend("d", "1/10", 0, "geo", "/r3", law={"law": "geometric", "base": "2", "sensitivity": "1"})
    with pytest.raises(TypeError, match="exact"):
        led.spend("d", "1/10", 0, "hist", "/r4", law={"law": "pure", "epsilon": 0.1})
    assert len(led.releases("d")) == 1


def test_the_pld_statement_is_tighter_and_never_below_the_truth() -> None:
    """Twelve pure releases and two (eps, delta) ones: PLD (optimal composition on the worst-case pairs) is below
    the least of rules, and the exact composition of those pairs at its epsilon is within delta."""
    entries = [Entry(F(1, 4), F(0))] * 12 + [Entry(F(1, 5), F(1, 10**7))] * 2
    st = statement(entries, F(1, 10**6))
    assert st is not None and st.method == "pld" and st.rules is not None and st.epsilon < st.rules.epsilon
    with flint.ctx.workprec(256):
        assert true_delta(entries, st.epsilon) <= _arb(F(1, 10**6))


def test_budget_states_what_is_composed_how(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "l.sqlite"
    led = Ledger(path)
    led.set_total("d", "3", "1/1000000", rule="zcdp", share=("1", "1/10000000"))
    for i in range(4):
        led.spend("d", "1/10", 0, "hist", f"/p{i}")
    led.spend("d", "171/1000", "1/1000000000", "gaussian", "/g", rho=RHO, law=DG)
    led.spend("d", "171/1000", "1/1000000000", "gaussian", "/h", rho=RHO)
    capsys.readouterr()
    assert cli(["budget", "d", "--ledger", str(path)]) == 0
    out = capsys.readouterr().out
    assert "statement epsilon =" in out and "4 pure as randomized response" in out
    assert "1 by their recorded noise law" in out and "1 zCDP without a law" in out
    assert "admitted by the filter" in out
    assert cli(["budget", "d", "--ledger", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["statement"]["delta"] == "1/1000000" and F(doc["statement"]["epsilon"]) > 0
    assert doc["filter"]["rule"] == "zcdp"
