"""``product_sampler`` (RSSS Alg 4, Thm 5.1 => 1.6) and ``product_learner`` (KLSU PPDE Alg 7, Thm 5.2).

Input: d binary columns named in ``[columns] names = [...]`` (0/1 integers or booleans; a value counts as 1
iff it is non-zero, +-inf included; a NULL, NaN or unparseable value counts as the public ``[columns] nulls``
= 0 (default) or 1 - "drop" is refused: a unit is one record, the OR of its rows, and a dropped row would
silently change it), or one array column, ``[columns] array = "col"`` with ``width = d``, whose
element j is bit j (:mod:`dpspark.mechanisms.samplers.binary_input`: missing elements count 0, elements beyond d are
ignored; outputs are named ``col[j]``; a per-row deterministic map, so privacy is unchanged), one record per
unit: ``privacy.unit_column`` is required, because the rounds read disjoint batches chosen by a keyed hash of
the unit id (never of the record's content); a unit with several rows contributes the OR of its rows.
``privacy.max_units`` is the public n of Substitute(n) and an upper bound on the units: nothing divides by it
(every estimate is a ratio of two noisy sums over the same units, the count among them), so fewer units than
max_units cost accuracy, never bias (issue 25); the accuracy claims hold for n_needed <= N <= max_units units.

Budget: zCDP. ``privacy.epsilon`` and ``privacy.delta`` (required) give rho =
:func:`dpspark.mechanisms.zcdp_budget.rho_within` (or the ``privacy.rho`` option, checked against them).
Every round is calibrated so that its certified rho under Substitute(n) is <= rho (and so under AddRemove(n),
where Delta^2 is at most as large); rounds compose in parallel over disjoint batches, so the release is
rho-zCDP under both relations (:mod:`dpspark.mechanisms.product.rounds` for the proof), stated with the CKS20
(eps, delta) conversions. Options: ``alpha`` (target TV distance; sampler: default 1/10; learner: optional,
issue 36 - unset, the learner never refuses and states per-feature error bars at beta from its noisy unit
count, :func:`dpspark.mechanisms.product.learner.error_bars`), ``samples`` (sampler: one sample per disjoint
group of batches, same budget), ``beta`` of ``[privacy]`` is the learner's failure probability. A plan with an
alpha refuses (before any data is read) when max_units is below the n that alpha needs, without advising a
max_units above the data's size. Units beyond max_units are not removed (every unit is
read); the privacy claim holds whatever their number, the accuracy claims assume at most max_units.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar

from dpspark.exact import parse_rational
from dpspark.mechanisms.base import Mechanism, MechanismSpecError, Progress, StageInfo
from dpspark.mechanisms.samplers.mechanism import INDEPENDENCE, parse_columns
from dpspark.mechanisms.zcdp_budget import rho_option, rho_within
from dpspark.mechanisms.product import rounds as rd
from dpspark.mechanisms.samplers.binary_input import BinaryInput, schema_problem

if TYPE_CHECKING:
    from dpspark.engine.backend import Backend
    from dpspark.rng import RandomSource

MAX_SAMPLES = 64


def parse_alpha(value: Any) -> Fraction:
    """``privacy.alpha``: the target TV distance, exact, in (0, 1]."""
    a = parse_rational(value, "privacy.alpha")
    if not 0 < a <= 1:
        raise ValueError("privacy.alpha must lie in (0, 1]")
    return a


def parse_samples(value: Any) -> int:
    """``privacy.samples``: samples drawn, each from its own disjoint group of batches (int in [1, 64])."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_SAMPLES:
        raise ValueError(f"privacy.samples must be an integer in [1, {MAX_SAMPLES}]")
    return value


