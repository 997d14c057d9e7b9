"""The release job: spec -> certified plan -> budget -> stages on a backend -> exact driver-side noise -> release.

One code path serves ``spark-submit jobs/release.py --config X``, ``dpspark release --config X``
and :class:`dpspark.Session`. Order of operations:

1. the spec is validated completely and the mechanism's plan certified (:meth:`ReleaseSpec.mechanism_object`),
   and the output path checked, before any engine starts and before any budget is spent;
2. the budget is committed to the ledger (never refunded);
3. the mechanism runs: it asks the backend for its stages (counts per index, ...), and draws noise once,
   on the driver, from the CSPRNG - a retried Spark task can never produce a second, different noisy answer;
4. the release is written atomically by the writer of the mechanism's release kind.

Progress lines name stages and elapsed time only: never a count, a number of distinct keys, or which branch
a mechanism took. Nothing here knows a mechanism by name: :mod:`dpspark.mechanisms.registry` does.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from dpspark.api.config import ReleaseConfig
from dpspark.engine.backend import CuratorError, open_backend, supported_engines
from dpspark.engine.timing import pad_until
from dpspark.mechanisms.histogram.mechanism import gamma_for, within_epsilon
from dpspark.rng import RandomSource, default_source

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from dpspark.noise.counting_base import CountingMechanism

Progress = Callable[[str], None]

__all__ = [
    "CuratorError", "choose_engine", "count_mechanism", "describe_plan", "gamma_for", "job_spark_conf", "run_mechanism",
    "run_release", "spend_budget", "stderr_progress", "within_epsilon", "write_release",
]


def stderr_progress(prefix: str = "dpspark") -> Progress:
    """A progress printer with elapsed time, to stderr."""
    start = time.monotonic()

    def show(msg: str) -> None:
        print(f"[{prefix} {time.monotonic() - start:7.1f}s] {msg}", file=sys.stderr, flush=True)

    return show


def count_mechanism(cfg: ReleaseConfig) -> "CountingMechanism":
    """The counting mechanism a histogram release spec uses (exact parameters, public inputs only)."""
    mech = cfg.mechanism_object()
    plan = getattr(mech, "compact_plan", None)
    return plan.mechanism if plan is not None else mech.counting


def compact_plan(cfg: ReleaseConfig) -> Any:
    """The public plan (M, m, G, l) of a compact release spec."""
    return cfg.mechanism_object().compact_plan


def run_mechanism(cfg: ReleaseConfig, indices: list[int], counts: list[int], rng: RandomSource, progress: Progress) -> Any:
    """Draw a histogram release on the driver from exact sparse counts (0-based indexes)."""
    return cfg.mechanism_object().release_from_counts(indices, counts, rng, progress)


def describe_plan(cfg: ReleaseConfig) -> dict[str, Any]:
    """What a release will do, from public inputs only (``--dry-run``): plan, privacy, accuracy, passes."""
    mech = cfg.mechanism_object()
    return {
        "mechanism": cfg.mechanism,
        "plan": mech.plan(),
        "privacy": mech.privacy_summary(),
        "accuracy": mech.accuracy_summary(),
        "passes": [s.aggregate for s in mech.stages()],
        "contribution": {
            "unit": cfg.unit_column or "row",
            "max_units": cfg.max_units,
            "max_keys_per_unit": cfg.max_keys_per_unit,
            "max_rows_per_key": cfg.max_rows_per_key,
            "on_excess_units": mech.excess_units_text(),
        },
        "output": str(cfg.output),
    }


def preflight(cfg: ReleaseConfig, engine: str | None = None) -> None:
    """Every check that needs no data, before any engine starts and before any spend.

    The spec and the mechanism's certified plan were checked when ``cfg`` was built; this adds the output
    path (a published release is never overwritten) and the ledger (totals, unit, budget left). Raises the
    first failure as a :class:`~dpspark.errors.DPSparkError`.
    """
    from dpspark.release import check_output_path

    mech = cfg.mechanism_object()
    check_output_path(cfg.output)
    check_input_columns(cfg, mech, engine)
    check_ledger(cfg)


def check_ledger(cfg: ReleaseConfig) -> None:
    """The ledger's refusals (totals, unit, budget left) for this spend, checked without spending."""
    if cfg.budget is not None:
        import tempfile

        from dpspark.ledger import Ledger

        def check(path: Path) -> None:
            Ledger(path).check_spend(
                cfg.budget.dataset, cfg.epsilon, cfg.delta or 0, unit=cfg.unit_column,  # type: ignore[union-attr]
                config_total_epsilon=cfg.budget.total_epsilon, config_total_delta=cfg.budget.total_delta,  # type: ignore[union-attr]
                max_units=cfg.max_units,
            )

        if cfg.budget.ledger.exists():
            check(cfg.budget.ledger)
        else:  # a new ledger: the same checks against an empty one, without creating the real file
            with tempfile.TemporaryDirectory() as tmp:
                check(Path(tmp) / "ledger.sqlite")


