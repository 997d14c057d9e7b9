"""The ``[sql]`` form of a release config: a DP SQL query over ``[tables.<name>]``, expanded to a plain config.

::

    [sql]
    query = \"\"\"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-9,
                 privacy_unit_column = user_id) region, COUNT(*) AS n FROM measurements GROUP BY region\"\"\"
    max_units = 1000000            # n: public bound on the units (optional: none means no limit on the units)

    [tables.measurements]          # the private table: a path (with format and options) or a catalog table
    path = "measurements.parquet"

    [tables.regions]               # a public table (read freely: a dimension table, a list of keys)
    path = "regions.csv"
    public = true

:func:`expand_sql` compiles the query (:func:`dpspark.sql.compile_query`) and returns the ``[input]``,
``[privacy]`` and family sections the equivalent ``Session.groups`` (or answers) call builds, so the
config, the query run by ``Session.sql`` and that call give the same release under one seed. ``[output]``,
``[budget]`` and ``[spark]`` pass through. Public key tables and the private table's schema (for a private
key selection's universe) are read here: metadata and public data only.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from dpspark.api.config.common import FORMATS, fail

SQL_FIELDS = {"query", "max_units"}
TABLE_FIELDS = {"path", "table", "format", "options", "public"}
_PASS = ("output", "budget", "spark")


def _tables(raw: Mapping[str, Any], source: Path) -> tuple[str, dict[str, Any], dict[str, dict[str, Any]],
                                                             dict[str, dict[str, Any]]]:
    """(the first private table's name, its [input] section, the public tables' sections, the other private
    tables' sections: they share the unit and join the first on it)."""
    tables = raw.get("tables")
    if not isinstance(tables, dict) or not tables:
        raise fail(source, "[sql] needs its tables: one [tables.<name>] section per table the query reads")
    private, public = [], {}
    for name, sec in tables.items():
        if not isinstance(sec, dict):
            raise fail(source, f"[tables.{name}] must be a table")
        bad = sorted(set(sec) - TABLE_FIELDS)
        if bad:
            raise fail(source, f"[tables.{name}] has unknown field(s) {', '.join(map(repr, bad))}; expected "
                               f"{sorted(TABLE_FIELDS)}")
        if not isinstance(sec.get("public", False), bool):
            raise fail(source, f"tables.{name}.public must be true or false")
        if sec.get("format") is not None and sec["format"] not in FORMATS:
            raise fail(source, f"tables.{name}.format must be one of {FORMATS}")
        if sec.get("public", False):
            public[name] = sec
        else:
            private.append(name)
    if not private:
        raise fail(source, "[sql] reads a private table; every [tables.<name>] is public = true")
    sec = tables[private[0]]
    inp = {k: v for k, v in sec.items() if k != "public"}
    return private[0], inp, public, {n: tables[n] for n in private[1:]}


def _public_table(sec: Mapping[str, Any], name: str, columns: list[str], source: Path, every: bool = False) -> Any:
    """A public table's ``columns`` read with pyarrow (public: not the data)."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    path = sec.get("path")
    if not isinstance(path, str) or "://" in path:
        raise fail(source, f"tables.{name}: a public table is a local file (path = ...)")
    full = path if os.path.isabs(path) else str((source.parent / path).resolve())
    fmt = sec.get("format") or {"pq": "parquet", "jsonl": "json"}.get(Path(full).suffix.lstrip(".").lower(),
                                                                      Path(full).suffix.lstrip(".").lower())
    try:
        table = ds.dataset(full, format=fmt).to_table()
    except (OSError, ValueError, pa.ArrowException) as err:
        raise fail(source, f"tables.{name}: cannot read {full} ({type(err).__name__})") from None
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise fail(source, f"tables.{name} has no column(s) {', '.join(map(repr, missing))}")
    return table if every else table.select(columns)


def expand_sql(raw: Mapping[str, Any], source: Path) -> dict[str, Any]:
    """The plain config (``[input]``, ``[privacy]``, the family's sections) of an ``[sql]`` config."""
    from dpspark.sql import SqlError, check_query, compile_query, key_universe

    sql = raw["sql"]
    if not isinstance(sql, dict):
        raise fail(source, "[sql] must be a table")
    bad = sorted(set(sql) - SQL_FIELDS)
    if bad:
        raise fail(source, f"[sql] has unknown field(s) {', '.join(map(repr, bad))}; expected {sorted(SQL_FIELDS)}")
    extra = sorted(set(raw) - {"sql", "tables", *_PASS})
    if extra:
        raise fail(source, f"an [sql] config takes [tables.<name>], [output], [budget] and [spark] only; remove "
                           f"{', '.join(f'[{e}]' for e in extra)} (the query says it)")
    name, inp, public, others = _tables(raw, source)
    try:
        unit = check_query(sql.get("query"), private=[name, *others], public=list(public)).options.unit_column
        call = compile_query(sql["query"], private=[name, *others], public=list(public), unit_column=unit)
    except SqlError as err:
        raise fail(source, f"sql.query: {err}") from None
    if call.query.table != name:
        raise fail(source, f"sql.query: FROM {call.query.table}: the data is the first private table, {name!r}; write "
                           f"FROM {name} (and JOIN {call.query.table} USING (<unit>) to join it on the unit)")
    kw = dict(call.kwargs)
    privacy: dict[str, Any] = {"mechanism": "groups" if call.family == "groups" else kw.pop("mechanism"),
                               "epsilon": kw.pop("epsilon"), "max_units": sql.get("max_units")}
    delta = kw.pop("delta")
    if delta is not None:
        privacy["delta"] = delta
    if unit is not None:
        privacy["unit_column"] = unit
    out: dict[str, Any] = {"input": inp, "privacy": privacy, **{k: raw[k] for k in _PASS if k in raw}}
    budget = out.get("budget")
    if isinstance(budget, dict) and "ledger" in budget and budget.get("dataset") is None:
        from dpspark.api.session_sql import dataset_name  # the private tables sharing the unit: one dataset

        out["budget"] = {**budget, "dataset": dataset_name([name, *others])}
    budget = out.get("budget")
    if isinstance(budget, dict) and isinstance(budget.get("ledger"), str) and isinstance(budget.get("dataset"), str):
        from dpspark.api.session_sql import SessionTablesError, check_dataset_covers, check_ledger_dataset

        ledger = Path(budget["ledger"]) if os.path.isabs(budget["ledger"]) else source.parent / budget["ledger"]
        try:  # a table is in one dataset, with the tables sharing its unit: checked before the spend
            check_dataset_covers(budget["dataset"], [name, *others])
            check_ledger_dataset(ledger, budget["dataset"], [name, *others])
        except SessionTablesError as err:
            raise fail(source, f"budget.dataset: {err}") from None
    if call.family == "answers":
        if "beta" in kw:
            privacy["beta"] = kw.pop("beta")
        out.update(kw.pop("sections"))
        return out
    by = list(kw.pop("by"))
    out["aggregates"] = kw.pop("aggregates")
    groups: dict[str, Any] = {"by": by}
    dim = None
    if call.join is not None and call.private_join:  # another private table: a Parquet file, joined on the unit
        jname, on, how = call.join
        sec = others[jname]
        path = sec.get("path")
        if not isinstance(path, str) or "://" in path or sec.get("format", "parquet") != "parquet":
            raise fail(source, f"tables.{jname}: a private table joined on the unit is a local Parquet file "
                               "(path = ...)")
        full = path if os.path.isabs(path) else str((source.parent / path).resolve())
        groups["join"] = {"path": full, "on": list(on), "how": how, "private": True, "name": jname,
                          **call.join_options}
        dim = _private_schema({"path": full, "format": "parquet"}, by, source).empty_table()
    elif call.join is not None:
        jname, on, how = call.join
        dim = _public_table(public[jname], jname, [], source, every=True)
        path = public[jname]["path"]
        groups["join"] = {"path": path if os.path.isabs(path) else str((source.parent / path).resolve()),
                          "on": list(on), "how": how}
    if call.keys_table is not None:
        table = _public_table(public[call.keys_table], call.keys_table, by, source)
        rows = list(dict.fromkeys(zip(*(table.column(c).to_pylist() for c in by))))
        groups["keys"] = [r[0] if len(by) == 1 else list(r) for r in rows]
    elif by:  # (no by: one public group, its keys given by the compile)
        import pyarrow as pa

        schema = _private_schema(inp, by, source)
        if dim is not None:  # key columns may come from the public table
            schema = pa.schema(list(schema) + [f for f in dim.schema if f.name not in schema.names])
        out["universe"] = key_universe(tuple(by), schema)
    if "where" in kw:
        groups["filter"] = kw.pop("where")
    groups.update(kw)  # max_groups_per_unit, max_rows_per_group, noise, beta: the [groups] fields
    out["groups"] = groups
    return out


def _private_schema(inp: Mapping[str, Any], by: list[str], source: Path) -> Any:
    """The private table's pyarrow schema (a footer or a CSV header: metadata only); text keys are strings."""
    import pyarrow as pa

    from dpspark.engine.arrow.backend import input_schema

    path = inp.get("path")
    if not isinstance(path, str) or "://" in path:
        raise fail(source, "GROUP BY without public keys on a catalog or remote table: list the keys in a public "
                           "table (OPTIONS (keys = <table>))")
    full = path if os.path.isabs(path) else str((source.parent / path).resolve())
    options = {str(k): str(v) for k, v in (inp.get("options") or {}).items()}
    schema, text = input_schema(full, inp.get("format"), options)
    if text:
        schema = pa.schema([pa.field(c, pa.string()) if c in by else schema.field(c) for c in schema.names])
    return schema
