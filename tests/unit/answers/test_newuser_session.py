"""Issue 36, section 5: budgets and sessions, on the Arrow engine (no JVM).

A declaration the budget cannot pay is refused before the noise is calibrated; a new ledger's error names the
user's file; the session's summary lists a release that failed after its charge; the ledger records adaptive
answers by their declaration, not by a scratch folder deleted at exit.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import dpspark
from dpspark.api.charge import SessionBudgetExceeded
from dpspark.ledger import BudgetExceeded, BudgetNotConfigured, Ledger
from dpspark.rng import SeededRandom
from tests.unit.lookup.test_newuser_readable import survey

COUNT = [{"name": "n", "kind": "count"}]


def test_a_refused_declaration_is_refused_before_calibrating(tmp_path: Path) -> None:
    # k = 100 at eps = 5: calibrating the bounded noise takes about a minute (69 s for the user); the ledger,
    # with eps = 3 left, refuses it, and must do so first
    ledger = tmp_path / "ledger.sqlite"
    Ledger(ledger).set_total("survey", "3", "1e-6")
    with dpspark.Session(survey(), max_units=61_697, ledger=ledger, dataset="survey") as s:
        started = time.monotonic()
        with pytest.raises(BudgetExceeded, match="only epsilon = 3"):
            s.answers(k=100, mechanism="bounded_noise", epsilon="5", delta="1e-8")
        assert time.monotonic() - started < 5  # generous for a loaded machine; 69 s before the fix
    assert Ledger(ledger).releases("survey") == []  # nothing spent
    with dpspark.Session(survey(), max_units=61_697, budget={"epsilon": "3", "delta": "1e-6"}) as s:
        started = time.monotonic()
        with pytest.raises(SessionBudgetExceeded, match="exceeds the session budget"):
            s.answers(k=100, mechanism="bounded_noise", epsilon="5", delta="1e-8")
        assert time.monotonic() - started < 5
        assert s.budget.spent is None or s.budget.history == ()


def test_a_new_ledgers_error_names_the_users_file(tmp_path: Path) -> None:
    ledger = tmp_path / "my-budget.sqlite"  # does not exist yet; the dataset has no total
    with dpspark.Session(survey(), max_units=10_000, ledger=ledger, dataset="survey") as s:
        with pytest.raises(BudgetNotConfigured) as err:
            s.release(mechanism="bounded_noise", epsilon="1", delta="1e-8", sections={"queries": COUNT},
                      output=tmp_path / "r")
    text = str(err.value)
    assert f"no total privacy budget in {ledger}" in text and "does not exist yet" in text
    assert not ledger.exists() and not (tmp_path / "r").exists()  # nothing created, nothing spent


def test_the_session_lists_a_release_that_failed_after_its_charge(tmp_path: Path) -> None:
    def progress(msg: str) -> None:  # the disk fills up as the release is written: after the charge
        if msg.startswith("writing the release"):
            raise OSError("No space left on device")

    with dpspark.Session(survey(), max_units=10_000, budget={"epsilon": "3", "delta": "1e-6"},
                         rng=SeededRandom(1), progress=progress) as s:
        for i in range(2):
            with pytest.raises(OSError):
                s.release(mechanism="bounded_noise", epsilon="1/2", delta="1e-8", sections={"queries": COUNT},
                          output=tmp_path / f"r{i}")
        s.progress = lambda _m: None
        s.release(mechanism="bounded_noise", epsilon="1/2", delta="1e-8", sections={"queries": COUNT},
                  output=tmp_path / "ok")
        s.answers(k=2, epsilon="1/2", delta="1e-8")
        text = repr(s)
        assert ("4 charge(s): 1 release(s), 1 adaptive answers declaration(s), 2 failed after its charge "
                "(spent, not refunded)") in text, text
        assert "2 failed after its charge" in s._repr_html_()


def test_the_ledger_records_adaptive_answers_by_their_declaration(tmp_path: Path) -> None:
    from dpspark.api.session_answers import declaration_label

    ledger = tmp_path / "ledger.sqlite"
    Ledger(ledger).set_total("survey", "3", "1e-6")
    with dpspark.Session(survey(), max_units=10_000, ledger=ledger, dataset="survey", rng=SeededRandom(2)) as s:
        a = s.answers(k=3, mechanism="bounded_noise", epsilon="1", delta="1e-8")
        a.answer({"name": "n", "kind": "count"})
    (record,) = Ledger(ledger).releases("survey")
    assert record.release_path == declaration_label(3, "bounded_noise")
    assert record.release_path.startswith("adaptive answers: k = 3 scalars (bounded_noise)")
    assert not Path(record.release_path).is_absolute()  # no scratch folder (deleted at exit) is named
    assert record.status == "released"
