"""Hardened reading of a sparse release's data: ``bins.parquet`` checked against the manifest, as search arrays.

Every failure is a :class:`ReleaseFormatError` naming the file and what is wrong. The generic parts (listed
files, the universe) are :mod:`dpspark.release.files`'s; the columns are :mod:`dpspark.mechanisms.histogram.layout`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from dpspark.mechanisms.histogram.layout import COUNT_COLUMN, INDEX_COLUMN, bins_columns, bins_schema
from dpspark.release.counts_form import Manifest
from dpspark.release.errors import ReleaseFormatError
from dpspark.release.header import DEFAULT_LIMITS, ReadLimits
from dpspark.release.files import load_universe as _load_universe
from dpspark.release.files import verify_files
from dpspark.universe import Universe
from dpspark.universe import wide


def load_universe(manifest: Manifest, release_dir: Path) -> Universe:
    """The release's universe, with key columns that fit the bins layout."""
    return _load_universe(manifest, release_dir, bins_columns)


@dataclass(frozen=True)
class SortedBins:
    """The released partial vector as search arrays: offset keys ascending (see :func:`offset_keys`), counts."""

    offsets: np.ndarray
    counts: np.ndarray


def offset_keys(index_words: pa.Array, width: int, universe_size: int | None = None) -> np.ndarray:
    """Search keys of index words: 0-based offsets (index - 1) whose numpy order is the index order.

    uint64 when ``universe_size <= 2^64`` (fast to sort and search), else big-endian
    bytes as ``S<width>``. The word of index 2^(8W) is all zeros (see
    :mod:`dpspark.universe.wide`), so raw words do not sort by index; offsets do.
    """
    offsets, _ = wide.index_array_to_offsets(index_words)
    be = np.ascontiguousarray(wide.to_be_bytes(offsets))  # (rows, width) big-endian bytes
    if universe_size is not None and universe_size <= 1 << 64:
        return np.ascontiguousarray(be[:, width - 8 :]).view(">u8").reshape(-1).astype(np.uint64)
    return be.view(f"S{width}").reshape(-1)


def _expected_columns(manifest: Manifest, universe: Universe) -> list[dict[str, Any]]:
    return [c.describe() for c in bins_columns(universe, list(manifest.key_columns))]


def open_bins(manifest: Manifest, universe: Universe, release_dir: Path, limits: ReadLimits) -> pq.ParquetFile:
    """Open bins.parquet after checking its schema and row count against the manifest and limits."""
    path = release_dir / manifest.bins["file"]
    name = str(release_dir / "manifest.json")
    if manifest.bins["columns"] != _expected_columns(manifest, universe):
        raise ReleaseFormatError(f"{name}: bins.columns does not match the layout for this universe")
    try:
        pf = pq.ParquetFile(path)
        found = [(f.name, f.type) for f in pf.schema_arrow]  # names decode lazily (UnicodeDecodeError)
        rows = pf.metadata.num_rows
    except Exception as exc:  # pyarrow raises several types on damaged files
        raise ReleaseFormatError(f"{path}: not a readable Parquet file ({type(exc).__name__}); the file is damaged") from None
    expected = bins_schema(bins_columns(universe, list(manifest.key_columns)))
    if found != [(f.name, f.type) for f in expected]:
        raise ReleaseFormatError(f"{path}: columns or types differ from the manifest's bins layout")
    if rows < 0 or rows > limits.max_rows:
        raise ReleaseFormatError(f"{path}: declares {rows} rows, above the limit of {limits.max_rows}")
    if rows > manifest.universe_size:
        raise ReleaseFormatError(f"{path}: declares more rows than the universe has elements")
    return pf


def read_sorted_bins(pf: pq.ParquetFile, manifest: Manifest, path: Path) -> SortedBins:
    """Read the index and count columns and check them: no nulls, in range, strictly ascending."""
    try:
        table = pf.read(columns=[INDEX_COLUMN, COUNT_COLUMN])
    except Exception as exc:
        raise ReleaseFormatError(f"{path}: cannot read the bins ({type(exc).__name__}); the file is damaged") from None
    index = table.column(INDEX_COLUMN).combine_chunks()
    counts_col = table.column(COUNT_COLUMN).combine_chunks()
    if index.null_count or counts_col.null_count:
        raise ReleaseFormatError(f"{path}: null index or count values")
    offsets, _ = wide.index_array_to_offsets(index)
    if len(index) and not wide.less_than_const(offsets, manifest.universe_size).all():
        raise ReleaseFormatError(f"{path}: an index lies outside the universe")
    keys = offset_keys(index, manifest.index_width, manifest.universe_size)
    if len(keys) > 1 and not bool(np.all(keys[1:] > keys[:-1])):
        raise ReleaseFormatError(f"{path}: bins are not strictly ascending by index (duplicated or out of order)")
    counts = counts_col.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    if len(counts) and (counts.min() < 0 or int(counts.max()) > manifest.count_range):
        raise ReleaseFormatError(f"{path}: a noisy count lies outside [0, n] (the count range: max_units x max_keys_per_unit x max_rows_per_key)")
    return SortedBins(offsets=keys, counts=counts)


def open_release_files(
    release_dir: str | Path,
    *,
    verify: bool = True,
    limits: ReadLimits = DEFAULT_LIMITS,
    manifest: Manifest | None = None,
) -> tuple[Manifest, Universe, pq.ParquetFile, SortedBins]:
    """Read and check everything a sparse lookup needs (``manifest``: already read); raises :class:`ReleaseFormatError`."""
    root = Path(release_dir)
    if not root.is_dir():
        raise ReleaseFormatError(f"{root}: not a release directory (missing or not a directory)")
    if manifest is None:
        from dpspark.release.manifest import read_manifest

        manifest = read_manifest(root, limits)
    if manifest.kind != "sparse" or manifest.bins is None:
        raise ReleaseFormatError(f"{root / 'manifest.json'}: only sparse releases can be opened by this reader")
    verify_files(manifest, root, verify)
    universe = load_universe(manifest, root)
    pf = open_bins(manifest, universe, root, limits)
    bins = read_sorted_bins(pf, manifest, root / manifest.bins["file"])
    return manifest, universe, pf, bins
