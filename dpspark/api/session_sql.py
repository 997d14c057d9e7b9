"""A session's named tables and its SQL entry: ``Session(tables=..., public_tables=...)`` and ``Session.sql``.

The private table is the session's data (the one its budget protects); public tables (a dimension table, a
list of keys) are read freely: they are not the data. :func:`run_sql` compiles a query with
:func:`dpspark.sql.compile_query` and runs it as the ``Session.groups`` (or answers) call it compiles to,
so the two give the same release under one seed. Everything the query needs is checked before the spend.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Collection, Mapping

from dpspark.errors import DPSparkError

#: the private table's name in SQL when the session's data is given positionally
DEFAULT_TABLE = "data"


class SessionTablesError(DPSparkError, ValueError):
    """The session's ``tables=`` / ``public_tables=`` do not name one private table and some public ones."""


@dataclass(frozen=True)
class SessionTables:
    """The private table's name and data, the public tables by name, and the other private tables by name.

    Every private table shares the session's privacy unit (``unit_column``): together they are one dataset
    (a unit's rows in all of them are added or removed together), charged to one ledger dataset
    (:func:`dataset_name`). The first private table is the session's data (``private``/``data``); the others
    join it on the unit (``JOIN users USING (customer_id)``, ``Session.groups(join={"table": "users",
    "on": unit, "private": True})``).
    """

    private: str
    data: Any
    public: dict[str, Any] = field(default_factory=dict)
    others: dict[str, Any] = field(default_factory=dict)

    @property
    def private_names(self) -> list[str]:
        """Every private table's name, the session's data first."""
        return [self.private, *self.others]

    @classmethod
    def of(cls, data: Any, tables: Mapping[str, Any] | None, public_tables: Collection[str],
           spark: Any = None) -> "SessionTables":
        """Split ``tables`` into the one private table (or ``data``) and the public ones (SessionTablesError).

        With a SparkSession, a table given as a name that is not a local path (``"db.orders"``) is the catalog
        table of that name (its metadata is read; no data)."""
        tables = {name: _catalog(value, spark) for name, value in dict(tables or {}).items()}
        public_names = [public_tables] if isinstance(public_tables, str) else list(public_tables)
        unknown = [p for p in public_names if p not in tables]
        if unknown:
            raise SessionTablesError(f"public_tables names {', '.join(map(repr, unknown))}, not in tables=")
        if not all(isinstance(n, str) and n for n in tables):
            raise SessionTablesError("tables= maps names (non-empty strings) to tables")
        private = [n for n in tables if n not in public_names]
        if private and data is not None:
            raise SessionTablesError(f"give the private table once: as data, or as tables[{private[0]!r}]")
        if not private and data is None:
            raise SessionTablesError("the session has no private table: pass the data, or name it in tables=")
        name = private[0] if private else DEFAULT_TABLE
        if name in public_names:
            raise SessionTablesError(f"a public table is named {name!r}, the private table's name")
        return cls(name, tables[name] if private else data, {p: tables[p] for p in public_names},
                   {p: tables[p] for p in private[1:]})


def dataset_name(private: list[str]) -> str:
    """The ledger dataset of a session's private tables (they share the unit): their names, sorted, joined
    by '+' (``orders+users``). A release reading or joining any of them is charged once, to this dataset."""
    return "+".join(sorted(private))


class DatasetSplitError(SessionTablesError):
    """A private table would be charged under a ledger dataset that does not cover the tables sharing its unit
    (its budget would be split between two datasets)."""


def dataset_tables(dataset: str) -> frozenset[str]:
    """The tables a dataset id names: its '+'-separated parts (``orders+users``: orders and users)."""
    return frozenset(dataset.split("+"))


def check_dataset_covers(dataset: str, private: list[str]) -> None:
    """Refuse (no data, nothing read) a dataset id that does not name every private table of the session when
    there are several: the tables sharing a unit are one dataset, named by them (:func:`dataset_name`)."""
    missing = [n for n in private if n not in dataset_tables(dataset)]
    if len(private) > 1 and missing:
        raise DatasetSplitError(
            f"dataset {dataset!r} does not name the private table(s) {', '.join(map(repr, missing))}: the private "
            f"tables of a session share its unit and are one dataset, {dataset_name(private)!r} (leave dataset= "
            "out, or name that id); nothing was read or spent")


def check_ledger_dataset(ledger: Path, dataset: str, private: list[str]) -> None:
    """Refuse, before the spend, to charge ``dataset`` when the ledger already charges one of its tables (the
    session's private tables, and the tables ``dataset`` names) under another dataset: the table's budget
    would be split (``orders`` alone beside ``orders+users``). The ledger's dataset ids are public (the
    curator's names), so the refusal says nothing about the data. A missing ledger has no dataset yet."""
    if not ledger.exists():
        return
    from dpspark.ledger import Ledger

    mine = set(private) | dataset_tables(dataset)
    for other in Ledger(ledger, read_only=True).datasets():
        shared = sorted(mine & dataset_tables(other))
        if other != dataset and shared:
            raise DatasetSplitError(
                f"table {shared[0]!r} is charged under the ledger's dataset {other!r}, not {dataset!r}: a table is "
                f"in one dataset, with every table that shares its unit. Declare them together (Session(tables="
                "{...}, unit_column=...) with every table the dataset names, or dataset="
                f"{other!r}); nothing was read or spent")


