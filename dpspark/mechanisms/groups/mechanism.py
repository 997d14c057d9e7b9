"""The ``groups`` mechanism: count, sum, mean, variance and quantiles per group (docs/groups.md).

Built from the spec, data-free: the key set (public keys listed in ``[groups]`` or a keys file, or a
``[universe]`` to select keys privately from), the aggregates and the plan of
:func:`~dpspark.mechanisms.groups.algorithm.plan_groups` (every law calibrated and certified against the
configured budget). **Parallel composition over disjoint groups**: a unit changes at most
k = ``max_groups_per_unit`` groups and every law is calibrated on one statistic's vector over all groups
with k coordinates changed, so the budget is charged once per noisy statistic (aggregates that share a statistic
share its charge: a sum centred on the released count), whatever the number of groups; the statistics compose
sequentially (they read the same rows); private selection thresholds the released count (no epsilon of its own)
or, without a pure count, takes its own share.

``run`` computes one :class:`~dpspark.mechanisms.groups.stage.GroupsStage` (one pass, on either engine) and
calls :func:`~dpspark.mechanisms.groups.algorithm.release_planned`; the release is written by the statements
writer (:mod:`dpspark.mechanisms.groups.writer`).
"""

from __future__ import annotations

from fractions import Fraction
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from dpspark.mechanisms.base import Mechanism, MechanismSpecError, Progress, StageInfo
from dpspark.mechanisms.groups.aggregates import GroupsError, Kind
from dpspark.mechanisms.groups.writer import table_columns
from dpspark.mechanisms.groups.config import (AggregatesSection, GroupsSection, key_rows, parse_aggregates_section,
                                              parse_groups_section, parse_universe_section)

if TYPE_CHECKING:
    from dpspark.engine.backend import Backend
    from dpspark.mechanisms.groups.algorithm import GroupsPlan
    from dpspark.rng import RandomSource
    from dpspark.universe import Universe

#: privacy.beta when the config does not set it (groups.beta then decides)
DEFAULT_BETA = Fraction(1, 20)



def read_keys_file(path: Path, by: tuple[str, ...]) -> tuple[tuple[Any, ...], ...]:
    """The public key rows of a CSV or Parquet file whose columns include ``by`` (public: read at plan time)."""
    import pyarrow as pa

    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            import pyarrow.parquet as pq

            table = pq.read_table(path)
        else:
            from pyarrow import csv

            table = csv.read_csv(path)
    except (OSError, pa.ArrowException) as err:
        raise GroupsError(f"groups.keys_file: cannot read {path} ({type(err).__name__})") from None
    missing = [c for c in by if c not in table.column_names]
    if missing:
        raise GroupsError(f"groups.keys_file: {path} has no column(s) {', '.join(map(repr, missing))}")
    cols = [table.column(c).to_pylist() for c in by]
    return key_rows([tuple(r) for r in zip(*cols)], len(by), "groups.keys_file")


def public_key_universe(by: tuple[str, ...], keys: tuple[tuple[Any, ...], ...]) -> "Universe":
    """The key universe of public keys: the listed values per column (a tuple of them for several columns)."""
    from dpspark.universe import CategoricalUniverse, TupleUniverse

    parts = [CategoricalUniverse(tuple(dict.fromkeys(r[j] for r in keys)), column=c) for j, c in enumerate(by)]
    return parts[0] if len(parts) == 1 else TupleUniverse(tuple(parts))


