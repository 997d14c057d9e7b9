"""The ``answers`` release: k counts, sums and means answered with bounded noise (DK) or a discrete Gaussian.

Both mechanisms answer the scalar statistics of a ``[[queries]]`` batch
(:mod:`dpspark.mechanisms.answers.queries`): scalar j is an exact integer x_j (fixed-point units) that
one unit moves by at most Delta_j = max(|lo_j|, |hi_j|) under add/remove. k is the number of scalars (a
mean over a noisy count is two).

One unit-sensitivity noise law for all k scalars
------------------------------------------------
Every scalar is released on its own public grid of step Delta_j:

    y_j = Delta_j * (round(x_j / Delta_j) + Z_j),   round = half up,  Z_j i.i.d. integer noise.

*Privacy.* floor(a + t) - floor(a) <= ceil(t), so adding or removing one unit moves the integer
round(x_j / Delta_j) by at most ceil(Delta_j / Delta_j) = 1 in every coordinate, and the k coordinates
may be chosen adaptively. The noise law is therefore calibrated ONCE for k adaptive queries of
sensitivity 1, and y is post-processing. (Scaling integer noise by Delta_j without the rounding would
not do: x_j / Delta_j and x'_j / Delta_j need not differ by an integer, and the supports would be
disjoint.)

* ``bounded_noise`` (Dagan-Kur, COLT 2022): Z ~ :class:`~dpspark.noise.bounded.BoundedNoise` (M,
  family), with M from :func:`~dpspark.noise.bounded_calibrate.calibrate` (k, epsilon, delta,
  sensitivity=1): (epsilon, certified_delta)-DP for k adaptive 1-sensitive queries on the implemented
  pmf (DK Lemmas 10.1-10.2, certified; docs/bounded-noise.md). |Z_j| <= M - 1 always, so
  **every answer is within R_j = Delta_j (M - 1) + floor(Delta_j / 2) of its true value with
  probability 1** (the second term is the rounding), and all k are within
  Delta_j * b95 + floor(Delta_j / 2) with probability >= 0.95 (b95 = calibration's bound95).
* ``gaussian`` (baseline): Z ~ :class:`~dpspark.noise.dgauss.DiscreteGaussian` (sigma), released as
  (c + Z) mod m around 0, c = round(x/Delta) clamped to the window [-max_units, max_units] (c = round(x/Delta)
  with at most max_units units; the clamp is 1-Lipschitz, so the sensitivity stays 1). Each coordinate is
  zcdp_rho(1)-zCDP (CKS20 with the certificate of the implemented law); k adaptive coordinates compose
  to rho = k * zcdp_rho(1) (Bun-Steinke 2016, Lemma 2.3), converted to (epsilon, delta) by CKS20 Cor. 13.
  sigma is the smallest on a 3-digit grid with k * zcdp_rho(1) <= rho*, rho* the largest dyadic rho
  whose certified conversion is <= (epsilon, delta). Its error bound is probabilistic only: all k answers
  are within Delta_j * t95 + floor(Delta_j / 2) with probability >= 0.95 (exact union bound on the law).

Means: ``public_n`` releases y / (S n), within R / (S n) with probability 1 (S = 2^scale_bits);
``noisy_count`` releases y_sum / (S y_count), and states the bound
(R_sum + Delta_sum R_count) / (S y_count) only on the condition that the true count is >= 1 and the
noisy count is > 0 (then |sum/count| <= Delta_sum / S gives it); it is never stated as "within R".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Sequence

from dpspark.mechanisms.answers.laws import bounded_calibration, gaussian_noise, largest_rho
from dpspark.mechanisms.answers.queries import Query, QueryError, QueryKind, Scalar, parse_queries, scalars_of
from dpspark.mechanisms.base import Mechanism, MechanismSpecError, Progress, StageInfo

if TYPE_CHECKING:
    from dpspark.engine.backend import Backend
    from dpspark.engine.spec import ReleaseSpec
    from dpspark.rng import RandomSource

BOUNDED_FAMILIES = ("p1", "p2")
BOUNDED_METHODS = ("chernoff", "pld")
#: the simultaneous probability of the stated "95%" bound
BETA95 = Fraction(1, 20)


# ----------------------------------------------------------------------------- the shared core
def round_half_up(x: int, step: int) -> int:
    """round(x / step) with ties up, exactly (step >= 1)."""
    return (2 * x + step) // (2 * step)


def window_clamp(v: int, n: int) -> int:
    """v clamped to [-n, n] (the Gaussian answers' window; 1-Lipschitz: |c(v) - c(w)| <= |v - w|)."""
    return min(max(v, -n), n)


def release_scalars(totals: Sequence[int], scalars: Sequence[Scalar], draw: Callable[[], int]) -> list[int]:
    """y_j = Delta_j (round(x_j / Delta_j) + Z_j) for every scalar (k draws; k is public: strict time)."""
    if len(totals) != len(scalars):
        raise ValueError("one total per scalar")
    return [s.delta * (round_half_up(int(x), s.delta) + draw()) for x, s in zip(totals, scalars)]


@dataclass(frozen=True)
class NoiseLaw:
    """The calibrated unit-sensitivity law of one ``answers`` release (public; data-free)."""

    mechanism: str
    k: int
    #: deterministic bound on |Z| (bounded noise: M - 1); None for the Gaussian
    abs_bound: int | None
    #: all k |Z_j| <= bound95 with probability >= 0.95
    bound95: int
    parameters: dict[str, Any] = field(default_factory=dict)

    def scalar_R(self, s: Scalar) -> int | None:
        """R_j = Delta_j (M - 1) + floor(Delta_j / 2) in fixed-point units (None: no probability-1 bound)."""
        return None if self.abs_bound is None else s.delta * self.abs_bound + s.delta // 2

    def scalar_95(self, s: Scalar) -> int:
        """The simultaneous 95% bound of scalar j, fixed-point units."""
        return s.delta * self.bound95 + s.delta // 2


def assemble(queries: Sequence[Query], released: Sequence[int], law: NoiseLaw) -> list[dict[str, Any]]:
    """Per query: the exact answer (Fraction, or None for a mean over a non-positive noisy count) and its bounds."""
    out: list[dict[str, Any]] = []
    i = 0
    for q in queries:
        sc = q.scalars()
        ys = released[i:i + len(sc)]
        i += len(sc)
        S = q.scale
        R = [law.scalar_R(s) for s in sc]
        B = [law.scalar_95(s) for s in sc]
        row: dict[str, Any] = {"name": q.name, "kind": q.kind.value}
        if q.kind is not QueryKind.MEAN or q.mean == "public_n":
            div = S * (q.n if q.kind is QueryKind.MEAN else 1)
            row["value"] = Fraction(ys[0], div)
            row["R"] = None if R[0] is None else Fraction(R[0], div)
            row["bound95"] = Fraction(B[0], div)
            row["condition"] = ""
        else:  # mean over a noisy count: the bound is conditional on the noisy count, never "within R"
            ys_sum, ys_count = ys
            D = sc[0].delta
            row["noisy_sum"] = Fraction(ys_sum, S)
            row["noisy_count"] = ys_count
            if ys_count > 0:
                row["value"] = Fraction(ys_sum, S * ys_count)
                row["R"] = None
                row["conditional_bound"] = (None if R[0] is None else
                                            Fraction(R[0] + D * R[1], S * ys_count))
                row["conditional_bound95"] = Fraction(B[0] + D * B[1], S * ys_count)
            else:
                row["value"] = None
                row["R"] = None
                row["conditional_bound"] = None
                row["conditional_bound95"] = None
            row["bound95"] = None
            row["condition"] = ("conditional: holds when the true count is >= 1 and the noisy count is > 0 "
                                "(bounded noise: always then; gaussian: with the 95% probability)")
        row["scalars"] = len(sc)
        out.append(row)
    return out


#: the columns of the ``answers`` table; exact rationals are strings ("p/q"), absent values null
TABLE_COLUMNS = ("name", "kind", "value", "R", "bound95", "conditional_bound", "conditional_bound95",
                 "noisy_sum", "noisy_count", "condition")


def answers_table(answers: Sequence[dict[str, Any]]) -> Any:
    """The answers as a pyarrow table of strings (exact rationals; post-processing of the noisy integers)."""
    import pyarrow as pa

    def text(v: Any) -> str | None:
        return None if v is None else str(v)

    return pa.table({c: pa.array([text(a.get(c)) for a in answers], type=pa.string()) for c in TABLE_COLUMNS})


def _parse_choice(choices: tuple[str, ...], what: str) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        if value not in choices:
            raise MechanismSpecError(f"privacy.{what} must be one of {choices}, got {value!r}")
        return value

    return parse


def _parse_share(value: Any) -> Fraction:
    """``privacy.bounds_share`` (answers/autobounds.parse_share)."""
    from dpspark.mechanisms.answers.autobounds import parse_share

    return parse_share(value)


# ----------------------------------------------------------------------------- mechanisms
class AnswersMechanism(Mechanism):
    """Shared part of ``bounded_noise`` and ``gaussian``: the queries, one pass, the statement envelope."""

    release_kind: ClassVar[str] = "answers"
    delta: ClassVar[str] = "required"
    needs_keys: ClassVar[bool] = False
    #: no unit is removed and every answer is clamped to its window: the guarantee needs no declared n
    #: (without max_units the release runs at the fixed cap, dpspark.privacy.relations.UNITS_CAP)
    units_optional: ClassVar[bool] = True
    sections: ClassVar[dict[str, Any]] = {"queries": parse_queries}
    theorem: ClassVar[str] = ""

    def __init__(self, spec: "ReleaseSpec") -> None:
        super().__init__(spec)
        if spec.on_excess_units == "refuse":  # would be stated but never acted on: no unit is ever removed
            raise MechanismSpecError("on_excess_units = \"refuse\" does not apply to answers: no unit is removed "
                                     "(each unit's total is clipped per query and the guarantee does not depend "
                                     "on n); leave on_excess_units out")
        queries = spec.sections.get("queries")
        if not queries:
            raise MechanismSpecError("mechanism needs a [[queries]] section")
        self.queries: tuple[Query, ...] = tuple(queries)
        self.scalars = scalars_of(self.queries)
        self.k = len(self.scalars)
        if any(s.delta * spec.max_units >= 10**38 for s in self.scalars):
            raise MechanismSpecError("max_units x a clip bound (fixed point) exceeds decimal(38,0): lower scale_bits")
        from dpspark.mechanisms.answers.autobounds import answer_bounds, parse_share

        raw = spec.options.get("bounds_share")
        #: sums and means without lo/hi: their bounds are chosen privately on this stated share (autobounds.py)
        self.auto = answer_bounds(self.queries, None if raw is None else parse_share(raw), spec)  # parsed twice: exact
        #: the answers' own epsilon: all of it, or (1 - bounds_share) of it
        self.main_epsilon = Fraction(spec.epsilon) * (1 - (self.auto.share if self.auto else 0))
        self.law = self.calibrate()

    def excess_units_text(self) -> str:
        """Sums are clipped per unit and never truncated: n sets the fixed-point capacity check only (the words
        live in the family's declaration, which ``dpspark inspect`` reads too)."""
        from dpspark.mechanisms.answers.family import EXCESS_UNITS

        return EXCESS_UNITS[self.name]

    def input_columns(self) -> tuple[str, ...]:
        """The summed columns, the filters' columns and the unit column."""
        cols = [c for s in self.scalars for c in s.columns()]
        return tuple(dict.fromkeys(cols)) + super().input_columns()

    def input_schema_problem(self, schema: Any, *, text_input: bool = False) -> str | None:
        """Why the queries cannot read an input of this pyarrow schema (None: they can); metadata only.

        Summed columns must read as numbers (:func:`dpspark.engine.numeric.numeric_type_problem`), and every
        filter must type-check (:meth:`dpspark.engine.predicate.Predicate.type_problem`).
        """
        for q in self.queries:
            problem = self.query_schema_problem(q, schema, text_input=text_input)
            if problem:
                return problem
        return None

    @staticmethod
    def query_schema_problem(q: Query, schema: Any, *, text_input: bool = False) -> str | None:
        """Why one query cannot read an input of this pyarrow schema (None: it can); metadata only."""
        from dpspark.engine.numeric import numeric_type_problem

        if q.column is not None:
            if q.column not in set(schema.names):
                return f"query {q.name!r}: the input has no column {q.column!r}"
            problem = numeric_type_problem(schema.field(q.column).type, q.column, text_input=text_input)
            if problem:
                return f"query {q.name!r}: {problem}"
        if q.filter is not None:
            problem = q.filter.type_problem(schema, text_input=text_input)
            if problem:
                return f"query {q.name!r}: {problem}"
        return None

    def calibrate(self) -> NoiseLaw:  # pragma: no cover - abstract
        raise NotImplementedError

    def statement(self) -> Any:
        """The primary privacy statement under AddRemove(max_units): the answers', composed after the bounds
        step's when bounds are chosen privately (charged once, before any read)."""
        from dpspark.privacy import compose_statements

        main = self.answers_statement()
        return main if self.auto is None else compose_statements([*self.auto.statements(), main])

    def answers_statement(self) -> Any:  # pragma: no cover - abstract
        """The answers' own statement (within :attr:`main_epsilon`)."""
        raise NotImplementedError

    def stages(self) -> list[StageInfo]:
        from dpspark.mechanisms.answers.bounds_pass import UnitCellsStage
        from dpspark.mechanisms.answers.stage import ScalarTotalsStage, WideScalarTotalsStage

        pre = [StageInfo("answers_bounds", "bounds pre-pass: a bit-length histogram of the units' totals of each "
                                           "query without lo/hi", stage=UnitCellsStage)] if self.auto else []
        wide = self.auto is None and ScalarTotalsStage.type_for(self.scalars) is WideScalarTotalsStage
        return [*pre, StageInfo("sums", f"one pass: exact clipped sums of {self.k} scalar statistics",
                                stage=WideScalarTotalsStage if wide else ScalarTotalsStage)]

    def plan(self) -> dict[str, Any]:
        return {"mechanism": self.name, "k": self.k, **self.law.parameters,
                "queries": [q.describe() for q in self.queries],
                **({"bounds": self.auto.describe()} if self.auto is not None else {})}

    def privacy_summary(self) -> dict[str, Any]:
        out = {"statement": self.statement().text(), "epsilon_requested": str(self.spec.epsilon),
               "delta_requested": str(self.spec.delta)}
        if self.auto is not None:  # stated in the dry run and --explain
            out["bounds"] = (f"chosen privately for {', '.join(self.auto.names)} on {self.auto.share} of epsilon "
                             f"({self.auto.each} each; one pre-pass, a noisy bit-length histogram of the units' "
                             "totals), charged with the rest before any data is read")
        return out

    def accuracy_summary(self) -> dict[str, Any]:
        return {"abs_bound_units": self.law.abs_bound, "bound95_units": self.law.bound95, "k": self.k,
                "compared": self.comparison().words(), "per_query": self.planned_bounds()}

    def comparison(self) -> Any:
        """Both answers mechanisms' error bars at this k (:mod:`dpspark.mechanisms.answers.choice`; a dry run)."""
        from dpspark.mechanisms.answers.choice import compare

        return compare(self.k, self.spec.epsilon, self.spec.delta, max_units=self.spec.max_units,
                       family=self.spec.options.get("family", "p2"), bounded_M=self.certified_M())

    def certified_M(self) -> int | None:
        """The certified bounded-noise M of this release, if it has one (the Gaussian has none)."""
        return None

    def planned_bounds(self) -> dict[str, dict[str, Any]]:
        """Each query's error bars in its own units, from public parameters only (``--dry-run``): R (probability
        1; bounded noise only) and the simultaneous 95% bound; a noisy-count mean's bound depends on its
        noisy count and is stated with the answer."""
        out: dict[str, dict[str, Any]] = {}
        for q in self.queries:
            sc = q.scalars()
            if q.auto:
                out[q.name] = {"bound": "once its bounds are chosen privately (stated with the answer)"}
                continue
            if q.kind is QueryKind.MEAN and q.mean != "public_n":
                out[q.name] = {"mean": "noisy_count: the noisy sum over a noisy count of the same rows (two of the "
                                       "k answers; the default without n)",
                               "bound": "conditional on its noisy count (stated with the answer)"}
                continue
            div = q.scale * (q.n if q.kind is QueryKind.MEAN else 1)
            r = self.law.scalar_R(sc[0])
            out[q.name] = {"R (always)": None if r is None else str(Fraction(r, div)),
                           "bound95 (all answers, w.p. >= 0.95)": str(Fraction(self.law.scalar_95(sc[0]), div))}
            if q.kind is QueryKind.MEAN:
                out[q.name] = {"mean": f"public_n: the noisy sum over the public n = {q.n}", **out[q.name]}
        return out

    def accuracy(self) -> Any:
        """The accuracy statement, in units of each scalar's sensitivity (the per-answer bounds are in the section)."""
        from dpspark.privacy import AccuracyClaim, AccuracyStatement

        claims = []
        notes = ("bounds on |noisy - true| / Delta_j for every scalar answer j (counts, sums, public-n means, and "
                 "the sum and count inside a noisy-count mean); each answer's own bound is in the answers section")
        if self.law.abs_bound is not None:
            claims.append(AccuracyClaim.deterministic(Fraction(2 * self.law.abs_bound + 1, 2),
                                                      quantity="abs_error_over_sensitivity"))
        claims.append(AccuracyClaim("abs_error_over_sensitivity", Fraction(2 * self.law.bound95 + 1, 2), BETA95,
                                    "simultaneous"))
        return AccuracyStatement(claims, notes)

    # --- with data --------------------------------------------------------------------------
    def totals(self, backend: "Backend", scalars: Sequence[Scalar] | None = None) -> list[int]:
        """The exact statistic of every scalar (default: the batch's) in one pass, on the backend's engine."""
        from dpspark.mechanisms.answers.stage import ScalarTotalsStage

        scalars = self.scalars if scalars is None else list(scalars)
        return backend.compute(ScalarTotalsStage.of(scalars, self.spec.unit_column, self.spec.max_units))

    def sampler(self) -> Callable[["RandomSource"], Callable[[], int]]:  # pragma: no cover - abstract
        raise NotImplementedError

    def release(self, totals: Sequence[int], scalars: Sequence[Scalar], rng: "RandomSource") -> list[int]:
        """The noisy integers y_j = Delta_j (round(x_j / Delta_j) + Z_j), one draw per scalar."""
        return release_scalars(totals, scalars, self.sampler()(rng))

    def answer_totals(self, totals: Sequence[int], rng: "RandomSource",
                      queries: Sequence[Query] | None = None) -> list[dict[str, Any]]:
        """The answers from exact totals: one draw of the calibrated law per scalar, then post-processing."""
        queries = self.queries if queries is None else tuple(queries)
        return assemble(queries, self.release(totals, scalars_of(queries), rng), self.law)

    def run(self, backend: "Backend", rng: "RandomSource", progress: Progress) -> Any:
        """With bounds chosen privately: the pre-pass and its noise, the queries with their bounds; then one pass,
        k noise draws, the statement envelope."""
        if self.auto is not None:
            self.resolve_bounds(backend, rng, progress)
        answers = self.answer_totals(self.totals(backend), rng)
        return self.payload(answers)

    def resolve_bounds(self, backend: "Backend", rng: "RandomSource", progress: Progress) -> None:
        """The bounds pre-pass, its noisy histograms and the chosen bounds (post-processing; cannot fail)."""
        from dpspark.mechanisms.answers.bounds_pass import UnitCellsStage, pre_scalar

        assert self.auto is not None
        progress("answers: bounds chosen privately (one pre-pass)")
        auto = [q for q in self.queries if q.auto]
        hists = backend.compute(UnitCellsStage(tuple(pre_scalar(q) for q in auto), self.spec.unit_column))
        self.queries = self.auto.resolve(self.queries, hists, rng)
        self.scalars = scalars_of(self.queries)

    def section(self) -> dict[str, Any]:
        """The kind's manifest section: what the bounds mean, k, the noise (the answers are the table)."""
        det = self.law.abs_bound is not None
        words = ("every answer is within R of its true value (probability 1); all answers are within bound95 "
                 "with probability >= 0.95" if det else
                 "no probability-1 bound (Gaussian noise); all answers are within bound95 with probability >= 0.95")
        return {"mechanism": self.name, "k": self.k, "queries": len(self.queries), "table": "answers",
                "deterministic_bound": det, "bounds": words,
                "noisy_count_means": "a mean over a noisy count states only a conditional bound (column condition)",
                "nulls": ("per query (parameters.queries[].nulls): \"drop\" - a NULL, NaN or unparseable value is "
                          "neither summed nor counted - or the public value it counts as; +-inf are clipped to "
                          "the query's bounds; identical on the Arrow and Spark engines"),
                "filters": ("a row counts only where its query's filter is TRUE (SQL three-valued logic; "
                            "number literals compare as their nearest double)"),
                "noise": dict(self.law.parameters, abs_bound_units=self.law.abs_bound, bound95_units=self.law.bound95)}

    def payload(self, answers: list[dict[str, Any]]) -> Any:
        """The :class:`~dpspark.release.statements.StatementRelease` of these answers."""
        from dpspark.release.statements import StatementRelease, standard_statements

        return StatementRelease(
            algorithm=self.theorem, parameters=self.plan(),
            privacy=standard_statements(self.statement(), **self.statement_extras()),
            accuracy=self.accuracy(), section=self.section(), tables={"answers": answers_table(answers)})

    def statement_extras(self) -> dict[str, Any]:
        return {}


class BoundedNoiseAnswers(AnswersMechanism):
    """Dagan-Kur bounded noise: every answer within R_j with probability 1 (module docstring for the proof)."""

    name: ClassVar[str] = "bounded_noise"
    theorem: ClassVar[str] = "Dagan-Kur bounded noise (DK COLT 2022, Lemmas 10.1-10.2; certified on the implemented pmf)"
    options: ClassVar[dict[str, Any]] = {"family": "p2", "method": "chernoff", "bounds_share": "1/10"}
    option_parsers: ClassVar[dict[str, Any]] = {"family": _parse_choice(BOUNDED_FAMILIES, "family"),
                                                "method": _parse_choice(BOUNDED_METHODS, "method"),
                                                "bounds_share": _parse_share}

    def calibrate(self) -> NoiseLaw:
        from dpspark.noise.bounded import MAX_TABLE_M, BoundedNoiseError

        family = self.spec.options.get("family", "p2")
        method = self.spec.options.get("method", "chernoff")
        try:
            cal = bounded_calibration(self.k, self.main_epsilon, self.spec.delta, family, method)
        except BoundedNoiseError as err:
            raise MechanismSpecError(f"bounded_noise calibration refused: {err}") from None
        if cal.M > MAX_TABLE_M:
            raise MechanismSpecError(f"bounded_noise needs M = {cal.M} > 2^24 (the table limit) for k = {self.k}: "
                                     "raise epsilon or delta, or answer fewer queries")
        if cal.certified_delta > self.spec.delta or cal.epsilon != self.main_epsilon:
            raise MechanismSpecError("internal error: the calibration exceeds the configured budget")
        self.cal = cal
        params = {"family": cal.family, "method": cal.method, "M": cal.M, "bits": cal.bits,
                  "certified_epsilon": str(cal.epsilon), "certified_delta": str(cal.certified_delta),
                  "noise_bound": cal.M - 1, "bound95_units": cal.bound95, "truncation_J": cal.J,
                  "theta": str(cal.theta), "unit_sensitivity_grid": "Delta_j per scalar"}
        return NoiseLaw(self.name, self.k, cal.M - 1, cal.bound95, params)

    def certified_M(self) -> int | None:
        return self.cal.M

    def answers_statement(self) -> Any:
        from dpspark.privacy import AddRemove, PrivacyStatement
        from dpspark.privacy.measures import ApproxDP

        return PrivacyStatement(ApproxDP(self.cal.epsilon, self.cal.certified_delta), AddRemove(self.spec.max_units),
                                self.theorem, f"k = {self.k} adaptive answers, M = {self.cal.M}, family {self.cal.family}")

    def sampler(self) -> Callable[["RandomSource"], Callable[[], int]]:
        noise = self.noise()
        return lambda rng: (lambda: noise.draw(rng))

    def noise(self) -> Any:
        """The certified noise table (built once per mechanism object)."""
        if getattr(self, "_noise", None) is None:
            self._noise = self.cal.noise()
        return self._noise


class GaussianAnswers(AnswersMechanism):
    """Baseline: the shared strict-time discrete Gaussian, rho-zCDP converted to (epsilon, delta) by CKS20."""

    name: ClassVar[str] = "gaussian"
    options: ClassVar[dict[str, Any]] = {"bounds_share": "1/10"}
    option_parsers: ClassVar[dict[str, Any]] = {"bounds_share": _parse_share}
    theorem: ClassVar[str] = ("discrete Gaussian (Canonne-Kamath-Steinke 2020, certified implemented law), "
                              "k-fold zCDP composition, CKS20 Cor. 13 conversion")

    def calibrate(self) -> NoiseLaw:
        from dpspark.noise.dgauss import DGaussError

        assert self.spec.delta is not None
        self.rho_budget = largest_rho(self.spec.epsilon, self.spec.delta)
        if self.auto is not None:  # the bounds step's pure eps s is (eps s)^2 / 2-zCDP (module autobounds)
            self.rho_budget -= (Fraction(self.spec.epsilon) * self.auto.share) ** 2 / 2
            if self.rho_budget <= 0:
                raise MechanismSpecError("gaussian: privacy.bounds_share leaves no zCDP budget for the answers; "
                                         "lower it or give lo and hi")
        radius = self.spec.max_units
        if radius >= 1 << 48:
            raise MechanismSpecError("max_units must be < 2^48 for the gaussian answers")
        try:
            self.dg = gaussian_noise(self.rho_budget / self.k, radius)
        except DGaussError as err:
            raise MechanismSpecError(f"gaussian: no sigma <= 10^4 meets rho = {self.rho_budget} / k = {self.k}: "
                                     f"{err}") from None
        self.rho = self.k * self.dg.zcdp_rho(1)
        if self.rho > self.rho_budget:
            raise MechanismSpecError("internal error: the gaussian's rho exceeds the budget")
        t95 = self._t95()
        params = {"sigma": str(self.dg.sigma), "rho": str(self.rho), "rho_budget": str(self.rho_budget),
                  "window_radius": radius, "bound95_units": t95, "dgauss": self.dg.describe()}
        return NoiseLaw(self.name, self.k, None, t95, params)

    def _t95(self) -> int:
        """Least t <= T with k Pr[|Z| > t] <= 1/20 on the exact law (union bound)."""
        from dpspark.mechanisms.answers.choice import gaussian_t95

        t95 = gaussian_t95(self.dg, self.k)
        if t95 < 0:
            raise MechanismSpecError("gaussian: no 95% bound within the Gaussian body")
        return t95

    def answers_statement(self) -> Any:
        from dpspark.privacy import AddRemove, PrivacyStatement, ZCDP

        return PrivacyStatement(ZCDP(self.rho), AddRemove(self.spec.max_units), self.theorem,
                                f"k = {self.k} adaptive answers, sigma = {self.dg.sigma}")

    def statement_extras(self) -> dict[str, Any]:
        return {"delta": self.spec.delta}

    def certified_approx(self) -> Any:
        """The certified (epsilon, delta) of the stated rho (CKS20)."""
        from dpspark.privacy.conversions import zcdp_to_approx_dp_cks
        from dpspark.privacy.measures import ZCDP

        return zcdp_to_approx_dp_cks(ZCDP(self.rho), self.spec.delta)

    def sampler(self) -> Callable[["RandomSource"], Callable[[], int]]:
        dg = self.dg
        return lambda rng: (lambda: dg.draw(rng))

    def release(self, totals: Sequence[int], scalars: Sequence[Scalar], rng: "RandomSource") -> list[int]:
        """As the base, with the cyclic release (c + Z) mod m represented around 0, c = round(x/Delta) clamped
        to the window [-n, n] (n = max_units). With at most n units |round(x/Delta)| <= n and c is it; with
        more (answers remove no unit), c is the window's edge, never a value wrapped mod m (61,697 units under
        n = 50,000 once came out as -38,423). Privacy is unchanged: the clamp is 1-Lipschitz, so one unit still
        moves c by at most 1 (the law's sensitivity), and |c + Z| <= n + T = R never wraps."""
        dg, n = self.dg, self.spec.max_units
        draw = self.sampler()(rng)
        return [s.delta * int(dg.wrap(window_clamp(round_half_up(int(x), s.delta), n) + draw(), 0))
                for x, s in zip(totals, scalars)]


__all__ = ["AnswersMechanism", "BoundedNoiseAnswers", "GaussianAnswers", "NoiseLaw", "QueryError",
           "assemble", "release_scalars", "round_half_up", "largest_rho"]
