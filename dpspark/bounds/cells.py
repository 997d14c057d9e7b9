"""The signed bit-length cells of the bounds histogram: power-of-two bins, exact boundaries.

Boundaries t_0 < t_1 < ... < t_CELLS (exact dyadic Fractions):

    t_0 = -2^(E_MAX+1) (nominal), t_1 = -2^E_MAX, ..., -2^E_MIN, 0, 2^E_MIN, ..., 2^E_MAX, t_CELLS = 2^(E_MAX+1)

Cell j is [t_j, t_(j+1)); cell 0 also holds every value below t_1 and the last cell every value at or above
2^E_MAX (the two *overflow* cells, never chosen as a bound's cell, so the rows a chosen range clips are
exactly the rows in the cells outside it). Around zero: [-2^E_MIN, 0) and [0, 2^E_MIN) (the {0} cell of
integer data). E_MAX = 61 keeps every chosen bound within +-2^61, so (hi - lo) < 2^62 and its square fits
the groups family's 2^126 limit at scale_bits = 0.
"""

from __future__ import annotations

from fractions import Fraction

#: smallest and largest magnitude exponents of a cell edge
E_MIN, E_MAX = -10, 61
#: magnitude edges per sign
_MAGS = E_MAX - E_MIN + 1
#: number of cells: 2 * _MAGS + 1 edges inside (incl. 0) and two nominal outer edges -> 2 * _MAGS + 2 cells
CELLS = 2 * _MAGS + 2


def _edges() -> tuple[Fraction, ...]:
    neg = [-Fraction(2) ** e for e in range(E_MAX + 1, E_MIN - 1, -1)]
    pos = [Fraction(2) ** e for e in range(E_MIN, E_MAX + 2)]
    return (*neg, Fraction(0), *pos)


#: t_0 .. t_CELLS
EDGES: tuple[Fraction, ...] = _edges()
assert len(EDGES) == CELLS + 1


def cell_edges() -> tuple[Fraction, ...]:
    """The CELLS + 1 exact boundaries t_0 .. t_CELLS (module docstring)."""
    return EDGES


def cell_of(x: Fraction) -> int:
    """The cell of an exact value: the j with t_j <= x < t_(j+1), clamped to [0, CELLS - 1]."""
    lo, hi = 0, CELLS  # the largest j in [0, CELLS] with t_j <= x (0 when x < t_0), by bisection
    if x < EDGES[0]:
        return 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if EDGES[mid] <= x else (lo, mid)
    return min(lo, CELLS - 1)
