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

**``max_units`` (n) is optional.** Every noise law is calibrated on a public range of its statistic
(``rows = c n`` bounds a group's count and sum: the exact FastSample range, the int64 fits of the kernels,
the private selection's keep table), so the stage keeps at most n units (the keyed-hash truncation, rule 2 of
:mod:`~dpspark.mechanisms.groups.stage`). The guarantee itself is add/remove of one unit and needs no n from
the user: without ``max_units`` the release runs at the fixed public cap
:data:`~dpspark.privacy.relations.UNITS_CAP` = 2^40 units (more than any real input; the laws' error bars do
not depend on the range: the same bars, and exact parameters about 20 bits wider, FastSample's tables about a
fifth larger, ``scripts/bench/units_cap.py``),
states AddRemove(2^40) in the words "no limit on the number of units", and the ledger pins no n for it
(docs/groups.md §I). Units beyond n are dropped, so **the release states a noisy count
of the units read** (``units_share`` of epsilon, :class:`~dpspark.noise.count_quantile.NoisyCount`: pure DP,
exact integer noise, composed into the statement) in its section's ``units``; with a declared n the reader and
``inspect`` say in words when it exceeds n, and by about how many units. The pass itself counts the units it
reads (the units the truncation ranks: :class:`~dpspark.mechanisms.groups.core.PassStats`), so a release
without an "auto" limit reads the input once. Only an ``"auto"`` limit adds a pre-pass (:mod:`~dpspark.mechanisms.groups.unit_profile`):
the contribution histograms that choose the limits (:class:`~dpspark.noise.count_quantile.CountQuantile`,
``limits_share`` of epsilon), and the unit count, both before the pass that uses the limits.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from dpspark.errors import ParameterError
from dpspark.mechanisms.base import Mechanism, MechanismSpecError, Progress, StageInfo
from dpspark.mechanisms.groups.aggregates import GroupsError, Kind
from dpspark.mechanisms.groups.writer import table_columns
from dpspark.mechanisms.groups.config import (GLOBAL_KEY, AggregatesSection, GroupsSection, key_rows,
                                              parse_aggregates_section, parse_groups_section, parse_universe_section)

if TYPE_CHECKING:
    from dpspark.engine.backend import Backend
    from dpspark.mechanisms.groups.algorithm import GroupsPlan
    from dpspark.rng import RandomSource
    from dpspark.universe import Universe

#: privacy.beta when the config does not set it (groups.beta then decides)
DEFAULT_BETA = Fraction(1, 20)



