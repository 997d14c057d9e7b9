"""What every release kind writes the same way: the manifest's common body and the atomic directory.

:mod:`dpspark.mechanisms.histogram.writer` and :mod:`dpspark.mechanisms.compact.writer` add only
their data file and their own manifest section (``bins`` or ``compact``);
the privacy, accuracy, universe, input and file-checksum parts come from here,
so the two kinds cannot drift apart.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpspark.exact import parse_rational
from dpspark.release.atomic import atomic_release_dir
from dpspark.release.exactjson import frac_to_str, int_to_str
from dpspark.release.files import file_entry
from dpspark.release.counts_form import REPLACEMENT_DELTA_EQUALS_DELTA, relation_statements
from dpspark.release.header import MANIFEST_NAME, json_safe, manifest_header, seal_manifest
from dpspark.universe import CategoricalUniverse, Universe

if TYPE_CHECKING:
    from dpspark.privacy import AccuracyStatement, PrivacyStatement

_INPUT_VALUE_TYPES = (str, int, bool, type(None))


def _values_file(u: CategoricalUniverse) -> bytes | None:
    texts = [str(v) for v in u.values]
    if any(t == "" or "\n" in t or "\r" in t for t in texts):
        return None
    return ("\n".join(texts) + "\n").encode("utf-8")


def universe_section(universe: Universe, tmp: Path) -> dict[str, Any]:
    """``universe.to_dict()``, with file-based value lists copied into the release and pointed at."""
    spec = universe.to_dict()
    comp_specs = spec["components"] if universe.is_tuple else [spec]
    for j, (u, cs) in enumerate(zip(universe.parts, comp_specs), start=1):
        if "file" in cs:  # only a categorical universe read from a file has one
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


def exact_config_value(config: Mapping[str, Any], key: str, fallback: Any) -> Fraction | None:
    """``config[key]`` (or ``fallback``) as an exact Fraction; None when absent."""
    value = config.get(key, fallback)
    return None if value is None else parse_rational(value, key)


def input_section(description: Mapping[str, Any]) -> dict[str, Any]:
    """The input's description as given in the config (path or table, format); refuses anything data-like."""
    if not isinstance(description, Mapping):
        raise TypeError("input_description must be a mapping (path/table name and format from the config)")
    for k, v in description.items():
        if not isinstance(k, str) or not isinstance(v, _INPUT_VALUE_TYPES) and not (
            isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v)
        ):
            raise TypeError("input_description holds only strings, ints, bools or lists of strings (no data content)")
    return json_safe(dict(description), "input_description")


def manifest_body(
    *,
    kind: str,
    algorithm: str,
    counting: str,
    n: int,
    parameters: Mapping[str, Any],
    privacy: "PrivacyStatement",
    accuracy: "AccuracyStatement",
    privacy_notes: str,
    eps_requested: Fraction | None,
    delta_requested: Fraction,
    universe_spec: dict[str, Any],
    universe: Universe,
    key_columns: list[str],
    config: Mapping[str, Any],
    input_description: Mapping[str, Any],
    rng_name: str,
    created_utc: str | None,
    section: tuple[str, dict[str, Any]],
    files: dict[str, Any],
) -> dict[str, Any]:
    """The manifest dict (before sealing) shared by every kind; ``section`` is the kind's own (name, content)."""
    add_remove, replacement = relation_statements(
        privacy.exp_eps, privacy.bias_epsilon, privacy.delta, privacy.relation.text(), privacy.theorem,
        replacement_delta=privacy.replacement_delta if algorithm in REPLACEMENT_DELTA_EQUALS_DELTA else None,
    )
    exp_eps = privacy.exp_eps
    return {
        **manifest_header(kind, rng_name, created_utc, n),
        "mechanism": {
            "algorithm": algorithm,
            "counting": counting,
            "epsilon": None if eps_requested is None else frac_to_str(eps_requested),
            "delta": frac_to_str(delta_requested),
            "epsilon_tilde": {
                "exp": frac_to_str(exp_eps),
                "float": math.log(exp_eps.numerator) - math.log(exp_eps.denominator),  # report
            },
            "parameters": json_safe(dict(parameters), "release.parameters"),
        },
        "privacy": {
            "theorem": privacy.theorem,
            "notes": privacy_notes,
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
        "input": input_section(input_description),
        "config": json_safe(dict(config), "config"),
        section[0]: section[1],
        "files": files,
    }


def utc_timestamp(created_utc: str) -> int:
    """Seconds since the epoch of a ``YYYY-MM-DDTHH:MM:SSZ`` creation time."""
    try:
        when = datetime.strptime(created_utc, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    except (TypeError, ValueError):
        raise ValueError("created_utc must look like 2024-01-31T12:00:00Z") from None
    return int(when.timestamp())


def write_release_dir(
    out_path: str | Path,
    universe: Universe | None,
    write_data: Callable[[Path], None],
    build_manifest: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]],
    created_utc: str | None = None,
) -> Path:
    """Atomically write a release directory and return its path.

    Inside the temporary directory: the universe's value files, then
    ``write_data(tmp)``, then ``manifest.json`` from
    ``build_manifest(universe_spec, files)`` with every file's sha256 and size.
    With ``created_utc`` (the manifest's creation time; the job passes the time
    it started, so neither depends on how long the data took), every file's and
    the directory's modification time is set to it, so they do not show when
    the job finished either.
    Raises :class:`~dpspark.release.errors.ReleaseExistsError` if the path
    exists and :class:`~dpspark.release.errors.ReleaseWriteError` on OS errors.
    """
    stamp = None if created_utc is None else utc_timestamp(created_utc)
    with atomic_release_dir(out_path) as tmp:
        spec = {} if universe is None else universe_section(universe, tmp)  # unkeyed releases have no universe
        write_data(tmp)
        files = {}
        for child in sorted(tmp.iterdir()):
            entry = file_entry(child)
            files[child.name] = {"sha256": entry.sha256, "bytes": int_to_str(entry.size)}
        manifest = seal_manifest(build_manifest(spec, files))
        (tmp / MANIFEST_NAME).write_bytes(manifest)
        from dpspark.release.signature import sign_into

        sign_into(tmp, manifest)  # inside the temporary directory: the signature appears with the release
        if stamp is not None:
            for child in tmp.iterdir():
                os.utime(child, (stamp, stamp))
            os.utime(tmp, (stamp, stamp))  # the rename within the parent leaves the directory's own mtime alone
    return Path(out_path).absolute()
