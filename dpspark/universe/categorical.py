"""Categorical universes: an explicit public list of values, index = position + 1."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from dpspark.universe import wide
from dpspark.universe.base import Universe, null_mask
from dpspark.universe.errors import KeyTypeError, UniverseConfigError
from dpspark.universe.int_range import INT64_MAX, INT64_MIN, is_plain_int

VALUE_TYPES = ("string", "int")
_INT_LINE = re.compile(r"-?[0-9]+")


def values_sha256(values: tuple[str | int, ...]) -> str:
    """SHA-256 (hex) of the canonical JSON list of ``values``; pins a file-based list in a manifest."""
    text = json.dumps(list(values), ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def read_values_file(path: str | Path, value_type: str, label: str) -> tuple[str | int, ...]:
    """Values from a UTF-8 file, one per line (final newline optional, no blank lines, no CR)."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise UniverseConfigError(f"{label}: cannot read values file {str(path)!r}: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise UniverseConfigError(f"{label}: values file {str(path)!r} is not valid UTF-8") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, start=1):
        if "\r" in line:
            raise UniverseConfigError(f"{label}: values file line {number} contains a carriage return")
        if line == "":
            raise UniverseConfigError(f"{label}: values file line {number} is blank")
    if value_type == "string":
        return tuple(lines)
    for number, line in enumerate(lines, start=1):
        if not _INT_LINE.fullmatch(line):
            raise UniverseConfigError(f"{label}: values file line {number} is not a decimal integer")
    return tuple(int(line) for line in lines)


@dataclass(frozen=True)
class CategoricalUniverse(Universe):
    """An explicit list of distinct values (all strings or all int64 integers); index = position + 1.

    ``file`` records where the list came from; :meth:`to_dict` then writes the
    path with the count and :func:`values_sha256` instead of the values.
    """

    values: tuple[str | int, ...]
    column: str | None = None
    file: str | None = None
    kind: ClassVar[str] = "categorical"
    _positions: dict[Any, int] = field(init=False, repr=False, compare=False, hash=False)
    _arrow_values: pa.Array = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        values = tuple(self.values)
        object.__setattr__(self, "values", values)
        if not values:
            raise self._config_error("needs at least one value")
        if all(isinstance(v, str) for v in values):
            arrow_values = pa.array(values, type=pa.string())
        elif all(is_plain_int(v) for v in values):
            if not all(INT64_MIN <= v <= INT64_MAX for v in values):
                raise self._config_error("integer values must fit in 64-bit signed integers")
            arrow_values = pa.array(values, type=pa.int64())
        else:
            raise self._config_error("values must be all strings or all integers")
        positions: dict[Any, int] = {}
        for i, v in enumerate(values):
            first = positions.setdefault(v, i)
            if first != i:
                raise self._config_error(f"duplicate value: entries {first + 1} and {i + 1} are equal")
        object.__setattr__(self, "_positions", positions)
        object.__setattr__(self, "_arrow_values", arrow_values)

    @classmethod
    def from_file(
        cls, path: str | Path, value_type: str = "string", column: str | None = None
    ) -> CategoricalUniverse:
        """Read the values from a UTF-8 file with one value per line."""
        label = "categorical universe" + (f" for column '{column}'" if column else "")
        if value_type not in VALUE_TYPES:
            raise UniverseConfigError(f"{label}: value_type must be one of {', '.join(VALUE_TYPES)}")
        return cls(read_values_file(path, value_type, label), column=column, file=str(path))

    @property
    def size(self) -> int:
        """Number of values."""
        return len(self.values)

    @property
    def value_type(self) -> str:
        """``"string"`` or ``"int"``."""
        return "string" if isinstance(self.values[0], str) else "int"

    @property
    def key_kind(self) -> str:
        """``"string"`` or ``"int"``: the type of the values."""
        return "string" if self.value_type == "string" else "int"

    @property
    def words(self) -> str:
        """``N listed string values`` (or int)."""
        return f"{self.size} listed {self.value_type} values"

    def arrow_type(self) -> pa.DataType:
        """string or int64."""
        return self._arrow_values.type

    def key_fields(self) -> tuple[tuple[str, str, pa.DataType], ...]:
        """The key as string or int64."""
        return (("", "key", self.arrow_type()),)

    def _offset(self, value: Any) -> int:
        if value is None:
            raise self._reject("key is null")
        expected = str if self.value_type == "string" else int
        if not isinstance(value, expected) or isinstance(value, bool):
            raise self._reject(f"key is a {type(value).__name__}, expected {self.value_type}")
        position = self._positions.get(value)
        if position is None:
            raise self._reject("key is not in the value list")
        return position

    def _value(self, offset: int) -> str | int:
        return self.values[offset]

    def _encode_offsets(self, array: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        import pyarrow.compute as pc  # here, not at import: the read commands (lookup, inspect) never encode

        nulls = null_mask(array)
        if self.value_type == "string":
            if not (pa.types.is_string(array.type) or pa.types.is_large_string(array.type)):
                raise KeyTypeError(f"{self.label}: key column has Arrow type {array.type}, expected string")
            value_set = self._arrow_values.cast(array.type)
        else:
            if not pa.types.is_integer(array.type):
                raise KeyTypeError(f"{self.label}: key column has Arrow type {array.type}, expected an integer type")
            if pa.types.is_uint64(array.type):
                # values above int64 max are never members; null them before the cast
                array = pc.if_else(pc.greater(array, pa.scalar(INT64_MAX, pa.uint64())), None, array)
            array = array.cast(pa.int64())
            value_set = self._arrow_values
        position = pc.index_in(array, value_set=value_set)
        member = position.is_valid().to_numpy(zero_copy_only=False) & ~nulls
        offsets = wide.zeros(self.index_width // 4, len(array))
        offsets[0] = position.fill_null(0).to_numpy(zero_copy_only=False).astype(np.uint64)
        return offsets, member, nulls

    def _decode_offsets(self, offsets: np.ndarray) -> pa.Array:
        return self._arrow_values.take(pa.array(offsets[0].astype(np.int64)))

    def to_dict(self) -> dict[str, Any]:
        """Inline: ``values``; from a file: ``file``, ``value_type``, ``count`` and ``sha256`` of the list."""
        d = self._base_dict()
        if self.file is None:
            d["values"] = list(self.values)
        else:
            d["file"] = self.file
            d["value_type"] = self.value_type
            d["count"] = self.size
            d["sha256"] = values_sha256(self.values)
        return d
