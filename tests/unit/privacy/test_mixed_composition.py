"""Issue 33 s1: the ledger's composition never states less than the true composition.

The true composition is computed exactly (certified arb balls) on mechanisms that meet each statement with
equality: the Gaussian pair N(0,1) vs N(mu,1), mu^2 = 2 rho (exactly rho-zCDP: D_alpha = alpha rho), whose
k-fold composition is the Gaussian of the summed rho; randomized response for eps-DP; and the four-outcome
(eps, delta) pair for (eps, delta)-DP. Their product's privacy profile is
delta(eps) = sum over the discrete outcomes o of P(o) * delta_G(eps - L(o)) (P(o) when Q(o) = 0), with
delta_G(t) = Phi(mu/2 - t/mu) - e^t Phi(-mu/2 - t/mu). A statement (eps, delta) is valid iff
delta(eps) <= delta. The mutant that sums rho without converting is caught by the same check.
"""

from __future__ import annotations

import itertools
from fractions import Fraction as F
from typing import Any

import flint
import pytest

from dpspark.privacy import mixed_composition as mc
from dpspark.privacy.mixed_composition import Entry, compose_entries, parts, rho_of, statement_of

PREC = 256


def _arb(x: F) -> Any:
    return flint.arb(flint.fmpq(x.numerator, x.denominator))


def _phi(x: Any) -> Any:
    return (-x / flint.arb(2).sqrt()).erfc() / 2


def _delta_g(t: Any, mu: Any) -> Any:
    if mu == 0:
        d = 1 - t.exp()
        return d if d > 0 else flint.arb(0)
    return _phi(mu / 2 - t / mu) - t.exp() * _phi(-mu / 2 - t / mu)


def _pairs(e: Entry) -> list[tuple[Any, Any]]:
    """(P(o), L(o)) of the discrete pair meeting a pure or approximate statement with equality (L None: Q(o) = 0)."""
    x = _arb(e.epsilon).exp()
    if e.kind == "pure":
        return [(x / (1 + x), _arb(e.epsilon)), (1 / (1 + x), -_arb(e.epsilon))]
    d = _arb(e.delta)
    return [(d, None), ((1 - d) * x / (1 + x), _arb(e.epsilon)), ((1 - d) / (1 + x), -_arb(e.epsilon))]


def true_delta(entries: list[Entry], eps: F) -> Any:
    """The exact delta at ``eps`` of the worst-case mechanisms of ``entries``, composed (an arb ball)."""
    with flint.ctx.workprec(PREC):
        rho = sum((e.rho for e in entries if e.rho is not None), F(0))
        mu = _arb(2 * rho).sqrt() if rho else flint.arb(0)
        discrete = [_pairs(e) for e in entries if e.rho is None]
        total = flint.arb(0)
        for combo in itertools.product(*discrete):
            p, loss = flint.arb(1), flint.arb(0)
            for po, lo in combo:
                p = p * po
                loss = None if loss is None or lo is None else loss + lo
            total += p if loss is None else p * _delta_g(_arb(eps) - loss, mu)
        return total


def understated(entries: list[Entry], delta_total: F) -> bool:
    """Whether the ledger's composition states less than the truth (certified: the ball lies above delta_total)."""
    got = compose_entries(entries, delta_total)
    assert got is not None
    d = true_delta(entries, got.epsilon)
    return bool(d > _arb(got.delta))


def _z(rho: F, delta: str = "1/1000000000") -> Entry:
    """A zCDP entry charged, as the ledger requires, an (eps, delta) its rho converts within (CKS20)."""
    return Entry(mc.converted_upper(rho, F(delta)), F(delta), rho)


CASES = [
    ("100 zCDP releases", [_z(F(1, 2000))] * 100, F(1, 10**9)),
    ("zCDP and pure", [_z(F(1, 100)), Entry(F(1, 2), F(0)), Entry(F(1, 4), F(0))], F(1, 10**6)),
    ("zCDP, pure and (eps, delta)", [_z(F(1, 50)), Entry(F(1, 3), F(0)), Entry(F(1, 5), F(1, 10**7))], F(1, 10**6)),
    ("pure only", [Entry(F(1, 2), F(0))] * 3, F(1, 10**6)),
    ("one large pure", [Entry(F(2), F(0))], F(1, 10**9)),
]


