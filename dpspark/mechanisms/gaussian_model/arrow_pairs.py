"""Arrow side of the Gaussian learner's aggregates (:mod:`dpspark.mechanisms.gaussian_model.source`): the twin of
:mod:`dpspark.mechanisms.gaussian_model.spark_pairs`, with the same exact aggregates for the same seed.

The input is read once (the unit and the d columns). As on Spark (:func:`~dpspark.mechanisms.gaussian_model.
spark_pairs_prep.prepare`): rows with a NULL unit drop; each value is read by
:func:`dpspark.engine.numeric.arrow_numeric` (the twin of Spark's ``spark_numeric``: NULL, NaN and unparseable
text are missing) and a missing value follows the declared rule (:func:`~dpspark.mechanisms.gaussian_model.source.
apply_nulls`: the row drops, or the public value replaces it); the fixed-point rows come from the same
:func:`~dpspark.mechanisms.gaussian_model.source.fixed_point`. Unit u sits in bucket H_key(u) mod B
(:func:`dpspark.engine.arrow.units.unit_batches`: Spark's xxhash64 of the id as Spark types it, the keyed mix).
Pairs, singles and rows alone are then :class:`~dpspark.mechanisms.gaussian_model.source.ArraySource`'s, and so
are the passes (exact int64 kernels with proven bounds, Python ints otherwise).

Passes are counted as the Spark source counts them (the counts too), so the release's ``passes`` agrees.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Sequence

import numpy as np

from dpspark.engine.arrow.inputs import require_columns, scan_table
from dpspark.engine.arrow.units import encode_units, unit_batches, valid_units
from dpspark.mechanisms.gaussian_model.fixed import IntMatrix
from dpspark.mechanisms.gaussian_model.source import ArraySource, Moments, apply_nulls, fixed_point
from dpspark.mechanisms.gaussian_model.spark_pairs import check_pass_capacity

if TYPE_CHECKING:
    from dpspark.engine.arrow.backend import ArrowBackend
    from dpspark.mechanisms.gaussian_model.stage import GaussianPairsStage


class ArrowGaussianSource(ArraySource):
    """The :class:`~dpspark.mechanisms.gaussian_model.source.GaussianSource` of an Arrow input (module docstring)."""

    def __init__(self, backend: "ArrowBackend", stage: "GaussianPairsStage") -> None:
        from dpspark.engine.numeric import NullRule, arrow_floats

        self.backend = backend
        columns, unit = list(stage.columns), stage.unit_column
        require_columns(backend.dataset, columns + [unit])
        backend.progress("reading the input into pairs and singles on Arrow")
        table = valid_units(scan_table(backend.dataset, columns + [unit]), unit)
        codes, units = encode_units(table.column(unit))
        bucket_of_unit = unit_batches(backend, units, unit, stage.buckets)
        d = len(columns)
        values = np.empty((table.num_rows, d), dtype=np.float64)
        for j, c in enumerate(columns):  # NULL (NaN, unparseable text included) -> NaN: "missing"
            values[:, j] = arrow_floats(table.column(c))  # one read path whatever the NULLs
        del table
        rule = stage.nulls if stage.nulls is not None else NullRule(Fraction(0))
        values, codes = apply_nulls(values, codes, rule)
        self._index(fixed_point(values, stage.data_bits), codes, bucket_of_unit[codes], stage.buckets)
        self.max_terms = max(stage.max_terms or 1 << 40, d)  # as the Spark source's capacity check

    def _pass(self) -> None:
        self.passes += 1
        self.backend.pass_done()

    def pair_count(self) -> int:
        self._pass()
        return super().pair_count()

    def single_count(self) -> int:
        self._pass()
        return super().single_count()

    def second_moments(self, matrix: IntMatrix, norm_bound_sq: int) -> Moments:
        self.backend.progress(f"pass {self.passes + 1}: filtered second moments on Arrow")
        check_pass_capacity(max(self.max_terms, len(matrix)), norm_bound_sq)
        out = super().second_moments(matrix, norm_bound_sq)
        self.backend.pass_done()
        return out

    def bin_counts(self, matrix: IntMatrix, lo: Sequence[int], width: int, bins: int) -> np.ndarray:
        self.backend.progress(f"pass {self.passes + 1}: per-coordinate histograms on Arrow")
        out = super().bin_counts(matrix, lo, width, bins)
        self.backend.pass_done()
        return out

    def centred_sums(self, matrix: IntMatrix, centres: Sequence[int], radius: int) -> list[int]:
        self.backend.progress(f"pass {self.passes + 1}: clamped sums on Arrow")
        out = super().centred_sums(matrix, centres, radius)
        self.backend.pass_done()
        return out

    def clipped_moments(self, matrix: IntMatrix, centre: Sequence[int], bound_sq: int) -> Moments:
        self.backend.progress(f"pass {self.passes + 1}: clipped second moments on Arrow")
        check_pass_capacity(2 * max(self.max_terms, len(matrix)), bound_sq)
        out = super().clipped_moments(matrix, centre, bound_sq)
        self.backend.pass_done()
        return out

    def clipped_sums(self, matrix: IntMatrix, centre: Sequence[int], bound_sq: int,
                     with_count: bool = False) -> list[int]:
        self.backend.progress(f"pass {self.passes + 1}: clipped sums on Arrow")
        out = super().clipped_sums(matrix, centre, bound_sq, with_count)
        self.backend.pass_done()
        return out

    def close(self) -> None:
        """Drop the prepared rows."""
        self._pairs = self._pairs[:0]
        self._singles = self._all_singles = self._alone = self._pairs


def open_pairs(backend: "ArrowBackend", stage: "GaussianPairsStage") -> ArrowGaussianSource:
    """The Arrow kernel of :class:`~dpspark.mechanisms.gaussian_model.stage.GaussianPairsStage`: the prepared source."""
    return ArrowGaussianSource(backend, stage)
