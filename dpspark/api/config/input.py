"""The ``[input]`` section: a file path (with its format and reader options) or a catalog table."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from dpspark.api.config.common import FORMATS, fail
from dpspark.engine.spec import InputSpec

_SUFFIX_FORMATS = {"parquet": "parquet", "pq": "parquet", "csv": "csv", "orc": "orc", "json": "json", "jsonl": "json"}


def parse_input(raw: Mapping[str, Any], source: Path) -> InputSpec:
    """``[input]`` (a given input stands for a table: the caller supplies the data); local paths resolve
    against the config's folder and must exist and be readable."""
    base = source.parent
    inp = raw.get("input") or {"table": "<given>"}
    if ("path" in inp) == ("table" in inp):
        raise fail(source, "[input] needs exactly one of 'path' or 'table'")
    in_path = inp.get("path")
    fmt = inp.get("format")
    if in_path is not None:
        if not isinstance(in_path, str) or not in_path:
            raise fail(source, "input.path must be a non-empty string")
        if "://" not in in_path and not os.path.isabs(in_path):
            in_path = str((base / in_path).resolve())
        if fmt is None:
            fmt = _SUFFIX_FORMATS.get(Path(in_path.rstrip("/")).suffix.lstrip(".").lower())
            if fmt is None:
                raise fail(source, f"input.format is not given and cannot be inferred from the path; use one of {FORMATS}")
        if fmt not in FORMATS:
            raise fail(source, f"input.format must be one of {FORMATS}, got {fmt!r}")
        if "://" not in in_path and not os.path.exists(in_path):
            raise fail(source, f"input.path does not exist: {in_path}")
        if "://" not in in_path and not os.access(in_path, os.R_OK):
            raise fail(source, f"input.path is not readable: {in_path}")
    table = inp.get("table")
    if table is not None and (not isinstance(table, str) or not table):
        raise fail(source, "input.table must be a non-empty string")
    options = inp.get("options", {})
    if not isinstance(options, dict):
        raise fail(source, "input.options must be a table of strings")
    return InputSpec(in_path, table, fmt if in_path else None, {str(k): str(v) for k, v in options.items()})