def check_input_columns(cfg: ReleaseConfig, mech: Any, engine: str | None = None) -> None:
    """A local input file must have every column the release reads, of a type it can read.

    Only metadata is read here (:func:`~dpspark.engine.arrow.backend.input_schema`: a footer or a CSV header
    line), never a row. Catalog tables and remote paths are checked on their DataFrame's schema, after Spark
    starts and still before the spend (:func:`run_release`).
    """
    from dpspark.engine.arrow.backend import InputError, input_schema, is_local_path

    path = getattr(cfg.input, "path", None)
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


def plan_text(plan: dict[str, Any]) -> str:
    """The ``--dry-run`` plan in plain words (numbers shortened; exact values stay in the JSON form)."""
    from fractions import Fraction

    from dpspark.text import readable

    def short_value(value: Any) -> str:
        if isinstance(value, str) and "/" in value and " " not in value:
            try:
                return readable(Fraction(value))
            except (ValueError, ZeroDivisionError):
                return value
        if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
            return f"~2^{value.bit_length()}"
        return str(value)

    lines = [f"mechanism        {plan['mechanism']}"]
    lines.append(f"passes           {len(plan['passes'])}: " + "; ".join(plan["passes"]))
    c = plan["contribution"]
    lines.append(f"privacy unit     {c['unit']} (at most {c['max_units']} units; excess units: {c['on_excess_units']}; "
                 f"<= {c['max_keys_per_unit']} key(s) per unit, <= {c['max_rows_per_key']} row(s) per key)")
    for key, value in plan["privacy"].items():
        lines.append(f"privacy          {key}: {short_value(value)}")
    for key, value in plan["accuracy"].items():
        lines.append(f"error bar        {key}: {short_value(value)}")
    for key, value in plan["plan"].items():
        if key == "mechanism":
            continue
        if isinstance(value, dict):
            inner = ", ".join(f"{k} = {short_value(v)}" for k, v in value.items() if v is not None)
            lines.append(f"parameter        {key}: {inner}")
        else:
            lines.append(f"parameter        {key}: {short_value(value)}")
    lines.append(f"output           {plan['output']}")
    return "\n".join(lines)


def spend_budget(cfg: ReleaseConfig) -> Any:
    """Commit the release's (epsilon, delta) to the ledger before any data is read; None without [budget]."""
    if cfg.budget is None:
        return None
    from dpspark.ledger import Ledger

    ledger = Ledger(cfg.budget.ledger)
    # The configured epsilon bounds the exact one (the mechanism's plan certified it): ln(p/q) + bias <= epsilon.
    # The config's totals and the privacy unit are checked by the ledger in the spend's transaction.
    record = ledger.spend(
        cfg.budget.dataset, cfg.epsilon, cfg.delta or 0, cfg.mechanism, str(cfg.output),
        unit=cfg.unit_column, config_total_epsilon=cfg.budget.total_epsilon,
        config_total_delta=cfg.budget.total_delta, max_units=cfg.max_units,
    )
    return ledger, record


def spent_kept_note(record: Any) -> str:
    """What a failure after the spend means for the budget (the spend is kept: never refunded)."""
    return (
        f"The privacy budget of this release (epsilon = {record.epsilon}, delta = {record.delta} on dataset "
        f"{record.dataset_id!r}) stays spent: it was committed before the data was read and is never refunded "
        f"(ledger entry {record.id} is marked failed)."
    )


