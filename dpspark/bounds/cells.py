"""The signed bit-length cells of the bounds histogram: power-of-two octaves in SUB equal parts, exact edges.

Positive edges P: 2^e (1 + i / SUB) for e in [E_MIN, E_MAX], i in [0, SUB), and 2^(E_MAX+1); the edges are

    t_0 < t_1 < ... < t_CELLS  =  -P (descending), 0, P (ascending)

(exact dyadic Fractions). Cell j is [t_j, t_(j+1)); cell 0 also holds every value below t_1 and the last cell
every value at or above t_(CELLS-1) (the two *overflow* cells, never chosen as a bound's cell, so the rows a
chosen range clips are exactly the rows in the cells outside it). Around zero: [-2^E_MIN, 0) and [0, 2^E_MIN)
(the {0} cell of integer data). Four parts per octave: a bound is at most 1/4 of an octave (25%) past the
cell's values, against 100% for plain powers of two. E_MAX = 61 keeps every chosen bound within
+-(7/4) 2^61, so (hi - lo)^2 < 2^126 (the groups family's limit) even at scale_bits = 0.
"""

from __future__ import annotations

from fractions import Fraction

#: smallest and largest octave exponents, and the equal parts of each octave
E_MIN, E_MAX, SUB = -10, 61, 4


def _edges() -> tuple[Fraction, ...]:
    pos = [Fraction(2) ** e * (1 + Fraction(i, SUB)) for e in range(E_MIN, E_MAX + 1) for i in range(SUB)]
    pos.append(Fraction(2) ** (E_MAX + 1))
    return (*(-x for x in reversed(pos)), Fraction(0), *pos)


#: t_0 .. t_CELLS
EDGES: tuple[Fraction, ...] = _edges()
#: number of cells
CELLS = len(EDGES) - 1


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