@pytest.mark.parametrize("name,entries,delta_total", CASES, ids=[c[0] for c in CASES])
def test_the_composition_never_states_less_than_the_true_one(name: str, entries: list[Entry], delta_total: F) -> None:
    assert not understated(entries, delta_total)


def test_a_mutant_that_sums_rho_without_converting_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Summing rho and calling it epsilon states 1/20 for 100 Gaussian answers at 1e-9; the truth is ~1.7."""
    entries, delta_total = CASES[0][1], CASES[0][2]
    monkeypatch.setattr(mc, "converted_upper", lambda rho, delta: rho)
    assert compose_entries(entries, delta_total).epsilon == F(1, 20)  # type: ignore[union-attr]
    assert understated(entries, delta_total)


def test_a_mutant_that_forgets_the_approx_deltas_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Converting rho at the whole delta_total, while an (eps, delta) release also spends delta, is caught."""
    entries = [_z(F(1, 50)), Entry(F(1, 5), F(95, 10**8))]

    def forgetful(p: mc.Parts, delta_total: F, rule: str = "zcdp") -> Any:
        return statement_of(mc.Parts(p.rho, p.xi, F(0)), delta_total, rule)

    assert not understated(entries, F(1, 10**6))
    monkeypatch.setattr(mc, "statement_of", forgetful)
    got = compose_entries(entries, F(1, 10**6))
    assert got is not None and true_delta(entries, got.epsilon) > _arb(F(1, 10**6))


def test_the_issue_example_is_about_nine_times_cheaper() -> None:
    """100 answers of rho ~ 1/2000, each charged (0.171, 1e-9): basic 17.1 at 1e-7; zCDP ~1.88 at 1e-9."""
    entries = [Entry(F(171, 1000), F(1, 10**9), F(267921, 536870912))] * 100  # rho_within("0.171", "1e-9")
    basic = parts(entries, "basic")
    assert (basic.xi, basic.delta) == (F(171, 10), F(1, 10**7))
    got = compose_entries(entries, F(1, 10**9))
    assert got is not None and got.rule == "zcdp" and got.delta == F(1, 10**9)
    assert F(18, 10) < got.epsilon < F(19, 10)
    assert got.epsilon / basic.xi < F(15, 100)


def test_the_rule_is_the_least_epsilon_and_basic_composition_stays_available() -> None:
    pure = [Entry(F(1), F(0))]
    got = compose_entries(pure, F(1, 10**9))
    assert got is not None and got.rule == "basic" and got.epsilon == 1  # eps^2/2 = 1/2-zCDP converts to ~6.9
    many = [Entry(F(1, 10), F(0))] * 100
    got = compose_entries(many, F(1, 10**9))
    assert got is not None and got.rule == "zcdp" and got.epsilon < 10  # 1/2-zCDP: ~6.9 < 10 summed


def test_delta_beyond_the_total_has_no_statement_and_rho_needs_delta_left() -> None:
    assert compose_entries([Entry(F(1), F(1, 1000))], F(1, 10**6)) is None
    assert statement_of(mc.Parts(F(1, 100), F(0), F(1, 10**6)), F(1, 10**6)) is None


def test_a_zcdp_entry_charged_less_than_its_rho_converts_to_would_be_understated() -> None:
    """Why the ledger refuses such an entry: basic composition of its charged (eps, delta) would be wrong."""
    bad = [Entry(F(1), F(1, 10**9), F(1, 50)), Entry(F(1, 5), F(95, 10**8))]  # CKS(1/50, 1e-9) ~ 1.31 > 1
    assert understated(bad, F(1, 10**6))


def test_rho_of_counts_pure_as_half_eps_squared_and_refuses_approx() -> None:
    assert rho_of([_z(F(1, 10)), Entry(F(1, 2), F(0))]) == F(1, 10) + F(1, 8)
    assert rho_of([Entry(F(1, 2), F(1, 10**9))]) is None
