"""The column layout of ``bins.parquet``, a pure function of the universe and the key column names.

One row per released bin, sorted by universe index ascending (the canonical
order). Columns, in order:

* per key column ``c`` (one for a scalar universe, one per component of a tuple), as the component's
  :meth:`~dpspark.universe.Universe.key_fields` say:
  - ``int_range``: ``c`` as int64 (uint64 when lo >= 0 and hi needs it); ranges
    beyond 64 bits as decimal strings;
  - ``categorical``: ``c`` as string or int64; ``bytes``: ``c`` as binary;
  - ``string``: ``c`` as string, **null where the key bytes are not valid UTF-8**
    (random empty-bin keys usually are not), and ``c__bytes`` with the key bytes;
  - ``hashed``: ``c__hash_bin``, the component's big-endian index word (hashes
    cannot be decoded);
* ``index``: big-endian ``fixed_size_binary(16 or 32)`` universe index word;
* ``noisy_count``: int64.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from dpspark.universe import Universe
from dpspark.universe.wide import index_words

INDEX_COLUMN = "index"
COUNT_COLUMN = "noisy_count"
BINS_FILE = "bins.parquet"


@dataclass(frozen=True)
class Column:
    """One column of bins.parquet."""

    name: str
    role: str
    arrow_type: pa.DataType
    key_column: str | None = None
    component: int | None = None

    def describe(self) -> dict[str, Any]:
        """The manifest's entry for this column."""
        d: dict[str, Any] = {"name": self.name, "role": self.role, "arrow_type": type_name(self.arrow_type)}
        if self.key_column is not None:
            d["key_column"] = self.key_column
        return d


_TYPE_NAMES = {pa.int64(): "int64", pa.uint64(): "uint64", pa.string(): "string", pa.binary(): "binary"}


def type_name(t: pa.DataType) -> str:
    """A stable name for a bins column type (not ``str(t)``, which is pyarrow's to change)."""
    if pa.types.is_fixed_size_binary(t):
        return f"fixed_size_binary[{t.byte_width}]"
    if t in _TYPE_NAMES:
        return _TYPE_NAMES[t]
    raise ValueError(f"no stable name for Arrow type {t}")


def components(universe: Universe) -> tuple[Universe, ...]:
    """The scalar universes whose keys make up a key (the components of a tuple, else the universe)."""
    return universe.parts


def bins_columns(universe: Universe, key_columns: list[str] | tuple[str, ...]) -> list[Column]:
    """The columns of bins.parquet for this universe; ``ValueError`` on a bad or clashing name."""
    comps = components(universe)
    if len(key_columns) != len(comps):
        raise ValueError(f"{universe.label}: expected {len(comps)} key column name(s), got {len(key_columns)}")
    cols: list[Column] = []
    for j, (u, name) in enumerate(zip(comps, key_columns)):
        if not isinstance(name, str) or not name:
            raise ValueError("key column names must be non-empty strings")
        cols.extend(Column(name + suffix, role, arrow_type, name, j) for suffix, role, arrow_type in u.key_fields())
    cols.append(Column(INDEX_COLUMN, "index", pa.binary(universe.index_width)))
    cols.append(Column(COUNT_COLUMN, "noisy_count", pa.int64()))
    names = [c.name for c in cols]
    if len(set(names)) != len(names):
        raise ValueError(
            f"bins.parquet column names clash ({', '.join(sorted(n for n in set(names) if names.count(n) > 1))}); "
            f"rename the key columns (reserved: {INDEX_COLUMN!r}, {COUNT_COLUMN!r}, '<col>__bytes', '<col>__hash_bin')"
        )
    return cols


def bins_schema(cols: list[Column]) -> pa.Schema:
    """Arrow schema of bins.parquet."""
    return pa.schema([pa.field(c.name, c.arrow_type, nullable=(c.role == "key")) for c in cols])


def build_bins_table(
    universe: Universe, key_columns: list[str] | tuple[str, ...], indices: list[int], counts: list[int]
) -> pa.Table:
    """bins.parquet's table for a partial vector already sorted by index (checked by the caller)."""
    cols = bins_columns(universe, key_columns)
    comps = components(universe)
    if universe.is_tuple:
        mults = universe.multipliers
        per_comp: list[list[int]] = [[] for _ in comps]
        for i in indices:  # per-row divmod on Python ints: released bins only
            off = i - 1
            for j, m in enumerate(mults):
                q, off = divmod(off, m)
                per_comp[j].append(q + 1)
    else:
        per_comp = [list(indices)]
    arrays: list[pa.Array] = []
    for j, u in enumerate(comps):
        arrays.extend(u.key_arrays(per_comp[j]))
    arrays.append(index_words(list(indices), universe.index_width))
    arrays.append(pa.array(np.asarray(counts, dtype=np.int64), type=pa.int64()))
    return pa.Table.from_arrays(arrays, schema=bins_schema(cols))

