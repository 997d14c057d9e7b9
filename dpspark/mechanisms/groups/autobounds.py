"""Bounds chosen privately for a groups release (issue 32 §2; the mechanism is :mod:`dpspark.bounds`).

When an aggregate (sum, mean, variance, quantile) is given without ``lo``/``hi``, the release spends a stated
share s of its epsilon (``groups.bounds_share``, default 1/10) on them, **charged with the rest before any data
is read**: the release's statement is the sequential composition of

* the bounds step: one noisy bit-length histogram per auto-bounded column (:class:`dpspark.bounds.BoundsLaw`,
  each eps s / m for m columns: the columns read the same rows, so they compose sequentially), and
* the grouped release, planned after the bounds are known within the rest of the budget, (1 - s) eps and all
  of delta (:func:`~dpspark.mechanisms.groups.algorithm.plan_groups` certifies that its statement fits).

The histogram counts the rows of the *same* pass rules as the release (:class:`GroupsStage`: max_units, the
filter and join, k groups per unit and c rows per group, the same row choice since the pre-pass reads the same
value columns in the same order), so one unit moves it by at most k c in l1 norm. The chosen bounds and
scale_bits, their epsilon and the clipped-rows bound at beta are stated in the manifest (``plan()["bounds"]``).
Everything after the histogram's draw is post-processing of DP outputs: the re-plan, its noise choice and any
error it raises are functions of the noisy histogram only (the error is fixed and value-free).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from dpspark.bounds import CELLS, BoundsChoice, BoundsLaw, cell_edges, cell_of, choose_scale_bits
from dpspark.bounds.histogram import DEFAULT_SHARE
from dpspark.mechanisms.groups.aggregates import Aggregate, GroupsError, Kind

if TYPE_CHECKING:
    from dpspark.rng import RandomSource

#: the pre-pass aggregate names (not valid release names: they never reach a release)
PREFIX = "bounds:"


@dataclass(frozen=True)
class BitCells(Aggregate):
    """A quantile-shaped pre-pass aggregate whose CELLS engine cells are the bit-length cells (dpspark.bounds.cells).

    Both kernels place a value by the thresholds :meth:`grid_point` gives (the smallest double >= each edge),
    so the cell counts are identical on Arrow and Spark.
    """

    def grid_point(self, j: int) -> Fraction:
        edges = cell_edges()
        return edges[min(max(j, 0), CELLS)]

    def cell_of(self, x: Fraction) -> int:
        return cell_of(x)


def bit_cells(name: str, column: str) -> BitCells:
    """The pre-pass aggregate of one value column."""
    edges = cell_edges()
    return BitCells(name, Kind.QUANTILE, column, edges[0], edges[-1], 0, Fraction(1, 2), CELLS - 1)


@dataclass
class AutoBounds:
    """The bounds step of one groups release: its share, its per-column laws and, after the run, its choices."""

    share: Fraction
    epsilon: Fraction
    delta: Fraction | None
    columns: tuple[str, ...]
    laws: dict[str, BoundsLaw]
    beta: Fraction
    max_units: int
    choices: dict[str, BoundsChoice] = field(default_factory=dict)
    scale_bits: dict[str, int] = field(default_factory=dict)
    #: with "auto" limits: one law per candidate sensitivity Delta (ascending), all built before the spend; the
    #: run uses the least Delta >= the chosen k c (:meth:`select`), so nothing is calibrated after the spend
    candidates: dict[int, BoundsLaw] = field(default_factory=dict)

    @property
    def cap(self) -> int | None:
        """The largest k c a law was built for (None: the limits are given, so is the one law's k c)."""
        return max(self.candidates) if self.candidates else None

    def select(self, kc: int) -> None:
        """Use the candidate law of the least Delta >= ``kc`` for every column (``kc`` <= :attr:`cap`; a law of
        a larger sensitivity than the pass's is still private: the histogram moves by <= kc <= Delta)."""
        if not self.candidates:
            return
        delta = min(d for d in self.candidates if d >= kc)  # the caller capped kc: a function of DP outputs
        self.laws = {c: self.candidates[delta] for c in self.columns}

    @property
    def main_budget(self) -> dict[str, Any]:
        """The budget the grouped release is planned within: (1 - s) eps and all of delta."""
        eps = self.epsilon * (1 - self.share)
        return {"epsilon": eps} if self.delta is None else {"epsilon": eps, "delta": self.delta}

    def statement(self) -> Any:
        """The bounds step's statement: the histograms compose sequentially (pure DP)."""
        from dpspark.privacy import AddRemove, PrivacyStatement, PureDP, compose_statements

        if self.candidates:  # the law is chosen with the limits: every candidate's eps_b is <= its share
            each = self.epsilon * self.share / len(self.columns)
            parts = [PrivacyStatement(PureDP(each), AddRemove(self.max_units),
                                      f"bounds of {c!r}: FastSample bit-length histogram, l1 sensitivity k c (the "
                                      f"\"auto\" limits, <= {self.cap}; dpspark.bounds.histogram)")
                     for c in self.columns]
            return compose_statements(parts) if len(parts) > 1 else parts[0]
        parts = [PrivacyStatement(PureDP(law.epsilon()), AddRemove(self.max_units),
                                  f"bounds of {c!r}: FastSample bit-length histogram, l1 sensitivity "
                                  f"{law.sensitivity} (dpspark.bounds.histogram)") for c, law in self.laws.items()]
        return compose_statements(parts) if len(parts) > 1 else parts[0]

    def restate(self, plan: Any, budget: dict[str, Any] | None = None) -> Any:
        """``plan`` with its statement made the bounds step, then the grouped release within ``budget`` (the
        aggregates' budget the plan was made in; :attr:`main_budget` when None)."""
        from dpspark.privacy import AddRemove, PrivacyStatement, compose_statements, measure_from_budget

        rest = PrivacyStatement(measure_from_budget(budget or self.main_budget), AddRemove(self.max_units),
                                "grouped aggregates planned after the privately chosen bounds within this budget "
                                "(the plan certifies that its own statement fits)")
        return replace(plan, statement=compose_statements([self.statement(), rest]))

    def describe(self) -> dict[str, Any]:
        """The manifest's ``bounds`` entry: share, epsilon, and (after the run) the choices."""
        out: dict[str, Any] = {"chosen": "privately", "share": str(self.share),
                               "epsilon": self.statement().measure.text(),
                               "method": "noisy histogram of signed bit lengths (power-of-two cells), "
                                         f"narrowest range leaving <= {next(iter(self.laws.values())).tail} of the "
                                         "noisy mass outside on each side",
                               "columns": {}}
        if self.candidates:
            out["limits"] = (f"\"auto\": the histograms' l1 sensitivity is the chosen k c, at most {self.cap} (the "
                             "chosen limits are halved to fit; the laws were built before the spend)")
        for c, law in self.laws.items():
            row: dict[str, Any] = {"law": law.describe()}
            if c in self.choices:
                row.update(self.choices[c].describe())
                row["scale_bits"] = self.scale_bits[c]
            out["columns"][c] = row
        return out

    # --- the run ------------------------------------------------------------------------------------
    def resolve(self, mech: Any, backend: Any, rng: "RandomSource") -> None:
        """The pre-pass, the noisy histograms, the chosen bounds; then ``mech``'s aggregates and plan, rebuilt."""
        stage = mech.stage()
        self.select(stage.max_groups_per_unit * stage.max_rows_per_group)
        value_columns = stage.value_columns  # the same columns in the same order: the same row choice
        cells = tuple(bit_cells(f"{PREFIX}{i}", c) for i, c in enumerate(value_columns))
        stats = backend.compute(replace(stage, aggregates=cells, count_units=False))
        listed = None if mech.public_indexes is None else set(mech.public_indexes)
        totals = {c: [0] * CELLS for c in self.columns}
        names = {c: a.name for a, c in zip(cells, value_columns)}
        for g in stats:
            if listed is not None and g.key not in listed:
                continue
            for c in self.columns:
                row = totals[c]
                for j, v in enumerate(g.stats[names[c]]):
                    row[j] += int(v)
        for c in self.columns:  # fixed draw order: the auto-bounded columns in first-use order
            law = self.laws[c]
            self.choices[c] = law.choose(law.draw(totals[c], rng), self.beta)
        new = []
        for agg in mech.aggs.aggregates:
            if not agg.auto:
                new.append(agg)
                continue
            ch = self.choices[str(agg.column)]
            bits = 0 if agg.kind is Kind.QUANTILE else choose_scale_bits(ch.lo, ch.hi, self.epsilon)
            if agg.kind is not Kind.QUANTILE:
                self.scale_bits[str(agg.column)] = bits
            else:
                self.scale_bits.setdefault(str(agg.column), 0)
            new.append(replace(agg, lo=ch.lo, hi=ch.hi, scale_bits=bits, auto=False))
        for agg in new:  # cannot fail (cells.E_MAX and choose_scale_bits); a fixed, value-free error if it did
            if agg.kind is not Kind.QUANTILE and agg.column in self.choices and agg.D * agg.D >= 1 << 126:
                raise GroupsError("internal error: privately chosen bounds out of the fixed-point range")
        mech.aggs = replace(mech.aggs, aggregates=tuple(new))
        planned = None
        try:
            planned = mech._plan()
        except GroupsError:
            pass
        if planned is None:  # raised outside the except block: a fixed error with no __context__
            raise GroupsError("the release could not be planned with the privately chosen bounds (no value is "
                              "shown; the budget is spent)")
        mech.planned = planned


def auto_bounds(aggregates: tuple[Aggregate, ...], share: Fraction | None, spec: Any, k: int, c: int,
                beta: Fraction, auto_limits: int = 0) -> AutoBounds | None:
    """The bounds step of a release, or None when every aggregate has its bounds (data-free, before any read).

    With ``auto_limits`` "auto" limits (k, c hold 1 for them), the sensitivity k c is known only after their
    release, so a law is built now for every candidate Delta in ascending order - the powers of two below k c,
    then k c 2^i up to the limits' largest choice - until one cannot be built (the share is too small for
    FastSample at that Delta); the run caps the chosen k c at the last one built (:meth:`AutoBounds.select`).
    Refused here, data-free, when not even k c (every "auto" limit at 1) can be built."""
    from dpspark.bounds.histogram import BoundsError, certainly_refused
    from dpspark.errors import ParameterError
    from dpspark.rng import DEFAULT_LAMBDA

    columns = tuple(dict.fromkeys(str(a.column) for a in aggregates if a.auto))
    if not columns:
        if share is not None:
            raise GroupsError("groups.bounds_share applies only when an aggregate has no lo/hi (bounds chosen "
                              "privately); remove it")
        return None
    s = DEFAULT_SHARE if share is None else share
    epsilon = Fraction(spec.epsilon)
    each = epsilon * s / len(columns)
    try:
        law = BoundsLaw(each, k * c, spec.max_units * k * c, DEFAULT_LAMBDA)
    except (BoundsError, ParameterError) as err:  # data-free: refused before the spend
        raise GroupsError(f"bounds chosen privately (each column's share {each} of epsilon, l1 sensitivity "
                          f"k c = {k * c}): {err}; raise groups.bounds_share or epsilon, or give lo and hi") from None
    candidates = {k * c: law} if auto_limits else {}
    for delta_ in candidate_sensitivities(k * c, auto_limits):  # public list, ascending
        if delta_ in candidates:
            continue
        if delta_ > k * c and certainly_refused(each, delta_, spec.max_units * delta_, DEFAULT_LAMBDA):
            break  # the same cap, found without FastSample's slow failing search
        try:
            candidates[delta_] = BoundsLaw(each, delta_, spec.max_units * delta_, DEFAULT_LAMBDA)
        except (BoundsError, ParameterError):
            if delta_ > k * c:
                break  # the cap: larger k c are halved to it after the limits' release
    delta = None if spec.delta is None else Fraction(spec.delta)
    return AutoBounds(s, epsilon, delta, columns, {col: law for col in columns}, beta, spec.max_units,
                      candidates=dict(sorted(candidates.items())))


def candidate_sensitivities(kc: int, auto_limits: int) -> list[int]:
    """The l1 sensitivities a run with ``auto_limits`` "auto" limits may need, ascending: the powers of two below
    ``kc`` (a plan that halves a given limit), then kc 2^i up to every "auto" limit at its largest choice."""
    from dpspark.mechanisms.groups.unit_profile import BUCKETS

    if not auto_limits:
        return []
    below = [1 << i for i in range(kc.bit_length()) if 1 << i < kc]
    return [*below, *(kc << i for i in range(auto_limits * (BUCKETS - 1) + 1))]