def read_keys_file(path: Path, by: tuple[str, ...]) -> tuple[tuple[Any, ...], ...]:
    """The public key rows of a CSV or Parquet file whose columns include ``by`` (public: read at plan time), row
    by row: the reference :func:`~dpspark.mechanisms.groups.keys_file.read_public_keys` is tested equal to."""
    from dpspark.mechanisms.groups.keys_file import read_table

    table = read_table(path, by)
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
    #: add/remove of one unit needs no declared n: without max_units the release runs at the fixed cap
    #: (dpspark.privacy.relations.UNITS_CAP; module docstring)
    units_optional: ClassVar[bool] = True
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
        if spec.unit_column is None and g.auto:
            raise MechanismSpecError(f"groups.{g.auto[0]} = \"auto\" needs privacy.unit_column (without it every "
                                     "row is its own unit, contributing one row to one group)")
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
        from dpspark.mechanisms.groups.join import PublicJoin, parse_join

        try:  # the public table is read now (public: not the data), and its key multiplicity m
            self.join = parse_join(g.join, Path(spec.source).parent)
        except GroupsError as err:
            raise MechanismSpecError(str(err)) from None
        if self.join is not None and not isinstance(self.join, PublicJoin):  # a private join: on the unit only
            if spec.unit_column is None or self.join.on != (spec.unit_column,):
                raise MechanismSpecError(
                    f"groups.join: a join of two private tables is on the privacy unit column only (on = "
                    f"{spec.unit_column!r}); this one is on {', '.join(map(repr, self.join.on))}"
                    if spec.unit_column is not None else
                    "groups.join: a join of two private tables needs privacy.unit_column (the unit they share)")
            if g.one_group:  # by = []: the joined rows gain the one group's constant key column
                self.join = replace(self.join, key=GLOBAL_KEY)
            needed = [*g.by, *(a.column for a in self.aggs.aggregates if a.column is not None),
                      *(g.filter.columns() if g.filter is not None else ()), spec.unit_column]
            self.join = self.join.narrowed(needed)
        elif self.join is not None and spec.unit_column is None and self.join.multiplicity > 1:
            raise MechanismSpecError(
                f"groups.join: the public table lists a join key up to {self.join.multiplicity} times, so the join "
                "copies a row that many times; without privacy.unit_column every row is its own unit and the "
                "copies would not be bounded: declare the unit column (or give the public table unique keys)")
        #: the keys file's reader encodes its keys column-wise; listed keys are encoded by public_indexes
        self.key_rows, self.universe, self._listed_indexes = self._keys(spec)
        from dpspark.mechanisms.groups.autobounds import auto_bounds

        try:  # aggregates without lo/hi: their bounds are chosen privately, on a stated share charged now
            # with "auto" limits the bounds law's sensitivity k c is chosen with them: a law is built now for every
            # candidate k c up to a cap (autobounds.auto_bounds), and the chosen limits are halved to the cap
            self.auto = auto_bounds(self.aggs.aggregates, g.bounds_share, spec, g.bounds.k, g.bounds.c, self.beta,
                                    auto_limits=len(g.auto))
            if self.auto is not None and g.units_share + g.limits_share + self.auto.share > Fraction(1, 2):
                raise GroupsError(f"groups.units_share + groups.bounds_share = {g.units_share + self.auto.share} "
                                  "leaves less than half of epsilon for the aggregates; lower them")
            self.planned: "GroupsPlan" = self._plan()
            self._pre_laws()
        except (GroupsError, ParameterError) as err:
            raise MechanismSpecError(str(err)) from None
        #: the noisy unit count and the chosen limits, once run (the release's section states them)
        self.pre_released: dict[str, Any] = {}

    # --- keys -------------------------------------------------------------------------------
    def _keys(self, spec: Any) -> tuple[tuple[tuple[Any, ...], ...] | None, "Universe", list[int] | None]:
        """(public key rows or None, the key universe the stage encodes with, the rows' 0-based indexes when
        a keys file's reader computed them, else None)."""
        from dpspark.universe import UniverseConfigError, universe_from_dict

        g, uspec = self.groups, spec.sections.get("universe")
        base = Path(spec.source).parent
        if g.public_keys:
            if uspec is not None:
                raise MechanismSpecError("[universe] applies to private key selection only; public keys "
                                         "(groups.keys or groups.keys_file) are their own universe: remove it")
            try:
                if g.keys is None:  # a file: read and checked column-wise (issue 35 §2: 10^6 keys in ~1 CPU s)
                    from dpspark.mechanisms.groups.keys_file import read_public_keys

                    listed = read_public_keys(base / str(g.keys_file), g.by)
                    return listed.rows, listed.universe, listed.indexes
                return g.keys, public_key_universe(g.by, g.keys), None
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
        return None, universe, None

    @cached_property
    def public_indexes(self) -> list[int] | None:
        """The 0-based universe index of every public key, in the listed order (None: private selection)."""
        if self.key_rows is None:
            return None
        if self._listed_indexes is not None:
            return self._listed_indexes
        one = len(self.groups.by) == 1
        return [self.universe.encode(r[0] if one else r) - 1 for r in self.key_rows]

    def key_of(self, index: int) -> tuple[Any, ...]:
        """The key row with this 0-based universe index."""
        key = self.universe.decode(index + 1)
        return tuple(key) if len(self.groups.by) > 1 else (key,)

    # --- plan -------------------------------------------------------------------------------
    def _budget(self) -> dict[str, Any]:
        """The aggregates' budget: epsilon less the unit count's, the limits' and the bounds' shares (delta all
        theirs)."""
        spec, g = self.spec, self.groups
        bounds_share = self.auto.share if self.auto is not None else 0
        eps = Fraction(spec.epsilon) * (1 - g.units_share - g.limits_share - bounds_share)
        return {"epsilon": eps} if spec.delta is None else {"epsilon": eps, "delta": spec.delta}

    def _pre_laws(self) -> None:
        """The laws of the pre-pass's releases (data-free): the unit count, and one quantile per "auto" limit."""
        from dpspark.mechanisms.groups.config import LIMITS_COVER
        from dpspark.mechanisms.groups.unit_profile import BUCKETS
        from dpspark.noise.count_quantile import CountQuantile, NoisyCount

        g, eps, lam = self.groups, Fraction(self.spec.epsilon), self.planned.lam
        self.units_law = NoisyCount(eps * g.units_share, lam=lam)
        self.limit_laws = {name: CountQuantile(eps * g.limits_share / len(g.auto), buckets=BUCKETS,
                                               fraction=LIMITS_COVER, lam=lam) for name in g.auto}

    def _pre_statements(self) -> list[Any]:
        """The pre-pass's statements under AddRemove(max_units): each a pure-DP release moved by one unit by <= 1."""
        from dpspark.privacy import AddRemove, PrivacyStatement, PureDP

        rel = AddRemove(self.spec.max_units)
        out = [PrivacyStatement(PureDP(self.units_law.epsilon()), rel,
                                "noisy count of the units read (FastSample, Balcer-Vadhan Thm 4.10; "
                                "dpspark.noise.count_quantile)", "units: one unit moves the count by <= 1")]
        for name, law in self.limit_laws.items():
            out.append(PrivacyStatement(PureDP(law.epsilon()), rel,
                                        "private quantile of per-unit contribution counts: a noisy power-of-two "
                                        "histogram, one bucket per unit (dpspark.noise.count_quantile)",
                                        f"limits: {name} = \"auto\""))
        return out

    def _statement(self) -> Any:
        from dpspark.privacy import compose_statements

        return compose_statements([self.planned.statement, *self._pre_statements()])

    def _plan(self, bounds: Any = None) -> "GroupsPlan":
        from dpspark.mechanisms.groups.algorithm import plan_groups

        auto = self.auto
        budget = self._budget()
        plan = plan_groups(self.aggs.aggregates, budget, max_units=self.spec.max_units,
                           bounds=bounds or self.groups.bounds, private_keys=self.key_rows is None,
                           noise=self.groups.noise, beta=self.beta, nulls=dict(self.aggs.nulls),
                           selection=self.groups.selection)
        return plan if auto is None else auto.restate(plan, budget)  # the statement includes the bounds step

    def plan(self) -> dict[str, Any]:
        desc = self.planned.describe()
        rules = dict(self.aggs.nulls)
        for row in desc["aggregates"]:
            if row.get("column") is not None:
                row["nulls"] = rules[row["column"]].describe()
        # a filter and a join are stated when given (absent otherwise, so a release without them reads as before)
        given = {**({"filter": self.groups.filter.text} if self.groups.filter is not None else {}),
                 **({"join": self.join.describe()} if self.join is not None else {})}
        g = self.groups
        if g.auto and "limits" not in self.pre_released:  # before the run (a dry run): not chosen yet
            for name in g.auto:
                desc[name] = "auto (chosen privately from the data; the error bars above assume 1)"
        shares = {"units_share": str(g.units_share),
                  **({"limits_share": str(g.limits_share), "limits_auto": list(g.auto)} if g.auto else {})}
        return {"mechanism": self.name, "by": list(self.groups.by), **given,
                "keys": "public" if self.key_rows is not None else "private selection",
                "groups_listed": None if self.key_rows is None else len(self.key_rows),
                "noise_requested": self.groups.noise, **desc, **shares,
                **({"bounds": self.auto.describe()} if self.auto is not None else {})}

    def statement(self) -> Any:
        """The release's privacy statement under AddRemove(max_units): the plan's, the unit count's and the
        "auto" limits' composed."""
        return self._statement()

    def planned_statements(self) -> Any:
        """Every statement the release will carry (add/remove, replacement by group privacy, conversions)."""
        from dpspark.release.statements import standard_statements

        return standard_statements(self._statement(), delta=self.spec.delta)

    def privacy_summary(self) -> dict[str, Any]:
        from dpspark.mechanisms.groups.threshold import ThresholdSelection

        plan = self.planned
        parts = len(plan.parts) + sum(1 for a in self.aggs.aggregates if a.kind is Kind.QUANTILE)
        selection = ""
        if self.key_rows is None:
            selection = ("; private key selection thresholds the released noisy count (delta only, no epsilon)"
                         if isinstance(plan.selection, ThresholdSelection) else
                         "; private key selection takes its own share")
        out = {"statement": self._statement().text(), "epsilon_requested": str(self.spec.epsilon),
                "delta_requested": None if self.spec.delta is None else str(self.spec.delta),
                "composition": (f"charged once per aggregate's noisy statistic ({parts} for "
                                f"{len(self.aggs.aggregates)} aggregate(s): shared statistics are charged once), "
                                f"not per group: a unit changes at most k = {self.groups.bounds.k} group(s) and "
                                "each law is calibrated on all groups at once (parallel composition over disjoint "
                                "groups); the statistics compose sequentially" + selection
                                + f"; a noisy count of the units read takes {self.groups.units_share} of epsilon"
                                + (f"; the \"auto\" limits ({', '.join(self.groups.auto)}) take "
                                   f"{self.groups.limits_share} of epsilon" if self.groups.auto else ""))}
        if self.auto is not None:  # stated in the dry run and --explain
            out["bounds"] = (f"chosen privately for {', '.join(self.auto.columns)} on {self.auto.share} of epsilon "
                             f"({self.auto.statement().measure.text()}; one pre-pass, a noisy bit-length histogram), "
                             "charged with the rest before any data is read")
        return out

    def accuracy_summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"beta": str(self.beta)}
        for agg in self.aggs.aggregates:
            err = self.planned.errors[agg.name]
            if agg.auto:
                out[agg.name] = "per group, once the bounds are chosen privately (stated in the release)"
            elif agg.kind is Kind.QUANTILE:
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
        from dpspark.mechanisms.groups.schema_check import input_problem

        if self.join is not None:  # the stage reads the joined rows: check their schema
            problem = self.join.schema_problem(schema)
            if problem:
                return problem
            schema = self.join.joined_schema(schema)
        return input_problem(self.universe, self.groups.by, self.aggs.aggregates, self.groups.filter, schema,
                             text_input=text_input, key_label=f"groups.{'keys' if self.groups.public_keys else 'by'}")

    def excess_units_text(self) -> str:
        a = self.units_law.error(self.beta)
        from dpspark.privacy.relations import UNITS_CAP

        if self.spec.max_units == UNITS_CAP:  # no max_units declared: nothing a real input could exceed
            return ("none removed below the fixed cap of 2^40 units (no max_units declared); the release states a "
                    f"noisy count of the units read (+-{a} at beta = {self.beta})")
        return ("truncate: keep max_units units by keyed hash of the unit id; the release states a noisy count of "
                f"the units read (+-{a} at beta = {self.beta}) and says when it exceeds max_units")

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

    def pre_pass(self) -> bool:
        """Whether the release reads the input twice: only an "auto" limit needs the pre-pass (public)."""
        return bool(self.groups.auto)

    def _unit_weights(self) -> tuple[int, ...]:
        """The weighted selection's w(1..k) (public), or () when keys are selected on plain unit counts."""
        from dpspark.mechanisms.groups.weighted_selection import WeightedSelection

        sel = self.planned.selection
        return tuple(sel.w) if isinstance(sel, WeightedSelection) else ()

    def stages(self) -> list[StageInfo]:
        from dpspark.mechanisms.groups.stage import GroupsStage
        from dpspark.mechanisms.groups.unit_profile import UnitProfileStage

        groups = StageInfo("groups", f"one pass: exact per-group statistics of {len(self.aggs.aggregates)} "
                                     "aggregate(s) after contribution bounding, and the units read (for the noisy "
                                     "unit count)", stage=GroupsStage)
        pre = [StageInfo("groups_bounds", "bounds pre-pass: a bit-length histogram of each value column after the "
                                          "same contribution bounding", stage=GroupsStage)] if self.auto else []
        if self.pre_pass():
            pre = [StageInfo("units", "a pre-pass: the units read and each unit's contributions (for the noisy unit "
                                      "count and the \"auto\" limits)", stage=UnitProfileStage), *pre]
        return [*pre, groups]

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
        """The batch secret (the release's first draw, as before the unit count), then: with an "auto" limit the
        pre-pass (units, contributions) and its noise, the pass; else the pass alone, whose exact count of the
        units read gives the noisy unit count. Then the groups noise, drawn on the driver, and the statements
        payload (its section states the noisy unit count and the chosen limits). The draws' order is the same
        either way (secret, unit count, limits, aggregates), so both paths give one release under one seed."""
        from dataclasses import replace

        from dpspark.mechanisms.groups.unit_profile import UnitProfile, UnitProfileStage
        from dpspark.mechanisms.groups.writer import statement_release

        backend.batch_secret()
        if self.pre_pass():
            self.release_pre(backend.compute(UnitProfileStage(self.stage())), rng)
        if self.auto is not None:  # the bounds pre-pass and its noise (charged with the rest, before the read)
            progress("groups: bounds chosen privately (one pre-pass)")
            self.auto.resolve(self, backend, rng)
        stats = backend.compute(self.stage())
        if not self.pre_pass():
            self.release_pre(UnitProfile(stats.units_read, (), ()), rng)
        progress(f"groups: noise for {len(self.aggs.aggregates)} aggregate(s)")
        released = self.release_from_stats(stats, rng)
        out = statement_release(self, released)
        return replace(out, section={**out.section, **self.pre_released})

    def release_pre(self, profile: Any, rng: "RandomSource") -> dict[str, Any]:
        """Noise on the pre-pass's profile: the noisy unit count, then each "auto" limit (k, then c), in that
        order; re-plans with the chosen limits. The section entries ``units`` (and ``limits``) it returns are DP
        outputs and public parameters only."""
        from dataclasses import replace

        from dpspark.mechanisms.groups.aggregates import Bounds

        g = self.groups
        a = self.units_law.error(self.beta)
        units = {"noisy": self.units_law.release(profile.units, rng), "error": a, "beta": str(self.beta),
                 "max_units": self.spec.max_units, "share": str(g.units_share)}
        self.pre_released = {"units": units}
        if not self.limit_laws:
            return self.pre_released
        chosen = {}
        for name, law in self.limit_laws.items():
            hist = profile.groups_hist if name == "max_groups_per_unit" else profile.rows_hist
            chosen[name] = law.release(list(hist), rng)[0]
        k, c = chosen.get("max_groups_per_unit", g.bounds.k), chosen.get("max_rows_per_group", g.bounds.c)
        cap = None if self.auto is None else self.auto.cap
        for _ in range(64):  # public bound: the bounds laws were built for k c <= cap (every "auto" limit at 1 fits)
            if cap is None or k * c <= cap:
                break
            ka, ca = ("max_groups_per_unit" in g.auto and k > 1), ("max_rows_per_group" in g.auto and c > 1)
            k, c = (max(1, k // 2), c) if ka and (k >= c or not ca) else (k, max(1, c // 2))
        # the chosen limits are DP outputs: when the aggregates' budget cannot pay for them (a plan error, a
        # function of (k, c) only), halve the larger until it can; (1, 1) planned when the mechanism was built
        planned = None
        for _ in range(64):  # public bound: each step halves k or c, both <= 2^(BUCKETS - 1)
            try:
                planned = self._plan(Bounds(k, c))
                break
            except GroupsError:
                pass
            if k == c == 1:
                break
            k, c = (max(1, k // 2), c) if k >= c else (k, max(1, c // 2))
        if planned is None:  # (1, 1) was planned before the spend, so this cannot happen; a fixed error if it did
            raise GroupsError("the release could not be planned with the chosen limits (no value is shown; the "
                              "budget is spent)")
        self.planned, self.groups = planned, replace(g, bounds=Bounds(k, c))
        self.pre_released["limits"] = {"max_groups_per_unit": k, "max_rows_per_group": c, "auto": list(g.auto),
                                       "chosen": chosen, "share": str(g.limits_share),
                                       "cover": str(self.limit_laws[g.auto[0]].fraction)}
        return self.pre_released
