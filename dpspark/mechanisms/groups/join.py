"""A public join of a ``groups`` release: the private rows joined with a public table on its key columns.

A public table (a dimension table: stores, regions, a product catalogue) is not the data: it is read when
the release is planned, and its key uniqueness is checked then, before any spend. Each private row is
joined to at most one public row (``inner``: rows without a match are dropped; ``left``: they keep NULLs
in the public columns). Whether a row is kept, and the columns it gains, depend on that row alone: a
row-level transformation, so adding or removing a unit adds or removes only that unit's (joined) rows and
every guarantee of the stage is unchanged (the same argument as a filter).

**Duplicate keys.** A public table may list a join key up to m times (``multiplicity``, computed from the public
table when the release is planned, before the spend; NULL keys match nothing and are not counted). A private
row is then joined to at most m public rows: a unit with r rows has at most m·r rows after the join, still a
function of its own rows. Contribution bounding runs *after* the join (the stage's rules 2, 4 and 5 on the
joined rows), so each unit still adds at most c = ``max_rows_per_group`` rows to each of at most
k = ``max_groups_per_unit`` groups, and the sensitivity every law is calibrated on (k, c) is the post-join
bound. Without a unit column every row is its own unit and is not truncated, so a row copied m > 1 times
would add m rows; that case is refused before the spend (declare the unit column; the manifest states m).

Both engines join the same way: Arrow with ``pyarrow.Table.join``, Spark with a broadcast of the public
table (a DataFrame built from its Arrow table, never from SQL text); NULL keys match nothing on both.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from dpspark.mechanisms.groups.aggregates import GroupsError
from dpspark.mechanisms.groups.join_types import HOWS
from dpspark.mechanisms.groups.join_types import plain_type as _plain

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: most rows of a public table (it is held in memory and broadcast)
MAX_PUBLIC_ROWS = 1_000_000


@dataclass(frozen=True, eq=False)
class PublicJoin:
    """The public table (Arrow), the join columns and the kind ("inner" or "left")."""

    table: pa.Table
    on: tuple[str, ...]
    how: str = "inner"

    def __post_init__(self) -> None:
        if self.how not in HOWS:
            raise GroupsError(f"groups.join.how must be one of {tuple(HOWS)}, got {self.how!r}")
        if not self.on or not all(isinstance(c, str) and c for c in self.on) or len(set(self.on)) != len(self.on):
            raise GroupsError("groups.join.on must name the join column(s): a name or a list of distinct names")
        missing = [c for c in self.on if c not in self.table.column_names]
        if missing:
            raise GroupsError(f"groups.join: the public table has no column(s) {', '.join(map(repr, missing))}")
        if self.table.num_rows > MAX_PUBLIC_ROWS:
            raise GroupsError(f"groups.join: a public table has at most {MAX_PUBLIC_ROWS} rows")

    @cached_property
    def multiplicity(self) -> int:
        """m: the most rows of the public table sharing one join key (NULL keys match nothing; 1 if empty).

        Public (the table is not the data), computed before the spend: a private row joins at most m rows."""
        keys = [k for k in zip(*(self.table.column(c).to_pylist() for c in self.on)) if None not in k]
        return max(Counter(keys).values(), default=1)

    @property
    def added(self) -> tuple[str, ...]:
        """The public table's columns a joined row gains (all but the join columns)."""
        return tuple(c for c in self.table.column_names if c not in self.on)

    def describe(self) -> dict[str, Any]:
        """The join in the manifest: columns, kind, and the public table's size and digest (it is public)."""
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, self.table.schema) as w:
            w.write_table(self.table)
        m = self.multiplicity
        bound = ({} if m == 1 else {"multiplicity": m, "bound": (
            f"a join key is listed up to {m} times, so a unit's rows are multiplied by at most {m}; each unit's "
            "contribution is bounded after the join (max_groups_per_unit groups, max_rows_per_group rows each)")})
        return {"on": list(self.on), "how": self.how, "rows": self.table.num_rows, "columns": list(self.added),
                **bound, "sha256": hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest()}

    def schema_problem(self, schema: pa.Schema) -> str | None:
        """Why the private input of ``schema`` cannot be joined (metadata only), or None."""
        for c in self.on:
            if c not in schema.names:
                return f"groups.join: the input has no join column {c!r}"
            mine, theirs = _plain(schema.field(c).type), _plain(self.table.schema.field(c).type)
            if mine != theirs:
                return (f"groups.join: join column {c!r} is {mine} in the input and {theirs} in the public table; "
                        "give the public table's column the input's type")
        clash = [c for c in self.added if c in schema.names]
        if clash:
            return (f"groups.join: the public table's column(s) {', '.join(map(repr, clash))} are also in the input; "
                    "rename them in the public table")
        return None

    def joined_schema(self, schema: pa.Schema) -> pa.Schema:
        """The input's schema with the public columns appended (what the stage reads after the join)."""
        return pa.schema(list(schema) + [self.table.schema.field(c) for c in self.added])

    def arrow(self, table: pa.Table) -> pa.Table:
        """The joined rows on Arrow (NULL keys match nothing)."""
        right = self.table.cast(pa.schema([pa.field(f.name, _plain(f.type)) for f in self.table.schema]))
        left = table
        for i, f in enumerate(table.schema):  # Arrow's hash join takes no dictionary column: plain values
            if pa.types.is_dictionary(f.type) or pa.types.is_large_string(f.type):
                left = left.set_column(i, f.name, left.column(i).cast(_plain(f.type)))
        return left.join(right, list(self.on), join_type=HOWS[self.how], coalesce_keys=True)

    def spark(self, df: "DataFrame") -> "DataFrame":
        """The joined rows on Spark: a broadcast of the public table (its Arrow data, no SQL text)."""
        from pyspark.sql import functions as F

        dim = df.sparkSession.createDataFrame(self.table)
        return df.join(F.broadcast(dim), on=list(self.on), how="inner" if self.how == "inner" else "left")


