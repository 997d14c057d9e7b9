"""Issue 34 §4: the joint quantile law with the split score (joint_split.py): the score is the least over every
cut, its sensitivity, the privacy ratio and the data-free rank bar by exact enumeration (mutants caught), the
one-uniform draw; and the half-rank score of joint_quantile.py has no data-free bar (atoms)."""

from __future__ import annotations

from fractions import Fraction
from itertools import product
from typing import Iterator

import pytest

from dpspark.mechanisms.groups.aggregates import GroupsError
from dpspark.mechanisms.groups.dyadic import ETA_BITS
from dpspark.mechanisms.groups.joint_quantile import JointQuantileLaw
from dpspark.mechanisms.groups.joint_split import MAX_TUPLES, SplitJointLaw, _tuples, tuple_count
from dpspark.rng import SeededRandom
from tests.unit.groups.test_joint_quantile import _Bits

THIRDS = [Fraction(1, 3), Fraction(2, 3)]


def _law(qs: list[Fraction] = THIRDS, B: int = 3, eps: str = "2", c: int = 1, max_rows: int = 6) -> SplitJointLaw:
    return SplitJointLaw(qs, B, c, 1, Fraction(eps), 128, max_rows=max_rows)


def _datasets(width: int, max_n: int) -> list[list[int]]:
    return [list(c) for c in product(range(max_n + 1), repeat=width) if sum(c) <= max_n]


def _ends(cells: list[int]) -> tuple[list[int], list[int]]:
    L, acc = [], 0
    for h in cells:
        L.append(acc)
        acc += h
    return L, [a + h for a, h in zip(L, cells)]


def _least_over_cuts(law: SplitJointLaw, cells: list[int], o: tuple[int, ...]) -> int:
    """The oracle: min over every integer cut y_j in [Q L, Q U] (no order imposed) of the gap loss."""
    L, U = _ends(cells)
    n, Q = sum(cells), law.Q
    best = None
    for ys in product(*(range(Q * L[p], Q * U[p] + 1) for p in o)):
        path = [0, *ys, Q * n]
        s = sum(abs(b - a - t * n) for a, b, t in zip(path, path[1:], law.t))
        best = s if best is None else min(best, s)
    assert best is not None
    return best


def test_split_score_is_the_least_over_every_cut() -> None:
    for qs in (THIRDS, [Fraction(1, 4), Fraction(1, 2), Fraction(3, 4)], [Fraction(2, 5)]):
        law = _law(qs, B=2, max_rows=4)
        for cells in _datasets(3, 4):
            got = law.scores(cells).tolist()
            assert got == [_least_over_cuts(law, cells, tuple(o)) for o in _tuples(law.B, law.m)]


def _neighbours(law: SplitJointLaw, max_n: int, rows: int) -> Iterator[tuple[list[int], list[int]]]:
    """Every dataset of <= max_n - rows rows with every way of adding ``rows`` rows to it."""
    for cells in _datasets(law.B + 1, max_n - rows):
        for extra in product(range(law.B + 1), repeat=rows):
            other = list(cells)
            for i in extra:
                other[i] += 1
            yield cells, other


def _max_move(law: SplitJointLaw, rows: int, max_n: int) -> int:
    return max(int(abs(law.scores(b) - law.scores(a)).max()) for a, b in _neighbours(law, max_n, rows))


def test_sensitivity_is_two_c_times_q_minus_the_least_gap_and_tight() -> None:
    for qs in (THIRDS, [Fraction(1, 4), Fraction(1, 2)]):
        law = _law(qs, max_rows=6)
        Q, tmin = law.Q, min(law.t)
        assert _max_move(law, 1, 5) == 2 * (Q - tmin)  # attained: a smaller Delta would be wrong
        assert _max_move(law, 2, 5) == 4 * (Q - tmin)  # c = 2 rows: twice


def _ratio(law: SplitJointLaw, max_n: int, rows: int) -> Fraction:
    worst = Fraction(1)
    for a, b in _neighbours(law, max_n, rows):
        base, near = law.law(a), law.law(b)
        worst = max(worst, *(max(base[t] / near[t], near[t] / base[t]) for t in base))
    return worst


def test_privacy_ratio_by_enumeration_and_mutants() -> None:
    law = _law(eps="3", max_rows=5)
    stated = law.base ** (2 * law.delta_t) / (1 - Fraction(1, 1 << ETA_BITS)) ** 2
    assert law.epsilon().le(Fraction(3)) and law.epsilon().exp == law.base ** (2 * law.delta_t)
    worst = _ratio(law, 5, 1)
    assert worst <= stated
    assert worst > law.base ** law.delta_t  # half the loss is caught
    two = _law(eps="3", c=2, max_rows=5)
    assert _ratio(two, 5, 2) <= two.base ** (2 * two.delta_t) / (1 - Fraction(1, 1 << ETA_BITS)) ** 2
    assert _ratio(law, 5, 2) > stated  # the c = 1 calibration under two added rows is caught


