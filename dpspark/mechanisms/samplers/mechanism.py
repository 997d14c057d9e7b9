"""The RSSS samplers as registered mechanisms: ``kary_sampler`` and ``bernoulli_sampler`` (release kind "sample").

Both make one pass (counts per symbol, or column sums) and draw on the driver with exact integers; the
algorithms, their privacy proofs and accuracy derivations are in :mod:`dpspark.mechanisms.samplers.kary` (RSSS Alg 3,
Thm 1.4) and :mod:`dpspark.mechanisms.samplers.bernoulli` (RSSS Thms 6.1, 6.4, 1.8).

Several samples (``privacy.samples = m``): the units are split into m disjoint batches by a keyed hash of
the unit id (never of record content; the key is drawn per release and never written), and one sample is
drawn per batch. A unit affects exactly one batch, so the whole release costs what one sample costs
(parallel composition), and the samples are independent only across batches: each is a function of its own
batch's units and fresh coins.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar

from dpspark.mechanisms.base import Mechanism, MechanismSpecError, Progress, StageInfo
from dpspark.rng import DEFAULT_LAMBDA, bias_epsilon
from dpspark.mechanisms.samplers.binary_input import MAX_COLUMNS, BinaryInput, parse_binary_input, schema_problem  # noqa: F401

# MAX_COLUMNS (re-exported): the most binary columns a [columns] section takes, named or as an array's width

if TYPE_CHECKING:
    from dpspark.engine.backend import Backend
    from dpspark.privacy import AccuracyStatement, PrivacyStatement
    from dpspark.rng import RandomSource

#: most samples (disjoint batches) one release draws
MAX_SAMPLES = 1 << 16
INDEPENDENCE = "independent only across batches"


def parse_samples(value: Any) -> int:
    """``privacy.samples``: how many samples (one per disjoint batch of units), an int in [1, 2^16]."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("privacy.samples must be an integer (one sample per disjoint batch of units)")
    if not 1 <= value <= MAX_SAMPLES:
        raise ValueError(f"privacy.samples must lie in [1, {MAX_SAMPLES}]")
    return value


def smallest_n(ok: Any) -> int:
    """The smallest n >= 2 with ``ok(n)``, for a monotone public predicate (doubling, then bisection; data-free)."""
    hi = 4
    while not ok(hi):
        hi *= 2
    lo = hi // 2
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid + 1, hi)
    return lo


def parse_columns(raw: Any) -> "BinaryInput":
    """``[columns]``: ``names = [...]`` (d binary columns, in output order) or ``array = "col"`` with
    ``width = d`` (one array column; outputs ``col[0]``, ``col[1]``, ...). See :mod:`dpspark.mechanisms.samplers.binary_input`."""
    return parse_binary_input(raw)


def _sample_section(samples: list[Any], columns: list[str], batches: int) -> dict[str, Any]:
    return {"samples": samples, "columns": columns, "batches": batches, "independence": INDEPENDENCE}


class _Sampler(Mechanism):
    release_kind: ClassVar[str] = "sample"
    options: ClassVar[dict[str, Any]] = {"samples": 1}
    option_parsers: ClassVar[dict[str, Any]] = {"samples": parse_samples}

    def __init__(self, spec: Any, lam: int = DEFAULT_LAMBDA) -> None:
        super().__init__(spec)
        self.lam = lam
        self.m = int(spec.options.get("samples", 1))
        if self.m > 1 and spec.unit_column is None:
            raise MechanismSpecError(
                "privacy.samples > 1 splits units into disjoint batches by a keyed hash of the unit id; "
                "set privacy.unit_column (a row's position is not a stable batch key)")

    def _batch_note(self) -> str:
        if self.m == 1:
            return ""
        return (f"; {self.m} samples, one per disjoint batch H_key(unit id) mod {self.m} (parallel composition: "
                "each unit is in one batch), independent only across batches")


