"""Lookups in a compact release: count(x) = G(iota(p(phi(x)))) for every key of the universe.

The coefficients are read from the memory-mapped Arrow file into one
(l, m/64) uint64 array (no Python list); a few keys are evaluated
(:mod:`dpspark.gf.numpy_eval`, numpy only), a batch goes through
:func:`dpspark.mechanisms.compact.evaluation.evaluate_points` (numba kernels, multipoint evaluation for
large batches), then G decodes the field values exactly
(:class:`dpspark.mechanisms.compact.decode.CountDecoder`). Needs numpy and pyarrow (numba only for
large batches); never Spark.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from dpspark.mechanisms.compact.decode import CountDecoder
from dpspark.mechanisms.compact.evaluation import evaluate_points
from dpspark.gf.field import GF2m
from dpspark.lookup.keys import (
    KeyNotInUniverseError,
    check_invalid_policy,
    encode_key,
    encode_keys,
    keys_to_arrow,
    valid_index_words,
)
from dpspark.lookup.open import ManifestStatements
from dpspark.mechanisms.compact.files import open_compact_files, read_coefficients
from dpspark.release.files import check_data_file
from dpspark.mechanisms.compact.section import CompactInfo
from dpspark.release.counts_form import Manifest
from dpspark.release.header import ReadLimits
from dpspark.universe import Universe, wide


def points_of_index_words(field: GF2m, index_words: pa.Array) -> np.ndarray:
    """phi of 1-based index words (FixedSizeBinary(16|32), no nulls): (k, m/64) elements with integer index - 1."""
    limbs, _ = wide.index_array_to_offsets(index_words)  # (nlimbs, k) 32-bit limbs of index - 1
    need = 2 * field.w
    if limbs.shape[0] > need and limbs[need:].any():
        raise KeyNotInUniverseError(f"an index does not fit GF(2^{field.m})")
    limbs = wide.resize(limbs, max(need, limbs.shape[0]))[:need]
    words = limbs[0::2] | (limbs[1::2] << np.uint64(32))  # (w, k)
    return np.ascontiguousarray(words.T)


class CompactReleaseLookup(ManifestStatements):
    """An opened compact release. Create with :func:`dpspark.lookup.open_release`."""

    condition_note = " (empty or not: every bin of the universe is released)"

    def __init__(self, path: Path, *, manifest: Manifest, verify: bool, limits: ReadLimits) -> None:
        self.path = path
        self.manifest = manifest
        files = open_compact_files(manifest, path, verify)
        self.universe: Universe = files.universe
        self._sampler = files.sampler
        self._coeffs = files.coefficients
        self._decoder = CountDecoder(files.sampler)
        self.field = GF2m(self.info.m)
        self.verified = verify

    @property
    def info(self) -> CompactInfo:
        """The manifest's validated compact section."""
        assert self.manifest.compact is not None
        return self.manifest.compact

    @property
    def m(self) -> int:
        """The field degree."""
        return self.info.m

    @property
    def ell(self) -> int:
        """Number of coefficients, n + 1."""
        return self.info.ell

    @property
    def coefficients(self) -> np.ndarray:
        """The (l, m/64) uint64 coefficient array (read-only view)."""
        view = self._coeffs.view()
        view.flags.writeable = False
        return view

    def verify(self) -> None:
        """Check every data file's size and sha256, and reload the coefficients from the verified bytes."""
        for name, entry in self.manifest.files.items():
            if name != self.info.file:
                check_data_file(self.path, name, entry, verify=True)
        self._coeffs = read_coefficients(self.manifest, self.path, verify=True)
        self.verified = True

    # ---- lookups ----------------------------------------------------------------------------
    def _counts_of_points(self, points: np.ndarray) -> np.ndarray:
        if not len(points):
            return np.zeros(0, dtype=np.int64)
        unique, inverse = np.unique(points, axis=0, return_inverse=True)
        values = evaluate_points(self.field, self._coeffs, np.ascontiguousarray(unique))
        return self._decoder.counts_of_elements(self.field, values)[inverse.reshape(-1)]

    def count_index(self, index: int) -> int:
        """The released count of the 1-based universe index ``index``."""
        if isinstance(index, bool) or not isinstance(index, int) or not 1 <= index <= self.manifest.universe_size:
            raise KeyNotInUniverseError("index is not in [1, |X|]")
        point = self.field.from_int([index - 1])
        return int(self._counts_of_points(point)[0])

    def count(self, key: Any) -> int:
        """The released noisy count of one key (every key of the universe has one)."""
        return self.count_index(encode_key(self.universe, key))

    def counts(self, keys: Any, invalid: str = "raise") -> np.ndarray:
        """Noisy counts (int64) of many keys; batches use multipoint evaluation when large.

        ``keys`` and ``invalid`` ("raise" or "mask") as for :meth:`dpspark.lookup.ReleaseLookup.counts`.
        """
        if check_invalid_policy(invalid) == "mask":
            words, valid = valid_index_words(self.universe, keys)
            values = np.zeros(len(valid), dtype=np.int64)
            if len(words):
                values[valid] = self._counts_of_points(points_of_index_words(self.field, words))
            return np.ma.MaskedArray(values, mask=~valid)
        arrow_keys = keys_to_arrow(self.universe, keys)
        if arrow_keys is None:  # keys beyond Arrow's types: scalar encoding, batched evaluation
            points = self.field.from_int([encode_key(self.universe, k) - 1 for k in keys])
            return self._counts_of_points(points.reshape(-1, self.field.w))
        index = encode_keys(self.universe, arrow_keys)
        if not len(index):
            return np.zeros(0, dtype=np.int64)
        return self._counts_of_points(points_of_index_words(self.field, index))

    def counts_of_index_words(self, index_words: pa.Array) -> np.ndarray:
        """Noisy counts of 1-based index words (FixedSizeBinary(W), no nulls), e.g. from the Spark encoder."""
        return self._counts_of_points(points_of_index_words(self.field, index_words))


    # ---- frames ------------------------------------------------------------------------------
    def to_pandas(self, keys: Any = None) -> Any:
        """The noisy counts of ``keys`` as a pandas DataFrame: key columns, ``noisy_count``, ``error_bar``,
        ``error_bar_beta`` (every key of the universe has a count, so the keys are given; as for :meth:`counts`).

        What a count counts (after contribution bounding) is the frame's ``attrs["counted"]``.
        """
        import pandas as pd

        from dpspark.lookup.frames import label_frame

        if keys is None:
            raise ValueError("a compact release has a noisy count for every key of its universe and no list of "
                             "bins: pass the keys you need, to_pandas(keys)")
        counts = self.counts(keys)
        names = list(self.manifest.key_columns)
        if isinstance(keys, (pa.Table, pa.RecordBatch)):
            frame = keys.select(names).to_pandas()
        elif len(names) == 1:
            frame = pd.DataFrame({names[0]: list(keys)})
        else:
            frame = pd.DataFrame([tuple(k) for k in keys], columns=names)
        acc = self.manifest.accuracy
        frame["noisy_count"] = counts
        frame["error_bar"] = acc.a_per_query
        frame["error_bar_beta"] = float(acc.beta_per_query)  # report
        return label_frame(frame, self.manifest.raw.get("config") or {})

    def html_values(self) -> tuple[Any, str]:
        """A compact release lists no bins: the notebook view says how to get counts."""
        return None, "every key of the universe has a noisy count: counts(keys) or to_pandas(keys)"
