"""Writing a sparse release: ``manifest.json`` plus ``bins.parquet`` (and copied universe value lists).

See :mod:`dpspark.mechanisms.histogram.layout` for the bins columns and
:mod:`dpspark.release.manifest` for the manifest. The directory appears
atomically (:mod:`dpspark.release.atomic`); an existing path is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow.parquet as pq

from dpspark.mechanisms.histogram.layout import BINS_FILE, COUNT_COLUMN, INDEX_COLUMN, build_bins_table, bins_columns
from dpspark.privacy.relations import AddRemove
from dpspark.release.header import utc_now
from dpspark.release.writer import exact_config_value, manifest_body, write_release_dir
from dpspark.universe import Universe

if TYPE_CHECKING:
    from dpspark.mechanisms.histogram.result import HistogramRelease

def _int_array(values: list[int], what: str) -> np.ndarray | None:
    """``values`` as int64 when every value is a Python/numpy int within int64, else None."""
    arr = np.asarray(values) if values else np.zeros(0, dtype=np.int64)
    if arr.dtype.kind not in "iu":
        if arr.dtype.kind != "O":
            raise ValueError(f"released {what} must be integers")
        return None
    return arr.astype(np.int64) if arr.dtype != np.uint64 or not len(arr) or arr.max() < 1 << 63 else None


def _check_release(release: "HistogramRelease", universe: Universe) -> tuple[list[int], list[int]]:
    """The partial vector sorted by universe index, after checking indices in [1, |X|] (distinct) and counts in [0, n].

    ``HistogramRelease`` indices are 0-based (dpspark.mechanisms.histogram's convention);
    universe indexes, and everything in a release directory, are 1-based.
    """
    if release.universe_size != universe.size:
        raise ValueError("the release's universe size differs from the universe's size")
    if any(isinstance(i, bool) or not isinstance(i, (int, np.integer)) for i in release.indices):
        raise ValueError("a released index is not an integer")
    indices, counts = [int(i) + 1 for i in release.indices], list(release.counts)
    if len(indices) != len(counts):
        raise ValueError("the release's indices and counts differ in length")
    idx = _int_array(indices, "indices")
    if idx is None:  # beyond int64: exact Python ints
        if any(not isinstance(i, int) or isinstance(i, bool) or not 1 <= i <= universe.size for i in indices):
            raise ValueError("a released index is outside [1, |X|]")
        order = sorted(range(len(indices)), key=indices.__getitem__)
        sorted_idx = [indices[k] for k in order]
        duplicate = any(b == a for a, b in zip(sorted_idx, sorted_idx[1:]))
    else:
        if len(idx) and (idx.min() < 1 or int(idx.max()) > universe.size):
            raise ValueError("a released index is outside [1, |X|]")
        order = np.argsort(idx, kind="stable")
        sorted_np = idx[order]
        duplicate = bool(np.any(sorted_np[1:] == sorted_np[:-1]))
        sorted_idx = sorted_np.tolist()
    if duplicate:
        raise ValueError("the release lists an index twice")
    cnt = _int_array(counts, "counts")
    if cnt is None or (len(cnt) and (cnt.min() < 0 or int(cnt.max()) > release.n)):
        raise ValueError("a released count is outside [0, n] (or not an int64)")
    if not isinstance(release.privacy.relation, AddRemove):
        raise ValueError("release privacy must be stated under add/remove of one unit")
    return sorted_idx, cnt[np.asarray(order, dtype=np.int64)].tolist()


def build_sparse_manifest(
    *,
    release: "HistogramRelease",
    universe_spec: dict[str, Any],
    universe: Universe,
    key_columns: list[str],
    config: Mapping[str, Any],
    input_description: Mapping[str, Any],
    rng_name: str,
    files: dict[str, Any],
    created_utc: str | None = None,
) -> dict[str, Any]:
    """The manifest dict of a sparse release (before sealing)."""
    mech_params = release.parameters.get("mechanism", {}) if isinstance(release.parameters, Mapping) else {}
    bins = {
        "file": BINS_FILE,
        "index_column": INDEX_COLUMN,
        "count_column": COUNT_COLUMN,
        "order": "index ascending",
        "columns": [c.describe() for c in bins_columns(universe, key_columns)],
    }
    return manifest_body(
        kind="sparse", algorithm=release.algorithm, counting=str(mech_params.get("mechanism", "unknown")),
        n=int(config.get("max_units", release.n)), parameters=release.parameters, privacy=release.privacy, accuracy=release.accuracy,
        privacy_notes=release.privacy.notes,
        eps_requested=exact_config_value(config, "epsilon", mech_params.get("epsilon")),
        delta_requested=exact_config_value(config, "delta", None) or Fraction(0),  # pure: delta absent or None
        universe_spec=universe_spec, universe=universe, key_columns=key_columns, config=config,
        input_description=input_description, rng_name=rng_name, created_utc=created_utc, section=("bins", bins),
        files=files,
    )


def write_sparse_release(
    out_path: str | Path,
    *,
    release: "HistogramRelease",
    universe: Universe,
    key_columns: list[str],
    config: dict[str, Any],
    input_description: dict[str, Any],
    rng_name: str,
    created_utc: str | None = None,
) -> Path:
    """Write a sparse release directory atomically and return its path.

    ``config`` holds the exact parameters to record (``epsilon``, ``delta``,
    ``beta``, ... as exact strings); ``input_description`` the input's path or
    table name and format as given in the config (no data-derived content);
    ``rng_name`` is ``rng.name`` of the source that drew the noise;
    ``created_utc`` (default: now) is the manifest's creation time and every
    file's modification time (the job passes its start time). Raises
    :class:`~dpspark.release.errors.ReleaseExistsError` if the path exists and
    :class:`~dpspark.release.errors.ReleaseWriteError` on OS errors.
    """
    if not isinstance(rng_name, str) or not rng_name:
        raise ValueError("rng_name must be the randomness source's name")
    key_columns = list(key_columns)
    indices, counts = _check_release(release, universe)
    table = build_bins_table(universe, key_columns, indices, counts)

    def write_data(tmp: Path) -> None:
        with open(tmp / BINS_FILE, "wb") as fh:
            pq.write_table(table, fh, compression="zstd")

    def build(spec: dict[str, Any], files: dict[str, Any]) -> dict[str, Any]:
        return build_sparse_manifest(
            release=release, universe_spec=spec, universe=universe, key_columns=key_columns, config=config,
            input_description=input_description, rng_name=rng_name, files=files, created_utc=created,
        )

    created = created_utc or utc_now()
    return write_release_dir(out_path, universe, write_data, build, created)
