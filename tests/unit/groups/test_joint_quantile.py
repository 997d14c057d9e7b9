"""Issue 34 §4: the joint exponential mechanism of several quantiles (joint_quantile.py): the exact law, the
privacy ratio by enumeration, the one-uniform draw, the big-integer convolution; mutants are caught."""

from __future__ import annotations

from fractions import Fraction
from itertools import combinations_with_replacement, product

import pytest

from dpspark.mechanisms.groups.joint_quantile import ETA_BITS, JointQuantileLaw, _convolve_strict, _draw

THIRDS = [Fraction(1, 3), Fraction(2, 3)]


def _law(qs: list[Fraction] = THIRDS, B: int = 3, eps: str = "2", c: int = 1, max_rows: int = 6,
         direct: bool = False) -> JointQuantileLaw:
    return JointQuantileLaw(qs, B, c, 1, Fraction(eps), 128, max_rows=max_rows, direct=direct)


def _tuples(law: JointQuantileLaw) -> list[tuple[int, ...]]:
    return list(combinations_with_replacement(range(law.B + 1), law.m))


@pytest.mark.parametrize("direct", [False, True])
def test_the_sampler_law_is_the_weight_over_its_total(direct: bool) -> None:
    for qs in (THIRDS, [Fraction(1, 4), Fraction(1, 2), Fraction(3, 4)], [Fraction(2, 5)]):
        law = _law(qs, direct=direct)
        for cells in ([1, 0, 2, 1], [0, 0, 0, 0], [3, 0, 0, 3], [0, 5, 0, 1]):
            weights = {t: law.weight(cells, t) for t in _tuples(law)}
            total = sum(weights.values())
            assert law.total(cells) == total
            got = law.law(cells)
            assert got == {t: Fraction(w, total) for t, w in weights.items() if w}


class _Unmasked(JointQuantileLaw):
    """Mutant: o_j may exceed o_(j+1) (the p' <= p mask dropped)."""

    def step_weights(self, L, alphas, gw, n, j, p):  # type: ignore[no-untyped-def]
        if p is None:
            return super().step_weights(L, alphas, gw, n, j, p)
        lp, g = L[p], gw[j + 1]
        return [a * g[abs(lp - x)] for a, x in zip(alphas[j], L)]


def test_a_sampler_that_drops_the_order_is_caught() -> None:
    law = _Unmasked(THIRDS, 3, 1, 1, Fraction(2), 128, max_rows=6)
    cells = [1, 0, 2, 1]
    total = sum(law.weight(cells, t) for t in _tuples(law))
    exact = {t: Fraction(law.weight(cells, t), total) for t in _tuples(law)}
    assert law.law(cells) != exact


def _worst(law: JointQuantileLaw, max_n: int, rows_added: int) -> Fraction:
    worst = Fraction(1)
    width = law.B + 1
    for cells in product(range(max_n + 1), repeat=width):
        if sum(cells) + rows_added > max_n:
            continue
        base = law.law(list(cells))
        for extra in product(range(width), repeat=rows_added):
            other = list(cells)
            for i in extra:
                other[i] += 1
            near = law.law(other)
            assert base.keys() == near.keys()  # every tuple keeps a positive weight
            worst = max(worst, *(max(base[t] / near[t], near[t] / base[t]) for t in base))
    return worst


def _stated(law: JointQuantileLaw) -> Fraction:
    return law.base ** (2 * law.delta) / (1 - Fraction(1, 1 << ETA_BITS)) ** (2 * (law.m + 1))


def test_privacy_ratio_by_enumeration_and_mutants() -> None:
    law = _law(eps="3", max_rows=5)
    assert law.delta == 4 * (3 - 1)
    worst = _worst(law, 5, 1)
    assert worst <= _stated(law)
    assert worst > law.base ** law.delta  # half the loss (the monotone claim) is caught
    two = _law(eps="3", c=2, max_rows=5)  # a unit adds two rows
    assert _worst(two, 5, 2) <= _stated(two)
    assert _worst(law, 5, 2) > _stated(law)  # the c = 1 calibration under two added rows is caught


def test_statement_matches_the_calibration() -> None:
    law = _law(eps="1")
    eps = law.epsilon()
    assert eps.exp == law.base ** (2 * law.delta) and eps.le(Fraction(1))
    with pytest.raises(Exception, match="increasing"):
        _law([Fraction(2, 3), Fraction(1, 3)])


class _Bits:
    lam = 128

    def __init__(self, x: int) -> None:
        self.x = x

    def bits(self, k: int) -> int:
        return self.x


def test_one_uniform_inverse_cdf_hits_each_index_on_its_interval() -> None:
    w = [3, 0, 5, 1, 7]
    W, bits = sum(w), 20
    cum = [sum(w[: i + 1]) for i in range(len(w))]
    for i, x in enumerate(w):
        if not x:
            continue
        lo_u = (cum[i - 1] if i else 0) + 1
        X = -((-(lo_u - 1) << bits) // W)  # least X with floor(X W / 2^bits) + 1 >= lo_u
        assert _draw(w, bits, _Bits(X)) == i
        if X:
            assert _draw(w, bits, _Bits(X - 1)) < i


def test_kronecker_convolution_equals_the_direct_sum() -> None:
    a = [0, 5, 1 << 200, 7, 0, 3]
    b = [9, 1 << 150, 2, 0, 11, 1]
    direct = [sum(a[j] * b[i - j] for j in range(i)) for i in range(len(a))]
    assert _convolve_strict(a, b) == direct


def test_rank_error_steps_are_monotone_in_beta() -> None:
    law = _law(eps="1", B=16, max_rows=50)
    assert law.score_steps(Fraction(1, 20)) <= law.score_steps(Fraction(1, 1000))


def test_the_direct_pass_equals_the_kronecker_pass_and_ignores_the_row_bound() -> None:
    qs = [Fraction(1, 5), Fraction(1, 2), Fraction(4, 5)]
    cells = [0, 3, 1, 0, 7, 2, 0, 0, 5]
    fast = JointQuantileLaw(qs, 8, 1, 1, Fraction(1), 128, max_rows=40, direct=False)
    slow = JointQuantileLaw(qs, 8, 1, 1, Fraction(1), 128, max_rows=40, direct=True)
    assert fast.forward(cells)[1] == slow.forward(cells)[1]
    huge = JointQuantileLaw(qs, 8, 1, 1, Fraction(1), 128, max_rows=10**9)
    assert huge.direct and huge.total(cells) == fast.total(cells)  # no work over 10^9 positions
