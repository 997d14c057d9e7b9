"""Issue 33 s2: processes racing for the last budget never overspend, per principal and in total."""

from __future__ import annotations

import multiprocessing as mp
from fractions import Fraction
from pathlib import Path

from dpspark.ledger import BudgetExceeded, Ledger
from tests.support.race import run_racers

RHO = Fraction(267921, 536870912)  # a Gaussian release configured (0.171, 1e-9)


def _race(path: str, barrier: "mp.synchronize.Barrier", results: "mp.Queue[str]", worker: int) -> None:
    ledger = Ledger(path)
    who = "alice" if worker % 2 else "bob"
    barrier.wait()
    try:
        ledger.spend("race", "171/1000", "1/1000000000", "gaussian", f"/out/{worker}", rho=RHO, principal=who)
    except BudgetExceeded:
        results.put(f"{who} refused")
    else:
        results.put(f"{who} spent")


def test_ten_processes_racing_under_principal_limits_and_a_rho_total(tmp_path: Path) -> None:
    """Total rho = 5 RHO; alice may spend 2 RHO, bob 4 RHO: at most 2 alice + 3 bob, exactly 5 in all."""
    path = str(tmp_path / "race.sqlite")
    led = Ledger(path)
    led.set_total("race", rho_total=5 * RHO)
    led.set_principal_limit("race", "alice", rho=2 * RHO)
    led.set_principal_limit("race", "bob", rho=4 * RHO)
    outcomes = run_racers(_race, path, 10)
    spent = {who: outcomes.count(f"{who} spent") for who in ("alice", "bob")}
    assert spent["alice"] <= 2 and spent["bob"] <= 4 and sum(spent.values()) == 5
    s = Ledger(path).summary("race")
    assert s.spent.rho == 5 * RHO and len(s.releases) == 5
    rows = {p.principal: p for p in s.principals}
    assert rows["alice"].spent.rho == spent["alice"] * RHO and rows["bob"].spent.rho == spent["bob"] * RHO


def test_ten_processes_racing_under_a_zcdp_filter_total_in_epsilon_delta(tmp_path: Path) -> None:
    """Total (1/2, 1e-9) with the zcdp filter: its rho part holds k = floor(rho_B / RHO) releases; alice's
    rho limit 2 RHO. However the ten race, at most 2 alice and exactly min(k, 10) in all."""
    from dpspark.ledger.compose import corner_rho

    path = str(tmp_path / "race.sqlite")
    led = Ledger(path)
    led.set_total("race", "1/2", "1/1000000000", rule="zcdp")
    k = int(corner_rho(Fraction(1, 2), Fraction(1, 10**9)) / RHO)
    assert 5 <= k < 10  # so the race is for the last budget
    led.set_principal_limit("race", "alice", rho=2 * RHO)
    led.set_principal_limit("race", "bob", "1", "1/1000000000", rule="zcdp")
    outcomes = run_racers(_race, path, 10)
    spent = {who: outcomes.count(f"{who} spent") for who in ("alice", "bob")}
    assert spent["alice"] <= 2 and sum(spent.values()) == k
    s = Ledger(path).summary("race")
    assert s.spent.rho == k * RHO and s.remaining is not None and 0 <= s.remaining.rho < RHO  # type: ignore[operator]
