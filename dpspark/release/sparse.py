"""Writing a sparse release: ``manifest.json`` plus ``bins.parquet`` (and copied universe value lists).

See :mod:`dpspark.release.layout` for the bins columns and
:mod:`dpspark.release.manifest` for the manifest. The directory appears
atomically (:mod:`dpspark.release.atomic`); an existing path is refused.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow.parquet as pq

from dpspark import __version__
from dpspark.exact import parse_rational
from dpspark.release.atomic import atomic_release_dir
from dpspark.release.exactjson import frac_to_str, int_to_str
from dpspark.release.files import file_entry
from dpspark.release.layout import BINS_FILE, COUNT_COLUMN, INDEX_COLUMN, build_bins_table, bins_columns
from dpspark.release.manifest import FORMAT, MANIFEST_NAME, SCHEMA_VERSION, json_safe, relation_statements, seal_manifest, utc_now
from dpspark.universe import CategoricalUniverse, TupleUniverse, Universe

if TYPE_CHECKING:
    from dpspark.histogram.result import HistogramRelease

_INPUT_VALUE_TYPES = (str, int, bool, type(None))


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

    ``HistogramRelease`` indices are 0-based (dpspark.histogram's convention);
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
    if not release.privacy.relation.startswith("add/remove"):
        raise ValueError("release privacy must be stated under add/remove of one unit")
    return sorted_idx, cnt[np.asarray(order, dtype=np.int64)].tolist()


def _values_file(u: CategoricalUniverse) -> bytes | None:
    texts = [str(v) for v in u.values]
    if any(t == "" or "\n" in t or "\r" in t for t in texts):
        return None
    return ("\n".join(texts) + "\n").encode("utf-8")


def _universe_spec(universe: Universe, tmp: Path) -> dict[str, Any]:
    """``universe.to_dict()``, with file-based value lists copied into the release and pointed at."""
    spec = universe.to_dict()
    comps = universe.components if isinstance(universe, TupleUniverse) else (universe,)
    comp_specs = spec["components"] if isinstance(universe, TupleUniverse) else [spec]
    for j, (u, cs) in enumerate(zip(comps, comp_specs), start=1):
        if isinstance(u, CategoricalUniverse) and "file" in cs:
            data = _values_file(u)
            if data is None:
                for k in ("file", "value_type", "count", "sha256"):
                    cs.pop(k, None)
                cs["values"] = list(u.values)
            else:
                name = f"universe-values-{j}.txt"
                (tmp / name).write_bytes(data)
                cs["file"] = name
    return spec


def _exact(config: Mapping[str, Any], key: str, fallback: Any) -> Fraction | None:
    value = config.get(key, fallback)
    return None if value is None else parse_rational(value, key)


def _input(description: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(description, Mapping):
        raise TypeError("input_description must be a mapping (path/table name and format from the config)")
    for k, v in description.items():
        if not isinstance(k, str) or not isinstance(v, _INPUT_VALUE_TYPES) and not (
            isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v)
        ):
            raise TypeError("input_description holds only strings, ints, bools or lists of strings (no data content)")
    return json_safe(dict(description), "input_description")


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
) -> dict[str, Any]:
    """The manifest dict of a sparse release (before sealing)."""
    privacy, accuracy = release.privacy, release.accuracy
    mech_params = release.parameters.get("mechanism", {}) if isinstance(release.parameters, Mapping) else {}
    add_remove, replacement = relation_statements(
        privacy.exp_eps, privacy.bias_epsilon, privacy.delta, privacy.relation, privacy.theorem
    )
    eps_req = _exact(config, "epsilon", mech_params.get("epsilon"))
    delta_req = _exact(config, "delta", None) or Fraction(0)  # pure mechanisms: delta absent or None
    exp_eps = privacy.exp_eps
    return {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "dpspark_version": __version__,
        "kind": "sparse",
        "created_utc": utc_now(),
        "rng": {"name": rng_name, "test_only": "TEST ONLY" in rng_name.upper()},
        "max_units": int_to_str(release.n),
        "mechanism": {
            "algorithm": release.algorithm,
            "counting": str(mech_params.get("mechanism", "unknown")),
            "epsilon": None if eps_req is None else frac_to_str(eps_req),
            "delta": frac_to_str(delta_req),
            "epsilon_tilde": {
                "exp": frac_to_str(exp_eps),
                "float": math.log(exp_eps.numerator) - math.log(exp_eps.denominator),  # report
            },
            "parameters": json_safe(release.parameters, "release.parameters"),
        },
        "privacy": {
            "theorem": privacy.theorem,
            "notes": privacy.notes,
            "add_remove": add_remove,
            "replacement": replacement,
        },
        "accuracy": {
            "per_query": {
                "a": int_to_str(accuracy.a_per_query),
                "beta": frac_to_str(accuracy.beta_per_query),
                "holds_for_true_counts_above": int_to_str(accuracy.per_query_above),
            },
            "simultaneous": {"a": int_to_str(accuracy.a_simultaneous), "beta": frac_to_str(accuracy.beta_simultaneous)},
            "threshold": int_to_str(accuracy.per_query_above),
            "notes": accuracy.notes,
        },
        "universe": universe_spec,
        "universe_size": int_to_str(universe.size),
        "index_width": universe.index_width,
        "key_columns": list(key_columns),
        "input": _input(input_description),
        "config": json_safe(dict(config), "config"),
        "bins": {
            "file": BINS_FILE,
            "index_column": INDEX_COLUMN,
            "count_column": COUNT_COLUMN,
            "order": "index ascending",
            "columns": [c.describe() for c in bins_columns(universe, key_columns)],
        },
        "files": files,
    }


def write_sparse_release(
    out_path: str | Path,
    *,
    release: "HistogramRelease",
    universe: Universe,
    key_columns: list[str],
    config: dict[str, Any],
    input_description: dict[str, Any],
    rng_name: str,
) -> Path:
    """Write a sparse release directory atomically and return its path.

    ``config`` holds the exact parameters to record (``epsilon``, ``delta``,
    ``beta``, ... as exact strings); ``input_description`` the input's path or
    table name and format as given in the config (no data-derived content);
    ``rng_name`` is ``rng.name`` of the source that drew the noise. Raises
    :class:`~dpspark.release.errors.ReleaseExistsError` if the path exists and
    :class:`~dpspark.release.errors.ReleaseWriteError` on OS errors.
    """
    if not isinstance(rng_name, str) or not rng_name:
        raise ValueError("rng_name must be the randomness source's name")
    key_columns = list(key_columns)
    indices, counts = _check_release(release, universe)
    table = build_bins_table(universe, key_columns, indices, counts)
    with atomic_release_dir(out_path) as tmp:
        spec = _universe_spec(universe, tmp)
        with open(tmp / BINS_FILE, "wb") as fh:
            pq.write_table(table, fh, compression="zstd")
        files = {}
        for child in sorted(tmp.iterdir()):
            entry = file_entry(child)
            files[child.name] = {"sha256": entry.sha256, "bytes": int_to_str(entry.size)}
        manifest = build_sparse_manifest(
            release=release, universe_spec=spec, universe=universe, key_columns=key_columns, config=config,
            input_description=input_description, rng_name=rng_name, files=files,
        )
        (tmp / MANIFEST_NAME).write_bytes(seal_manifest(manifest))
    return Path(out_path).absolute()
