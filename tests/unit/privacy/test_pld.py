"""Issue 33 item 2: the certified PLD composer never states less than the true composition.

The truth is computed exactly (arb balls) on cases small enough to enumerate: k-fold randomized response
(binomial closed form), pure and (eps, delta) mixes on their worst-case pairs (the enumeration of
test_mixed_composition), two geometric releases (exact rational pmf, losses j ln x) and two discrete
Gaussian releases (pmf enumerated). A mutant that rounds off-grid losses down is caught.
"""

from __future__ import annotations

import itertools
from fractions import Fraction as F
from math import comb

import flint
import pytest

from dpspark.privacy import pld
from dpspark.privacy.mixed_composition import Entry, compose_entries
from dpspark.privacy.pld import Law, delta_at, parse_law, pld_epsilon
from tests.unit.privacy.test_mixed_composition import _arb, true_delta

D9 = F(1, 10**9)


def _pure_truth(eps: F, k: int, at: F) -> object:
    with flint.ctx.workprec(256):
        x = _arb(eps).exp()
        p = x / (1 + x)
        tot = flint.arb(0)
        for i in range(k + 1):
            loss = (k - 2 * i) * _arb(eps)
            term = 1 - (_arb(at) - loss).exp()
            if term > 0:
                tot += comb(k, i) * p ** (k - i) * (1 - p) ** i * term
        return tot


@pytest.mark.parametrize("eps,k", [(F(1, 10), 50), (F(1, 2), 8), (F(1), 3)])
def test_k_fold_randomized_response_is_bounded_and_tight(eps: F, k: int) -> None:
    got = pld_epsilon([Law("pure", (eps,))] * k, F(1, 10**6), k * eps)
    assert got is not None and got.exact_grid
    truth = _pure_truth(eps, k, got.epsilon)
    assert truth <= _arb(F(1, 10**6))  # never states less than the truth
    for at in (got.epsilon / 2, got.epsilon, k * eps / 2):
        up = delta_at([Law("pure", (eps,))] * k, at)
        t = _pure_truth(eps, k, at)
        with flint.ctx.workprec(256):
            assert t <= _arb(up) and _arb(up) <= t * _arb(1 + F(1, 10**20)) + _arb(F(1, 10**30))  # exact grid: equal up to 2^-128


MIXES = [
    [Entry(F(1, 3), F(0)), Entry(F(1, 5), F(1, 10**7)), Entry(F(1, 4), F(0)), Entry(F(1, 2), F(1, 10**7))],
    [Entry(F(1, 10), F(0))] * 6 + [Entry(F(1, 10), F(1, 10**8))] * 3,
]


@pytest.mark.parametrize("entries", MIXES, ids=["four", "nine"])
def test_pure_and_approx_mixes_never_state_less_than_the_worst_case_pairs(entries: list[Entry]) -> None:
    laws = [Law("pure", (e.epsilon,)) if e.delta == 0 else Law("approx", (e.epsilon, e.delta)) for e in entries]
    target = F(1, 10**6)
    got = pld_epsilon(laws, target, sum(e.epsilon for e in entries))
    assert got is not None
    with flint.ctx.workprec(256):
        assert true_delta(entries, got.epsilon) <= _arb(target)
    mixed = compose_entries(entries, target)
    assert mixed is not None and got.epsilon <= mixed.epsilon


def _geometric_truth(base: F, s: int, k: int, at: F) -> object:
    """Exact delta(at) of k geometric releases: enumerate the loss index sum over the (finite) loss atoms."""
    r = 1 / base
    c = (1 - r) / (1 + r)
    atoms = {s: 1 / (1 + r), -s: r ** s / (1 + r)}
    for j in range(1, s):
        atoms[s - 2 * j] = atoms.get(s - 2 * j, F(0)) + c * r ** j
    with flint.ctx.workprec(256):
        lam = _arb(base).log()
        tot = flint.arb(0)
        for combo in itertools.product(atoms.items(), repeat=k):
            m = F(1)
            j = 0
            for jj, mm in combo:
                m *= mm
                j += jj
            term = 1 - (_arb(at) - j * lam).exp()
            if term > 0:
                tot += _arb(m) * term
        return tot


def test_geometric_releases_are_bounded_and_a_round_down_mutant_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    law = Law("geometric", (F(3, 2), F(2)))
    comp = pld._Composer([(law, 2)], F(3), 1 << 12)
    assert not comp.exact
    # epsilon on the grid just below the top loss 4 ln(3/2): rounding down puts that atom at or below it
    with flint.ctx.workprec(256):
        top = (4 * _arb(F(3, 2)).log() / _arb(comp.eta)).lower().floor().unique_fmpz()
    at = int(top) * comp.eta
    for e in (F(1, 5), F(1, 2), at):
        with flint.ctx.workprec(256):
            assert _geometric_truth(F(3, 2), 2, 2, e) <= _arb(delta_at([law, law], e, top=F(3), max_bins=1 << 12))
    monkeypatch.setattr(pld, "_ROUND_UP", False)
    with flint.ctx.workprec(256):
        assert _geometric_truth(F(3, 2), 2, 2, at) > _arb(delta_at([law, law], at, top=F(3), max_bins=1 << 12))


def test_two_discrete_gaussian_releases_are_bounded() -> None:
    sigma2 = F(4)
    law = Law("discrete_gaussian", (sigma2, F(1)))
    K = 60
    with flint.ctx.workprec(256):
        w = {k: (-_arb(F(k * k) / (2 * sigma2))).exp() for k in range(-K, K + 1)}
        z = sum(w.values(), flint.arb(0))  # the truncated normaliser: the masses below are lower bounds... of
        # the truncated law; its delta is within 2 e^-450 of the true one, far below the tolerance used
        for at in (F(1, 4), F(1, 2), F(1)):
            truth = flint.arb(0)
            for a, b in itertools.product(range(-K, K + 1), repeat=2):
                loss = _arb(F(1 - 2 * a, 2 * 4) + F(1 - 2 * b, 8))
                term = 1 - (_arb(at) - loss).exp()
                if term > 0:
                    truth += w[a] * w[b] / (z * z) * term
            up = _arb(delta_at([law, law], at))
            assert truth <= up and up <= truth + _arb(F(1, 10**20))


def test_laws_are_exact_json_and_floats_are_refused() -> None:
    law = parse_law({"law": "discrete_gaussian", "sigma2": "1000", "sensitivity": 1})
    assert parse_law(law.text()) == law
    with pytest.raises(TypeError, match="exact"):
        parse_law({"law": "pure", "epsilon": 0.5})
    with pytest.raises(Exception, match="integer sensitivity"):
        parse_law({"law": "geometric", "base": "3/2", "sensitivity": "1/2"})


def test_the_issue_example_by_pld_is_below_cks() -> None:
    """100 releases of the ideal discrete Gaussian at rho = 1/2000 (sigma^2 = 1000): PLD below CKS20."""
    from dpspark.privacy.mixed_composition import converted_upper

    got = pld_epsilon([Law("discrete_gaussian", (F(1000), F(1)))] * 100, D9, F(2))
    assert got is not None and got.exact_grid and got.epsilon < converted_upper(F(1, 20), D9)
