"""Processes racing for the last budget: the BEGIN IMMEDIATE check-and-spend admits exactly what fits."""

from __future__ import annotations

import multiprocessing as mp
from fractions import Fraction
from pathlib import Path

from dpspark.ledger import BudgetExceeded, Ledger
from tests.support.race import run_racers


def _race(path: str, barrier: "mp.synchronize.Barrier", results: "mp.Queue[str]", worker: int) -> None:
    ledger = Ledger(path)
    barrier.wait()
    try:
        ledger.spend("race", "1/4", "1/400", "m", f"/out/{worker}")
    except BudgetExceeded:
        results.put("refused")
    else:
        results.put("spent")


def test_eight_processes_racing_for_a_budget_of_four_spends() -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "race.sqlite")
        Ledger(path).set_total("race", "1", "1/100")
        outcomes = sorted(run_racers(_race, path, 8))
        assert outcomes == ["refused"] * 4 + ["spent"] * 4
        led = Ledger(path)
        assert led.spent("race") == type(led.spent("race"))(Fraction(1), Fraction(1, 100))
        assert len(led.releases("race")) == 4