class _Product(Mechanism):
    delta: ClassVar[str] = "required"
    needs_keys: ClassVar[bool] = False
    sections: ClassVar[dict[str, Any]] = {"columns": parse_columns}
    reads_every_unit: ClassVar[bool] = True  # no unit removed: on_excess_units = "refuse" is refused
    options: ClassVar[dict[str, Any]] = {"rho": None, "alpha": "1/10"}
    option_parsers: ClassVar[dict[str, Any]] = {"rho": rho_option, "alpha": parse_alpha}

    def __init__(self, spec: Any) -> None:
        super().__init__(spec)
        if spec.unit_column is None:
            raise MechanismSpecError(
                f"mechanism {self.name!r} needs privacy.unit_column: its rounds read disjoint batches chosen by a "
                "keyed hash of the unit id (a row's position is not stable, and hashing content breaks privacy)")
        self.input: BinaryInput = spec.sections["columns"]
        self.columns: tuple[str, ...] = self.input.names  # output names (col[j] for the array form)
        self.d = len(self.columns)
        self.n = spec.max_units
        self.rho = rho_within(spec.epsilon, spec.delta, spec.options.get("rho"))
        alpha = spec.options.get("alpha")
        self.alpha = parse_alpha("1/10" if alpha is None else alpha)

    def input_columns(self) -> tuple[str, ...]:
        """The d binary columns (or the one array column) and the unit column."""
        return self.input.input_columns() + super().input_columns()

    def input_schema_problem(self, schema: Any, *, text_input: bool = False) -> str | None:
        """Named columns must be numbers or booleans (text only in CSV/JSON), the array form an array of
        booleans or integers: checked on the schema alone, before any spend."""
        return schema_problem(schema, self.input, text_input)

    def statements(self) -> tuple[tuple[str, Any], ...]:
        """rho-zCDP under Substitute(n) and AddRemove(n), with certified (eps, delta) at the configured delta."""
        from dpspark.privacy import AddRemove, PrivacyStatement, Substitute, ZCDP
        from dpspark.release.statements import standard_statements

        thm = (f"{self.theorem}: every round is certified discrete Gaussians (Canonne-Kamath-Steinke 2020, "
               "implemented-law certificate) on truncated group sums of binary records, Delta^2 = sum over groups "
               "of min(|G|, 2C_G) (min(|G|, C_G) under add/remove, plus the unit count), calibrated to the round's "
               f"budget; {self.composition}")
        primary = PrivacyStatement(ZCDP(self.rho), Substitute(self.n), thm)
        ar = PrivacyStatement(ZCDP(self.rho), AddRemove(self.n), thm)
        return standard_statements(primary, delta=self.spec.delta, add_remove=ar)

    def privacy_summary(self) -> dict[str, Any]:
        return {"rho": str(self.rho), "relations": "Substitute(n) and AddRemove(n)", "delta": str(self.spec.delta)}

    def stages(self) -> list[StageInfo]:
        from dpspark.mechanisms.product.stage import ProductRoundsStage

        # the first round prepares the units from the input; the later ones read the prepared units
        return [StageInfo(name, f"truncated group sums of the binary columns and a unit count ({name})", i > 0,
                          stage=ProductRoundsStage, reads_input=i == 0)
                for i, name in enumerate(self.round_names())]

    def rounds_stage(self, batches: int) -> Any:
        """The stage whose result is the rounds' oracle (units prepared in ``batches`` keyed-hash batches)."""
        from dpspark.mechanisms.product.stage import ProductRoundsStage

        return ProductRoundsStage(tuple(self.columns), self.spec.unit_column, batches, self.input.array,
                                  self.input.nulls)

    def round_names(self) -> list[str]:  # pragma: no cover - overridden
        raise NotImplementedError

    theorem: ClassVar[str] = ""
    composition: ClassVar[str] = ""


