"""The data-free checks of a release: the ledger's refusals and the input's columns and types (metadata only).

Each runs before any budget is spent; none reads a row. :func:`dpspark.engine.runner.prepare` runs them once
per release; a Spark DataFrame's schema is checked after Spark starts, still before the spend.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from dpspark.engine.spec import ReleaseSpec

__all__ = ["check_input_columns", "check_input_schema", "check_ledger", "check_table_schema", "frame_schema",
           "is_text_format"]


def check_ledger(cfg: "ReleaseSpec", mech: Any = None, principal: Any = None, *, named: bool = False) -> None:
    """The ledger's refusals (totals, unit, budget left, the principal's limits) for this spend, checked
    without spending and without creating a missing ledger file.

    ``mech``: the plan's mechanism, whose exact rho (when it states rho-zCDP) the spend records.
    ``named``: the charge's check, whose ``principal`` is resolved (``dpspark.ledger.resolve_principal``; None
    is an unnamed analyst, refused where the dataset has limits); not named: the plan's check, before the
    charge knows its principal, which checks no principal's limits.
    """
    if cfg.budget is None:
        return
    from dpspark.ledger import Ledger
    from dpspark.ledger.statement import spend_rho
    from dpspark.ledger.store import ANY_PRINCIPAL

    budget = cfg.budget
    rho = spend_rho(cfg, mech)
    who = principal if named else ANY_PRINCIPAL

    def check(path: Path) -> None:
        Ledger(path).check_spend(
            budget.dataset, cfg.epsilon, cfg.delta or 0, unit=cfg.unit_column,
            config_total_epsilon=budget.total_epsilon, config_total_delta=budget.total_delta,
            max_units=cfg.max_units, rho=rho, principal=who,
        )

    if budget.ledger.exists():
        check(budget.ledger)
    else:  # a new ledger: the same checks against an empty one, without creating the real file
        from dpspark.ledger import LedgerError

        with tempfile.TemporaryDirectory() as tmp:
            scratch = Path(tmp) / "ledger.sqlite"
            try:
                check(scratch)
            except LedgerError as err:  # name the user's ledger, not the empty stand-in (same error, same fields)
                if str(scratch) in str(err):
                    err.args = (str(err).replace(str(scratch), str(budget.ledger))
                                + f" (the ledger {budget.ledger} does not exist yet: the first spend creates it)",)
                raise


def check_input_columns(cfg: "ReleaseSpec", mech: Any, engine: str | None = None) -> None:
    """A local input file must have every column the release reads, of a type it can read.

    Only metadata is read here (:func:`~dpspark.engine.arrow.backend.input_schema`: a footer or a CSV header
    line), never a row. Catalog tables and remote paths are checked on their DataFrame's schema, after Spark
    starts and still before the spend (:func:`dpspark.engine.runner.run_release`).
    """
    from dpspark.engine.arrow.backend import InputError, input_schema, is_local_path

    path = cfg.input.path
    if path is None or not is_local_path(str(path)):
        return
    try:
        schema, text_input = input_schema(str(path), cfg.input.format, cfg.input.options)
    except InputError:  # its text is value-free (a path, a format): fatal when the Arrow engine reads this file
        if engine == "arrow":
            raise
        return  # e.g. options only Spark's reader has: Spark reads the schema, still before the spend
    check_input_schema(mech, schema, str(path), text_input=text_input)


def is_text_format(fmt: str | None, path: str | None = None) -> bool:
    """True when an input's column types are read from the data themselves (CSV, JSON lines), not declared."""
    from dpspark.engine.arrow.backend import _format_from_suffix

    name = (fmt or (_format_from_suffix(path) if path else "parquet")).lower()
    return name in ("csv", "json")


def check_input_schema(mech: Any, schema: Any, where: str, *, text_input: bool = False) -> None:
    """Refuse an input whose pyarrow ``schema`` (metadata only) lacks a column the release reads or has a
    column the mechanism cannot read (e.g. ``[columns] array`` that is not an array of 0/1 values)."""
    from dpspark.engine.arrow.backend import InputError

    present = set(schema.names)
    missing = [c for c in mech.input_columns() if c not in present]
    if missing:
        raise InputError(f"input has no column(s) {', '.join(map(repr, missing))}; it has "
                         f"{', '.join(map(repr, sorted(present)))} ({where}; checked before any budget is spent)")
    check = getattr(mech, "input_schema_problem", None)  # e.g. [columns] array of a non-array column
    problem = check(schema, text_input=text_input) if check is not None else None
    if problem:
        raise InputError(f"{problem} ({where}; checked before any budget is spent)")


def frame_schema(df: "DataFrame") -> Any:
    """A Spark DataFrame's schema as a pyarrow schema (metadata only: no Spark job runs)."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_type

    def arrow_type(spark_type: Any) -> Any:
        try:
            return to_arrow_type(spark_type)
        except Exception:  # a Spark type Arrow cannot name (pyspark raises its own error classes)
            return pa.binary()  # stands for "some non-array, non-numeric type" in the checks
    return pa.schema([pa.field(f.name, arrow_type(f.dataType)) for f in df.schema.fields])


def check_table_schema(mech: Any, source: Any) -> None:
    """The pre-spend schema check of an Arrow-engine input handed over directly (a table or a local path)."""
    import pyarrow as pa

    if isinstance(source, pa.Table):
        check_input_schema(mech, source.schema, "the session's table")
        return
    from dpspark.engine.arrow.backend import input_schema

    schema, text_input = input_schema(str(source), None, {})
    check_input_schema(mech, schema, str(source), text_input=text_input)
