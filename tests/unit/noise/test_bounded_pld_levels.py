"""Level-dependent grids of the certified PLD (dpspark.noise.bounded_pld): coarsening rounds losses UP.

A polynomial longer than the public cap MAX_LEN is coarsened (index i -> ceil(i/2)). With a tiny cap the
coarsening runs at every level, so the exact k-fold delta (test_bounded_exact_kfold) must stay below the
certificate; the round-down mutant of the coarsening falls below the exact delta and is caught.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from dpspark.noise import bounded_pld
from dpspark.noise.bounded import BoundedNoise
from tests.unit.noise.test_bounded_exact_kfold import exact_kfold_delta as _exact_ball


def exact_kfold_delta(noise: BoundedNoise, k: int, eps: Fraction) -> tuple[Fraction, Fraction]:
    """The exact delta's arb ball as a rational interval [lo, hi]."""
    ball = _exact_ball(noise, k, eps)

    def q(x) -> Fraction:
        man, ex = x.mid().man_exp()
        return Fraction(int(man)) * Fraction(2) ** int(ex)

    return q(ball.lower()), q(ball.upper())

CASES = [(8, 2, Fraction(1, 2)), (12, 2, Fraction(1)), (6, 3, Fraction(1, 2))]


def test_coarsen_rounds_every_index_up() -> None:
    coeffs, off = bounded_pld.coarsen(list(range(1, 8)), -3)  # indices -3..3
    # ceil(i/2): -3 -> -1, -2 -> -1, -1 -> 0, 0 -> 0, 1 -> 1, 2 -> 1, 3 -> 2
    assert off == -1 and coeffs == [1 + 2, 3 + 4, 5 + 6, 7]


@pytest.mark.parametrize("M,k,eps", CASES)
def test_coarsened_certificate_is_above_the_exact_delta(monkeypatch, M: int, k: int, eps: Fraction) -> None:
    noise = BoundedNoise(M, "p2")
    exact = exact_kfold_delta(noise, k, eps)
    fine = bounded_pld.pld_delta(noise, k, eps)
    monkeypatch.setattr(bounded_pld, "MAX_LEN", 16)
    coarse = bounded_pld.pld_delta(noise, k, eps)
    assert exact[1] < fine <= coarse <= 1  # coarsening only raises losses
    assert coarse > fine  # the cap really coarsened


def test_round_down_coarsening_mutant_is_caught(monkeypatch) -> None:
    M, k, eps = CASES[0]
    noise = BoundedNoise(M, "p2")
    exact = exact_kfold_delta(noise, k, eps)
    monkeypatch.setattr(bounded_pld, "MAX_LEN", 16)
    monkeypatch.setattr(bounded_pld, "_COARSEN_UP", False)
    assert bounded_pld.pld_delta(noise, k, eps) < exact[0]


@pytest.mark.slow
def test_level_grids_reach_k_10_000_and_beat_chernoff(monkeypatch) -> None:
    """k = 10^4 (past the old k <= 1389 reach): at the Chernoff M the level-grid PLD certifies delta, below the
    Chernoff certificate, and above the optimistic round-down PLD (an estimate of the true delta from below).
    About 20 s on an idle core (200 s at load 22 on 2 cores)."""
    from dpspark.noise.bounded_calibrate import calibrate

    k, eps = 10_000, Fraction(1)
    ch = calibrate(k, "1", "1e-6")
    noise = BoundedNoise(ch.M, ch.family, ch.bits)
    cert = bounded_pld.pld_delta(noise, k, eps)
    assert cert <= ch.certified_delta <= Fraction(1, 10**6)
    monkeypatch.setattr(bounded_pld, "_ROUND_UP", False)
    monkeypatch.setattr(bounded_pld, "_COARSEN_UP", False)
    assert bounded_pld.pld_delta(noise, k, eps) < cert
