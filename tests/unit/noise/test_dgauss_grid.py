"""The grid helper: l2 sensitivity in grid units <= ||Delta||_2 / G + sqrt(D), certified rationally."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from dpspark.noise import grid_sensitivity, sqrt_upper, to_grid, to_grid_int64
from dpspark.noise.grid import GridError, ceil_isqrt
from dpspark.rng import SeededRandom


def test_sqrt_upper_is_a_tight_upper_bound() -> None:
    for x in [0, 1, 2, 3, Fraction(1, 3), Fraction(10**6 + 1), Fraction(2, 10**9), 10**40 + 7]:
        u = sqrt_upper(x, bits=40)
        assert u * u >= x and (u - Fraction(1, 2**40)) ** 2 < x or (x == 0 and u == 0)
    assert sqrt_upper(49) == 7 and ceil_isqrt(50) == 8 and ceil_isqrt(49) == 7 and ceil_isqrt(0) == 0
    with pytest.raises(TypeError):
        sqrt_upper(2.0)  # type: ignore[arg-type]


def test_to_grid_rounds_to_nearest_ties_up() -> None:
    assert to_grid([0, 4, 5, 6, -5, -6, Fraction(7, 2)], 10) == [0, 0, 1, 1, 0, -1, 0]
    x = np.array([-25, -24, -5, 0, 4, 5, 14, 15, 10**15], dtype=np.int64)
    assert list(to_grid_int64(x, 10)) == to_grid(list(x), 10)
    with pytest.raises(GridError):
        to_grid([1], 0)


def test_grid_sensitivity_bound_holds_and_is_nearly_tight() -> None:
    """Random neighbouring rational vectors: ||round(x/G) - round(x'/G)||^2 <= bound^2, exactly."""
    rng = SeededRandom("grid")
    G, D, delta = Fraction(7, 3), 6, 5
    bound = grid_sensitivity(G, D, l2=delta)
    assert bound >= Fraction(delta) / G + sqrt_upper(D) - Fraction(1, 2**60)
    for _ in range(400):
        x = [Fraction(rng.uniform(10**6) - 5 * 10**5, 997) for _ in range(D)]
        # a random direction, scaled to l2 norm <= delta (rational: scale by a rational <= delta/norm)
        v = [Fraction(rng.uniform(2001) - 1001, 100) for _ in range(D)]
        n2 = sum(c * c for c in v) or Fraction(1)
        scale = Fraction(delta) / sqrt_upper(n2)  # ||scale v|| <= delta
        xp = [a + scale * c for a, c in zip(x, v)]
        assert sum((a - b) ** 2 for a, b in zip(x, xp)) <= delta * delta
        diff = sum((a - b) ** 2 for a, b in zip(to_grid(x, G), to_grid(xp, G)))
        assert diff <= bound * bound
    # an adversarial pair needs the sqrt(D) term: every coordinate flips across a rounding tie
    half = G / 2
    x = [half - Fraction(1, 10**6)] * D
    xp = [half] * D
    diff = sum((a - b) ** 2 for a, b in zip(to_grid(x, G), to_grid(xp, G)))
    gap2 = sum((a - b) ** 2 for a, b in zip(x, xp)) / (G * G)
    assert diff == D and gap2 < 1  # the ||Delta||/G term alone would not cover it
    assert diff <= grid_sensitivity(G, D, l2_squared=gap2 * G * G) ** 2


def test_grid_sensitivity_inputs() -> None:
    assert grid_sensitivity(1000, 16, l2_squared=10**8) == 10 + 4
    with pytest.raises(GridError):
        grid_sensitivity(0, 4, l2=1)
    with pytest.raises(GridError):
        grid_sensitivity(1, 4)
    with pytest.raises(TypeError):
        grid_sensitivity(1.5, 4, l2=1)  # type: ignore[arg-type]
