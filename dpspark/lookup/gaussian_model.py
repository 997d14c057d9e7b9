"""Reader of ``gaussian_model`` releases: the private mean and covariance as numpy arrays, synthetic rows.

The tables ``mean.parquet`` (column, value) and ``covariance.parquet`` (i, j, value) hold float64
values: post-processing of the exact noisy integers (the manifest states this). Everything here is
post-processing of a released model, so ``sample`` may use any generator.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpspark.lookup.statement import StatementLookup


class GaussianModelLookup(StatementLookup):
    """An opened Gaussian model release (``gaussian_covariance``, ``gaussian_mean``, ``gaussian_learner``)."""

    @property
    def dimension(self) -> int:
        """d, the number of columns."""
        return int(self.section["dimension"])

    @property
    def columns(self) -> list[str]:
        """The modelled columns, in order."""
        return list(self.section["columns"])

    def mean(self) -> np.ndarray | None:
        """The private mean (length d), or None if this release holds no mean."""
        if "mean" not in self.tables():
            return None
        return np.asarray(self.table("mean").column("value").to_numpy(), dtype=np.float64)

    def covariance(self) -> np.ndarray | None:
        """The private covariance (d x d, symmetric PSD), or None if this release holds none."""
        if "covariance" not in self.tables():
            return None
        t = self.table("covariance")
        d = self.dimension
        out = np.zeros((d, d), dtype=np.float64)
        out[t.column("i").to_numpy(), t.column("j").to_numpy()] = t.column("value").to_numpy()
        return out

    def sample(self, k: int, rng: Any = None) -> np.ndarray:
        """k synthetic rows from N(mean, covariance) (post-processing; a missing part is 0 / the identity).

        Free of privacy cost, whatever k is: the model is already private. ``rng``: a
        :class:`dpspark.rng.RandomSource` (default: the CSPRNG; tests pass a SeededRandom); 128 bits of it
        seed the numpy generator that draws the floating-point Gaussian rows.
        """
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise ValueError("k must be an int >= 0")
        if rng is None:
            from dpspark.rng import default_source

            rng = default_source()
        gen = np.random.default_rng(rng.bits(128))  # report: synthetic rows from a private model (post-processing)
        d = self.dimension
        mu = self.mean()
        cov = self.covariance()
        mu = np.zeros(d) if mu is None else mu
        cov = np.eye(d) if cov is None else cov
        return gen.multivariate_normal(mu, cov, size=k, method="eigh")

    def describe_lines(self) -> list[tuple[str, str]]:
        s = self.section
        lines = [("model", f"Gaussian, d = {s['dimension']}, holds {', '.join(s['estimates'])}"),
                 ("rho (composed)", f"{s['rho']} (sum of {len(s['rho_by_noise'])} noise additions)"),
                 ("public bounds", f"||mu|| <= R = {s['radius']}, I <= Sigma <= kappa I, kappa = {s['kappa']}"),
                 ("fixed point", f"data 2^-{s['data_bits']}, preconditioner 2^-{s['matrix_bits']}"),
                 ("passes", str(s["passes"])),
                 ("values", s["values"])]
        return lines
