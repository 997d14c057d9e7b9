"""The quantile's exponential mechanism: exact ratio bound, rank-error bound, the draw (docs/groups.md §E)."""

from __future__ import annotations

from fractions import Fraction
from itertools import product

from dpspark.mechanisms.groups.aggregates import Bounds, parse_aggregate
from dpspark.mechanisms.groups.quantile import QuantileLaw


def _law(bins: int, eps: str, c: int = 1, q: str = "1/2") -> QuantileLaw:
    agg = parse_aggregate({"name": "med", "kind": "quantile", "column": "x", "lo": "0", "hi": "1", "q": q, "bins": bins})
    return QuantileLaw(agg, Bounds(1, c), Fraction(eps), 128)


def _worst_ratio(law: QuantileLaw, max_n: int, rows_added: int) -> Fraction:
    """max over datasets (cell vectors of <= max_n rows) and their neighbours (one unit adds rows_added rows)."""
    worst = Fraction(0)
    for cells in product(range(max_n + 1), repeat=law.B):
        if sum(cells) > max_n:
            continue
        base = law.pmf(list(cells))
        for extra in product(range(law.B), repeat=rows_added):
            other = list(cells)
            for i in extra:
                other[i] += 1
            for p, q in zip(base, law.pmf(other)):
                worst = max(worst, p / q, q / p)
    return worst


def test_ratio_bound_holds_exactly_and_ignoring_c_is_caught() -> None:
    for q in ("1/2", "1/3"):
        law = _law(3, "1", q=q)
        assert _worst_ratio(law, 4, 1) <= law.epsilon().exp == law.base ** 2
    law2 = _law(2, "2", c=2, q="1/5")  # a unit adds up to 2 rows
    assert _worst_ratio(law2, 5, 2) <= law2.epsilon().exp
    mutant = _law(2, "2", c=1, q="1/5")  # Delta_U computed without c: calibrated for one row
    assert _worst_ratio(mutant, 5, 2) > mutant.epsilon().exp


def _rank_failure(law: QuantileLaw, cells: list[int], beta: Fraction, off_by_one: bool = False) -> Fraction:
    """Exact Pr[U_out > U* + rank_error(beta)] with the true utilities (the mutant draws from shifted ones)."""
    true_u = law.utilities(cells)
    if off_by_one:  # L_j counted with cell j included: the grid shifted by one cell
        shifted = cells[1:] + [0]
        pmf = law.pmf(shifted)
    else:
        pmf = law.pmf(cells)
    limit = min(true_u) + law.rank_error(beta)
    return sum((p for p, u in zip(pmf, true_u) if u > limit), Fraction(0))


def test_rank_error_bound_holds_and_a_grid_off_by_one_is_caught() -> None:
    law = _law(4, "4")
    beta = Fraction(1, 20)
    for cells in ([30, 0, 0, 30], [5, 7, 0, 9], [0, 0, 0, 0], [1, 0, 40, 3]):
        assert _rank_failure(law, cells, beta) <= beta
    assert _rank_failure(law, [30, 0, 0, 30], beta, off_by_one=True) > beta


class _FixedBits:
    """A source whose bits() returns a chosen value (to check the inverse CDF at its boundaries)."""

    lam = 128

    def __init__(self, x: int) -> None:
        self.x = x

    def bits(self, k: int) -> int:
        return self.x


def test_one_uniform_inverse_cdf_hits_each_point_on_its_interval() -> None:
    law = _law(4, "1")
    cells = [3, 1, 0, 2]
    w = law.weights(cells)
    W, L = sum(w), law.w_bits
    cum = [sum(w[: j + 1]) for j in range(len(w))]
    for j in range(len(w)):
        lo_u = (cum[j - 1] if j else 0) + 1  # least u mapped to j
        x = -((-(lo_u - 1) << L) // W)  # least X with floor(X W / 2^L) + 1 >= lo_u
        assert law.draw_index(cells, _FixedBits(x)) == j
        assert law.draw_index(cells, _FixedBits(x - 1)) == max(j - 1, 0) if x else True