def _catalog(value: Any, spark: Any) -> Any:
    """A catalog table's DataFrame for a name that is not a local path (with a SparkSession), else ``value``."""
    if spark is None or not isinstance(value, str) or "://" in value or os.path.exists(value):
        return value
    failed = False
    try:
        return spark.table(value)
    except Exception:  # pyspark raises its own AnalysisException classes; the name is public, no data is quoted
        failed = True
    if failed:
        raise SessionTablesError(f"no local file and no catalog table is named {value!r}")
    raise AssertionError("unreachable")


def public_arrow(table: Any, columns: list[str] | None = None) -> Any:
    """A public table's ``columns`` (None: all) as a pyarrow Table (pandas, Arrow, a local file or Spark)."""
    import pyarrow as pa

    if hasattr(table, "sparkSession") and hasattr(table, "schema"):
        columns = list(table.columns) if columns is None else columns
        missing = [c for c in columns if c not in table.columns]
        if not missing:
            return table.select(*columns).toArrow()
    elif hasattr(table, "columns") and hasattr(table, "dtypes"):
        table = pa.Table.from_pandas(table, preserve_index=False)
    elif isinstance(table, (str, os.PathLike)):
        import pyarrow.dataset as ds

        path = Path(table)
        fmt = {"pq": "parquet", "jsonl": "json"}.get(path.suffix.lstrip(".").lower(), path.suffix.lstrip(".").lower())
        table = ds.dataset(str(path), format=fmt or "parquet").to_table()
    if not isinstance(table, pa.Table):
        raise SessionTablesError("a public table is a pandas DataFrame, a pyarrow Table, a local file or a Spark "
                                "DataFrame")
    columns = table.column_names if columns is None else columns
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise SessionTablesError(f"the public table has no column(s) {', '.join(map(repr, missing))}")
    return table.select(columns)


def distinct_keys(table: Any, by: list[str]) -> Any:
    """The distinct rows of a public table's ``by`` columns, in first-seen order (public: not the data)."""
    rows = list(dict.fromkeys(zip(*(table.column(c).to_pylist() for c in by))))
    return [r[0] if len(by) == 1 else list(r) for r in rows]


def private_schema(session: Any) -> tuple[Any, bool]:
    """(the private table's pyarrow schema, whether its types come from text): metadata only."""
    arrow = session.arrow_source()
    if arrow is not None:
        import pyarrow as pa

        if isinstance(arrow, pa.Table):
            return arrow.schema, False
        from dpspark.engine.arrow.backend import input_schema

        schema, text = input_schema(str(arrow), None, {})
        return schema, bool(text)
    from dpspark.engine.checks import frame_schema

    return frame_schema(session.frame()), session.text_input()


def private_join_schema(session: Any, name: str) -> Any:
    """The other private table's schema, as an empty Arrow table (metadata only: key columns' types)."""
    from dpspark.mechanisms.groups.private_join import table_schema

    table = session._others[name]
    if isinstance(table, (str, os.PathLike)):
        table = str(Path(table).resolve())
    return table_schema(table, None).empty_table()


def run_sql(session: Any, query: str, *, output: Any = None, explain: bool = False) -> Any:
    """Run ``query`` on ``session`` (opened release), or with ``explain`` return the plan's text (no spend)."""
    from dpspark.sql import compile_query, key_universe

    tables: SessionTables = session.tables
    call = compile_query(query, private=tables.private_names, public=list(tables.public),
                         unit_column=session.unit_column)
    if call.query.table != tables.private:
        from dpspark.sql import SqlError

        raise SqlError(f"FROM {call.query.table}: the session's data is the private table {tables.private!r}; "
                       f"write FROM {tables.private} (JOIN {call.query.table} USING ({session.unit_column}) to join "
                       f"{call.query.table!r} on the unit)")
    kwargs = dict(call.kwargs)
    if call.family == "answers":
        return session.release(output=output, explain=explain, **kwargs)
    by = list(kwargs["by"])
    dim = None
    if call.join is not None and call.private_join:  # another private table, on the unit (Session.groups resolves it)
        name, on, how = call.join
        kwargs["join"] = {"table": name, "on": list(on), "how": how, "private": True, **call.join_options}
        dim = private_join_schema(session, name)
    elif call.join is not None:
        name, on, how = call.join
        dim = public_arrow(tables.public[name])
        kwargs["join"] = {"table": dim, "on": list(on), "how": how}
    if call.keys_table is not None:
        kwargs["keys"] = distinct_keys(public_arrow(tables.public[call.keys_table], by), by)
    elif by:  # (no by: one public group, its keys given by the compile)
        import pyarrow as pa

        schema, text = private_schema(session)
        if text:  # CSV/JSON keys are read as text by both engines
            schema = pa.schema([pa.field(c, pa.string()) if c in by else schema.field(c) for c in schema.names])
        if dim is not None:  # key columns may come from the public table
            schema = pa.schema(list(schema) + [f for f in dim.schema if f.name not in schema.names])
        kwargs["universe"] = key_universe(tuple(by), schema)
    return session.groups(output=output, explain=explain, **kwargs)
