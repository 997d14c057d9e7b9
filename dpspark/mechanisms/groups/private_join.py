"""A private join of a ``groups`` release: two private tables that share the privacy unit, joined on the unit.

The tables (``orders`` and ``users``, say) are one dataset: a unit is present in both or removed from both
(the ledger charges their one dataset: :mod:`dpspark.api.session_sql`). The join, in the spirit of Tumult's
``join_private`` with truncation:

1. each table keeps at most L rows per unit (``max_rows_per_unit = [L_left, L_right]``, public;
   :func:`~dpspark.mechanisms.groups.truncate_units.truncate`: a unit's kept rows are a function of its own
   rows), so a unit has at most L_left · L_right joined rows (L_left with ``how = "left"`` and no match);
2. the kept rows are joined on the unit column (inner, or left: a left row without a match keeps NULLs);
3. then the stage's usual contribution bounding runs on the joined rows (at most n units, k groups per unit,
   c rows per group).

With ``key`` (``groups.by = []``: one public group, the global answers of a query without ``GROUP BY``) the
joined rows gain a constant int64 column ``key`` = 0 (Arrow: a literal column; Spark: ``F.lit``), the stage's one
key column, and the release has one public group (k = 1): a constant column is a row-level map, so the claim
below is unchanged.

**Claim.** Adding or removing one unit (its rows in both tables) adds or removes only that unit's joined rows:
steps 1 and 2 map each unit's rows (in both tables) to its joined rows, and nothing of another unit. So the
joined table is a neighbouring input of the stage, and every guarantee of the stage (calibrated on k and c,
after the join) holds as it is. A join on anything but the unit would mix units' rows, so it is refused
before the spend. Both engines run the same truncation and the same join, so their statistics are identical.

The other table is data: only its schema is read when the release is planned; its rows are read in the
stage, after the spend (Arrow: pyarrow; Spark: a DataFrame from the table, its file, or the catalog).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Sequence

import pyarrow as pa

from dpspark.mechanisms.groups.aggregates import GroupsError
from dpspark.mechanisms.groups.join_types import HOWS
from dpspark.mechanisms.groups.join_types import plain_type as _plain
from dpspark.mechanisms.groups.truncate_units import spark_truncate, truncate, type_problem

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: the default rows kept per unit and table before the join (public)
DEFAULT_ROWS_PER_UNIT = 1000
#: the largest rows per unit and table (a unit's joined rows stay below 10**8)
MAX_ROWS_PER_UNIT = 10_000


@dataclass(frozen=True, eq=False)
class PrivateJoin:
    """The other private table (an Arrow table, a local file path or a Spark DataFrame), the unit column
    (``on``), the kind, and the rows kept per unit on each side before the join.

    ``columns``: the other table's columns the stage reads (all but the unit, until :meth:`narrowed`);
    ``left_columns``: the primary table's (set by :meth:`narrowed`; the Arrow scan reads exactly these)."""

    table: Any
    on: tuple[str, ...]
    how: str = "inner"
    max_rows_per_unit: tuple[int, int] = (DEFAULT_ROWS_PER_UNIT, DEFAULT_ROWS_PER_UNIT)
    name: str = "the other private table"
    format: str | None = None
    columns: tuple[str, ...] = ()
    left_columns: tuple[str, ...] = ()
    schema: pa.Schema = field(default=None)  # type: ignore[assignment]
    #: the constant key column of one public group (None: the stage groups by the tables' own columns)
    key: str | None = None

    def __post_init__(self) -> None:
        if self.how not in HOWS:
            raise GroupsError(f"groups.join.how must be one of {tuple(HOWS)}, got {self.how!r}")
        if len(self.on) != 1 or not isinstance(self.on[0], str) or not self.on[0]:
            raise GroupsError("groups.join: a private join is on the privacy unit column only: on = \"<unit>\"")
        lims = self.max_rows_per_unit
        if len(lims) != 2 or any(isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_ROWS_PER_UNIT
                                 for v in lims):
            raise GroupsError(f"groups.join.max_rows_per_unit is an int, or a pair [left, right], each in "
                              f"1..{MAX_ROWS_PER_UNIT}")
        if self.schema is None:
            object.__setattr__(self, "schema", table_schema(self.table, self.format))
        if self.on[0] not in self.schema.names:
            raise GroupsError(f"groups.join: {self.name} has no unit column {self.on[0]!r}")
        if not self.columns:
            object.__setattr__(self, "columns", tuple(c for c in self.schema.names if c != self.on[0]))

    def __getstate__(self) -> dict[str, Any]:
        """Pickled into Spark's tasks with the stage: without the other table (only the driver reads it, and a
        Spark DataFrame cannot leave the driver)."""
        return {**self.__dict__, "table": None}

    @property
    def unit(self) -> str:
        return self.on[0]

    @property
    def multiplicity(self) -> int:
        """The most rows of the other table one row joins (after its truncation): L_right."""
        return self.max_rows_per_unit[1]

    @property
    def added(self) -> tuple[str, ...]:
        """The columns a joined row gains: the other table's, and the constant key column if any."""
        return self.columns + ((self.key,) if self.key is not None else ())

    def narrowed(self, needed: Sequence[str]) -> "PrivateJoin":
        """This join reading only the ``needed`` columns: the other table's among them, the rest from the primary."""
        mine = tuple(c for c in dict.fromkeys(needed) if c in self.schema.names and c not in (self.unit, self.key))
        left = tuple(c for c in dict.fromkeys([*needed, self.unit]) if c not in mine and c != self.key)
        return replace(self, columns=mine, left_columns=left)

    def describe(self) -> dict[str, Any]:
        """The join in the manifest: public parameters only (the other table is data: no size, no digest)."""
        left, right = self.max_rows_per_unit
        one = {"global_key": self.key} if self.key is not None else {}  # one public group: global answers
        return {"private": True, "table": self.name, "on": list(self.on), "how": self.how, "columns": list(self.columns),
                **one,
                "max_rows_per_unit": [left, right],
                "bound": (f"each table keeps at most {left} (left) and {right} (right) rows per unit before the join, "
                          f"so a unit has at most {left * right} joined rows; contribution is bounded after the join "
                          "(max_units, max_groups_per_unit, max_rows_per_group); a unit's joined rows depend on its "
                          "own rows only, so every guarantee of the stage holds")}

    def schema_problem(self, schema: pa.Schema) -> str | None:
        """Why the primary input of ``schema`` cannot be joined (metadata only), or None."""
        u = self.unit
        if u not in schema.names:
            return f"groups.join: the input has no unit column {u!r}"
        mine, theirs = _plain(schema.field(u).type), _plain(self.schema.field(u).type)
        if mine != theirs:
            return (f"groups.join: the unit column {u!r} is {mine} in the input and {theirs} in {self.name}; "
                    "give both tables the same type")
        if self.key is not None and self.key in (*schema.names, *self.schema.names):
            return (f"groups.join: the column {self.key!r} is the constant key of one public group (groups.by = []); "
                    "rename it in the tables")
        clash = [c for c in self.columns if c in schema.names]
        if clash:
            return (f"groups.join: {self.name}'s column(s) {', '.join(map(repr, clash))} are also in the input; "
                    "rename them in one table")
        left = [c for c in (self.left_columns or (u,)) if c in schema.names]
        return (type_problem(schema, left, "groups.join (the input)")
                or type_problem(self.schema, [u, *self.columns], f"groups.join ({self.name})"))

    def joined_schema(self, schema: pa.Schema) -> pa.Schema:
        """The input's schema with the other table's columns (and the constant key column) appended."""
        key = [pa.field(self.key, pa.int64(), nullable=False)] if self.key is not None else []
        return pa.schema(list(schema) + [self.schema.field(c) for c in self.columns] + key)

    # --- the data (read in the stage, after the spend) ----------------------------------------------------------
    def _other_arrow(self) -> pa.Table:
        cols = [self.unit, *self.columns]
        if isinstance(self.table, pa.Table):
            return self.table.select(cols)
        import pyarrow.dataset as ds

        return ds.dataset(str(self.table), format=_format(self.table, self.format)).to_table(columns=cols)

    def arrow(self, table: pa.Table) -> pa.Table:
        """The joined rows on Arrow: each side truncated per unit, then joined on the unit."""
        left_lim, right_lim = self.max_rows_per_unit
        left = _plain_table(truncate(table, self.unit, left_lim))
        right = _plain_table(truncate(self._other_arrow(), self.unit, right_lim))
        joined = left.join(right, [self.unit], join_type=HOWS[self.how], coalesce_keys=True)
        if self.key is None:
            return joined
        return joined.append_column(self.key, pa.repeat(pa.scalar(0, pa.int64()), joined.num_rows))

    def spark(self, df: "DataFrame") -> "DataFrame":
        """The joined rows on Spark: the same truncation per unit (after a shuffle by unit), then the join."""
        from dpspark.engine.predicate import spark_ref

        spark = df.sparkSession
        other = self.table
        if isinstance(other, pa.Table):
            other = spark.createDataFrame(other.select([self.unit, *self.columns]))
        elif isinstance(other, (str, os.PathLike)):
            from dpspark.engine.spark.counts import read_input
            from dpspark.engine.spec import InputSpec

            other = read_input(spark, InputSpec(os.fspath(other), None, "parquet"))
        other = other.select(*[spark_ref(c).alias(c) for c in (self.unit, *self.columns)])
        left_cols = self.left_columns or tuple(df.columns)
        left = df.select(*[spark_ref(c).alias(c) for c in left_cols])
        left_lim, right_lim = self.max_rows_per_unit
        joined = spark_truncate(left, self.unit, left_lim).join(
            spark_truncate(other, self.unit, right_lim), on=[self.unit], how="inner" if self.how == "inner" else "left")
        if self.key is None:
            return joined
        from pyspark.sql import functions as F

        return joined.withColumn(self.key, F.lit(0).cast("long"))


