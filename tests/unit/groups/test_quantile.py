"""The quantile's exponential mechanism: exact ratio bound, rank-error bound, the weight table, the draw (docs/groups.md §E)."""

from __future__ import annotations

from fractions import Fraction
from itertools import product

import numpy as np
import pytest

from dpspark.mechanisms.groups.aggregates import Bounds, parse_aggregate
from dpspark.mechanisms.groups.quantile import ETA_BITS, QuantileLaw


def _law(bins: int, eps: str, c: int = 1, q: str = "1/2", k: int = 1, lo: str = "0", hi: str = "1") -> QuantileLaw:
    agg = parse_aggregate({"name": "med", "kind": "quantile", "column": "x", "lo": lo, "hi": hi, "q": q, "bins": bins})
    return QuantileLaw(agg, Bounds(k, c), Fraction(eps), 128)


def _worst_ratio(law: QuantileLaw, max_n: int, rows_added: int) -> Fraction:
    """max over datasets (cell vectors of <= max_n rows) and their neighbours (one unit adds rows_added rows)."""
    worst = Fraction(0)
    cells_n = law.B + 1
    for cells in product(range(max_n + 1), repeat=cells_n):
        if sum(cells) > max_n:
            continue
        base = law.pmf(list(cells))
        for extra in product(range(cells_n), repeat=rows_added):
            other = list(cells)
            for i in extra:
                other[i] += 1
            for p, q in zip(base, law.pmf(other)):
                worst = max(worst, p / q, q / p)
    return worst


def _per_group_bound(law: QuantileLaw) -> Fraction:
    """r^(2 Delta_T) / (1 - eta)^2: the stated per-group ratio (the epsilon's exp part and its eta part)."""
    eta = Fraction(1, 1 << ETA_BITS)
    return law.base ** (2 * law.delta_t) / (1 - eta) ** 2


def test_ratio_bound_holds_exactly_and_ignoring_c_or_q_is_caught() -> None:
    for q in ("1/2", "1/3"):
        law = _law(2, "1", q=q)
        assert law.s == max(law.a, law.b - law.a) and law.d == 1
        assert _worst_ratio(law, 4, 1) <= _per_group_bound(law)
    law2 = _law(2, "2", c=2, q="1/5")  # a unit adds up to 2 rows; s = 4
    assert law2.delta_t == 8
    assert _worst_ratio(law2, 5, 2) <= _per_group_bound(law2)
    mutant = _law(2, "2", c=1, q="1/5")  # Delta calibrated for one row
    assert _worst_ratio(mutant, 5, 2) > _per_group_bound(mutant)
    mutant_q = _law(2, "2", c=2, q="1/2")  # Delta computed as if q were 1/2 (s = 1): the q = 1/5 score moves by 4
    mutant_q.a, mutant_q.b = law2.a, law2.b  # same scores as q = 1/5, the calibration of q = 1/2
    assert _worst_ratio(mutant_q, 5, 2) > _per_group_bound(mutant_q)


def test_epsilon_statement_is_per_group_bound_times_k() -> None:
    law = _law(4, "1", k=3)
    eps = law.epsilon()
    assert eps.exp == law.base ** (2 * 3 * law.delta_t)
    assert eps.extra == Fraction(4 * 3, 1 << ETA_BITS) + Fraction(4 * 3, 1 << 128)
    assert eps.le(Fraction(1))


