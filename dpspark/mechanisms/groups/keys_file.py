"""A public keys file read and checked column-wise (issue 35 §2: 10^6 public keys in a few hundred ms).

:func:`read_public_keys` gives what :func:`~dpspark.mechanisms.groups.mechanism.read_keys_file`,
:func:`~dpspark.mechanisms.groups.mechanism.public_key_universe` and ``GroupsMechanism.public_indexes`` give
together (tested equal), with the checks of :func:`~dpspark.mechanisms.groups.config.key_rows` run by Arrow
compute instead of per value in Python: a string or integer column without NULLs (an Arrow column has one
type, so no mixing), valid UTF-8, at most ``MAX_PUBLIC_KEYS`` rows, no key twice. The file is public (read at
plan time, before any data); its errors name the file and the first offending row, never a data value.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpspark.mechanisms.groups.aggregates import GroupsError
from dpspark.mechanisms.groups.config import MAX_PUBLIC_KEYS

WHERE = "groups.keys_file"


@dataclass(frozen=True)
class PublicKeys:
    """The key rows (tuples, file order), their universe (listed values per column) and each row's 0-based
    universe index."""

    rows: tuple[tuple[Any, ...], ...]
    universe: Any
    indexes: list[int]


def read_table(path: Path, by: tuple[str, ...]) -> Any:
    """The keys file as an Arrow table (CSV or Parquet by suffix) holding every column of ``by``; a file that
    cannot be read or lacks a column is named."""
    import pyarrow as pa

    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            import pyarrow.parquet as pq

            table = pq.read_table(path)
        else:
            from pyarrow import csv

            table = csv.read_csv(path)
    except (OSError, pa.ArrowException) as err:
        raise GroupsError(f"{WHERE}: cannot read {path} ({type(err).__name__})") from None
    missing = [c for c in by if c not in table.column_names]
    if missing:
        raise GroupsError(f"{WHERE}: {path} has no column(s) {', '.join(map(repr, missing))}")
    return table


def _checked_column(col: Any) -> Any:
    """The column as one plain string or integer array; the first row that is not one is named."""
    import pyarrow as pa

    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if pa.types.is_dictionary(col.type):
        col = col.dictionary_decode()
    t = col.type
    if not (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_integer(t)):
        raise GroupsError(f"{WHERE}[0]: a key value is a string or an integer")
    # the keys file is public (read at plan time), but the null check takes the data passes' one path anyway
    nulls = np.flatnonzero(np.asarray(col.is_null(), dtype=bool))
    if len(nulls):
        raise GroupsError(f"{WHERE}[{int(nulls[0])}]: a key value is a string or an integer")
    if not pa.types.is_integer(t):
        try:
            col.validate(full=True)  # UTF-8 (no lone surrogate can come out of valid UTF-8)
        except pa.ArrowInvalid:
            raise GroupsError(f"{WHERE}: a key is not valid UTF-8 text; key strings must be UTF-8") from None
    return col


def read_public_keys(path: Path, by: tuple[str, ...]) -> PublicKeys:
    """The public keys of a CSV or Parquet file whose columns include ``by``, checked (module docstring)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from dpspark.universe import CategoricalUniverse, TupleUniverse

    table = read_table(path, by)
    if table.num_rows == 0:
        raise GroupsError(f"{WHERE} is empty: list at least one key, or leave it out to select keys privately")
    if table.num_rows > MAX_PUBLIC_KEYS:
        raise GroupsError(f"{WHERE}: at most {MAX_PUBLIC_KEYS} public keys")
    cols = [_checked_column(table.column(c)) for c in by]
    if pa.table(cols, names=[f"k{j}" for j in range(len(by))]).group_by(
            [f"k{j}" for j in range(len(by))]).aggregate([]).num_rows != table.num_rows:
        raise GroupsError(f"{WHERE} lists a key twice")
    uniq = [pc.unique(c) for c in cols]  # in first-seen order, as dict.fromkeys
    parts = [CategoricalUniverse(tuple(u.to_pylist()), column=c) for u, c in zip(uniq, by)]
    universe = parts[0] if len(parts) == 1 else TupleUniverse(tuple(parts))
    offsets = [np.asarray(pc.index_in(c, value_set=u), dtype=np.int64) for c, u in zip(cols, uniq)]
    if len(parts) == 1:
        indexes = offsets[0].tolist()
    elif universe.size < 1 << 63:  # every partial sum is below the size: int64 holds it
        acc = np.zeros(table.num_rows, dtype=np.int64)
        for off, m in zip(offsets, universe.multipliers):
            acc += off * np.int64(m)
        indexes = acc.tolist()
    else:  # a wider product: Python ints
        mults = universe.multipliers
        indexes = [sum(o * m for o, m in zip(os_, mults)) for os_ in zip(*(o.tolist() for o in offsets))]
    rows = tuple(zip(*(c.to_pylist() for c in cols)))
    return PublicKeys(rows, universe, indexes)