def parse_join(raw: Any, base: Any = None) -> Any:
    """``groups.join``: ``{table = <Arrow/pandas table> | path = "<CSV/Parquet>", on = [...], how = "inner"}``, a
    :class:`PublicJoin`; with ``private = true``, a join with another private table on the unit
    (:func:`dpspark.mechanisms.groups.private_join.parse_private_join`)."""
    if raw is None or isinstance(raw, PublicJoin):
        return raw
    if not isinstance(raw, dict):
        raise GroupsError("groups.join must be a table: {path = \"...\", on = [...], how = \"inner\" | \"left\"}")
    if raw.get("private", False) is not False:
        if raw["private"] is not True:
            raise GroupsError("groups.join.private must be true or false")
        from dpspark.mechanisms.groups.private_join import parse_private_join

        return parse_private_join({**raw, **({"path": _resolve(raw["path"], base)} if "path" in raw else {})})
    bad = sorted(set(raw) - {"table", "path", "on", "how", "private"})
    if bad:
        raise GroupsError(f"groups.join has unknown field(s) {', '.join(map(repr, bad))}; expected table or path, "
                          "on, how")
    if ("table" in raw) == ("path" in raw):
        raise GroupsError("groups.join needs the public table: table = <a table> or path = \"<file>\"")
    table = raw.get("table")
    if table is None:
        table = _read(raw["path"], base)
    elif hasattr(table, "columns") and hasattr(table, "dtypes") and not isinstance(table, pa.Table):
        table = pa.Table.from_pandas(table, preserve_index=False)
    if not isinstance(table, pa.Table):
        raise GroupsError("groups.join.table must be a pyarrow Table or a pandas DataFrame")
    on = raw.get("on")
    on = (on,) if isinstance(on, str) else tuple(on) if isinstance(on, (list, tuple)) else ()
    return PublicJoin(table.combine_chunks(), on, raw.get("how", "inner"))


def _resolve(path: Any, base: Any) -> Any:
    from pathlib import Path

    if not isinstance(path, str) or not path:
        raise GroupsError("groups.join.path must be a file")
    return path if base is None or Path(path).is_absolute() else str(Path(base) / path)


def _read(path: Any, base: Any) -> pa.Table:
    from pathlib import Path

    import pyarrow.dataset as ds

    if not isinstance(path, str) or not path:
        raise GroupsError("groups.join.path must be a CSV or Parquet file")
    p = Path(path) if base is None or Path(path).is_absolute() else Path(base) / path
    fmt = "csv" if p.suffix.lower() == ".csv" else "parquet"
    try:
        return ds.dataset(str(p), format=fmt).to_table()
    except (OSError, ValueError, pa.ArrowException) as err:
        raise GroupsError(f"groups.join: cannot read {p} ({type(err).__name__})") from None