def _plain_table(table: pa.Table) -> pa.Table:
    """Plain (not dictionary, not large) string columns: Arrow's hash join takes no dictionary column."""
    for i, f in enumerate(table.schema):
        if pa.types.is_dictionary(f.type) or pa.types.is_large_string(f.type):
            table = table.set_column(i, f.name, table.column(i).cast(_plain(f.type)))
    return table


def _format(path: Any, fmt: str | None) -> str:
    from pathlib import Path

    suffix = Path(str(path)).suffix.lstrip(".").lower()
    return fmt or {"pq": "parquet", "jsonl": "json"}.get(suffix, suffix or "parquet")


def table_schema(table: Any, fmt: str | None) -> pa.Schema:
    """The other table's schema (metadata only: an Arrow schema, a file footer or header, a Spark schema)."""
    if isinstance(table, pa.Table):
        return table.schema
    if hasattr(table, "sparkSession") and hasattr(table, "schema"):
        from dpspark.engine.checks import frame_schema

        return frame_schema(table)
    if isinstance(table, (str, os.PathLike)):
        import pyarrow.dataset as ds

        if _format(table, fmt) != "parquet":  # text formats' types depend on the reader: not alike on both engines
            raise GroupsError(f"groups.join: a private join reads a Parquet file; {os.fspath(table)} is "
                              f"{_format(table, fmt)}")

        try:
            return ds.dataset(str(table), format=_format(table, fmt)).schema
        except (OSError, ValueError, pa.ArrowException) as err:
            raise GroupsError(f"groups.join: cannot read the schema of {os.fspath(table)} "
                              f"({type(err).__name__})") from None
    raise GroupsError("groups.join.table of a private join is a table of the session (an Arrow table, a local file "
                      "or a Spark DataFrame)")