class ProductSampler(_Product):
    """RSSS Algorithm 4 (Thm 5.1 => Thm 1.6): one private sample of a product distribution on {0,1}^d.

    Privacy: rho-zCDP under Substitute(n) and AddRemove(n) (:mod:`dpspark.mechanisms.product.sampler`, RSSS Lemma 5.2);
    accuracy: TV(output law, P) <= the plan's exact bound <= alpha when the n = max_units units are i.i.d.
    draws from a product distribution P (derivation in :mod:`dpspark.mechanisms.product.sampler`).
    """

    name: ClassVar[str] = "product_sampler"
    release_kind: ClassVar[str] = "sample"
    theorem: ClassVar[str] = "RSSS Thm 5.1 (Alg 4)"
    composition: ClassVar[str] = ("the ladder's rounds read one part of the keyed-hash batches and compose "
                                  "sequentially (sum of budgets = rho), the sampling round reads the disjoint "
                                  "rest (rho): parallel composition, as are several samples")
    options: ClassVar[dict[str, Any]] = {**_Product.options, "samples": 1}
    option_parsers: ClassVar[dict[str, Any]] = {**_Product.option_parsers, "samples": parse_samples}

    def __init__(self, spec: Any) -> None:
        from dpspark.mechanisms.product.sampler import SamplerPlan

        super().__init__(spec)
        self.m = parse_samples(spec.options.get("samples", 1))
        per = self.n // self.m
        if per < 1:
            raise MechanismSpecError("privacy.samples exceeds max_units")
        try:  # each sample: its own B/m hash batches and n/m nominal units
            self.plan_obj = SamplerPlan.build(self.d, per, self.rho, self.alpha,
                                              batches=rd.DEFAULT_BATCHES // self.m)
        except rd.NeedMoreUnits as exc:
            raise MechanismSpecError(f"{exc} (per sample: max_units / samples)" if self.m > 1 else str(exc)) from None

    def round_names(self) -> list[str]:
        names = [f"bucketing {r}" for r in range(1, self.plan_obj.K + 1)] + ["sampling"]
        return [f"{nm} (sample {s + 1})" if self.m > 1 else nm for s in range(self.m) for nm in names]

    def plan(self) -> dict[str, Any]:
        return {"mechanism": self.name, "rho": str(self.rho), "samples": self.m, "nulls": self.input.nulls,
                "nulls_rule": self.input.nulls_text(), **self.plan_obj.describe()}

    def accuracy_statement(self) -> Any:
        from dpspark.privacy import AccuracyClaim, AccuracyStatement

        plan = self.plan_obj
        per = " per sample" if self.m > 1 else ""
        claim = AccuracyClaim.tv_distance(
            plan.accuracy_bound(), plan.n_needed,
            condition=(f"the data hold N units{per} with {plan.n_needed} <= N <= {plan.n} (max_units is an upper "
                       f"bound, not the count), i.i.d. draws from a product distribution on {{0,1}}^{self.d}, and the "
                       f"batch hash behaves as a random function; target alpha = {self.alpha} (RSSS Thm 5.1 with the "
                       "constants derived in dpspark.mechanisms.product.sampler)"))
        return AccuracyStatement([claim], notes="TV of the output law averaged over the data and the coins (RSSS); "
                                 "each bit divides by a noisy count of the units read, so fewer units than "
                                 "max_units cost accuracy, not bias")

    def accuracy_summary(self) -> dict[str, Any]:
        return {"tv_bound": str(self.plan_obj.accuracy_bound()), "alpha": str(self.alpha),
                "n_needed_per_sample": self.plan_obj.n_needed,
                "units": "an upper bound: the claim holds for n_needed <= N <= max_units units, never biased below"}

    def run(self, backend: "Backend", rng: "RandomSource", progress: Progress) -> Any:
        from dpspark.mechanisms.product.sampler import run_sampler
        from dpspark.release.statements import StatementRelease
        oracle = backend.compute(self.rounds_stage(rd.DEFAULT_BATCHES))
        try:
            runs = [run_sampler(self.plan_obj, oracle, rng, offset=s * self.plan_obj.batches,
                                total_batches=rd.DEFAULT_BATCHES) for s in range(self.m)]
        finally:
            oracle.close()
        progress(f"drew {self.m} sample(s) of {self.d} bits")
        return StatementRelease(
            algorithm="ProductSampler (RSSS Alg 4, Thm 5.1 => Thm 1.6)",
            parameters={**self.plan(), "bucket_sizes": [[len(b) for b in r.buckets] for r in runs],
                        "rounds_run": [r.rounds for r in runs]},
            privacy=self.statements(),
            accuracy=self.accuracy_statement(),
            section={"samples": [r.sample for r in runs], "columns": list(self.columns), "batches": self.m,
                     "independence": INDEPENDENCE},
        )


class ProductLearner(_Product):
    """KLSU PPDE (Algorithm 7, Thm 5.2): a product distribution q in [0,1]^d, released as exact rationals.

    Privacy: rho-zCDP under Substitute(n) and AddRemove(n) (:mod:`dpspark.mechanisms.product.learner`); accuracy: with
    probability >= 1 - beta, TV(P, Q) <= alpha when the n = max_units units are i.i.d. draws from a product
    distribution P (KL <= alpha^2/2 on the coordinates with p_j >= 1/d, derivation in
    :mod:`dpspark.mechanisms.product.learner`). Synthetic rows drawn from q are post-processing (free).
    """

    name: ClassVar[str] = "product_learner"
    release_kind: ClassVar[str] = "distribution"
    theorem: ClassVar[str] = "KLSU Thm 5.2 (PPDE, Alg 7)"
    composition: ClassVar[str] = ("every round reads all the units and the rounds compose sequentially "
                                  "(adaptively): rho/4 for the ladder, 3 rho/4 for the final round")

    options: ClassVar[dict[str, Any]] = {**_Product.options, "alpha": None}

    def __init__(self, spec: Any) -> None:
        from dpspark.mechanisms.product.learner import LearnerPlan

        # alpha is the analyst's target: only a target they set can be refused. Unset, the release runs at any
        # size and states the per-feature error bars the data's size supports (the plan's shapes use 1/10)
        self.alpha_set = spec.options.get("alpha") is not None
        super().__init__(spec)
        try:
            self.plan_obj = LearnerPlan.build(self.d, self.n, self.rho, self.alpha, spec.beta, enforce=self.alpha_set)
        except rd.NeedMoreUnits as exc:
            raise MechanismSpecError(str(exc)) from None

    def round_names(self) -> list[str]:
        return [f"bucketing {r}" for r in range(1, self.plan_obj.R)] + ["final"]

    def plan(self) -> dict[str, Any]:
        out = {"mechanism": self.name, "rho": str(self.rho), "nulls": self.input.nulls,
               "nulls_rule": self.input.nulls_text(), **self.plan_obj.describe()}
        if not self.alpha_set:  # no TV target: the plan's alpha only shapes the final round's budget weights
            out["alpha"] = f"not set: no TV claim (the final round's budget weights are those of alpha = {self.alpha})"
            for key in ("n_needed", "failure_bound"):
                out.pop(key, None)
            out["units"] = ("every round reads all units; estimates divide by a noisy count of them (max_units is "
                            "only an upper bound)")
        return out

    def accuracy_statement(self, run: Any = None) -> Any:
        """The TV claim when privacy.alpha is set; after the run (``run``), the per-feature error bars."""
        from dpspark.privacy import AccuracyClaim, AccuracyStatement

        plan = self.plan_obj
        claims = []
        if self.alpha_set:  # the analyst's own target first
            claims.append(AccuracyClaim.tv_distance(
                self.alpha, plan.n_needed, beta=plan.failure_bound(),
                condition=(f"the data hold N units with {plan.n_needed} <= N <= {self.n} (max_units is an upper "
                           f"bound, not the count), i.i.d. draws from a product distribution P on {{0,1}}^{self.d}; "
                           "TV(P, Q) between P and the released product distribution Q, with KL(P_A || Q_A) <= "
                           "alpha^2/2 on A = {p_j >= 1/d} (KLSU Thm 5.2 with the constants derived in "
                           "dpspark.mechanisms.product.learner)")))
        if run is not None and run.bars:
            truncation = ("no record was truncated (every ceiling of this release is at least its group's size)"
                          if run.untruncated else
                          "a record with more ones among a group's columns than the group's ceiling (rounds_run) "
                          "counts as zeros there: for i.i.d. product-distributed rows each record does so with "
                          f"probability <= e^-{plan.L}")
            claims.append(AccuracyClaim(
                "abs_error", max(run.bars), plan.beta, "per_query",
                condition=("per feature j: |q_j - f_j| <= error_bars[j] (the section's error_bars, the error_bar "
                           "column of to_pandas(); this bound is the largest), f_j the fraction of the units read "
                           "whose column j is 1; the noise's error only, from exact quantiles of the implemented "
                           "noise laws and the final round's noisy unit count (not the true count, not max_units); "
                           f"{truncation} (dpspark.mechanisms.product.learner.error_bars)")))
        bars = ("" if run is not None else "the release states each feature's error bar, from its noisy unit "
                "count; ")
        tv = ("" if self.alpha_set else "set privacy.alpha for a TV-distance claim against a product distribution "
              "(it is refused before any data is read when max_units cannot hold the units it needs); ")
        return AccuracyStatement(claims, notes=bars + tv + "q is exact (rationals) and divides by a noisy count of "
                                 "the units, so fewer units than max_units cost accuracy, not bias; flipped marks "
                                 "the columns the algorithm estimated as 1 - q (those more often 1 than 0): "
                                 "bookkeeping, q is always Pr[column = 1]; synthetic rows drawn from q are "
                                 "post-processing and cost no privacy")

    def accuracy_summary(self) -> dict[str, Any]:
        out = {"beta": str(self.spec.beta),
               "error_bars": "per feature, stated after the run from its noisy unit count (the release's error_bars)",
               "units": "an upper bound: the claim holds for n_needed <= N <= max_units units, never biased below"}
        if self.alpha_set:
            out.update({"alpha": str(self.alpha), "tv_beta": str(self.plan_obj.failure_bound()),
                        "n_needed": self.plan_obj.n_needed})
        return out

    def run(self, backend: "Backend", rng: "RandomSource", progress: Progress) -> Any:
        from dpspark.mechanisms.product.learner import run_learner
        from dpspark.release.statements import StatementRelease
        oracle = backend.compute(self.rounds_stage(self.plan_obj.batches))
        try:
            run = run_learner(self.plan_obj, oracle, rng)
        finally:
            oracle.close()
        progress(f"learned q over {self.d} columns")
        return StatementRelease(
            algorithm="ProductLearner (KLSU PPDE, Alg 7, Thm 5.2)",
            parameters={**self.plan(), "locked_in_round": run.locked_in, "rounds_run": run.rounds},
            privacy=self.statements(),
            accuracy=self.accuracy_statement(run),
            section={"q": list(run.q), "columns": list(self.columns), "flipped": run.flips,
                     "error_bars": list(run.bars)},
        )