def test_weight_table_is_within_eta_of_the_exact_weights() -> None:
    """Every entry w_V lies in [2^P r^-V (1 - eta), 2^P r^-V], exactly; the cap keeps B+1 tails below 2^-64."""
    for eps in ("1/10", "1", "3"):
        law = _law(16, eps)
        p, q = law.base.numerator, law.base.denominator
        eta = Fraction(1, 1 << ETA_BITS)
        for v in list(range(0, law.cap + 1, max(1, law.cap // 50))) + [law.cap]:
            exact = Fraction((1 << law.P) * q**v, p**v)
            assert exact * (1 - eta) <= law.table[v] <= exact
        assert (law.B + 1) * Fraction(q**law.cap, p**law.cap) <= Fraction(1, 1 << 64)


def _rank_failure(law: QuantileLaw, cells: list[int], beta: Fraction, off_by_one: bool = False) -> Fraction:
    """Exact Pr[S_out / b > rank_error(beta)] with the true scores (the mutant draws from shifted cells)."""
    true_s = law.scores(cells)
    pmf = law.pmf(cells[1:] + [0] if off_by_one else cells)
    limit = law.rank_error(beta) * law.b
    assert min(true_s) == 0  # some candidate's cell holds the quantile
    return sum((p for p, s in zip(pmf, true_s) if s > limit), Fraction(0))


def test_rank_error_bound_holds_and_a_grid_off_by_one_is_caught() -> None:
    law = _law(4, "4")
    beta = Fraction(1, 20)
    for cells in ([30, 0, 0, 0, 30], [5, 7, 0, 9, 1], [0, 0, 0, 0, 0], [1, 0, 40, 3, 0], [0, 0, 0, 0, 60]):
        assert _rank_failure(law, cells, beta) <= beta
    assert _rank_failure(law, [0, 0, 60, 0, 0], beta, off_by_one=True) > beta


def test_integer_data_on_an_integer_grid_releases_the_median_itself() -> None:
    """Values 0..4 on the grid 0..4 (bins = 4): every value is a candidate and counts in its own cell, so the
    true median (an atom) has score 0 and its neighbours a large score."""
    law = _law(4, "1", lo="0", hi="4")
    agg = law.agg
    values = [0] * 10 + [1] * 30 + [2] * 25 + [3] * 20 + [4] * 15  # median 2 (ranks 41..65 hold 2)
    cells = [0] * 5
    for v in values:
        cells[agg.cell_of(Fraction(v))] += 1
    assert cells == [10, 30, 25, 20, 15]
    pmf = law.pmf(cells)
    assert law.scores(cells)[2] == 0
    assert pmf[2] > Fraction(999, 1000)


def test_vectorised_levels_match_the_scalar_ones() -> None:
    law = _law(6, "1/2", q="3/10", c=3)
    rng = np.random.default_rng(3)  # test data only
    cells = rng.integers(0, 50, size=(40, 7))
    assert law.levels_many(cells).tolist() == [law.levels(list(map(int, row))) for row in cells]


class _FixedBits:
    """A source whose bits() returns a chosen value (to check the inverse CDF at its boundaries)."""

    lam = 128

    def __init__(self, x: int) -> None:
        self.x = x

    def bits(self, k: int) -> int:
        return self.x


def test_one_uniform_inverse_cdf_hits_each_point_on_its_interval() -> None:
    law = _law(4, "1")
    cells = [3, 1, 0, 2, 5]
    w = law.weights(cells)
    W, L = sum(w), law.w_bits
    cum = [sum(w[: j + 1]) for j in range(len(w))]
    for j in range(len(w)):
        lo_u = (cum[j - 1] if j else 0) + 1  # least u mapped to j
        x = -((-(lo_u - 1) << L) // W)  # least X with floor(X W / 2^L) + 1 >= lo_u
        assert law.draw_index(cells, _FixedBits(x)) == j
        if x:
            assert law.draw_index(cells, _FixedBits(x - 1)) == max(j - 1, 0)


def test_small_epsilon_plans_fast_and_huge_denominators_stay_small() -> None:
    import time

    t0 = time.perf_counter()
    law = _law(256, "1/100")
    assert time.perf_counter() - t0 < 5  # the old exact table took minutes here (quadratic in the cap)
    assert law.cap < 1 << 16
    big = _law(8, "1", q=f"{(1 << 19) + 1}/{1 << 20}")
    assert big.d > 1 and big.delta_t <= 65


@pytest.mark.parametrize("x,cell", [("0", 0), ("1/8", 1), ("1/16", 0), ("3/16", 1), ("1", 4), ("2", 4), ("-1", 0)])
def test_cells_are_centred_on_the_candidates(x: str, cell: int) -> None:
    law = _law(4, "1")  # candidates 0, 1/4, 1/2, 3/4, 1; boundaries 0, 1/8, 3/8, 5/8, 7/8, 1
    assert law.agg.cell_of(Fraction(x)) == cell


def test_batched_draws_equal_one_draw_per_group() -> None:
    from dpspark.rng import SeededRandom

    law = _law(9, "1/3", q="2/3")
    rng = np.random.default_rng(5)  # test data only
    cells = rng.integers(0, 30, size=(60, 10))
    levels = law.levels_many(cells)
    one, many = SeededRandom(11), SeededRandom(11)
    assert law.draw_level_indexes(levels, many) == [law.draw_level_index(list(map(int, lv)), one) for lv in levels]
