"""Issue 33 item 1: the ledger's admission check is a privacy filter fixed when the total is declared.

The previous check admitted a release when the least of several rules (basic; zCDP with pure releases in rho;
zCDP with pure releases summed) stayed within an (epsilon, delta) total: a union of filters whose corner an
adaptive analyst steers. These tests show (a) a sequence that check admitted lies outside every single
corner, and each fixed filter refuses it; (b) what a fixed filter admits never exceeds its stated total:
the corner's certified bound is within the total, and on cases small enough to compute exactly, the
worst-case mechanisms of every admitted sequence compose within the total (arb balls); (c) a mutant filter
whose rho part is not converted is caught.
"""

from __future__ import annotations

from fractions import Fraction as F
from pathlib import Path

import flint
import pytest

from dpspark.errors import ParameterError
from dpspark.ledger import BudgetExceeded, Ledger
from dpspark.ledger import compose
from dpspark.ledger.compose import Budget, corner_rho, refusal, replay
from dpspark.privacy.mixed_composition import Entry, compose_entries, converted_upper
from tests.unit.privacy.test_mixed_composition import _arb, true_delta

D9 = F(1, 10**9)


def _z(rho: F, delta: F = D9) -> Entry:
    return Entry(converted_upper(rho, delta), delta, rho)


def _old_min_rule_admits(entries: list[Entry], total: Budget) -> bool:
    """The check before filters: the least of the rules within the total (kept here only to compare)."""
    got = compose_entries(entries, total.delta)
    return got is not None and got.epsilon <= total.epsilon


def _admitted(seq: list[Entry], total: Budget) -> list[Entry]:
    out: list[Entry] = []
    for e in seq:
        if refusal(out, e, total) is None:
            out.append(e)
    return out


def test_the_least_of_rules_admitted_a_sequence_outside_every_fixed_corner() -> None:
    """An analyst spends (eps, delta) and pure epsilon summed, then fills rho at the delta left: the old check
    takes the cheapest corner a posteriori. Each filter fixed in advance refuses the sequence."""
    eps, delta = F(2), F(1, 10**6)
    seq = [Entry(F(1, 2), F(1, 2 * 10**6)), Entry(F(1, 2), F(0))] + [_z(F(1, 400), F(1, 2 * 10**6))] * 9
    assert all(_old_min_rule_admits(seq[:k], Budget(eps, delta)) for k in range(1, len(seq) + 1))
    rules = [compose_entries(seq[:k], delta).rule for k in (1, len(seq))]  # type: ignore[union-attr]
    assert rules == ["basic", "zcdp+pure"]  # the corner moved after the outputs
    for total in (Budget(eps, delta), Budget(eps, delta, None, "zcdp"),
                  Budget(eps, delta, None, "zcdp", (F(1, 2), F(1, 2 * 10**6)))):
        assert replay(seq, total).fits is False, total
        assert len(_admitted(seq, total)) < len(seq)
    # declared in advance, the corner that holds it admits it all
    assert replay(seq, Budget(eps, delta, None, "zcdp", (F(1), F(1, 2 * 10**6)))).fits


SEQUENCES = [
    ("zCDP only", [_z(F(1, 200))] * 30),
    ("pure then zCDP", [Entry(F(1, 3), F(0)), Entry(F(1, 5), F(0))] + [_z(F(1, 100))] * 12),
    ("approx, pure and zCDP", [Entry(F(1, 4), F(1, 10**7)), Entry(F(1, 2), F(0))] + [_z(F(1, 80))] * 10
     + [Entry(F(1, 5), F(1, 10**7))]),
]
TOTALS = [
    Budget(F(1), F(1, 10**6), None, "zcdp"),
    Budget(F(3, 2), F(1, 10**6), None, "zcdp", (F(1, 2), F(2, 10**7))),
    Budget(F(1), F(1, 10**6)),
]


@pytest.mark.parametrize("total", TOTALS, ids=str)
@pytest.mark.parametrize("name,seq", SEQUENCES, ids=[s[0] for s in SEQUENCES])
def test_what_a_filter_admits_never_exceeds_its_stated_total(name: str, seq: list[Entry], total: Budget) -> None:
    """Certified corner within the total, every prefix inside the corner, and the exact composition of the
    admitted worst-case mechanisms (at most 4 discrete ones: small enough to enumerate) within the total."""
    cap = total.rho_cap
    if cap is not None:
        assert total.share[0] + converted_upper(cap, total.delta - total.share[1]) <= total.epsilon
    got = _admitted(seq, total)
    assert got, "the case admits something"
    state = replay(got, total)
    assert state.fits and state.xi <= total.basic_cap[0] and state.delta <= total.basic_cap[1]
    assert cap is None or state.rho <= cap
    with flint.ctx.workprec(256):
        assert true_delta(got, total.epsilon) <= _arb(total.delta)