def parse_private_join(raw: dict[str, Any]) -> PrivateJoin:
    """``{table = <table> | path = "<file>", on = "<unit>", how = "inner", private = true,
    max_rows_per_unit = L | [L_left, L_right], name = "users", format = "parquet"}``."""
    bad = sorted(set(raw) - {"table", "path", "on", "how", "private", "max_rows_per_unit", "name", "format"})
    if bad:
        raise GroupsError(f"groups.join has unknown field(s) {', '.join(map(repr, bad))}; a private join takes "
                          "table or path, on, how, private, max_rows_per_unit, name, format")
    if ("table" in raw) == ("path" in raw):
        raise GroupsError("groups.join needs the other private table: table = <a table> or path = \"<file>\"")
    table = raw.get("table", raw.get("path"))
    if hasattr(table, "columns") and hasattr(table, "dtypes") and not hasattr(table, "sparkSession"):
        table = pa.Table.from_pandas(table, preserve_index=False)
    on = raw.get("on")
    on = (on,) if isinstance(on, str) else tuple(on) if isinstance(on, (list, tuple)) else ()
    lims = raw.get("max_rows_per_unit", DEFAULT_ROWS_PER_UNIT)
    lims = (lims, lims) if isinstance(lims, int) else tuple(lims) if isinstance(lims, (list, tuple)) else ()
    name = raw.get("name") or "the other private table"
    return PrivateJoin(table, on, raw.get("how", "inner"), lims, str(name), raw.get("format"))  # type: ignore[arg-type]