class GroupsMechanism(Mechanism):
    """Grouped aggregates over public or privately selected keys (module docstring)."""

    name: ClassVar[str] = "groups"
    release_kind: ClassVar[str] = "groups"
    delta: ClassVar[str] = "optional"
    needs_keys: ClassVar[bool] = False
    sections: ClassVar[dict[str, Any]] = {"groups": parse_groups_section, "aggregates": parse_aggregates_section,
                                          "universe": parse_universe_section}
    #: own sections a config may leave out (``[universe]``: private key selection only)
    optional_sections: ClassVar[tuple[str, ...]] = ("universe",)

    def __init__(self, spec: Any) -> None:
        super().__init__(spec)
        try:
            self.groups: GroupsSection = parse_groups_section(spec.sections.get("groups"))
            self.aggs: AggregatesSection = parse_aggregates_section(spec.sections.get("aggregates"))
        except GroupsError as err:
            raise MechanismSpecError(str(err)) from None
        g = self.groups
        if spec.max_keys_per_unit > 1:
            raise MechanismSpecError("privacy.max_keys_per_unit does not apply to groups; set "
                                     "groups.max_groups_per_unit")
        if spec.on_excess_units != "truncate":
            raise MechanismSpecError("groups keeps at most max_units units by keyed hash: privacy.on_excess_units "
                                     "must be \"truncate\"")
        if spec.unit_column is None and (g.bounds.k > 1 or g.bounds.c > 1):
            raise MechanismSpecError("groups.max_groups_per_unit and groups.max_rows_per_group above 1 need "
                                     "privacy.unit_column (without it every row is its own unit)")
        if spec.unit_column is not None and spec.unit_column in g.by:
            raise MechanismSpecError("privacy.unit_column must not be one of groups.by")
        if spec.beta != DEFAULT_BETA and g.beta is not None and g.beta != spec.beta:
            raise MechanismSpecError("privacy.beta and groups.beta differ: give one")
        self.beta = g.beta if g.beta is not None else spec.beta
        columns = table_columns(g.by, [a.name for a in self.aggs.aggregates])
        dup = sorted({c for c in columns if columns.count(c) > 1})
        if dup:
            raise MechanismSpecError(f"the release table would have column(s) {', '.join(map(repr, dup))} twice: "
                                     "rename an aggregate (its columns are <name>, <name>_float, <name>_error, ...)")
        from dpspark.mechanisms.groups.join import parse_join

        try:  # the public table is read now (public: not the data); its keys must be unique
            self.join = parse_join(g.join, Path(spec.source).parent)
        except GroupsError as err:
            raise MechanismSpecError(str(err)) from None
        self.key_rows, self.universe = self._keys(spec)
        try:
            self.planned: "GroupsPlan" = self._plan()
        except GroupsError as err:
            raise MechanismSpecError(str(err)) from None

    # --- keys -------------------------------------------------------------------------------
    def _keys(self, spec: Any) -> tuple[tuple[tuple[Any, ...], ...] | None, "Universe"]:
        """(public key rows or None, the key universe the stage encodes with)."""
        from dpspark.universe import UniverseConfigError, universe_from_dict

        g, uspec = self.groups, spec.sections.get("universe")
        base = Path(spec.source).parent
        if g.public_keys:
            if uspec is not None:
                raise MechanismSpecError("[universe] applies to private key selection only; public keys "
                                         "(groups.keys or groups.keys_file) are their own universe: remove it")
            try:
                rows = g.keys if g.keys is not None else read_keys_file(base / str(g.keys_file), g.by)
                return rows, public_key_universe(g.by, rows)
            except (GroupsError, UniverseConfigError) as err:
                raise MechanismSpecError(str(err)) from None
        if uspec is None:
            raise MechanismSpecError("groups needs public keys (groups.keys or groups.keys_file) or a [universe] "
                                     "to select keys from privately")
        if spec.delta is None:
            raise MechanismSpecError("private key selection needs privacy.delta (approximate DP)")
        try:
            universe = universe_from_dict(parse_universe_section(uspec), base_dir=base)
        except (GroupsError, UniverseConfigError) as err:
            raise MechanismSpecError(f"[universe] {err}") from None
        if not universe.is_bijection:
            raise MechanismSpecError("[universe] a hashed universe cannot name the released keys; use a string, "
                                     "bytes, int_range, categorical or tuple universe")
        if len(universe.parts) != len(g.by):
            raise MechanismSpecError(f"groups.by names {len(g.by)} column(s) but the universe has "
                                     f"{len(universe.parts)} component(s)")
        return None, universe

    @cached_property
    def public_indexes(self) -> list[int] | None:
        """The 0-based universe index of every public key, in the listed order (None: private selection)."""
        if self.key_rows is None:
            return None
        one = len(self.groups.by) == 1
        return [self.universe.encode(r[0] if one else r) - 1 for r in self.key_rows]

    def key_of(self, index: int) -> tuple[Any, ...]:
        """The key row with this 0-based universe index."""
        key = self.universe.decode(index + 1)
        return tuple(key) if len(self.groups.by) > 1 else (key,)

    # --- plan -------------------------------------------------------------------------------
    def _budget(self) -> dict[str, Any]:
        spec = self.spec
        return {"epsilon": spec.epsilon} if spec.delta is None else {"epsilon": spec.epsilon, "delta": spec.delta}

    def _plan(self) -> "GroupsPlan":
        from dpspark.mechanisms.groups.algorithm import plan_groups

        return plan_groups(self.aggs.aggregates, self._budget(), max_units=self.spec.max_units,
                           bounds=self.groups.bounds, private_keys=self.key_rows is None, noise=self.groups.noise,
                           beta=self.beta, nulls=dict(self.aggs.nulls), selection=self.groups.selection)

    def plan(self) -> dict[str, Any]:
        desc = self.planned.describe()
        rules = dict(self.aggs.nulls)
        for row in desc["aggregates"]:
            if row.get("column") is not None:
                row["nulls"] = rules[row["column"]].describe()
        # a filter and a join are stated when given (absent otherwise, so a release without them reads as before)
        given = {**({"filter": self.groups.filter.text} if self.groups.filter is not None else {}),
                 **({"join": self.join.describe()} if self.join is not None else {})}
        return {"mechanism": self.name, "by": list(self.groups.by), **given,
                "keys": "public" if self.key_rows is not None else "private selection",
                "groups_listed": None if self.key_rows is None else len(self.key_rows),
                "noise_requested": self.groups.noise, **desc}

    def statement(self) -> Any:
        """The release's privacy statement under AddRemove(max_units) (the plan's composition)."""
        return self.planned.statement

    def planned_statements(self) -> Any:
        """Every statement the release will carry (add/remove, replacement by group privacy, conversions)."""
        from dpspark.release.statements import standard_statements

        return standard_statements(self.planned.statement, delta=self.spec.delta)

    def privacy_summary(self) -> dict[str, Any]:
        from dpspark.mechanisms.groups.threshold import ThresholdSelection

        plan = self.planned
        parts = len(plan.parts) + sum(1 for a in self.aggs.aggregates if a.kind is Kind.QUANTILE)
        selection = ""
        if self.key_rows is None:
            selection = ("; private key selection thresholds the released noisy count (delta only, no epsilon)"
                         if isinstance(plan.selection, ThresholdSelection) else
                         "; private key selection takes its own share")
        return {"statement": plan.statement.text(), "epsilon_requested": str(self.spec.epsilon),
                "delta_requested": None if self.spec.delta is None else str(self.spec.delta),
                "composition": (f"charged once per aggregate's noisy statistic ({parts} for "
                                f"{len(self.aggs.aggregates)} aggregate(s): shared statistics are charged once), "
                                f"not per group: a unit changes at most k = {self.groups.bounds.k} group(s) and "
                                "each law is calibrated on all groups at once (parallel composition over disjoint "
                                "groups); the statistics compose sequentially" + selection)}

    def accuracy_summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"beta": str(self.beta)}
        for agg in self.aggs.aggregates:
            err = self.planned.errors[agg.name]
            if agg.kind is Kind.QUANTILE:
                out[agg.name] = f"rank error <= {err} rows (rows below / above the released point's cell)"
            elif agg.kind in (Kind.COUNT, Kind.SUM):
                out[agg.name] = f"+-{err[0] / (1 if agg.kind is Kind.COUNT else agg.scale)} per group"
            else:
                out[agg.name] = "per group, from the noisy count (conditional: the group has >= 1 row)"
        return out

    def accuracy(self) -> Any:
        """The accuracy statement (per-group bars of counts, sums and quantiles; means and variances in the table)."""
        from dpspark.mechanisms.groups.writer import accuracy_statement

        return accuracy_statement(self.planned)

    def input_columns(self) -> tuple[str, ...]:
        """The key columns, the value columns and the unit column."""
        cols = [*self.groups.by, *(a.column for a in self.aggs.aggregates if a.column is not None)]
        cols += self.groups.filter.columns() if self.groups.filter is not None else ()
        if self.join is not None:  # the join columns come from the input, the public table's own from it
            cols = [*self.join.on, *(c for c in cols if c not in self.join.added)]
        return tuple(dict.fromkeys(cols)) + super().input_columns()

    def input_schema_problem(self, schema: Any, *, text_input: bool = False) -> str | None:
        """Key columns must have the keys' type, value columns must read as numbers (metadata only)."""
        from dpspark.engine.numeric import numeric_type_problem
        from dpspark.universe.keytypes import key_type_problem

        if self.join is not None:  # the stage reads the joined rows: check their schema
            problem = self.join.schema_problem(schema)
            if problem:
                return problem
            schema = self.join.joined_schema(schema)
        problem = key_type_problem(self.universe, self.groups.by, schema, text_input=text_input)
        if problem:  # e.g. int keys on a string column never match: a release of pure noise, refused here
            return f"groups.{'keys' if self.groups.public_keys else 'by'}: {problem}"
        for agg in self.aggs.aggregates:
            if agg.column is None:
                continue
            if agg.column not in set(schema.names):
                return f"aggregate {agg.name!r}: the input has no column {agg.column!r}"
            problem = numeric_type_problem(schema.field(agg.column).type, agg.column, text_input=text_input)
            if problem:
                return f"aggregate {agg.name!r}: {problem}"
        if self.groups.filter is not None:  # the filter's types, as an answers query's (metadata only)
            problem = self.groups.filter.type_problem(schema, text_input=text_input)
            if problem:
                return f"groups.filter {self.groups.filter.text!r}: {problem}"
        return None

    def excess_units_text(self) -> str:
        return "truncate: keep max_units units by keyed hash of the unit id"

    # --- stages and run ---------------------------------------------------------------------
    def stage(self) -> Any:
        """The one pass: exact per-group statistics after contribution bounding."""
        from dpspark.mechanisms.groups.stage import GroupsStage

        spec, g = self.spec, self.groups
        return GroupsStage(key_columns=g.by, universe=self.universe, unit_column=spec.unit_column,
                           max_units=spec.max_units, max_groups_per_unit=g.bounds.k,
                           max_rows_per_group=g.bounds.c, aggregates=tuple(self.aggs.aggregates),
                           out_of_universe=spec.out_of_universe, count_units=self.key_rows is None,
                           unit_weights=self._unit_weights(),
                           nulls=tuple(self.aggs.nulls), filter=g.filter, join=self.join)

    def _unit_weights(self) -> tuple[int, ...]:
        """The weighted selection's w(1..k) (public), or () when keys are selected on plain unit counts."""
        from dpspark.mechanisms.groups.weighted_selection import WeightedSelection

        sel = self.planned.selection
        return tuple(sel.w) if isinstance(sel, WeightedSelection) else ()

    def stages(self) -> list[StageInfo]:
        from dpspark.mechanisms.groups.stage import GroupsStage

        return [StageInfo("groups", f"one pass: exact per-group statistics of {len(self.aggs.aggregates)} "
                                    "aggregate(s) after contribution bounding", stage=GroupsStage)]

    def release_from_stats(self, groups: Any, rng: "RandomSource") -> Any:
        """The noisy release from the engine's per-group statistics (keys as 0-based universe indexes)."""
        from dpspark.mechanisms.groups.algorithm import release_planned

        from dpspark.mechanisms.groups.columns import GroupColumns

        wanted = self.public_indexes
        if wanted is not None:  # several key columns: the stage's universe is the product of the listed values
            listed = set(wanted)
            keys = groups.keys if isinstance(groups, GroupColumns) else [s.key for s in groups]
            if not all(k in listed for k in keys):
                groups = [s for s in groups if s.key in listed]
        return release_planned(self.planned, groups, rng, wanted)

    def run(self, backend: "Backend", rng: "RandomSource", progress: Progress) -> Any:
        """One pass, the noise drawn on the driver, the statements payload."""
        from dpspark.mechanisms.groups.writer import statement_release

        stats = backend.compute(self.stage())
        progress(f"groups: noise for {len(self.aggs.aggregates)} aggregate(s)")
        released = self.release_from_stats(stats, rng)
        return statement_release(self, released)
