"""``pure_groups``: grouped counts and sums over a huge key universe under pure epsilon (docs/groups.md §H).

The keys are selected privately from a ``[universe]`` of up to 2^128 keys (string keys of up to 15 bytes,
int_range, tuples...) with no delta: the release is the KeepHeavy-with-sums sampler of
:mod:`dpspark.mechanisms.histogram.pure_sparse_sums` (Balcer-Vadhan Alg. 6.9 with per-key sums), fed the
engine's exact (N, T) per observed key by the groups stage (:class:`~dpspark.mechanisms.groups.stage.GroupsStage`,
the same contribution bounding and the same statistics on Arrow and Spark).

Config: ``privacy.mechanism = "pure_groups"``, ``[groups] by`` (and ``max_groups_per_unit`` k,
``max_rows_per_group`` c, ``beta``, ``filter``, ``units_share``), ``[[aggregates]]``: exactly one ``count`` and
any number of ``sum`` with ``lo``/``hi``, and ``[universe]``.

Privacy (add/remove one unit among at most n = ``max_units``): a unit moves at most k keys, each count by at most
c (the count law M on [0, N], N = k c n, at e^eps~ = p/q per row) and each sum's grid value by at most g (the
groups pure law, :class:`~dpspark.mechanisms.groups.laws.PureLaw`, at (p_j/q_j) per grid unit, G = c M / g); so
the ideal mechanism is pure with e^eps = (p/q)^(k c) prod_j (p_j/q_j)^(k g), and the mixture keeps exactly that
(the sampler's module docstring), plus the rng bias of its public worst-case number of biased draws. The noisy
count of the units read (``units_share`` of epsilon) composes sequentially, as in ``groups``.

``privacy.trim = true`` keeps in the table only the rows whose noisy count exceeds the simultaneous count bar
(BV Thm 6.2(iii), stated in the accuracy statement): on its event every kept row is a key with rows. Dropping
rows by their released count is post-processing, so the option is the analyst's and costs nothing.

Budget: after the unit count, the count takes half and the sums share the other half (the count alone takes
all). The sampler mixes with gamma = beta/3 (as ``pure_sparse``).

Accuracy (data-free, per key and value): Pr[the key is released and its value is off by more than the bar]
<= beta, the bar being the law's certified accuracy at beta - gamma - delta_SD
(:func:`~dpspark.mechanisms.groups.laws.pure_accuracy`); a sum's bar is about "the key's true sum, 0 if it has no
rows" (a released key may have no rows: the table cannot say which, and does not).
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from dpspark.mechanisms.base import Mechanism, MechanismSpecError, Progress, StageInfo
from dpspark.mechanisms.groups.aggregates import Aggregate, GroupsError, Kind, Statistic
from dpspark.mechanisms.groups.config import parse_aggregates_section, parse_groups_section, parse_universe_section

if TYPE_CHECKING:
    from dpspark.engine.backend import Backend
    from dpspark.rng import RandomSource

#: how far below the histogram family's gamma_for(beta, |X|) the count law's uniform weight is
UNIFORM_MARGIN = 1 << 20
#: the release's algorithm line
THEOREM = ("pure-DP grouped counts and sums over a huge universe (docs/groups.md §H): KeepHeavy with independent "
           "per-key sums, simulated within delta_SD (Balcer-Vadhan Alg. 6.21) and mixed with a full-support P "
           "(Alg. 6.9, Lemma 3.2' with eps = eps' = eps~)")


def parse_trim(value: Any) -> bool:
    """``privacy.trim``: a bool (true: the table keeps only rows whose noisy count exceeds the simultaneous bar)."""
    if not isinstance(value, bool):
        raise ValueError("privacy.trim must be true or false")
    return value


def _refuse(groups: Any, aggs: tuple[Aggregate, ...]) -> str | None:
    """Why a groups config cannot be a pure_groups release (None: it can); data-free."""
    if groups.public_keys:
        return "pure_groups selects keys privately from [universe]; remove groups.keys / groups.keys_file"
    for field, bad in (("join", groups.join is not None), ("selection", groups.selection != "auto"),
                       ("noise", groups.noise not in ("auto", "pure")), ("bounds_share", groups.bounds_share is not None),
                       ("max_groups_per_unit / max_rows_per_group = \"auto\"", bool(groups.auto))):
        if bad:
            return f"groups.{field} does not apply to pure_groups"
    kinds = [a.kind for a in aggs]
    if kinds.count(Kind.COUNT) != 1 or any(k not in (Kind.COUNT, Kind.SUM) for k in kinds):
        return "pure_groups releases exactly one count and any number of sums: [[aggregates]] kinds count and sum"
    if any(a.auto for a in aggs):
        return "pure_groups needs lo and hi for every sum (bounds chosen privately are not supported here)"
    return None


class PureGroupsMechanism(Mechanism):
    """Counts and sums per privately selected key of a huge universe, pure DP (module docstring)."""

    name: ClassVar[str] = "pure_groups"
    release_kind: ClassVar[str] = "pure_groups"
    delta: ClassVar[str] = "forbidden"
    needs_keys: ClassVar[bool] = False
    sections: ClassVar[dict[str, Any]] = {"groups": parse_groups_section, "aggregates": parse_aggregates_section,
                                          "universe": parse_universe_section}
    options: ClassVar[dict[str, Any]] = {"trim": False}
    option_parsers: ClassVar[dict[str, Any]] = {"trim": parse_trim}

    def __init__(self, spec: Any) -> None:
        super().__init__(spec)
        self.trim = bool(spec.options.get("trim", False))
        try:
            self.groups = parse_groups_section(spec.sections.get("groups"))
            self.aggs = parse_aggregates_section(spec.sections.get("aggregates"))
        except GroupsError as err:
            raise MechanismSpecError(str(err)) from None
        g = self.groups
        problem = _refuse(g, self.aggs.aggregates)
        if problem is None and spec.max_keys_per_unit > 1:
            problem = "privacy.max_keys_per_unit does not apply; set groups.max_groups_per_unit"
        if problem is None and spec.on_excess_units != "truncate":
            problem = "pure_groups keeps at most max_units units by keyed hash: on_excess_units must be \"truncate\""
        if problem is None and spec.unit_column is None and (g.bounds.k > 1 or g.bounds.c > 1):
            problem = "groups.max_groups_per_unit and groups.max_rows_per_group above 1 need privacy.unit_column"
        if problem is not None:
            raise MechanismSpecError(problem)
        self.beta = g.beta if g.beta is not None else spec.beta
        self.universe = self._universe(spec)
        try:
            self._plan()
        except (GroupsError, ValueError) as err:
            raise MechanismSpecError(str(err)) from None

    def _universe(self, spec: Any) -> Any:
        from dpspark.universe import UniverseConfigError, universe_from_dict

        raw = spec.sections.get("universe")
        if raw is None:
            raise MechanismSpecError("pure_groups needs a [universe] to select keys from")
        try:
            universe = universe_from_dict(parse_universe_section(raw), base_dir=Path(spec.source).parent)
        except (GroupsError, UniverseConfigError) as err:
            raise MechanismSpecError(f"[universe] {err}") from None
        if not universe.is_bijection or len(universe.parts) != len(self.groups.by):
            raise MechanismSpecError("[universe] must be a bijective universe (not hashed) with one component per "
                                     "groups.by column")
        if universe.index_width > 16:
            raise MechanismSpecError(self.wide_universe_message())
        return universe

    # --- plan (data-free) -------------------------------------------------------------------
    def _plan(self) -> None:
        """Every law, the mixing weight, S, delta_SD, the statement and the bars; certified against epsilon."""
        from dpspark.exact import within_epsilon
        from dpspark.mechanisms.groups.laws import PURE_GRID, PureLaw, exp_eps_below
        from dpspark.mechanisms.histogram.mechanism import as_unit_fraction, gamma_for
        from dpspark.mechanisms.histogram.pure_sparse_sums import SumLaw, plan_sums
        from dpspark.noise import FastSample
        from dpspark.noise.count_quantile import NoisyCount
        from dpspark.rng import DEFAULT_LAMBDA, bias_epsilon

        spec, g = self.spec, self.groups
        k, c, units = g.bounds.k, g.bounds.c, spec.max_units
        self.k, self.c, self.lam = k, c, DEFAULT_LAMBDA
        self.n_rows = k * c * units
        size = self.universe.size
        if size < 2 * self.n_rows + 1:
            raise MechanismSpecError(f"pure_groups needs a universe of at least 2 k c n + 1 = {2 * self.n_rows + 1} "
                                     f"keys; this one has {size}")
        eps = Fraction(spec.epsilon)
        self.units_law = NoisyCount(eps * g.units_share, lam=self.lam)
        rest = eps * (1 - g.units_share)
        sums = [a for a in self.aggs.aggregates if a.kind is Kind.SUM]
        count_eps = rest if not sums else rest / 2
        n = self.n_rows
        worst_draws = 4 * n + 2 + len(sums) * (3 * n + 1)  # >= sums_bias_draws whatever the d's are
        self.sum_laws = {}
        for a in sums:
            stat = Statistic("sum", a.L, a.H)
            lo, hi = stat.range(c * units)
            self.sum_laws[a.name] = PureLaw(stat.sensitivity(g.bounds), lo, hi, k, (rest - count_eps) / len(sums),
                                            self.lam, g=PURE_GRID)
        target = count_eps - bias_epsilon(worst_draws, self.lam)
        # FastSample's uniform part, 2^20 times below the histogram's beta/(6|X|): an empty key drawn from it (any
        # count in [0, N], so nearly always released) comes out about once in 10^8 releases, not once in 10^2
        fast = FastSample(n=n, exp_eps=exp_eps_below(target / (k * c)),
                          gamma=as_unit_fraction(gamma_for(self.beta / UNIFORM_MARGIN, size)))
        self.counting = fast.fallback if fast.fallback is not None else fast
        self.laws = [SumLaw(law.mech, law.g, -law.a_lo) for law in self.sum_laws.values()]
        self.mixing = Fraction(1, -(-3 * self.beta.denominator // self.beta.numerator))  # beta/3 as 1/g
        self.s_bits, self.sd = plan_sums(n, size, self.counting, self.laws, self.mixing, k, c)
        self.statement = self._main_statement()
        m = self.statement.measure.epsilon
        if not within_epsilon(m.exp, m.extra, rest):
            raise MechanismSpecError("internal error: the plan's exact epsilon would exceed the configured epsilon")
        left = self.beta - self.mixing - self.sd
        if left <= 0:
            raise MechanismSpecError("beta is too small for the mixing weight and delta_SD; raise beta")
        self.bar_beta = Fraction(left.numerator * (1 << 64) // left.denominator, 1 << 64)  # a shorter beta below
        from dpspark.mechanisms.groups.laws import pure_accuracy

        self.count_bar = Fraction(pure_accuracy(self.counting, self.counting.exp_eps, self.bar_beta))
        # BV Thm 6.2(iii): every key's count at once (0 when not released) within 2 a', a' = a_M(beta2 / |X|),
        # beta2 = (beta - gamma - delta_SD) / 2, failing with probability <= beta2 + gamma + delta_SD
        half = self.bar_beta / 2
        self.simultaneous = (2 * pure_accuracy(self.counting, self.counting.exp_eps, half / size),
                             Fraction(-(-(half + self.mixing + self.sd) * (1 << 64) // 1), 1 << 64))
        self.sum_bars = {name: law.error(self.bar_beta) / next(a.scale for a in sums if a.name == name)
                         for name, law in self.sum_laws.items()}

    def _main_statement(self) -> Any:
        """The sampler's statement (data-free: it is what :func:`pure_sparse_sums` states)."""
        from dpspark.mechanisms.histogram.pure_sparse_sums import ideal_exp_eps, sums_bias_draws
        from dpspark.privacy import AddRemove, PrivacyStatement
        from dpspark.rng import bias_epsilon

        draws = sums_bias_draws(self.n_rows, self.universe.size, self.counting, self.mixing, self.laws)
        return PrivacyStatement.from_exp_eps(ideal_exp_eps(self.counting, self.laws, self.k, self.c),
                                             bias_epsilon(draws, self.lam), Fraction(0), THEOREM,
                                             AddRemove(self.spec.max_units))

    def _statement(self) -> Any:
        from dpspark.privacy import AddRemove, PrivacyStatement, PureDP, compose_statements

        units = PrivacyStatement(PureDP(self.units_law.epsilon()), AddRemove(self.spec.max_units),
                                 "noisy count of the units read (FastSample; dpspark.noise.count_quantile)",
                                 "units: one unit moves the count by <= 1")
        return compose_statements([self.statement, units])

    def planned_statements(self) -> Any:
        from dpspark.release.statements import standard_statements

        return standard_statements(self._statement())

    def plan(self) -> dict[str, Any]:
        return {"mechanism": self.name, "by": list(self.groups.by), "keys": "private selection (pure DP)",
                "beta": str(self.beta), "aggregates": self.aggs.describe(),
                "max_groups_per_unit": self.k, "max_rows_per_group": self.c, "count_range": self.n_rows,
                "counting": self.counting.describe(), "sums": {n: law.describe() for n, law in self.sum_laws.items()},
                "mixing_gamma": str(self.mixing), "s_bits": self.s_bits, "units_share": str(self.groups.units_share),
                "simultaneous_count_bar": str(self.simultaneous[0]), "trim": self.trim,
                **({"filter": self.groups.filter.text} if self.groups.filter is not None else {})}

    def privacy_summary(self) -> dict[str, Any]:
        return {"statement": self._statement().text(), "epsilon_requested": str(self.spec.epsilon),
                "delta_requested": None,
                "composition": ("one pure-DP sparse release of every key's count and sums (the counts and sums laws "
                                "over all keys, charged once), then the noisy unit count "
                                f"({self.groups.units_share} of epsilon)")}

    def bars(self) -> dict[str, Fraction]:
        """Every aggregate's per-key bar (value units), data-free."""
        return {a.name: self.count_bar if a.kind is Kind.COUNT else self.sum_bars[a.name]
                for a in self.aggs.aggregates}

    def accuracy_summary(self) -> dict[str, Any]:
        return {"beta": str(self.beta), **{n: f"+-{b} per released key" for n, b in self.bars().items()}}

    def accuracy(self) -> Any:
        from dpspark.privacy import AccuracyClaim, AccuracyStatement

        count = next(a.name for a in self.aggs.aggregates if a.kind is Kind.COUNT)
        every = AccuracyClaim(f"{count}: abs error of every key of the universe at once (0 for a key not released)",
                              *self.simultaneous, "simultaneous",
                              condition="BV Thm 6.2(iii); on this event a released key whose noisy count exceeds "
                                        "the bar has rows")
        return AccuracyStatement([*(AccuracyClaim(f"{n}: abs error", b, self.beta, "per_query")
                                    for n, b in self.bars().items()), every],
                                 "per released key: Pr[the key is released and its value is off by more than the bar] "
                                 "<= beta; a sum's truth is the key's true sum, 0 if it has no rows")

    def input_columns(self) -> tuple[str, ...]:
        cols = [*self.groups.by, *(a.column for a in self.aggs.aggregates if a.column is not None)]
        cols += self.groups.filter.columns() if self.groups.filter is not None else ()
        return tuple(dict.fromkeys(cols)) + super().input_columns()

    def input_schema_problem(self, schema: Any, *, text_input: bool = False) -> str | None:
        """Key columns must have the universe's type, value and filter columns must fit (metadata only)."""
        from dpspark.mechanisms.groups.schema_check import input_problem

        return input_problem(self.universe, self.groups.by, self.aggs.aggregates, self.groups.filter, schema,
                             text_input=text_input)

    # --- stage and run ----------------------------------------------------------------------
    def stage(self) -> Any:
        from dpspark.mechanisms.groups.stage import GroupsStage

        spec, g = self.spec, self.groups
        return GroupsStage(key_columns=g.by, universe=self.universe, unit_column=spec.unit_column,
                           max_units=spec.max_units, max_groups_per_unit=g.bounds.k, max_rows_per_group=g.bounds.c,
                           aggregates=tuple(self.aggs.aggregates), out_of_universe=spec.out_of_universe,
                           nulls=tuple(self.aggs.nulls), filter=g.filter)

    def stages(self) -> list[StageInfo]:
        from dpspark.mechanisms.groups.stage import GroupsStage

        return [StageInfo("groups", "one pass: exact count and sums per observed key after contribution bounding, "
                                    "and the units read", stage=GroupsStage)]

    def run(self, backend: "Backend", rng: "RandomSource", progress: Progress) -> Any:
        """The batch secret, the pass, the noisy unit count, then the sampler (draws in that order)."""
        backend.batch_secret()
        stats = backend.compute(self.stage())
        units = {"noisy": self.units_law.release(stats.units_read, rng), "error": self.units_law.error(self.beta),
                 "beta": str(self.beta), "max_units": self.spec.max_units, "share": str(self.groups.units_share)}
        progress(f"pure_groups: the sparse release over {self.universe.size} keys (n = {self.n_rows})")
        return self.release_from_stats(stats, rng, progress, units)

    def release_from_stats(self, stats: Any, rng: "RandomSource", progress: Progress,
                           units: dict[str, Any] | None = None) -> Any:
        """The release from the engine's per-group statistics (ascending 0-based universe indexes)."""
        from dpspark.mechanisms.groups.pure_table import pure_section, released_table
        from dpspark.mechanisms.groups.writer import TABLE
        from dpspark.mechanisms.histogram.pure_sparse_sums import pure_sparse_sums
        from dpspark.release.statements import StatementRelease

        aggs = self.aggs.aggregates
        count = next(a.name for a in aggs if a.kind is Kind.COUNT)
        keys = [s.key for s in stats]
        counts = [s.stats[count][0] for s in stats]
        grids = [[law.grid(s.stats[name][1]) - law.a_lo for s in stats] for name, law in self.sum_laws.items()]
        rel = pure_sparse_sums((keys, counts), grids, self.universe.size, self.n_rows, self.counting, self.laws,
                               self.mixing, rng, k=self.k, c=self.c, units=self.spec.max_units, progress=progress)
        if rel.privacy.measure != self.statement.measure:
            raise RuntimeError("internal error: the release's statement differs from the plan's")
        table = released_table(self, rel)
        return StatementRelease(algorithm=THEOREM, parameters=self.plan(), privacy=tuple(self.planned_statements()),
                                accuracy=self.accuracy(), section=pure_section(self, table.num_rows, units),
                                tables={TABLE: table})

    def key_of(self, index: int) -> tuple[Any, ...] | None:
        """The key row with this 0-based universe index; None for an index no column value has (a string universe
        holds every byte string, and one that is not UTF-8 is no string): such a released key is an empty key,
        and leaving it out of the table is post-processing of the release."""
        try:
            key = self.universe.decode(index + 1)
        except ValueError:
            return None
        return tuple(key) if len(self.groups.by) > 1 else (key,)
