"""Build universes from spec dicts (a TOML table, a JSON object) and back.

Spec formats (``column`` is optional everywhere except inside a tuple that is
encoded from a table; unknown fields are errors, to catch typos):

* ``{kind = "int_range", lo = 0, hi = 120}``: lo/hi ints, or decimal strings beyond int64
* ``{kind = "categorical", values = ["DE", "FR"]}`` or
  ``{kind = "categorical", file = "countries.txt", value_type = "string"}``
  (optional ``count`` and ``sha256``, as written by ``to_dict``, are verified)
* ``{kind = "bytes", max_bytes = 15}`` and ``{kind = "string", max_bytes = 15}``
* ``{kind = "hashed", bits = 64, key_type = "string"}`` (key_type: string, bytes, int)
* ``{kind = "tuple", components = [ {...}, {...} ]}``

``universe_from_dict(u.to_dict()) == u`` for every universe (for file-based
categoricals, when the file is unchanged and ``base_dir`` resolves it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dpspark.universe.base import Universe
from dpspark.universe.categorical import VALUE_TYPES, CategoricalUniverse, read_values_file, values_sha256
from dpspark.universe.errors import UniverseConfigError
from dpspark.universe.hashed import HashedUniverse
from dpspark.universe.int_range import IntRangeUniverse, is_plain_int
from dpspark.universe.product import TupleUniverse
from dpspark.universe.shortlex import BytesUniverse, StringUniverse

_FIELDS: dict[str, tuple[set[str], set[str]]] = {
    # kind: (required, optional)
    "int_range": ({"lo", "hi"}, {"column"}),
    "categorical": (set(), {"column", "values", "file", "value_type", "count", "sha256"}),
    "bytes": ({"max_bytes"}, {"column"}),
    "string": ({"max_bytes"}, {"column"}),
    "hashed": ({"bits", "key_type"}, {"column"}),
    "tuple": ({"components"}, set()),
}
KINDS = tuple(sorted(_FIELDS))
_DECIMAL = re.compile(r"-?[0-9]{1,200}")


def _spec_int(value: Any, name: str, label: str) -> int:
    if is_plain_int(value):
        return value
    if isinstance(value, str) and _DECIMAL.fullmatch(value):
        return int(value)
    raise UniverseConfigError(f"{label}: {name} must be an integer (or a decimal string)")


def universe_from_dict(spec: Mapping[str, Any], *, base_dir: str | Path | None = None) -> Universe:
    """Parse a universe spec; raises :class:`UniverseConfigError` with a message naming the universe.

    ``base_dir`` resolves relative categorical ``file`` paths (the path is kept as written).
    """
    if not isinstance(spec, Mapping):
        raise UniverseConfigError("universe spec must be a table/mapping")
    kind = spec.get("kind")
    if kind is None:
        raise UniverseConfigError(f"universe spec is missing 'kind' (one of: {', '.join(KINDS)})")
    if kind not in _FIELDS:
        raise UniverseConfigError(f"unknown universe kind {str(kind)!r} (expected one of: {', '.join(KINDS)})")
    column = spec.get("column")
    if column is not None and (not isinstance(column, str) or not column):
        raise UniverseConfigError(f"{kind} universe: column must be a non-empty string")
    label = f"{kind} universe" + (f" for column '{column}'" if column else "")
    required, optional = _FIELDS[kind]
    unknown = sorted(set(spec) - required - optional - {"kind"})
    if unknown:
        raise UniverseConfigError(f"{label}: unknown field(s) {', '.join(map(repr, unknown))}")
    missing = sorted(required - set(spec))
    if missing:
        raise UniverseConfigError(f"{label}: missing required field(s) {', '.join(map(repr, missing))}")

    if kind == "int_range":
        return IntRangeUniverse(_spec_int(spec["lo"], "lo", label), _spec_int(spec["hi"], "hi", label), column)
    if kind in ("bytes", "string"):
        cls = BytesUniverse if kind == "bytes" else StringUniverse
        return cls(_spec_int(spec["max_bytes"], "max_bytes", label), column)
    if kind == "hashed":
        return HashedUniverse(_spec_int(spec["bits"], "bits", label), spec["key_type"], column)
    if kind == "categorical":
        return _categorical(spec, column, label, base_dir)
    return _tuple(spec, label, base_dir)


def _categorical(spec: Mapping[str, Any], column: str | None, label: str, base_dir: str | Path | None) -> Universe:
    has_values, has_file = "values" in spec, "file" in spec
    if has_values == has_file:
        raise UniverseConfigError(f"{label}: give exactly one of 'values' or 'file'")
    if has_values:
        extra = sorted({"value_type", "count", "sha256"} & set(spec))
        if extra:
            raise UniverseConfigError(f"{label}: field(s) {', '.join(map(repr, extra))} only apply with 'file'")
        values = spec["values"]
        if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
            raise UniverseConfigError(f"{label}: values must be a list")
        return CategoricalUniverse(tuple(values), column=column)
    file = spec["file"]
    if not isinstance(file, str) or not file:
        raise UniverseConfigError(f"{label}: file must be a non-empty path string")
    value_type = spec.get("value_type", "string")
    if value_type not in VALUE_TYPES:
        raise UniverseConfigError(f"{label}: value_type must be one of {', '.join(VALUE_TYPES)}")
    path = Path(file)
    if base_dir is not None and not path.is_absolute():
        path = Path(base_dir) / path
    values = read_values_file(path, value_type, label)
    if "count" in spec and spec["count"] != len(values):
        raise UniverseConfigError(f"{label}: values file has {len(values)} values, spec says {spec['count']}")
    if "sha256" in spec and spec["sha256"] != values_sha256(values):
        raise UniverseConfigError(f"{label}: values file does not match the spec's sha256 (file changed?)")
    return CategoricalUniverse(values, column=column, file=file)


def _tuple(spec: Mapping[str, Any], label: str, base_dir: str | Path | None) -> Universe:
    components = spec["components"]
    if isinstance(components, (str, bytes, Mapping)) or not hasattr(components, "__iter__"):
        raise UniverseConfigError(f"{label}: components must be a list of universe specs")
    parsed = []
    for j, c in enumerate(components):
        if isinstance(c, Mapping) and c.get("kind") == "tuple":
            raise UniverseConfigError(f"{label}: component {j + 1} is a tuple; nested tuples are not allowed")
        parsed.append(universe_from_dict(c, base_dir=base_dir))
    return TupleUniverse(tuple(parsed))
