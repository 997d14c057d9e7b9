"""accuracy_at: the same value as mechanism.accuracy for betas with huge denominators (PureSparse's delta_SD)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from dpspark.noise import FastSample, GeoSample
from dpspark.mechanisms.histogram import keepheavy
from dpspark.mechanisms.histogram.keepheavy import accuracy_at

MECHS = [FastSample(n=500, exp_eps=Fraction(21, 8), gamma=Fraction(1, 1 << 72)), GeoSample(n=40, exp_eps=Fraction(2))]


@pytest.mark.parametrize("mech", MECHS, ids=["fast", "geo"])
def test_same_value_including_threshold_betas(mech, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    tiny = Fraction(1, 1 << 3000)
    betas = [Fraction(1, 60) - 7 * tiny, Fraction(1, 60) / (1 << 64) - tiny]
    for a in (2, 5):  # betas exactly on, just above and just below an accuracy threshold
        edge = Fraction(mech._worst_tail_count(a), mech.d)
        betas += [edge, edge + tiny, edge - tiny]
    exact_calls = []
    real = type(mech).accuracy

    def spy(self, beta):  # type: ignore[no-untyped-def]
        exact_calls.append(Fraction(beta).denominator.bit_length() > 256)
        return real(self, beta)

    monkeypatch.setattr(type(mech), "accuracy", spy)
    for beta in betas:
        if 0 < beta < 1:
            assert accuracy_at(mech, beta) == real(mech, beta)
    assert any(exact_calls) and not all(exact_calls)  # both the bracket and the exact path ran


def test_mutant_using_only_the_rounded_up_beta_is_caught() -> None:
    """The identity check has teeth: answering a(up(beta)) alone is wrong just below a threshold."""
    mech = MECHS[1]
    edge = Fraction(mech._worst_tail_count(3), mech.d)
    beta = edge - Fraction(1, 1 << 3000)
    assert mech.accuracy(keepheavy._round_up(beta, 256)) != accuracy_at(mech, beta)