def job_spark_conf(cfg: ReleaseConfig) -> dict[str, str]:
    """Spark settings of the embedded session: console progress on, then the config's [spark] table."""
    return {"spark.ui.showConsoleProgress": "true", **cfg.spark_conf}


def run_release(
    cfg: ReleaseConfig,
    *,
    spark: "SparkSession | None" = None,
    rng: RandomSource | None = None,
    progress: Progress | None = None,
    data: "DataFrame | None" = None,
    engine: str | None = None,
    arrow_source: Any = None,
    session_charge: Any = None,
    show_data_errors: bool = False,
    text_input: bool | None = None,
) -> Path:
    """Run a whole release; returns the path of the published release directory.

    ``data`` is an already-loaded Spark DataFrame (the :class:`dpspark.Session` path); otherwise the
    spec's input is read with ``spark`` (an embedded local session when None). ``engine``: "arrow"
    counts a local file input with pyarrow on this machine (no JVM), "spark" on Spark; None picks
    "arrow" for a local file input when neither ``spark`` nor ``data`` is given, else "spark".
    ``arrow_source`` (a pyarrow Table or a local path) is counted on the Arrow engine instead of the
    spec's input (the :class:`dpspark.Session` path for pandas, Arrow and file inputs).
    ``session_charge``: (session budget, statement) to charge together with the ledger (:func:`charge`).
    ``text_input``: ``data``'s column types come from the data (a DataFrame over CSV/JSON files), so text may
    stand for numbers; derived from the config's input format when this function reads the input itself.

    Everything that needs no data - the plan, the output path, the ledger and session budgets, the input's
    schema (metadata) - is checked before the budget is spent. The data pass itself runs inside
    :func:`~dpspark.engine.data_pass.run_data_pass`: any failure there is one fixed, value-free error
    (``show_data_errors``: the curator opts in to the details), and the spend stays.
    """
    from dpspark.release import check_output_path
    from dpspark.release.manifest import utc_now

    planned_utc = utc_now()  # [userfix] created_utc is the plan time: it must not depend on the data's size
    show = progress or stderr_progress()
    rng = rng or default_source()
    engine = choose_engine(cfg, "arrow" if arrow_source is not None else engine, spark is not None or data is not None,
                           given_table=arrow_source is not None)
    mech = cfg.mechanism_object()  # data-free checks and the certified plan, before any spend
    cfg.output.parent.mkdir(parents=True, exist_ok=True)
    check_output_path(cfg.output)  # before any noise: a published release is never overwritten
    preflight(cfg, None if arrow_source is not None else engine)
    if data is None and engine != "arrow":
        text_input = is_text_format(getattr(cfg.input, "format", None), getattr(cfg.input, "path", None))
    if engine != "arrow" and data is None:  # a DataFrame over the input: schema only, nothing is read yet
        from dpspark.engine.spark.counts import read_input

        if spark is None:
            from dpspark.engine.spark.local import local_session

            show("starting local Spark")
            spark = local_session("dpspark-release", "local[*]", conf=job_spark_conf(cfg))
        data = read_input(spark, cfg.input)
    if data is not None:
        check_input_schema(mech, frame_schema(data), "the input DataFrame", text_input=bool(text_input))
    elif arrow_source is not None:
        check_table_schema(mech, arrow_source)
    spent = charge(cfg, session_charge)  # committed before any data is read or noise drawn; never refunded
    try:
        out = _run(cfg, mech, data, rng, show, engine, planned_utc, arrow_source, show_data_errors)
    except BaseException as err:
        if spent is not None:
            spent[0].mark_failed(spent[1].id)
            err.add_note(spent_kept_note(spent[1]))  # [userfix] the user must know the spend is not refunded
        raise
    if spent is not None:
        spent[0].mark_released(spent[1].id)
    return out