def test_a_mutant_filter_that_compares_rho_unconverted_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """A rho part of rho_B = epsilon (rho never converted) admits far more; the exact check sees it."""
    total, seq = TOTALS[0], SEQUENCES[0][1]
    compose.corner_rho.cache_clear()
    monkeypatch.setattr(compose, "corner_rho", lambda eps, delta: eps)
    got = _admitted(seq, total)
    assert len(got) == 30  # all admitted: 30 / 200 = 0.15 <= 1
    with flint.ctx.workprec(256):
        assert true_delta(got, total.epsilon) > _arb(total.delta)


def test_the_corner_is_the_largest_grid_rho_that_converts_within() -> None:
    for eps, delta in ((F(1), D9), (F(1, 10), F(1, 10**6)), (F(5), F(1, 10**12))):
        rho = corner_rho(eps, delta)
        assert 0 < rho and converted_upper(rho, delta) <= eps < converted_upper(rho * (1 + F(1, 1 << 20)), delta)


def test_a_zcdp_total_is_declared_with_its_share_and_stays_fixed(tmp_path: Path) -> None:
    led = Ledger(tmp_path / "l.sqlite")
    with pytest.raises(ParameterError, match="needs rule 'zcdp'"):
        led.set_total("d", "1", "1/1000000", share=("1/2", "0"))
    with pytest.raises(ParameterError, match="delta > 0"):
        led.set_total("d", "1", "1/1000000", rule="zcdp", share=("1/2", "1/1000000"))
    led.set_total("d", "1", "1/1000000", rule="zcdp", share=("1/4", "1/10000000"))
    t = led.total("d")
    assert t is not None and t.rule == "zcdp" and t.share == (F(1, 4), F(1, 10**7))
    assert t.rho_cap == corner_rho(F(3, 4), F(9, 10**7))
    with pytest.raises(Exception, match="allow-increase"):
        led.set_total("d", "1", "1/1000000")  # back to basic: another corner, an explicit act
    led.spend("d", "1/4", "1/10000000", "stability", "/a")  # the share
    with pytest.raises(BudgetExceeded, match="share of the total declared for it|left for releases composed"):
        led.spend("d", "1/100", "1/100000000", "stability", "/b")
    led.spend("d", "1/10", "0", "hist", "/p")  # pure: rho part at 1/200
    assert led.summary("d").remaining.rho == t.rho_cap - F(1, 200)  # type: ignore[union-attr]


def test_a_named_total_carries_its_rule_and_a_different_rule_is_a_mismatch(tmp_path: Path) -> None:
    from dpspark.ledger import TotalMismatch
    from dpspark.ledger.store import total_from

    led = Ledger(tmp_path / "l.sqlite")
    named = total_from({"epsilon": "2", "delta": "1/1000000", "rule": "zcdp", "share": ["1/2", "1/10000000"]})
    led.declare_total("d", named)
    led.declare_total("d", named)  # equal: accepted
    with pytest.raises(TotalMismatch):
        led.declare_total("d", total_from({"epsilon": "2", "delta": "1/1000000"}))  # same numbers, basic filter
    assert led.total("d") == named


def test_the_cli_declares_the_rule_only_with_a_total_or_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from dpspark.cli.app import main as cli

    path = str(tmp_path / "l.sqlite")
    assert cli(["budget", "d", "--ledger", path, "--rule", "zcdp"]) == 2
    assert "declared with --total or --limit" in capsys.readouterr().err
    assert cli(["budget", "d", "--ledger", path, "--total", "1", "--delta-total", "1/1000000", "--rule", "zcdp",
                "--share-epsilon", "1/4", "--share-delta", "1/10000000"]) == 0
    t = Ledger(path).total("d")
    assert t is not None and t.rule == "zcdp" and t.share == (F(1, 4), F(1, 10**7))
    assert "filter    zcdp: rho part" in capsys.readouterr().out
