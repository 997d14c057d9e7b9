"""Reader of ``gaussian_model`` releases: the private mean and covariance as numpy arrays, synthetic rows.

The tables ``mean.parquet`` (column, value) and ``covariance.parquet`` (i, j, value) hold float64
values: post-processing of the exact noisy integers (the manifest states this). Everything here is
post-processing of a released model, so ``sample`` may use any generator.

Both tables are read and checked when the release is opened: the mean has one finite value per column,
in the manifest's column order; the covariance has every (i, j) of the d x d matrix once, in row-major
order, finite, exactly symmetric and positive semi-definite (smallest eigenvalue >= -1e-9 times the
largest diagonal entry: float rounding of the writer's PSD matrix, never a negative direction).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from dpspark.lookup.statement_base import StatementLookup
from dpspark.release.errors import ReleaseFormatError
from dpspark.mechanisms.gaussian_model.section import KIND, MAX_DIMENSION, PSD_TOLERANCE, check_gaussian_section  # noqa: F401


class GaussianModelLookup(StatementLookup):
    """An opened Gaussian model release (``gaussian_covariance``, ``gaussian_mean``, ``gaussian_learner``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        d = self.dimension
        self._mean: np.ndarray | None = None
        self._cov: np.ndarray | None = None
        if "mean" in self.section["estimates"]:
            self._mean = self._read_mean(d)
        if "covariance" in self.section["estimates"]:
            self._cov = self._read_covariance(d)

    def _read_mean(self, d: int) -> np.ndarray:
        t = self.checked_table("mean", [("column", pa.string()), ("value", pa.float64())], d)
        where = self.root / "mean.parquet"
        if t.column("column").to_pylist() != self.columns:
            raise ReleaseFormatError(f"{where}: the columns differ from the manifest's, or are out of order")
        values = t.column("value").to_numpy(zero_copy_only=False)
        if t.column("value").null_count or not np.isfinite(values).all():
            raise ReleaseFormatError(f"{where}: a mean value is null, infinite or NaN")
        return np.asarray(values, dtype=np.float64)

    def _read_covariance(self, d: int) -> np.ndarray:
        t = self.checked_table("covariance", [("i", pa.int64()), ("j", pa.int64()), ("value", pa.float64())], d * d)
        where = self.root / "covariance.parquet"
        if any(t.column(c).null_count for c in ("i", "j", "value")):
            raise ReleaseFormatError(f"{where}: null entries")
        i, j = t.column("i").to_numpy(), t.column("j").to_numpy()
        grid = np.arange(d * d, dtype=np.int64)
        if not (np.array_equal(i, grid // d) and np.array_equal(j, grid % d)):
            raise ReleaseFormatError(f"{where}: entries are not the d x d matrix in row-major order")
        out = np.asarray(t.column("value").to_numpy(), dtype=np.float64).reshape(d, d)
        if not np.isfinite(out).all() or not np.array_equal(out, out.T):
            raise ReleaseFormatError(f"{where}: the covariance is not finite and exactly symmetric")
        scale = max(1.0, float(np.abs(np.diag(out)).max()))  # report
        if np.linalg.eigvalsh(out).min() < -PSD_TOLERANCE * scale:  # report: a check of float post-processing
            raise ReleaseFormatError(f"{where}: the covariance is not positive semi-definite")
        return out

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
        return None if self._mean is None else self._mean.copy()

    def covariance(self) -> np.ndarray | None:
        """The private covariance (d x d, symmetric PSD), or None if this release holds none."""
        return None if self._cov is None else self._cov.copy()

    def sample(self, k: int, rng: Any = None) -> np.ndarray:
        """k synthetic rows from N(mean, covariance) (post-processing; a missing part is 0 / the identity).

        Free of privacy cost, whatever k is, and private whatever the generator: the model is already private.
        ``rng``: None (the CSPRNG), an int seed, a :class:`random.Random`, a numpy
        :class:`~numpy.random.Generator` (used as it is) or a :class:`dpspark.rng.RandomSource` (tests pass a
        SeededRandom); 128 bits of the non-numpy ones seed the numpy generator that draws the rows.
        """
        from dpspark.lookup.generators import numpy_generator

        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise ValueError("k must be an int >= 0")
        gen = numpy_generator(rng)  # report: synthetic rows from a private model (post-processing)
        d = self.dimension
        mu = self.mean()
        cov = self.covariance()
        mu = np.zeros(d) if mu is None else mu
        cov = np.eye(d) if cov is None else cov
        return gen.multivariate_normal(mu, cov, size=k, method="eigh")

    @property
    def clipping_warning(self) -> str:
        """The release's warning that a covariance pass clipped more rows than Gaussian rows would ("" if none)."""
        clip = self.section.get("clipping")
        return str(clip.get("warning", "")) if isinstance(clip, dict) else ""

    def clipped_rows(self) -> list[tuple[str, int, int]]:
        """Per pass: (pass, noisy clipped rows, noisy singles); empty in releases before issue 36."""
        clip = self.section.get("clipping")
        if not isinstance(clip, dict):
            return []
        return [(str(p["pass"]), int(p["noisy_clipped"]), int(clip["noisy_singles"])) for p in clip.get("passes", [])]

    def _gaussian_rates(self) -> list[float]:
        clip = self.section.get("clipping") or {}
        default = float(clip.get("gaussian_rate", "0.05"))  # report
        return [float(p.get("gaussian_rate", default)) for p in clip.get("passes", [])]  # report

    def to_pandas(self) -> Any:
        """One row per modelled column: ``column``, ``mean`` and one ``cov_<column>`` per column (the covariance
        row). The values are the release's own float64 numbers (the manifest states they are post-processing of
        the exact noisy integers), so there is no exact string beside them; a missing estimate is absent. When a
        covariance pass clipped more rows than Gaussian rows would, the frame's ``attrs["warning"]`` says so and
        a UserWarning is issued."""
        import warnings

        import pandas as pd

        cols: dict[str, Any] = {"column": self.columns}
        if self._mean is not None:
            cols["mean"] = self._mean.tolist()
        if self._cov is not None:
            for j, name in enumerate(self.columns):
                cols[f"cov_{name}"] = self._cov[:, j].tolist()
        frame = pd.DataFrame(cols)
        if self.clipping_warning:
            frame.attrs["warning"] = self.clipping_warning
            warnings.warn(self.clipping_warning, UserWarning, stacklevel=2)
        return frame

    # --- words --------------------------------------------------------------------------------
    def _last_pass_unit(self) -> tuple[str, int] | None:
        """(what the last noise pass summed, log2 of its integer unit in the data's units), from its label."""
        noise = self.section.get("noise") or []
        if not noise:
            return None
        from dpspark.mechanisms.gaussian_model.section import noise_unit

        return noise_unit(str(noise[-1].get("label", "")), self.section["data_bits"], self.section["matrix_bits"])

    def accuracy_words(self, exact: bool = False) -> str:
        """The accuracy in words, the noise bound of the last pass in the data's units (not fixed-point units)."""
        from fractions import Fraction

        from dpspark.text import bound_text, confidence, readable_text
        from dpspark.text.statements import accuracy_words, claim_words

        acc = self.manifest.accuracy
        unit = self._last_pass_unit()
        if exact or unit is None:
            return accuracy_words(acc, exact)
        what, bits = unit
        lines = []
        for c in acc.claims:
            old_units = "integer units" in c.condition  # releases before issue 36 stated the fixed-point integers
            if c.quantity == "abs_error" and c.scope == "simultaneous" and (old_units or "data's units" in c.condition):
                b = bound_text(Fraction(c.bound) / (1 << bits) if old_units else Fraction(c.bound))
                b = "<= " + b[2:] if b.startswith("= ") else b
                lines.append(f"noise of the last pass ({what}) {b} for every coordinate at once, with probability "
                             f">= {confidence(c.beta)} (the discrete Gaussian is sigma-subgaussian, CKS20); the "
                             "model's error follows KLSU Thm 1.1 at large enough n")
            else:
                lines.append(claim_words(c))
        if acc.notes:
            lines.append(f"Notes: {readable_text(acc.notes)}")
        return "\n".join(lines)

    def describe_lines(self) -> list[tuple[str, str]]:
        """``dpspark inspect`` lines: d and the estimates, rho, the public bounds, the fixed point, the passes."""
        from dpspark.release.exactjson import str_to_frac
        from dpspark.text.statements import rho_words

        s = self.section
        rho = str_to_frac(str(s["rho"]), 1 << 16)
        lines = [("model", f"Gaussian, d = {s['dimension']}, holds {', '.join(s['estimates'])}"),
                 ("rho (composed)", f"{rho_words(rho)} (sum of {len(s['rho_by_noise'])} noise additions)"),
                 ("public bounds", f"||mu|| <= R = {s['radius']}, I <= Sigma <= kappa I, kappa = {s['kappa']}"),
                 ("fixed point", f"data 2^-{s['data_bits']}, preconditioner 2^-{s['matrix_bits']}"),
                 ("passes", str(s["passes"])),
                 ("values", s["values"])]
        clipped = self.clipped_rows()
        if clipped:
            shown = "; ".join(f"{p}: about {c} of {n} ({c / n:.1%}; Gaussian rows <= {r:.2%})"  # report
                              for (p, c, n), r in zip(clipped, self._gaussian_rates()))
            lines.append(("clipped rows", f"{shown} (noisy counts)"))
        if self.clipping_warning:
            lines.append(("warning", self.clipping_warning))
        return lines