class KarySampler(_Sampler):
    """RSSS Algorithm 3 (Thm 1.4): GeoSample-noised counts over a public universe of k symbols, clipped at 0,
    normalised (an exact l1 projection), one exact inverse-CDF draw per batch.

    Privacy: ln(p/q) + bias_epsilon(1) <= epsilon pure DP under AddRemove(max_units) (one unit moves one
    count by one; GeoSample at e^{eps~} = p/q, Balcer-Vadhan Thm 4.7; the draw is post-processing); twice
    that under Substitute(max_units) by group privacy. Accuracy: d_TV(output law, P) <= k / (N sinh eps~)
    with N i.i.d. units (RSSS Thm 1.4 at the add/remove scale 1/eps~), stated at N = max_units.
    """

    name: ClassVar[str] = "kary_sampler"

    def __init__(self, spec: Any, lam: int = DEFAULT_LAMBDA) -> None:
        super().__init__(spec, lam)
        from dpspark.exact import within_epsilon
        from dpspark.rng import bias_epsilon
        from dpspark.mechanisms.samplers.kary import KARY_MAX_K, kary_counting

        if spec.max_keys_per_unit != 1:
            raise MechanismSpecError("mechanism 'kary_sampler' needs privacy.max_keys_per_unit = 1 "
                                     "(each unit is one draw from the distribution)")
        self.k = spec.universe.size
        if self.k > KARY_MAX_K:
            raise MechanismSpecError(f"mechanism 'kary_sampler' takes universes of at most {KARY_MAX_K} keys; "
                                     f"this one has {self.k}")
        if not spec.universe.is_bijection:
            raise MechanismSpecError("mechanism 'kary_sampler' releases a key value; a hashed universe cannot "
                                     "be decoded (use a categorical, int_range or string universe)")
        self.n = spec.max_units
        self.counting = kary_counting(self.n, spec.epsilon)
        d = self.counting.d
        self.extra = bias_epsilon(0 if d & (d - 1) == 0 else 1, lam)
        if not within_epsilon(self.counting.exp_eps, self.extra, spec.epsilon):
            raise MechanismSpecError("internal error: the plan's exact epsilon would exceed the configured epsilon")

    def input_schema_problem(self, schema: Any, *, text_input: bool = False) -> str | None:
        """Key column types against the universe kind (:mod:`dpspark.universe.keytypes`), before any spend."""
        from dpspark.universe.keytypes import key_type_problem

        return key_type_problem(self.spec.universe, tuple(self.spec.key_columns), schema, text_input=text_input)

    # --- data-free --------------------------------------------------------------------------------
    @property
    def units_per_batch(self) -> int:
        """N at which the accuracy claim is stated: max_units, or floor(max_units / samples) per batch."""
        return self.n // self.m

    def tv_bound(self) -> Fraction:
        """k / (N sinh eps~) at N = max_units units (per batch: floor(max_units / samples))."""
        from dpspark.mechanisms.samplers.kary import tv_bound

        return tv_bound(self.k, self.units_per_batch, self.counting.exp_eps)

    def plan(self) -> dict[str, Any]:
        from dpspark.mechanisms.samplers.kary import mean_abs_noise

        return {
            "mechanism": self.name, "k": self.k, "samples": self.m, "max_units": self.n,
            "counting": self.counting.describe(),
            "mean_abs_noise": str(mean_abs_noise(self.counting.exp_eps)),
            "units_per_batch": self.units_per_batch, "tv_bound": str(self.tv_bound()),
        }

    def statement(self) -> "PrivacyStatement":
        """The primary statement, under AddRemove(max_units)."""
        from dpspark.privacy import AddRemove, PrivacyStatement

        return PrivacyStatement.from_exp_eps(
            self.counting.exp_eps, self.extra, 0,
            "RSSS Alg 3 / Thm 1.4 with GeoSample noise (Balcer-Vadhan Alg 4.8, Thm 4.7): one unit moves one "
            "count by one; clip, normalise and the draw are post-processing" + self._batch_note(),
            AddRemove(self.n),
            notes="extra = the rng's multiply-shift bias on the changed count's one uniform (0 if d is a power of two)",
        )

    def privacy_summary(self) -> dict[str, Any]:
        st = self.statement()
        return {"statement": st.text(), "epsilon_requested": str(self.spec.epsilon)}

    def accuracy_statement(self) -> "AccuracyStatement":
        """d_TV(output law, P) <= k / (N sinh eps~), stated at N = max_units units (per batch)."""
        from dpspark.privacy import AccuracyClaim, AccuracyStatement
        from dpspark.mechanisms.samplers.kary import mean_abs_noise

        per = "in the sample's batch" if self.m > 1 else ""
        claim = AccuracyClaim.tv_distance(
            self.tv_bound(), self.units_per_batch,
            condition=(f"each unit's symbol drawn i.i.d. from P; with N units {per} the bound is k E|Z| / N "
                       f"= {self.k} * {mean_abs_noise(self.counting.exp_eps)} / N (RSSS Thm 1.4), stated at "
                       "N = max_units (per batch); max_units is only an upper bound: with fewer units the bound "
                       "grows as 1/N and the draw stays unbiased (it normalises by the noisy total, never by "
                       "max_units)").replace("  ", " "))
        return AccuracyStatement([claim], notes="TV of the output law averaged over the data and the coins (RSSS); "
                                 "clip-then-normalise is an exact l1 projection onto the simplex")

    def accuracy_summary(self) -> dict[str, Any]:
        return {"tv_bound": str(self.tv_bound()), "units_per_batch": self.units_per_batch}

    def stages(self) -> list[StageInfo]:
        what = "count per symbol" + (f" and disjoint batch (one pass over keys (batch, symbol), {self.m} batches)"
                                     if self.m > 1 else "")
        from dpspark.mechanisms.samplers.stages import BatchedCountsStage

        return [StageInfo("counts", what, stage=BatchedCountsStage)]

    # --- with data --------------------------------------------------------------------------------
    def run(self, backend: "Backend", rng: "RandomSource", progress: Progress) -> Any:
        from dpspark.release.statements import StatementRelease, standard_statements
        from dpspark.mechanisms.samplers.kary import kary_sample_batches
        from dpspark.engine.stages import CountsStage
        from dpspark.mechanisms.samplers.stages import batched_counts

        batches = batched_counts(backend, CountsStage.from_spec(self.spec), self.m)
        progress(f"drawing {self.m} sample(s) from the noisy counts")
        draws = kary_sample_batches(batches, self.k, self.counting, rng)
        universe = self.spec.universe
        values = [_json_value(universe.decode(j + 1)) for j in draws]
        return StatementRelease(
            algorithm="KarySampler (RSSS Alg 3, Thm 1.4)",
            parameters={"k": self.k, "samples": self.m, "max_units": self.n,
                        "exp_eps": self.counting.exp_eps, "mean_abs_noise": self.plan()["mean_abs_noise"]},
            privacy=standard_statements(self.statement()),
            accuracy=self.accuracy_statement(),
            section=_sample_section(values, list(self.spec.key_columns), self.m),
        )


