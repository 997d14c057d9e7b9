"""A release's plan, built once: the certified mechanism, the engine, the data-free checks and the plan text.

:func:`plan_release` builds the mechanism from the spec (certifying its plan: the one construction of a
release) and picks the engine; :meth:`Plan.check` runs every data-free check once (output path, input
columns of a local file, the ledger's refusals). :func:`prepare` does both. The plan is then handed to the
dry run (:attr:`Plan.text`), the budget charge, the data pass and the writer (:mod:`dpspark.engine.runner`).
Nothing here reads a row or spends budget.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from dpspark.engine.checks import check_input_columns, check_ledger
from dpspark.engine.spec import ConfigError

if TYPE_CHECKING:
    from dpspark.engine.spec import ReleaseSpec

__all__ = ["Plan", "UnreadablePlanError", "build_mechanism", "check_plan_readable", "choose_engine", "plan_summary",
           "plan_release", "plan_text", "prepare"]


class UnreadablePlanError(ConfigError):
    """The plan would write a release its own reader refuses (checked before any spend)."""


def check_plan_readable(spec: "ReleaseSpec", mech: Any = None) -> None:
    """Refuse, before any spend, a plan whose manifest the release reader would reject (a config error).

    ``mech``: the spec's mechanism object when the caller already built it (else it is built here). The check
    itself (:mod:`dpspark.release.plan_check`) takes the plan as plain data and knows no family.
    """
    from dpspark.release.errors import ReleaseFormatError
    from dpspark.release.plan_check import PlannedRelease, check_readable

    if mech is None:
        from dpspark.mechanisms.registry import construct

        mech = construct(spec)
    try:
        plan = PlannedRelease(kind=mech.release_kind, max_units=spec.max_units, delta=spec.delta,
                              config=spec.exact_parameters(mech))
        check_readable(plan, mech)
    except (ReleaseFormatError, ValueError) as err:
        if isinstance(err, ConfigError):
            raise
        raise UnreadablePlanError(
            f"{spec.source}: the release this plan would write could not be read back ({err}); refused before "
            "any budget is spent - lower max_keys_per_unit, max_rows_per_key, max_units or epsilon") from None


def build_mechanism(spec: "ReleaseSpec") -> Any:
    """The registered mechanism of ``spec``, constructed (its plan certified) and checked readable.

    A spec no release can satisfy (e.g. a counting range too large to draw from) is a :class:`ConfigError`
    naming the config; so is a plan whose release its own reader would refuse.
    """
    from dpspark.errors import ParameterError
    from dpspark.mechanisms.base import MechanismSpecError
    from dpspark.mechanisms.registry import construct

    try:
        mech = construct(spec)  # the mechanism's data-free checks and certified plan
    except (MechanismSpecError, ParameterError) as err:
        raise ConfigError(f"{spec.source}: {err}") from None
    check_plan_readable(spec, mech)  # the release's own reader must take what this plan will write
    return mech


def choose_engine(spec: "ReleaseSpec", mech: Any, engine: str | None, have_spark: bool,
                  given_table: bool = False) -> str:
    """The backend of a release: "arrow" for a local file input unless Spark is given or asked for.

    ``mech`` is the constructed mechanism (its engine support: :func:`dpspark.engine.backend.supported_engines`);
    ``given_table``: the caller hands the Arrow engine its input (a table or path), so only that support is checked.
    """
    if engine is None and have_spark:
        return "spark"
    if engine not in (None, "arrow", "spark"):
        raise ConfigError(f"engine must be 'arrow' or 'spark', got {engine!r}")
    if engine == "spark":
        return engine
    from dpspark.engine.backend import supported_engines

    if "arrow" not in supported_engines(mech):
        if engine == "arrow":
            raise ConfigError(f"mechanism {spec.mechanism!r} runs on Spark only (the Arrow engine lacks its "
                              "aggregates); use engine 'spark'")
        return "spark"
    if given_table:
        return "arrow"
    from dpspark.engine.arrow.backend import is_local_path

    path = spec.input.path
    local = path is not None and is_local_path(str(path))
    if engine is None:
        return "arrow" if local else "spark"
    if have_spark or not local:
        raise ConfigError("engine 'arrow' reads a local file input only, without a Spark session or DataFrame; "
                          "use engine 'spark'")
    return engine


def plan_summary(spec: "ReleaseSpec", mech: Any) -> dict[str, Any]:
    """What a release will do, from public inputs only (``--dry-run``): plan, privacy, accuracy, passes."""
    return {
        "mechanism": spec.mechanism,
        "plan": mech.plan(),
        "privacy": mech.privacy_summary(),
        "accuracy": mech.accuracy_summary(),
        "passes": [s.aggregate for s in mech.stages()],
        "contribution": {
            "unit": spec.unit_column or "row",
            "max_units": spec.max_units,
            "max_keys_per_unit": spec.max_keys_per_unit,
            "max_rows_per_key": spec.max_rows_per_key,
            "on_excess_units": mech.excess_units_text(),
            "keyed": bool(spec.key_columns),
        },
        "output": str(spec.output),
    }


def plan_text(plan: dict[str, Any]) -> str:
    """The ``--dry-run`` plan in plain words (numbers readable; exact values stay in the JSON form)."""
    from dpspark.text.plan import plan_words

    return plan_words(plan)


@dataclass
class Plan:
    """One release, planned from public inputs only: built once, then checked, charged, run and written."""

    spec: "ReleaseSpec"
    #: the constructed mechanism (its plan certified on construction)
    mechanism: Any
    #: "arrow" or "spark"
    engine: str
    #: the plan time (the manifest's created_utc: it must not depend on the data's size)
    created_utc: str
    #: True when the caller hands the Arrow engine its input (a table or a path) instead of the spec's input
    given_table: bool = False
    checked: bool = field(default=False, compare=False)

    @cached_property
    def summary(self) -> dict[str, Any]:
        """The plan as a dict (:func:`plan_summary`), computed once."""
        return plan_summary(self.spec, self.mechanism)

    @property
    def text(self) -> str:
        """The plan in plain words (``--dry-run``)."""
        return plan_text(self.summary)

    @property
    def passes(self) -> int:
        """How many passes over the data the mechanism makes."""
        return len(self.mechanism.stages())

    def check(self, *, create_parent: bool = False) -> None:
        """Every data-free check, once: the output path, a local input's columns (metadata), the ledger.

        A published release is never overwritten; the first failure is raised as a
        :class:`~dpspark.errors.DPSparkError`. Nothing is read and nothing is spent. ``create_parent``: make
        the output's parent directory first (a release will be written there; a dry run writes nothing).
        """
        if self.checked:
            return
        from dpspark.release import check_output_path

        if create_parent:
            make_output_parent(self.spec)
        if create_parent or self.spec.output.absolute().parent.is_dir():
            check_output_path(self.spec.output)
        else:  # the dry run writes nothing: a missing parent is fine if the release could create it
            check_parent_creatable(self.spec)
        check_input_columns(self.spec, self.mechanism, None if self.given_table else self.engine)
        check_ledger(self.spec, self.mechanism)
        self.checked = True


def plan_release(spec: "ReleaseSpec", *, engine: str | None = None, have_spark: bool = False,
                 given_table: bool = False) -> Plan:
    """Build the plan without its checks (the dry run prints it first): the mechanism once, and the engine.

    ``given_table``: the caller can hand the Arrow engine its input (a table or a local path); the plan runs on
    Arrow when the mechanism can, on Spark otherwise (``engine`` None), or on ``engine`` as asked.
    """
    from dpspark.release.manifest import utc_now

    created_utc = utc_now()  # [userfix] created_utc is the plan time: it must not depend on the data's size
    mech = build_mechanism(spec)
    chosen = choose_engine(spec, mech, engine, have_spark, given_table=given_table)
    return Plan(spec, mech, chosen, created_utc, given_table=given_table and chosen == "arrow")


def prepare(spec: "ReleaseSpec", *, engine: str | None = None, have_spark: bool = False,
            given_table: bool = False) -> Plan:
    """The checked plan of one release (see the module docstring); ``engine`` None picks one.

    The output's parent directory is created first (the release is written there); a dry run, which writes
    nothing, uses :func:`plan_release` and :meth:`Plan.check` instead.
    """
    plan = plan_release(spec, engine=engine, have_spark=have_spark, given_table=given_table)
    plan.check(create_parent=True)
    return plan


def check_parent_creatable(spec: "ReleaseSpec") -> None:
    """The release's missing parent folders could be made: their nearest existing ancestor is a writable folder."""
    import errno
    import os

    from dpspark.release import ReleaseWriteError

    ancestor = spec.output.absolute().parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir() or not os.access(ancestor, os.W_OK | os.X_OK):
        raise ReleaseWriteError(errno.EACCES, f"{spec.output.parent}: cannot create the release's parent directory "
                                    f"({ancestor} is not a writable directory)")


def make_output_parent(spec: "ReleaseSpec") -> None:
    """Create the release's parent directory; a failure is one clean :class:`ReleaseWriteError` line."""
    from dpspark.release import ReleaseWriteError

    try:
        spec.output.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:  # a user-given path: one clean line, like every other user-facing error
        raise ReleaseWriteError(err.errno, f"{spec.output.parent}: cannot create the directory ({err.strerror})") from None
