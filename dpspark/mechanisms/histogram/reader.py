"""The sparse release's lookup: open ``bins.parquet`` and look counts up. Needs only numpy and pyarrow.

Keys are encoded with the universe's vectorized encoder and found by binary
search in the sorted index column, so :meth:`ReleaseLookup.counts` has no
per-key Python loop (except for hashed universes, whose encoder hashes each
key, and keys that do not fit an Arrow array, e.g. ints beyond 64 bits).

Keys outside the universe raise :class:`~dpspark.lookup.keys.KeyNotInUniverseError`
(:mod:`dpspark.lookup.keys`); its message never echoes the key. Open with
:func:`dpspark.lookup.open_release` (declared for the ``sparse`` kind in ``kind.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pyarrow as pa

from dpspark.lookup.frames import label_frame
from dpspark.lookup.open import BELOW_THRESHOLD, NOTE_COLUMN, ManifestStatements
from dpspark.lookup.keys import check_invalid_policy, encode_key, encode_keys, keys_to_arrow, valid_index_words
from dpspark.mechanisms.histogram.files import offset_keys, open_release_files
from dpspark.release.counts_form import Manifest
from dpspark.release.header import ReadLimits
from dpspark.release.files import verify_files
from dpspark.universe import Universe, index_to_bytes

__all__ = ["ReleaseLookup"]


class ReleaseLookup(ManifestStatements):
    """A verified, opened release. Create with :func:`open_release`."""

    def __init__(self, path: Path, *, verify: bool, limits: ReadLimits, manifest: Manifest | None = None) -> None:
        self.path = path
        self.manifest: Manifest
        self.universe: Universe
        self.manifest, self.universe, self._parquet, bins = open_release_files(
            path, verify=verify, limits=limits, manifest=manifest
        )
        self._offsets = bins.offsets
        self._counts = bins.counts
        self._width = self.manifest.index_width
        self.verified = verify

    def __len__(self) -> int:
        """Number of released (nonzero-listed) bins."""
        return len(self._counts)

    def verify(self) -> None:
        """Re-check every data file's size and sha256 against the manifest."""
        verify_files(self.manifest, self.path, True)
        self.verified = True

    # ---- lookups ----------------------------------------------------------------------------
    def _lookup(self, keys: np.ndarray) -> np.ndarray:
        out = np.zeros(len(keys), dtype=np.int64)
        if not len(self._offsets) or not len(keys):
            return out
        # Searching sorted needles is several times faster (cache-friendly) than random ones.
        order = np.argsort(keys, kind="stable")
        needles = keys[order]
        pos = np.minimum(np.searchsorted(self._offsets, needles), len(self._offsets) - 1)
        hit = self._offsets[pos] == needles
        out[order] = np.where(hit, self._counts[pos], 0)
        return out

    def _keys(self, index_words: pa.Array) -> np.ndarray:
        return offset_keys(index_words, self._width, self.manifest.universe_size)

    def count(self, key: Any) -> int:
        """The released noisy count of one key (0 when its bin was not released)."""
        index = encode_key(self.universe, key)
        word = pa.array([index_to_bytes(index, self._width)], type=pa.binary(self._width))
        return int(self._lookup(self._keys(word))[0])

    def counts(self, keys: Any, invalid: str = "raise") -> np.ndarray:
        """Noisy counts (int64) of many keys, vectorized.

        ``keys``: for scalar universes a sequence, numpy array or Arrow array of keys;
        for tuple universes a pyarrow Table/RecordBatch with the key columns, a
        struct array, or a sequence of tuples.

        ``invalid="raise"`` (default): a key outside the universe raises
        :class:`KeyNotInUniverseError` (naming its position, never the key).
        ``invalid="mask"``: every valid key is answered and the result is a
        ``numpy.ma.MaskedArray`` whose mask is True at the invalid keys' positions.
        """
        if check_invalid_policy(invalid) == "mask":
            words, valid = valid_index_words(self.universe, keys)
            values = np.zeros(len(valid), dtype=np.int64)
            if len(words):
                values[valid] = self._lookup(self._keys(words))
            return np.ma.MaskedArray(values, mask=~valid)
        arrow_keys = keys_to_arrow(self.universe, keys)
        if arrow_keys is None:  # keys beyond Arrow's types: scalar path
            return np.array([self.count(k) for k in keys], dtype=np.int64)
        index = encode_keys(self.universe, arrow_keys)
        if not len(index):
            return np.zeros(0, dtype=np.int64)
        return self._lookup(self._keys(index))

    def below_threshold(self, noisy_counts: np.ndarray) -> np.ndarray:
        """Which noisy counts are at or below the accuracy threshold (the per-key bar does not hold there).

        Such a bin may be noise: its true count can be 0 (pure_sparse releases hold
        random bins from the mixing step and the top-(n+1) empty bins by design).
        """
        above = self.manifest.accuracy.per_query_above
        return np.asarray(noisy_counts) <= above if above >= 0 else np.zeros(len(noisy_counts), dtype=bool)

    def table(self, columns: Sequence[str] | None = None) -> pa.Table:
        """The bins as an Arrow table (decoded key columns, index words, noisy counts, ``note``).

        ``note`` is ``"below threshold: may be noise"`` for bins whose noisy count is
        at or below the accuracy threshold (:meth:`below_threshold`), else null. It is
        computed here from the released counts (not stored in the release).
        """
        want = list(columns) if columns is not None else None
        stored = None if want is None else [c for c in want if c != NOTE_COLUMN]
        if want is not None and NOTE_COLUMN in want and "noisy_count" not in want:
            stored = [*stored, "noisy_count"]  # type: ignore[list-item]
        try:
            table = self._parquet.read(columns=stored)
            table.validate(full=True)  # keys are read here, not at open: each string must be valid UTF-8
        except Exception as exc:
            from dpspark.release.errors import ReleaseFormatError

            raise ReleaseFormatError(f"{self.path / 'bins.parquet'}: cannot read the bins ({type(exc).__name__}); "
                                     "the file is damaged") from None
        if want is None or NOTE_COLUMN in want:
            marked = self.below_threshold(table.column("noisy_count").to_numpy())
            import pyarrow.compute as pc  # lazy: 0.2 s, only for a frame with notes

            note = pc.if_else(pa.array(marked), pa.scalar(BELOW_THRESHOLD), pa.scalar(None, pa.string()))
            table = table.append_column(NOTE_COLUMN, note)
            if want is not None:
                table = table.select(want)
        return table

    def html_values(self) -> tuple[Any, str]:
        """The notebook view's values: the bins above the threshold (the others may be noise)."""
        frame = self.to_pandas(above_threshold=True)
        hidden = len(self) - len(frame)
        note = (f"{hidden} bin(s) at or below the threshold (they may be noise) are hidden; to_pandas() lists them"
                if hidden else "")
        return frame, note

    def to_pandas(self, above_threshold: bool = False) -> Any:
        """The bins as a pandas DataFrame: key columns, ``noisy_count``, then the error bar and ``note``.

        ``error_bar`` is the per-query a: |noisy - exact count| <= a with probability >= 1 - ``error_bar_beta``,
        for exact counts above ``error_bar_holds_above`` (-1: every count); ``note`` marks bins at or below
        the accuracy threshold. Index words and raw key bytes stay in :meth:`table`.

        ``above_threshold=True`` keeps only the bins above the threshold, where the per-key bar holds: a
        pure_sparse release lists many random keys at or below it by design (they hide which keys are in the
        data), which are noise to a reader. What a count counts (after contribution bounding: distinct units
        per key, not rows) is the frame's ``attrs["counted"]`` and the name of its column index.
        """
        acc = self.manifest.accuracy
        columns = self.manifest.raw["bins"]["columns"]
        keys = [c["name"] for c in columns if c["role"] == "key"]
        table = self.table(keys + ["noisy_count", NOTE_COLUMN])
        if above_threshold:
            import pyarrow.compute as pc  # lazy (see table())

            table = table.filter(pc.is_null(table.column(NOTE_COLUMN)))
        n = table.num_rows
        note = table.column(NOTE_COLUMN)
        table = table.select(keys + ["noisy_count"])
        table = table.append_column("error_bar", pa.array([acc.a_per_query] * n, pa.int64()))
        table = table.append_column("error_bar_beta", pa.array([float(acc.beta_per_query)] * n))  # report
        table = table.append_column("error_bar_holds_above", pa.array([acc.per_query_above] * n, pa.int64()))
        table = table.append_column(NOTE_COLUMN, note)
        return label_frame(table.to_pandas(), self.manifest.raw.get("config") or {})

