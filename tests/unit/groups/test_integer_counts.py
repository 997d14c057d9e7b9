"""Issue 34 §3: released counts are integers (post-processing) and the widened bar still covers."""

from __future__ import annotations

from fractions import Fraction
from dpspark.mechanisms.groups.aggregates import Bounds
from dpspark.mechanisms.groups.algorithm import GroupStats, release_groups
from dpspark.mechanisms.groups.integer_counts import integer_bar, integer_count
from dpspark.rng import SeededRandom


def test_the_widened_bar_covers_every_grid_point_the_old_bar_covered() -> None:
    """Exhaustive: every x on grids of step 1/2, 5/2, 1/3, 7/4 and every bar e on the same grid, N integer."""
    for G in (Fraction(1, 2), Fraction(5, 2), Fraction(1, 3), Fraction(7, 4)):
        for N in range(0, 6):
            for i in range(-20, 40):
                x = G * i
                for j in range(0, 12):
                    e = G * j
                    if abs(x - N) <= e:
                        assert abs(integer_count(x) - N) <= integer_bar(e)
                        assert integer_count(x).denominator == 1


def test_rounding_without_widening_is_caught() -> None:
    x, N, e = Fraction(5, 2), 0, Fraction(5, 2)  # |x - N| <= e, but round(x) = 3 > e
    assert abs(x - N) <= e and abs(integer_count(x) - N) > e
    assert abs(integer_count(x) - N) <= integer_bar(e) == 3
    assert integer_bar(Fraction(4)) == 4  # an integer bar is not widened


def test_a_count_with_five_rows_per_unit_is_released_as_an_integer() -> None:
    stats = [GroupStats(0, {"n": (17,)}), GroupStats(2, {"n": (400,)})]
    for seed in (1, 2, 3, 4):
        rel = release_groups(stats, [{"name": "n", "kind": "count"}], {"epsilon": "1"}, SeededRandom(seed),
                             max_units=1000, keys=[0, 1, 2], bounds=Bounds(1, 5))
        assert rel.plan.noises[0].law.G == Fraction(5, 2)  # the grid is still 2.5 (on main the values were too)
        for v in rel.values:
            assert v["n"].value.denominator == 1 and v["n"].error.denominator == 1
            assert v["n"].error == rel.plan.errors["n"][0]