def charge(cfg: ReleaseConfig, session_charge: Any = None) -> Any:
    """The one budget charge of a release: session budget and ledger checked, then spent, ledger first.

    ``session_charge`` is (session budget, statement) or None. The ledger's own check ran in
    :func:`preflight`; the session budget is checked here before either is spent, so a refusal by either
    spends neither (the two always agree). Returns :func:`spend_budget`'s (ledger, record) or None.
    """
    if session_charge is not None:
        budget, statement = session_charge
        if not budget.can_spend(statement):
            from dpspark.api.session import SessionBudgetExceeded

            raise SessionBudgetExceeded(
                f"this release ({statement.measure.text()}) exceeds the session budget left: "
                f"{budget.remaining.text()}; nothing was read and nothing was spent")
    spent = spend_budget(cfg)
    if session_charge is not None:
        session_charge[0].spend(session_charge[1])  # never refunded
    return spent


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


def choose_engine(cfg: ReleaseConfig, engine: str | None, have_spark: bool, given_table: bool = False) -> str:
    """The backend of a release: "arrow" for a local file input unless Spark is given or asked for.

    ``given_table``: the caller hands the Arrow engine its input (a table or path), so only the
    mechanism's engine support is checked.
    """
    from dpspark.api.config import ConfigError

    if engine is None and have_spark:
        return "spark"
    if engine not in (None, "arrow", "spark"):
        raise ConfigError(f"engine must be 'arrow' or 'spark', got {engine!r}")
    if engine == "spark":
        return engine
    from dpspark.mechanisms.registry import mechanism_class

    cls = mechanism_class(cfg.mechanism)
    engines = supported_engines(cls(cfg))
    if "arrow" not in engines:
        if engine == "arrow":
            raise ConfigError(f"mechanism {cfg.mechanism!r} runs on Spark only (the Arrow engine lacks its "
                              "aggregates); use engine 'spark'")
        return "spark"
    if given_table:
        return "arrow"
    from dpspark.engine.arrow.backend import is_local_path

    path = getattr(getattr(cfg, "input", None), "path", None)
    local = path is not None and is_local_path(str(path))
    if engine is None:
        return "arrow" if local else "spark"
    if have_spark or not local:
        raise ConfigError("engine 'arrow' reads a local file input only, without a Spark session or DataFrame; "
                          "use engine 'spark'")
    return engine


def _run(cfg: ReleaseConfig, mech: Any, data: "DataFrame | None", rng: RandomSource, show: Progress,
         engine: str = "spark", created_utc: str | None = None, arrow_source: Any = None,
         show_data_errors: bool = False) -> Path:
    from dpspark.engine.data_pass import run_data_pass

    started = time.monotonic()

    def noise_progress(msg: str) -> None:
        nonlocal started
        if msg == "counts collected on the driver":
            started = time.monotonic()
            show(msg)
            show(f"drawing noise on the driver ({cfg.mechanism})")
            return
        show(msg)

    def read_and_draw() -> Any:
        local = arrow_source is None and engine == "arrow"  # a local file, re-scanned per pass
        with open_backend(engine, rng=rng, progress=noise_progress, data=data, mechanism=mech,
                          source=str(cfg.input.path) if local else arrow_source,
                          input_format=cfg.input.format if local else None,
                          input_options=cfg.input.options if local else None) as backend:
            return mech.run(backend, rng, noise_progress)

    payload = run_data_pass(read_and_draw, show_data_errors=show_data_errors)
    if cfg.pad_seconds is not None:  # the noise step's duration must not reveal |S| or the draws (docs/balcer-vadhan-notes.md §E10)
        pad_until(started, float(cfg.pad_seconds))  # report: decides only when to return
    show("writing the release atomically")
    out = write_release(cfg, payload, rng.name, mech.release_kind, created_utc)
    show(f"release written: {out}")
    return out


def write_release(cfg: ReleaseConfig, release: Any, rng_name: str, kind: str | None = None,
                  created_utc: str | None = None) -> Path:
    """Write a release for ``cfg`` atomically with the writer of its release kind (``created_utc``: the plan time)."""
    from dpspark.release.writers import writer_for

    if kind is None:
        from dpspark.mechanisms.registry import mechanism_class

        kind = mechanism_class(cfg.mechanism).release_kind
    return writer_for(kind)(
        cfg.output, release=release, universe=cfg.universe, key_columns=list(cfg.key_columns),
        config=cfg.exact_parameters(), input_description=cfg.input.describe(), rng_name=rng_name,
        created_utc=created_utc,
    )