def _worst_failure(law: SplitJointLaw, E: Fraction, max_n: int) -> Fraction:
    """max over datasets of Pr[some o_j has > q_j n + E rows below its cell or > (1 - q_j) n + E above]."""
    worst = Fraction(0)
    for cells in _datasets(law.B + 1, max_n):
        n = sum(cells)
        L, U = _ends(cells)
        bad = sum((p for o, p in law.law(cells).items()
                   if any(L[x] > q * n + E or n - U[x] > (1 - q) * n + E for x, q in zip(o, law.qs))), Fraction(0))
        worst = max(worst, bad)
    return worst


def test_rank_bar_covers_every_dataset_exactly_and_a_smaller_bar_is_caught() -> None:
    beta = Fraction(1, 20)
    law = _law(eps="16", max_rows=6)
    E = law.rank_error(beta)
    assert E == Fraction(1, 3)
    assert _worst_failure(law, E, 6) <= beta
    assert _worst_failure(law, E - Fraction(1, 2 * law.Q), 6) > beta  # one half-rank step less: caught
    loose = _law(eps="4", max_rows=6)
    assert _worst_failure(loose, loose.rank_error(Fraction(1, 4)), 6) <= Fraction(1, 4)


def test_the_half_rank_score_has_no_data_free_bar() -> None:
    """joint_quantile.py: all rows in one cell (an atom at both quantiles): the tuples (v, p), v below p, tie the
    true (p, p), so the first quantile falls below every row with probability > 1/2 whatever n is; the
    split score puts the mass on (p, p)."""
    B, p = 8, 6
    for n in (6, 30):
        cells = [0] * (B + 1)
        cells[p] = n
        old = JointQuantileLaw(THIRDS, B, 1, 1, Fraction(4), 128, max_rows=30)
        below = sum((pr for o, pr in old.law(cells).items() if o[0] < p), Fraction(0))
        assert below > Fraction(1, 2)  # rank error n / 3 with probability > 1/2, at any n
        new = SplitJointLaw(THIRDS, B, 1, 1, Fraction(4), 128, max_rows=30)
        assert new.law(cells)[(p, p)] > Fraction(1, 2)
        assert new.scores(cells)[list(map(tuple, _tuples(B, 2).tolist())).index((p, p))] == 0


def test_one_uniform_hits_each_tuple_on_exactly_its_weight() -> None:
    law = _law(eps="2", max_rows=6)
    cells = [1, 0, 3, 2]
    lv = law.levels(cells).tolist()
    W = sum(law.table[v] for v in lv)
    order = sorted(range(law.N), key=lambda i: (lv[i], i))  # the draw's order: by level, then the public order
    start, bits = 0, law.draw_bits
    tup = [tuple(x) for x in _tuples(law.B, law.m).tolist()]
    for i in order:
        w = law.table[lv[i]]
        for u in (start + 1, start + w):  # first and last u of this tuple's interval
            X = -((-(u - 1) << bits) // W)  # least X with floor(X W / 2^bits) + 1 >= u
            assert tuple(law.draw(cells, _Bits(X))) == tup[i]
        start += w
    assert start == W


def test_draws_are_sorted_and_plan_checks_are_data_free() -> None:
    law = _law([Fraction(1, 4), Fraction(1, 2), Fraction(3, 4)], B=16, eps="1", max_rows=100)
    rng = SeededRandom(3)
    for cells in ([0] * 17, [5] * 17, [0] * 8 + [100] + [0] * 8):
        o = law.draw(cells, rng)
        assert o == sorted(o) and len(o) == 3
    assert law.rank_error(Fraction(1, 20)) <= law.rank_error(Fraction(1, 1000))
    with pytest.raises(GroupsError, match="increasing"):
        _law([Fraction(2, 3), Fraction(1, 3)])
    big = 1
    while tuple_count(big, 3) <= MAX_TUPLES:
        big *= 2
    with pytest.raises(GroupsError, match="tuples exceed"):
        SplitJointLaw([Fraction(1, 4), Fraction(1, 2), Fraction(3, 4)], big, 1, 1, Fraction(1), 128, max_rows=10)
    with pytest.raises(GroupsError, match="public range"):
        law.draw([7] * 17, rng)
