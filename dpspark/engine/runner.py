"""The release job: spec -> plan (built once) -> budget -> stages on a backend -> exact driver-side noise -> release.

One code path serves ``spark-submit jobs/release.py --config X``, ``dpspark release --config X``
and :class:`dpspark.Session`. Order of operations:

1. :func:`prepare` builds the plan once (:mod:`dpspark.engine.plan`): the mechanism is constructed and its
   plan certified, the engine chosen, and every data-free check run (output path, input columns, ledger),
   before any engine starts and before any budget is spent;
2. the budget is charged (the caller's charge, :class:`dpspark.api.charge.Charge`; the ledger alone
   without one) and never refunded;
3. the mechanism runs: it asks the backend for its stages (counts per index, ...), and draws noise once,
   on the driver, from the CSPRNG - a retried Spark task can never produce a second, different noisy answer;
4. the release is written atomically by the writer of the mechanism's release kind.

Progress lines name stages and elapsed time only: never a count, a number of distinct keys, or which branch
a mechanism took. Nothing here knows a mechanism by name: :mod:`dpspark.mechanisms.registry` does.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from dpspark.engine.backend import CuratorError
from dpspark.engine.checks import (check_input_columns, check_input_schema, check_ledger, check_table_schema,
                                   frame_schema, is_text_format)
from dpspark.engine.plan import Plan, build_mechanism, plan_release, plan_summary, plan_text, prepare
from dpspark.engine.plan import choose_engine as _choose_engine
from dpspark.engine.progress import HEARTBEAT_SECONDS, Progress, StderrProgress, close_progress
from dpspark.engine.timing import pad_until
from dpspark.rng import RandomSource, default_source

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from dpspark.engine.spec import ReleaseSpec
    from dpspark.noise.counting_base import CountingMechanism

#: a budget charge: takes the checked plan, spends, returns the ledger's (ledger, record) or None
Charge = Callable[[Plan], Any]

__all__ = [
    "Charge", "CuratorError", "Plan", "check_input_columns", "check_input_schema", "check_ledger",
    "check_table_schema", "choose_engine", "count_mechanism", "describe_plan", "frame_schema", "is_text_format",
    "job_spark_conf", "plan_release", "plan_text", "prepare", "run_mechanism", "run_release",
    "spend_budget", "spent_kept_note", "stderr_progress", "write_release",
]


def stderr_progress(prefix: str = "dpspark", heartbeat: float | None = HEARTBEAT_SECONDS) -> StderrProgress:
    """A progress printer with elapsed time, to stderr, with a heartbeat after ``heartbeat`` s of silence
    (:class:`~dpspark.engine.progress.StderrProgress`; its ``close()`` stops the heartbeat)."""
    return StderrProgress(prefix, heartbeat=heartbeat)


# --- single-step helpers for callers that hold a spec, not a plan (tests, the audit) ---------------------------
def count_mechanism(cfg: "ReleaseSpec") -> "CountingMechanism":
    """The counting mechanism a histogram release spec uses (exact parameters, public inputs only)."""
    mech = build_mechanism(cfg)
    plan = getattr(mech, "compact_plan", None)
    return plan.mechanism if plan is not None else mech.counting


def compact_plan(cfg: "ReleaseSpec") -> Any:
    """The public plan (M, m, G, l) of a compact release spec."""
    return build_mechanism(cfg).compact_plan


def run_mechanism(cfg: "ReleaseSpec", indices: list[int], counts: list[int], rng: RandomSource,
                  progress: Progress) -> Any:
    """Draw a histogram release on the driver from exact sparse counts (0-based indexes)."""
    return build_mechanism(cfg).release_from_counts(indices, counts, rng, progress)


def describe_plan(cfg: "ReleaseSpec") -> dict[str, Any]:
    """What a release will do, from public inputs only (``--dry-run``): plan, privacy, accuracy, passes."""
    return plan_summary(cfg, build_mechanism(cfg))


def choose_engine(cfg: "ReleaseSpec", engine: str | None, have_spark: bool, given_table: bool = False) -> str:
    """The engine :func:`prepare` would pick for ``cfg`` (see :func:`dpspark.engine.plan.choose_engine`)."""
    return _choose_engine(cfg, build_mechanism(cfg), engine, have_spark, given_table)


# --- the budget ----------------------------------------------------------------------------------------------
def spend_budget(cfg: "ReleaseSpec", mech: Any = None, principal: str | None = None) -> Any:
    """Commit the release's charge to the ledger before any data is read; None without [budget].

    The entry records the configured (epsilon, delta), the release's exact rho when ``mech`` states rho-zCDP
    (:func:`dpspark.ledger.statement.spend_rho`), its noise law when ``mech`` states one exactly
    (:func:`dpspark.ledger.statement.spend_law`), the principal (``principal``, else $DPSPARK_PRINCIPAL) and a
    fresh 128-bit release id from the system CSPRNG, which the manifest states (``dpspark verify --ledger``).
    """
    if cfg.budget is None:
        return None
    from dpspark.ledger import Ledger, resolve_principal
    from dpspark.ledger.statement import spend_law, spend_rho
    from dpspark.rng import SystemRandom

    ledger = Ledger(cfg.budget.ledger)
    # The configured epsilon bounds the exact one (the mechanism's plan certified it): ln(p/q) + bias <= epsilon.
    # The config's totals and the privacy unit are checked by the ledger in the spend's transaction.
    record = ledger.spend(
        cfg.budget.dataset, cfg.epsilon, cfg.delta or 0, cfg.mechanism, str(cfg.output),
        unit=cfg.unit_column, config_total_epsilon=cfg.budget.total_epsilon,
        config_total_delta=cfg.budget.total_delta, max_units=cfg.max_units, rho=spend_rho(cfg, mech),
        principal=resolve_principal(principal), release_id=f"{SystemRandom().bits(128):032x}",
        law=spend_law(mech),  # the implemented noise law, when the family states it exactly (PLD statement)
    )
    return ledger, record


def spent_kept_note(record: Any) -> str:
    """What a failure after the spend means for the budget (the spend is kept: never refunded)."""
    return (
        f"The privacy budget of this release (epsilon = {record.epsilon}, delta = {record.delta} on dataset "
        f"{record.dataset_id!r}) stays spent: it was committed before the data was read and is never refunded "
        f"(ledger entry {record.id} is marked failed)."
    )


def job_spark_conf(cfg: "ReleaseSpec") -> dict[str, str]:
    """Spark settings of the embedded session: the config's [spark] table.

    Spark's console progress bar stays off (:data:`dpspark.engine.spark.local.DEFAULT_CONF`): it once showed
    that a long Spark job was alive; dpspark's own lines ("pass K of N", the heartbeat) do that now, in words.
    """
    return dict(cfg.spark_conf)


# --- the release ---------------------------------------------------------------------------------------------
def run_release(
    cfg: "ReleaseSpec | Plan",
    *,
    spark: "SparkSession | None" = None,
    rng: RandomSource | None = None,
    progress: Progress | None = None,
    data: "DataFrame | None" = None,
    engine: str | None = None,
    arrow_source: Any = None,
    charge: Charge | None = None,
    show_data_errors: bool = False,
    text_input: bool | None = None,
) -> Path:
    """Run a whole release; returns the path of the published release directory.

    ``cfg``: a spec (planned here by :func:`prepare`) or a plan :func:`prepare` built. ``data`` is an
    already-loaded Spark DataFrame (the :class:`dpspark.Session` path); otherwise the spec's input is read with
    ``spark`` (an embedded local session when None). ``engine``: "arrow" counts a local file input with pyarrow
    on this machine (no JVM), "spark" on Spark; None picks "arrow" for a local file input when neither ``spark``
    nor ``data`` is given, else "spark". ``arrow_source`` (a pyarrow Table or a local path) is counted on the
    Arrow engine instead of the spec's input (the :class:`dpspark.Session` path for pandas, Arrow and file inputs).
    ``charge``: the budget charge (:class:`dpspark.api.charge.Charge`: session budget and ledger together);
    None spends the ledger alone (:func:`spend_budget`). ``text_input``: ``data``'s column types come from the
    data (a DataFrame over CSV/JSON files), so text may stand for numbers; derived from the config's input
    format when this function reads the input itself.

    Everything that needs no data - the plan, the output path, the ledger and session budgets, the input's
    schema (metadata) - is checked before the budget is spent. The data pass itself runs inside
    :func:`~dpspark.engine.data_pass.run_data_pass`: any failure there is one fixed, value-free error
    (``show_data_errors``: the curator opts in to the details), and the spend stays.
    """
    if progress is None:  # our own printer: its heartbeat stops when the release returns or fails
        printer = stderr_progress()
        try:
            return run_release(cfg, spark=spark, rng=rng, progress=printer, data=data, engine=engine,
                               arrow_source=arrow_source, charge=charge, show_data_errors=show_data_errors,
                               text_input=text_input)
        finally:
            close_progress(printer)
    show = progress
    rng = rng or default_source()
    plan = cfg if isinstance(cfg, Plan) else prepare(
        cfg, engine="arrow" if arrow_source is not None else engine, have_spark=spark is not None or data is not None,
        given_table=arrow_source is not None)
    spec = plan.spec
    if data is None and plan.engine != "arrow":
        text_input = is_text_format(spec.input.format, spec.input.path)
        from dpspark.engine.spark.counts import read_input  # a DataFrame over the input: schema only, nothing read

        if spark is None:
            from dpspark.engine.spark.local import local_session, started_session

            spark = started_session(show, "local Spark", lambda: local_session(
                "dpspark-release", "local[*]", conf=job_spark_conf(spec)))
        data = read_input(spark, spec.input)
    if data is not None:
        check_input_schema(plan.mechanism, frame_schema(data), "the input DataFrame", text_input=bool(text_input))
    elif arrow_source is not None:
        check_table_schema(plan.mechanism, arrow_source)
    spent = charge(plan) if charge is not None else spend_budget(spec, plan.mechanism)  # before any read; no refund
    try:
        from dpspark.release.header import release_identity

        with release_identity(None if spent is None else spent[1].release_id):  # the manifest names its charge
            out = _run(plan, data, rng, show, arrow_source, show_data_errors)
    except BaseException as err:
        if spent is not None:
            spent[0].mark_failed(spent[1].id)
            err.add_note(spent_kept_note(spent[1]))  # [userfix] the user must know the spend is not refunded
        raise
    if spent is not None:
        spent[0].mark_released(spent[1].id)
    return out


def _run(plan: Plan, data: "DataFrame | None", rng: RandomSource, show: Progress, arrow_source: Any = None,
             show_data_errors: bool = False) -> Path:
    """The data pass, the driver's noise, the optional padding and the atomic write of a charged plan."""
    from dpspark.engine.backend import open_backend
    from dpspark.engine.data_pass import run_data_pass

    spec, mech = plan.spec, plan.mechanism
    started = time.monotonic()

    def noise_progress(msg: str) -> None:
        show(msg)
        if msg == "counts collected on the driver":
            show(f"drawing noise on the driver ({spec.mechanism})")

    def read_and_draw() -> tuple[Any, float | None]:
        given = arrow_source is not None  # a table or path handed over: none of the spec's format or options
        source = arrow_source if given else (str(spec.input.path) if plan.engine == "arrow" else None)
        with open_backend(plan.engine, rng=rng, progress=noise_progress, mechanism=mech, data=data,
                          source=source, input_format=None if given else spec.input.format,
                          input_options=None if given else spec.input.options) as backend:
            payload = mech.run(backend, rng, noise_progress)
            return payload, backend.last_pass_end

    payload, last_pass_end = run_data_pass(read_and_draw, show_data_errors=show_data_errors)
    if spec.pad_seconds is not None:  # the noise step's duration must not reveal |S| or the draws (docs/balcer-vadhan-notes.md §E10)
        # the clock starts when the backend's last data pass ended: what follows is the driver's noise step
        pad_until(started if last_pass_end is None else last_pass_end, float(spec.pad_seconds))  # report: decides only when to return
    show("writing the release atomically")
    out = write_release(spec, payload, rng.name, mech.release_kind, plan.created_utc, mech=mech)
    show(f"release written: {out}")
    return out


def write_release(cfg: "ReleaseSpec", release: Any, rng_name: str, kind: str | None = None,
                  created_utc: str | None = None, *, mech: Any = None) -> Path:
    """Write a release for ``cfg`` atomically with the writer of its release kind (``created_utc``: the plan time).

    ``mech``: the plan's mechanism (its exact options go into the manifest); built here when not given and
    the mechanism has options.
    """
    from dpspark.release.kinds import writer_for

    if mech is None:
        from dpspark.mechanisms.registry import mechanism_class

        cls = mechanism_class(cfg.mechanism)
        kind = kind or cls.release_kind
        mech = cls(cfg) if cls.options else None
    return writer_for(kind or mech.release_kind)(
        cfg.output, release=release, universe=cfg.universe, key_columns=list(cfg.key_columns),
        config=cfg.exact_parameters(mech), input_description=cfg.input.describe(), rng_name=rng_name,
        created_utc=created_utc,
    )
