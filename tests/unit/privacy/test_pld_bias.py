"""A law's bias (the implemented law within a factor 1 +- a of the ideal one, e.g. a mod-d uniform draw) is
folded into the PLD statement soundly: delta'(eps) <= (1 + 2S) delta(eps - 4S). Checked against the exact
delta of a concrete biased geometric pair (one release and two composed); ignoring the bias is caught."""

from __future__ import annotations

from fractions import Fraction
from itertools import product

import flint
import pytest

from dpspark.privacy.errors import PrivacyError
from dpspark.privacy.pld import Law, bias_fold, delta_at, parse_law, pld_epsilon

A = Fraction(1, 50)


def _biased_pair() -> list[tuple[Fraction, Fraction]]:
    """Blocks (P'(block), Q'(block)) of a geometric(base 2, Delta 1) pair moved by a factor within 1 +- A.

    P(k) = 2^-|k| / 3, Q(k) = P(k - 1): the loss is ln 2 on k <= 0 (P = 2/3, Q = 1/3) and -ln 2 on k >= 1
    (P = 1/3, Q = 2/3). Implemented: P' = P (1 + A/2) on k <= 0, P (1 - A) on k >= 1; Q' = Q (1 - A) on
    k <= 0, Q (1 + A/2) on k >= 1 (each a distribution, each factor within [1 - A, 1 + A]). Within a block
    the ratio is constant, so the block sums give the exact hockey-stick."""
    return [(Fraction(2, 3) * (1 + A / 2), Fraction(1, 3) * (1 - A)),
            (Fraction(1, 3) * (1 - A), Fraction(2, 3) * (1 + A / 2))]


def _true_delta(k: int, eps: Fraction) -> flint.arb:
    """The exact delta'(eps) of k composed biased pairs, as an arb ball."""
    e = flint.arb(flint.fmpq(eps.numerator, eps.denominator)).exp()
    out = flint.arb(0)
    for combo in product(_biased_pair(), repeat=k):
        p = q = Fraction(1)
        for bp, bq in combo:
            p, q = p * bp, q * bq
        term = flint.arb(flint.fmpq(p.numerator, p.denominator)) - e * flint.arb(flint.fmpq(q.numerator, q.denominator))
        if term.lower() > 0:
            out += term
        elif not term.upper() < 0:
            out += flint.arb(0).union(term)  # straddles 0: count it (harmless in a lower-end check)
    return out


def _law(bias: Fraction) -> Law:
    return parse_law({"law": "geometric", "base": "2", "sensitivity": 1, "bias": str(bias)})


@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize("eps", [Fraction(0), Fraction(1, 2), Fraction(69, 100), Fraction(1), Fraction(7, 5)])
def test_the_fold_bounds_the_biased_pairs_true_delta(k: int, eps: Fraction) -> None:
    got = delta_at([_law(A)] * k, eps)
    truth = _true_delta(k, eps)
    assert truth.lower() <= flint.arb(flint.fmpq(got.numerator, got.denominator))


def test_ignoring_the_bias_is_caught() -> None:
    """The ideal law alone states less than the biased pair's true delta (just below ln 2 and at 2 ln 2)."""
    for k, eps in ((1, Fraction(69, 100)), (2, Fraction(138, 100))):
        ideal = delta_at([_law(Fraction(0))] * k, eps)
        assert flint.arb(flint.fmpq(ideal.numerator, ideal.denominator)) < _true_delta(k, eps).lower()


def test_bias_text_round_trip_and_limits() -> None:
    law = _law(Fraction(1, 2**128))
    assert parse_law(law.text()) == law and '"bias"' in law.text()
    assert '"bias"' not in _law(Fraction(0)).text()  # an exact law's text is unchanged
    assert bias_fold([law, law]) == (1 + Fraction(4, 2**128), Fraction(8, 2**128))
    with pytest.raises(PrivacyError, match="bias"):
        _law(Fraction(1, 2))
    with pytest.raises(PrivacyError, match="sum"):
        bias_fold([_law(Fraction(1, 5))] * 2)


def test_pld_epsilon_with_a_bias_is_the_ideal_one_shifted() -> None:
    """epsilon' = epsilon_ideal(delta / F) + B: never below the ideal statement."""
    d = Fraction(1, 10**6)
    ideal = pld_epsilon([_law(Fraction(0))] * 20, d, Fraction(40))
    biased = pld_epsilon([_law(Fraction(1, 2**64))] * 20, d, Fraction(40))
    assert ideal is not None and biased is not None
    assert biased.epsilon >= ideal.epsilon + Fraction(80, 2**64)
    assert biased.laws == ((_law(Fraction(1, 2**64)).text(), 20),)


def test_copies_compose_as_that_many_laws() -> None:
    """A release of k independent pairs (k keys per unit) states the same as k releases of one pair."""
    one = _law(Fraction(1, 2**64))
    three = parse_law({"law": "geometric", "base": "2", "sensitivity": "1", "bias": str(Fraction(1, 2**64)),
                       "copies": "3"})
    assert three.copies == 3 and parse_law(three.text()) == three
    d = Fraction(1, 10**6)
    a, b = pld_epsilon([three, one], d, Fraction(20)), pld_epsilon([one] * 4, d, Fraction(20))
    assert a is not None and b is not None and a.epsilon == b.epsilon
    assert delta_at([three], Fraction(1)) == delta_at([one] * 3, Fraction(1))
    with pytest.raises(PrivacyError, match="copies"):
        parse_law({"law": "geometric", "base": "2", "sensitivity": "1", "copies": "0"})
