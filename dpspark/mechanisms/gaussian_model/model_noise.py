"""Discrete Gaussian noise for integer aggregate vectors (symmetric matrices, histograms, sums, counts).

A :class:`VectorNoise` adds independent certified discrete Gaussians (``dpspark.noise.dgauss``) to the D
coordinates of an integer vector whose l2 sensitivity (one unit added or removed) is at most
Delta = sqrt(``l2_sq``) integer units - for a symmetric d x d matrix, D = d(d+1)/2 upper-triangle
coordinates and Delta the Frobenius norm of the upper triangle of one term (not a full shift per
coordinate).

Privacy: coordinates are independent, so rho = sum_i rho(s_i) <= (1 + eta) Delta_G^2 / (2 sigma^2)
(``l2_rho``; eta certified by the sampler, 0 with its default floor), where Delta_G is the sensitivity in
the units the noise is added in:
* small scales (G = 1): Delta_G = Delta;
* large scales: each coordinate is first rounded to the public grid G (ties up) and noised in grid
  units; the rounding adds at most 1 per coordinate to a shift, so Delta_G <= Delta / G + sqrt(D)
  (``dpspark.noise.grid.grid_sensitivity``). G is chosen from public quantities only: sigma is fixed at
  :data:`GRID_SIGMA` and G is the smallest integer whose Delta_G meets the target rho.
The window: the sampler works mod m around centre 0 with data radius the next power of two above
ceil(max_abs / G), a public bound on every coordinate, so the output is x + Z exactly unless |Z| exceeds
the body (probability below 2^-100 at the default 128 bits).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Any, Sequence

import numpy as np

from dpspark.mechanisms.gaussian_model.fixed import GaussianSpecError, ceil_frac
from dpspark.noise.dgauss import MAX_SIGMA, DiscreteGaussian, l2_rho, smallest_sigma
from dpspark.noise.grid import grid_sensitivity, sqrt_upper, to_grid
from dpspark.rng import RandomSource

#: sigma (grid units) used whenever the exact scale needs a grid
GRID_SIGMA = Fraction(4096)
#: the sampler's data radius must stay below this
MAX_RADIUS = 1 << 48


@dataclass
class VectorNoise:
    """A planned noise addition: grid G, sampler, certified rho (see the module docstring)."""

    dims: int
    l2_sq: int
    grid: int
    sampler: DiscreteGaussian
    rho: Fraction
    sensitivity_grid: Fraction
    label: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def add(self, values: Sequence[int], rng: RandomSource) -> list[int]:
        """Noisy values in the original integer units: G * ((round(x / G) + Z) mod m, centred at 0)."""
        if len(values) != self.dims:
            raise ValueError("wrong number of coordinates")
        grid_values = to_grid([int(v) for v in values], self.grid) if self.grid != 1 else [int(v) for v in values]
        noisy = self.sampler.add_many(np.array(grid_values, dtype=np.int64), rng)
        return [int(v) * self.grid for v in noisy]

    def describe(self) -> dict[str, Any]:
        """Exact public parameters for the manifest."""
        return {"label": self.label, "coordinates": self.dims, "l2_sensitivity_sq": self.l2_sq,
                "grid": self.grid, "sigma_grid_units": str(self.sampler.sigma),
                "l2_sensitivity_grid_units": str(self.sensitivity_grid), "rho": str(self.rho), **self.extra}


@lru_cache(maxsize=64)
def _sampler(sigma: Fraction, radius: int) -> DiscreteGaussian:
    """The sampler at (sigma, data radius); built once per process (construction certifies its weights)."""
    return DiscreteGaussian(sigma=sigma, data_radius=radius)


def _window(max_abs: int) -> int:
    """A public data radius >= max_abs + 1: the next power of two (so plans share samplers)."""
    return 1 << (max_abs + 1).bit_length()


def plan_noise(dims: int, l2_sq: int, rho: Fraction, max_abs: int, label: str = "") -> VectorNoise:
    """The cheapest plan meeting ``rho`` for D = ``dims`` coordinates of l2 sensitivity sqrt(l2_sq).

    Tries G = 1 (sigma on the sampler's grid, <= 10^4); otherwise the public grid G at sigma = GRID_SIGMA.
    The returned ``rho`` is the certified one (<= the target).
    """
    rho = Fraction(rho)
    if rho <= 0 or dims < 1 or l2_sq < 0 or max_abs < 0:
        raise GaussianSpecError("noise plan needs rho > 0, dims >= 1, l2_sq >= 0, max_abs >= 0")
    delta = sqrt_upper(l2_sq, 64)
    need = delta * delta / (2 * rho)
    if need <= MAX_SIGMA * MAX_SIGMA / 4:
        sigma = smallest_sigma(rho, delta)
        radius = _window(max_abs)
        if radius >= MAX_RADIUS:
            raise GaussianSpecError(f"{label}: the largest possible aggregate exceeds the sampler's window")
        sampler = _sampler(sigma, radius)
        certified = l2_rho(sampler, delta)
        if certified > rho:  # pragma: no cover - eta is 0 with the sampler's default floor
            raise GaussianSpecError(f"{label}: the sampler's certified rho exceeds the target")
        return VectorNoise(dims, l2_sq, 1, sampler, certified, delta, label)
    sigma = GRID_SIGMA
    probe = _sampler(sigma, 0)
    # allowed Delta_G: (1 + eta) Delta_G^2 / (2 sigma^2) <= rho  <=>  Delta_G <= sigma sqrt(2 rho / (1 + eta))
    allowed_sq = 2 * rho * sigma * sigma / (1 + probe.eta)
    root_d = sqrt_upper(dims, 64)
    # a rational lower bound of sqrt(allowed_sq): sqrt_upper(x) - 2^-64 <= sqrt(x)
    allowed = sqrt_upper(allowed_sq, 64) - Fraction(1, 1 << 64)
    if allowed <= 2 * root_d:
        raise GaussianSpecError(f"{label}: rho = {rho} is too small for {dims} coordinates on a grid "
                                "(the rounding term sqrt(D) would dominate): raise the budget")
    grid = max(1, ceil_frac(delta / (allowed - root_d - Fraction(1, 1 << 32))))
    sens = grid_sensitivity(grid, dims, l2_squared=l2_sq)
    radius = _window(ceil_frac(Fraction(max_abs, grid)))
    if radius >= MAX_RADIUS:
        raise GaussianSpecError(f"{label}: the largest possible aggregate exceeds the sampler's window (2^48 grid units)")
    sampler = _sampler(sigma, radius)
    certified = l2_rho(sampler, sens)
    if certified > rho:  # pragma: no cover - the grid choice above guarantees this
        raise GaussianSpecError(f"{label}: grid plan exceeds its rho")
    return VectorNoise(dims, l2_sq, grid, sampler, certified, sens, label)
