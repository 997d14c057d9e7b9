"""The conditional sampling step of Lemma 8.1(iv) in the form p = L_S + Z_S * R (docs/balcer-vadhan-notes.md §C1).

Points and values (iota and phi). A field element e has the integer int(e)
(bit i = coefficient of z^i, dpspark.gf's ``to_int``); iota(e) = int(e) + 1
maps GF(2^m) onto [1, 2^m]. dpspark indices are 0-based, so index i is the
paper's x = i + 1 and phi(x) = iota^{-1}(x) is the field element whose integer
is i. A target u in [1, 2^m] is the field element iota^{-1}(u), integer u - 1.

Why no filler points. The paper interpolates through |S| constrained points
plus l - |S| filler points with uniform values (outside phi(S); when |X| < l
they must lie outside phi(X)); for distinct points the map (filler values) ->
p is a bijection onto the consistent polynomials, so p is uniform among them.
Here p = L_S + Z_S R with L_S the interpolant of the |S| constrained points,
Z_S = prod_{s in S} (z - phi(s)) and R uniform of degree <= l-1-|S|: R -> p is
injective (Z_S R = Z_S R' forces R = R') and lands in the consistent set
(Z_S vanishes on phi(S), deg p <= l-1), and both sets have 2^(m(l-|S|))
elements, so it is a bijection and p has exactly the same (uniform)
distribution, with no filler points and no assumption on |X| versus l.
"""

from __future__ import annotations

import numpy as np

from dpspark.mechanisms.compact.empty_bin import EmptyBinSampler
from dpspark.gf import GF2m, SubproductTree, poly_derivative, poly_mul
from dpspark.gf.warmup import ensure_compiled
from dpspark.rng import RandomSource


def draw_targets(sampler: EmptyBinSampler, noisy: list[int], rng: RandomSource) -> list[int]:
    """u_x uniform on G^{-1}(v_x) for each noisy count v_x (one rng.uniform draw each)."""
    out = []
    for v in noisy:
        lo, hi = sampler.preimage(v)
        if hi < lo:
            raise ValueError("the empty-bin sampler has an empty preimage; its parameters are invalid")
        out.append(rng.uniform(hi - lo + 1) - 1 + lo)
    return out


def points_of_indexes(field: GF2m, indexes: list[int]) -> np.ndarray:
    """phi of 0-based universe indexes: the field elements whose integers are the indexes."""
    return field.from_int(indexes).reshape(len(indexes), field.w)


def conditioned_polynomial(
    field: GF2m, ell: int, points: np.ndarray, values: np.ndarray, rng: RandomSource
) -> np.ndarray:
    """A uniform polynomial of degree < ``ell`` through (points[i], values[i]); shape (ell, w).

    p = L_S + Z_S R with R's ell - k coefficients from one exact ``rng.bits``
    draw (k = number of points, k < ell, points distinct). One subproduct tree
    gives Z_S (its root) and L_S (vzGG Alg 10.11).
    """
    k = points.shape[0]
    if values.shape[0] != k:
        raise ValueError("points and values must have the same length")
    if not 0 <= k < ell:
        raise ValueError("need fewer constrained points than coefficients (|S| <= n < l = n + 1)")
    r = field.from_random_bits(rng, ell - k)
    if k == 0:
        return r
    ensure_compiled(coefficients=ell)  # says so when numba's cache is cold (a one-time compile); l is public
    tree = SubproductTree(field, points)
    z = tree.root()
    weights = tree.evaluate(poly_derivative(field, z))
    try:
        inv = field.inv(weights)
    except ZeroDivisionError:
        raise ValueError("interpolation points must be pairwise distinct") from None
    lagrange = tree.linear_combination(field.mul(values, inv))
    p = poly_mul(field, z, r)
    p[:k] ^= lagrange
    return p
