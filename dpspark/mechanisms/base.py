"""The mechanism protocol: built from public parameters only, it plans, states its privacy, then runs.

A mechanism object is constructed from a :class:`~dpspark.engine.spec.ReleaseSpec` (validated public
parameters; never data). Before any data is read it answers:

* :meth:`Mechanism.plan` - every derived parameter (p/q, gamma, tau, m, l, the budget split), each
  certified against the requested budget (constructing the object already certified it);
* :meth:`Mechanism.privacy_summary` / :meth:`Mechanism.accuracy_summary` - what the release will state;
* :meth:`Mechanism.stages` - which aggregates it needs, in how many passes, and the stage type of each:
  the engines that can run it are derived from those types
  (:func:`~dpspark.engine.backend.supported_engines`), and so is the Spark input cache.

Then :meth:`Mechanism.run` asks a :class:`~dpspark.engine.backend.Backend` to ``compute`` its stages
(Spark or Arrow, never asking which; a multi-pass mechanism asks for the next stage after seeing its
previous noisy, public output) and returns a release payload that the writer of its :attr:`release_kind` stores.

Adding a mechanism is one module with a subclass plus one :func:`~dpspark.mechanisms.registry.register`
call: the job, the config validator, the writers, the readers, lookup and the CLI dispatch by name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar

from dpspark.engine.stages import CountsStage
from dpspark.errors import DPSparkError

if TYPE_CHECKING:
    from dpspark.engine.backend import Backend
    from dpspark.engine.spec import ReleaseSpec
    from dpspark.rng import RandomSource

Progress = Callable[[str], None]


class MechanismSpecError(DPSparkError, ValueError):
    """Public parameters that no release of this mechanism can satisfy (message names fields, never data)."""


@dataclass(frozen=True)
class StageInfo:
    """One pass over the data, as :meth:`Mechanism.stages` describes it before any data is read.

    ``stage``: the stage type the pass hands to ``Backend.compute`` (engine support derives from it);
    ``reads_input``: whether the pass reads the input itself, or units the mechanism prepared in an earlier
    pass (a Spark input read twice or more is cached for the release).
    """

    name: str
    aggregate: str
    depends_on_previous: bool = False
    stage: type = CountsStage
    reads_input: bool = True


class Mechanism(ABC):
    """Base of every registered mechanism (see the module docstring)."""

    #: the config's ``privacy.mechanism`` name
    name: ClassVar[str]
    #: the release kind whose writer and reader store this mechanism's payload
    release_kind: ClassVar[str]
    #: "required", "forbidden" or "optional": whether ``privacy.delta`` applies
    delta: ClassVar[str] = "forbidden"
    #: extra ``[privacy]`` fields this mechanism accepts, with their defaults
    options: ClassVar[Mapping[str, Any]] = {}
    #: index width in bytes the release kind stores (16: |X| <= 2^128)
    max_index_width: ClassVar[int] = 16
    #: whether a unit may add more than one row to a key's count (privacy.max_rows_per_key > 1)
    supports_rows_per_key: ClassVar[bool] = False
    #: True when no unit is ever removed (every unit is read; estimates divide by a noisy count of the units):
    #: then on_excess_units = "refuse" would be stated but never acted on, and is refused before any spend
    reads_every_unit: ClassVar[bool] = False
    #: whether the release is keyed: [keys] and [universe] are required (histograms), or refused (answers, samples)
    needs_keys: ClassVar[bool] = True
    #: whether ``privacy.max_units`` may be left out: the guarantee holds under add/remove of one unit whatever
    #: the number of units (groups, answers), so the release runs at the fixed public cap
    #: :data:`dpspark.privacy.relations.UNITS_CAP`; False: the family's noise or estimates are calibrated on n
    units_optional: ClassVar[bool] = False
    #: the mechanism's own config sections and their parsers (e.g. {"queries": parse_queries})
    sections: ClassVar[Mapping[str, Any]] = {}

    def __init__(self, spec: "ReleaseSpec") -> None:
        self.spec = spec
        if spec.universe is not None and spec.universe.index_width > self.max_index_width:
            raise MechanismSpecError(self.wide_universe_message())
        if self.reads_every_unit and spec.on_excess_units == "refuse":  # would be stated, never acted on
            raise MechanismSpecError(
                f"on_excess_units = \"refuse\" does not apply to {self.name!r}: no unit is removed (every unit is "
                "read and the estimates divide by a noisy count of the units read, not by max_units); leave "
                "on_excess_units out")
        if spec.max_rows_per_key > 1 and not self.supports_rows_per_key:
            raise MechanismSpecError(
                f"mechanism {self.name!r} does not support privacy.max_rows_per_key > 1: "
                f"{self.rows_per_key_reason()}"
            )

    # --- public, data-free ------------------------------------------------------------------
    @classmethod
    def universe_limit_text(cls) -> str:
        """The largest universe this mechanism takes, in words (string/bytes keys: the largest max_bytes)."""
        bits = 8 * cls.max_index_width
        text = (f"mechanism {cls.name!r} takes universes of up to 2^{bits} keys "
                f"(string/bytes keys: max_bytes <= {cls.max_index_width - 1})")
        if bits < 256:
            text += "; only mechanism 'compact' takes larger ones, up to 2^256 keys (max_bytes <= 31)"
        return text

    @classmethod
    def wide_universe_message(cls) -> str:
        """The refusal for a universe wider than this mechanism's release kind stores."""
        return f"the universe has more than 2^{8 * cls.max_index_width} keys; {cls.universe_limit_text()}"

    def rows_per_key_reason(self) -> str:
        """Why this mechanism cannot take a per-key contribution above one (shown in the refusal)."""
        return "its privacy proof needs each unit to move a count by at most one"

    @abstractmethod
    def plan(self) -> dict[str, Any]:
        """Every derived public parameter, JSON-ready and exact (for ``--dry-run`` and the manifest)."""

    @abstractmethod
    def privacy_summary(self) -> dict[str, Any]:
        """The privacy the release will state, under add/remove, as exact strings (data-free)."""

    @abstractmethod
    def accuracy_summary(self) -> dict[str, Any]:
        """The error bars the release will state (data-free)."""

    def noise_law(self) -> dict[str, str] | None:
        """The implemented noise law of a neighbouring pair when it is known exactly (a
        :func:`dpspark.privacy.pld.parse_law` mapping), recorded with the ledger's charge for its PLD statement;
        None (the default): the release is composed by its charge (docs/accounting.md)."""
        return None

    def stages(self) -> list[StageInfo]:
        """The passes over the data this mechanism makes (default: one count per index)."""
        return [StageInfo("counts", "count per universe index, after contribution bounding", stage=CountsStage)]

    def excess_units_text(self) -> str:
        """What this release does with more than n units, in words (the dry-run plan shows it; ``dpspark inspect``
        says the same, from the family's declaration when it has one)."""
        from dpspark.mechanisms.declared import declared_excess_units

        words = declared_excess_units(self.name) if self.spec.on_excess_units == "truncate" else None
        return self.spec.on_excess_units if words is None else words

    def input_columns(self) -> tuple[str, ...]:
        """The input columns this release reads (checked against a local file's schema before any spend)."""
        unit = (self.spec.unit_column,) if self.spec.unit_column else ()
        return tuple(self.spec.key_columns) + unit

    def input_schema_problem(self, schema: Any, *, text_input: bool = False) -> str | None:
        """Why an input with this pyarrow schema cannot be read (None: it can); checked before any spend.

        Metadata only. ``text_input``: the types come from the data themselves (CSV, JSON lines), so a string
        column may stand for numbers (read by :func:`dpspark.engine.numeric.arrow_numeric`, unparseable ->
        NULL); otherwise the schema is declared metadata and a column of the wrong type is refused here.
        """
        return None

    def exact_options(self) -> dict[str, Any]:
        """This mechanism's own ``[privacy]`` options as recorded in the manifest's config section."""
        return {k: _exact_value(self.spec.options.get(k, default)) for k, default in self.options.items()}

    # --- with data --------------------------------------------------------------------------
    @abstractmethod
    def run(self, backend: "Backend", rng: "RandomSource", progress: Progress) -> Any:
        """Compute the stages on ``backend``, draw the noise once, return the release payload."""


def _exact_value(value: Any) -> Any:
    if isinstance(value, Fraction):
        return str(value)
    return value