def _json_value(v: Any) -> Any:
    if isinstance(v, tuple):
        return [_json_value(x) for x in v]
    if isinstance(v, bytes):
        return v.hex()
    return v


class BernoulliSampler(_Sampler):
    """RSSS Thm 6.1 per binary column, and its product over d columns (Thms 6.4, 1.8): Ber(clip(c_j/D, [1/4, 3/4])).

    D = max(N, n0): N the units of the batch (exact), n0 a public floor (a multiple of 4), the smallest that
    meets privacy.epsilon - so the estimate c/N is unbiased whenever the data hold at least n0 units per batch,
    whatever max_units says (issue 25; derivation in :mod:`dpspark.mechanisms.samplers.bernoulli`). No noise
    knob: the mechanism is exactly d ln(1 + 4/n0) (+ the rng bias) pure DP, under AddRemove(max_units) and
    Substitute(max_units) alike. With privacy.delta it is also stated as rho-zCDP, rho = d rho0 with rho0 a
    certified upper bound on the exact Renyi divergence rate of one column's implemented law at every
    reachable pair of probabilities (composed, RSSS Thm 1.8), its CKS20 (eps, delta) conversion checked
    against privacy.epsilon: n0 then grows like sqrt(d ln(1/delta))/eps. The plan refuses when max_units (per
    batch) is below n0: the data could not hold the units the floor needs, and dividing by n0 > N would bias.
    Accuracy needs N >= n0 units per batch with biases in [1/3, 2/3] (see the kind's statement).
    """

    name: ClassVar[str] = "bernoulli_sampler"
    needs_keys: ClassVar[bool] = False
    #: with privacy.delta the product is also stated as rho-zCDP (each column's exact Renyi bound, certified;
    #: composed over d columns) and converted to (eps, delta) (CKS20 Cor. 13):
    #: n0 then grows like sqrt(d log(1/delta))/eps instead of 4d/eps (RSSS Thm 1.8)
    delta: ClassVar[str] = "optional"
    sections: ClassVar[dict[str, Any]] = {"columns": parse_columns}

    def __init__(self, spec: Any, lam: int = DEFAULT_LAMBDA) -> None:
        super().__init__(spec, lam)
        from dpspark.exact import exp_lower_bound
        from dpspark.mechanisms.zcdp_budget import converted_epsilon
        from dpspark.mechanisms.samplers import bernoulli as B

        self.input: BinaryInput = spec.sections["columns"]
        self.columns: tuple[str, ...] = self.input.names  # output names (col[j] for the array form)
        self.d = len(self.columns)
        self.n = spec.max_units
        self.nb = self.n // self.m  # the most units a batch may hold on average: an upper bound only
        if self.nb < 1:
            raise MechanismSpecError("privacy.max_units must be at least privacy.samples")
        self.L = B.public_bits(self.n, lam)  # the public number of random bits of every draw
        self.extra = bias_epsilon(self.d, lam)  # the rounding of each column's draw (module docstring)
        self.rho: Fraction | None = None
        if spec.delta is not None:
            from dpspark.mechanisms.zcdp_budget import rho_within

            self.n0 = B.floor_units_zcdp(rho_within(spec.epsilon, spec.delta), self.d, self.L)
            self.rho = self.zcdp_rho(self.n0)
            if converted_epsilon(self.rho, spec.delta) > spec.epsilon:  # pragma: no cover - rho_within certified it
                raise MechanismSpecError("internal error: the zCDP floor's conversion exceeds privacy.epsilon")
        else:
            target = exp_lower_bound(spec.epsilon) * (1 - self.extra)
            if target <= 1:
                raise MechanismSpecError("mechanism 'bernoulli_sampler': privacy.epsilon is too small for the "
                                         "rng's rounding term")
            self.n0 = B.floor_units(target, self.d)
        self.exp = B.floor_exp_epsilon(self.n0, self.d)
        if self.n0 > self.nb:
            per = f" per batch (max_units / samples = {self.nb})" if self.m > 1 else f" (max_units = {self.n})"
            raise MechanismSpecError(
                f"mechanism 'bernoulli_sampler' adds no noise: for privacy.epsilon = {spec.epsilon} with d = "
                f"{self.d} columns it divides each count by at least n0 = {self.n0} units, and the data may hold at "
                f"most fewer{per}, so the sample would be biased: raise epsilon"
                f"{' (or set privacy.delta for the zCDP statement, which needs about sqrt(d) times fewer)' if spec.delta is None else ''}"
                f"{' or lower samples' if self.m > 1 else ''}; only if the data really hold at least "
                f"{self.n0 * self.m} units, raise max_units to an upper bound on them")

    def excess_units_text(self) -> str:
        """Every unit is read; the estimate divides by the batch's unit count (floored at n0), never by max_units
        ("refuse" refuses; the words live in the family's declaration, which ``dpspark inspect`` reads too)."""
        from dpspark.mechanisms.samplers.family import EXCESS_UNITS

        return EXCESS_UNITS[self.name] if self.spec.on_excess_units == "truncate" else self.spec.on_excess_units

    def input_columns(self) -> tuple[str, ...]:
        """The d binary columns (or the one array column) and the unit column."""
        return self.input.input_columns() + super().input_columns()

    def input_schema_problem(self, schema: Any, *, text_input: bool = False) -> str | None:
        """Named columns must be numbers or booleans (text only in CSV/JSON), the array form an array of
        booleans or integers: checked on the schema alone, before any spend."""
        return schema_problem(schema, self.input, text_input)

    def zcdp_rho(self, n0: int) -> Fraction:
        """d rho0, rho0 a certified upper bound on sup_alpha D_alpha/alpha of one column's IMPLEMENTED law at every
        reachable pair (:func:`~dpspark.mechanisms.samplers.bernoulli.floor_column_rho`: exact rationals, arb
        balls, rounded up), composed over the d independent columns."""
        from dpspark.mechanisms.samplers import bernoulli as B

        return self.d * B.floor_column_rho(n0, self.L)

    def tv_bound(self) -> Fraction:
        """d 2^(-1 - floor(1.44 N / 72)) at N = max_units per batch (the most the data may hold)."""
        from dpspark.mechanisms.samplers.bernoulli import tv_bound

        return tv_bound(self.nb, self.d)

    def plan(self) -> dict[str, Any]:
        from dpspark.mechanisms.samplers.bernoulli import tv_bound

        return {"mechanism": self.name, "d": self.d, "samples": self.m, "max_units": self.n,
                "nulls": self.input.nulls, "nulls_rule": self.input.nulls_text(),
                "n0": self.n0, "denominator": "max(N, n0), N the batch's unit count",
                "column_ratio": str(1 + Fraction(4, self.n0)),
                "epsilon": f"{self.d} ln({1 + Fraction(4, self.n0)}) + {self.extra}",
                "rho": None if self.rho is None else str(self.rho),
                "tv_bound_at_max_units": str(self.tv_bound()), "tv_bound_at_n0": str(tv_bound(self.n0, self.d))}

    def _statement(self, relation: Any, how: str, zcdp: bool = False) -> "PrivacyStatement":
        from dpspark.privacy import PrivacyStatement, ZCDP

        theorem = (f"RSSS Thm 6.1 per column with the denominator D = max(N, n0), n0 = {self.n0}: every neighbour "
                   f"moves a column's probability by at most 1/D, so its ratio is <= 1 + 4/n0 = "
                   f"{1 + Fraction(4, self.n0)}; product of {self.d} independent columns (Thm 6.4), each count "
                   f"moved by at most one {how}" + self._batch_note())
        notes = ("no added noise; each column's draw reads public bits, and its rounding (at most 2^-L on a "
                 "probability >= 1/4) is in the epsilon")
        if zcdp:
            assert self.rho is not None
            return PrivacyStatement(ZCDP(self.rho), relation, theorem + "; each column's rho is the certified "
                                    "sup over alpha of D_alpha/alpha of its implemented law at every reachable "
                                    "pair of probabilities, composed over the columns (RSSS Thm 1.8)", notes)
        return PrivacyStatement.from_exp_eps(self.exp, self.extra, 0, theorem, relation, notes=notes)

    def statement(self) -> "PrivacyStatement":
        """The primary statement, under AddRemove(max_units) (rho-zCDP when privacy.delta is set)."""
        from dpspark.privacy import AddRemove

        return self._statement(AddRemove(self.n), "and the unit count by at most one when a unit is added or removed",
                               self.rho is not None)

    def replacement_statement(self) -> "PrivacyStatement":
        """The same guarantee under Substitute(max_units): a changed unit also moves each count by at most one."""
        from dpspark.privacy import Substitute

        return self._statement(Substitute(self.n), "when a unit's record changes (direct proof, no group privacy)",
                               self.rho is not None)

    def statements(self) -> tuple[tuple[str, "PrivacyStatement"], ...]:
        """Every named statement: pure (always true); with privacy.delta also rho-zCDP and its (eps, delta)."""
        from dpspark.privacy import AddRemove, Substitute
        from dpspark.release.statements import standard_statements

        if self.rho is None:
            return standard_statements(self.statement(), replacement=self.replacement_statement())
        pure = (("add_remove_pure", self._statement(AddRemove(self.n), "when a unit is added or removed")),
                ("replacement_pure", self._statement(Substitute(self.n), "when a unit's record changes")))
        return standard_statements(self.statement(), delta=self.spec.delta,
                                   replacement=self.replacement_statement()) + pure

    def privacy_summary(self) -> dict[str, Any]:
        return {"statement": self.statement().text(), "replacement": self.replacement_statement().text(),
                "epsilon_requested": str(self.spec.epsilon)}

    def accuracy_statement(self) -> "AccuracyStatement":
        from dpspark.privacy import AccuracyClaim, AccuracyStatement

        per = " per batch" if self.m > 1 else ""
        claim = AccuracyClaim.tv_distance(
            self.tv_bound(), self.n0,
            condition=(f"rows i.i.d. from a product distribution whose column biases lie in [1/3, 2/3]; with N units"
                       f"{per}, n0 = {self.n0} <= N, the estimate is c/N (unbiased) and d_TV <= d e^(-N/72) / 2 "
                       f"(RSSS Thm 6.4, Hoeffding), stated at N = max_units{per} = {self.nb}; below n0 units the "
                       "estimate c/n0 would be biased by p (n0 - N)/n0 (the floor privacy needs)"))
        return AccuracyStatement([claim], notes="no added noise: accuracy only needs n = O(log(d/alpha)); "
                                 "privacy needs a floor n0 of about 4d/epsilon units (pure, basic composition)")

    def accuracy_summary(self) -> dict[str, Any]:
        return {"tv_bound_at_max_units": str(self.tv_bound()), "n0": self.n0, "units_per_batch_at_most": self.nb}

    def stages(self) -> list[StageInfo]:
        what = (f"sum of each of {self.d} binary columns (a value is 1 iff non-zero, a missing one counts "
                f"{self.input.nulls}; per unit clipped to [0, 1]) and the unit count")
        from dpspark.mechanisms.samplers.stages import BinarySumsStage

        return [StageInfo("sums", what + (f", per each of {self.m} disjoint batches" if self.m > 1 else ""),
                          stage=BinarySumsStage)]

    def run(self, backend: "Backend", rng: "RandomSource", progress: Progress) -> Any:
        from dpspark.engine.backend import CuratorError
        from dpspark.engine.stages import SumsStage
        from dpspark.release.statements import StatementRelease
        from dpspark.mechanisms.samplers.bernoulli import denominator, floor_sample
        from dpspark.mechanisms.samplers.stages import column_sums

        d = self.d
        # the array form sums d internal element columns (a Spark name may not hold "[j]"); same rule as names
        names = self.columns if self.input.array is None else tuple(f"__dp_elem{j}" for j in range(d))
        stage = SumsStage(columns=names, lo=(0,) * d, hi=(1,) * d, scale_bits=0,
                          unit_column=self.spec.unit_column, max_units=self.n,
                          batches=self.m if self.m > 1 else None)
        rows = column_sums(backend, stage, self.input.array, self.input.nulls)
        if self.spec.on_excess_units == "refuse" and sum(r["units"] for r in rows) > self.n:
            raise CuratorError(
                f"the input holds more units than privacy.max_units = {self.n} and on_excess_units = 'refuse' "
                "(curator-side check, before any sample was drawn)")
        progress(f"drawing {self.m} sample(s) of {d} bits")
        samples = []
        for r in rows:
            D = denominator(int(r["units"]), self.n0)
            # a count above D cannot happen (each unit adds at most one); clamped anyway: 1-Lipschitz
            samples.append(floor_sample([min(int(r[f"sum_{c}"]), D) for c in names], int(r["units"]), self.n0,
                                        self.L, rng))
        return StatementRelease(
            algorithm="BernoulliSampler (RSSS Thm 6.1; product over columns, Thms 6.4, 1.8)",
            parameters={"d": d, "samples": self.m, "max_units": self.n, "n0": self.n0, "random_bits": self.L,
                        "column_ratio": self.plan()["column_ratio"], "nulls": self.input.nulls,
                        "nulls_rule": self.input.nulls_text()},
            privacy=self.statements(),
            accuracy=self.accuracy_statement(),
            section=_sample_section(samples, list(self.columns), self.m),
        )
