"""The Balcer-Vadhan histogram mechanisms on the engine: dense (BasicHistogram), stability, pure sparse.

Each class owns its parameter policy (epsilon -> e^eps~ = p/q, gamma, tau, the mixing weight), which
it derives and certifies from public inputs when constructed, before any data is read. The algorithms
and their proofs are in :mod:`dpspark.mechanisms.histogram` (BV Algorithm 5.1 / Thm 5.2, Algorithm 5.4 /
Thm 5.5, Algorithm 6.9 / Thm 6.10); contribution bounds (k keys per unit, up to c rows per key, for
all three) scale them as in :mod:`dpspark.mechanisms.histogram.contribution`.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar

from dpspark.noise import FastSample, choose_exp_eps
from dpspark.noise.counting_base import CountingMechanism
from dpspark.exact import within_epsilon
from dpspark.mechanisms.histogram.inputs import is_power_of_two
from dpspark.mechanisms.histogram.result import HistogramRelease, biased_draw_factor
from dpspark.engine.stages import CountsStage
from dpspark.mechanisms.base import Mechanism, MechanismSpecError, Progress
from dpspark.mechanisms.histogram.contribution import count_range, per_step_epsilon, scale_statement
from dpspark.rng import DEFAULT_LAMBDA

if TYPE_CHECKING:
    from dpspark.engine.backend import Backend
    from dpspark.engine.spec import ReleaseSpec
    from dpspark.rng import RandomSource

#: Largest universe the dense mechanism releases in full (every bin is a row of the release).
DENSE_MAX_BINS = 10_000_000
#: e^eps = (p/q)^(k c) is stated exactly while both parts have at most this many bits; above, it is stated
#: rounded up (:func:`stated_exp_eps`). The reader takes parts of at most 4096 bits and squares e^eps for
#: the replacement statement, so the stated value must stay well under 2048 bits.
EXACT_EXP_EPS_BITS = 1024
#: the rounded-up e^eps is a multiple of 2^-ROUND_BITS
ROUND_BITS = 256


def stated_exp_eps(exp_eps: Fraction) -> Fraction:
    """The e^eps a release states for the exact ``exp_eps`` = (p/q)^(k c): itself when small, else rounded up.

    (p/q)^(k c) has k c times the bits of p/q (10 keys x 50 rows at epsilon 1: about 4500 bits), more than
    the reader takes. Rounding *up* to a multiple of 2^-ROUND_BITS keeps the statement a valid upper bound
    on the privacy loss (e^eps <= stated), loosens it by a factor below 1 + 2^-ROUND_BITS, and bounds its size.
    """
    if max(exp_eps.numerator.bit_length(), exp_eps.denominator.bit_length()) <= EXACT_EXP_EPS_BITS:
        return exp_eps
    scale = 1 << ROUND_BITS
    return Fraction(-(-exp_eps.numerator * scale // exp_eps.denominator), scale)


def rounding_note(exact: Fraction, stated: Fraction) -> str:
    """What the statement says about a rounded e^eps (empty when stated exactly)."""
    if exact == stated:
        return ""
    return (f"e^eps is stated as (p/q)^(k c) rounded up to a multiple of 2^-{ROUND_BITS} (an upper bound: the "
            "exact value has too many bits for the release format)")


def gamma_for(beta: Fraction, universe_size: int) -> Fraction:
    """FastSample's uniform weight 1/g, g a power of two >= 6|X|/beta: simultaneous accuracy over X stays valid."""
    need = -(-6 * universe_size * beta.denominator // beta.numerator)
    return Fraction(1, 1 << (need - 1).bit_length())


def as_unit_fraction(gamma: Fraction) -> Fraction:
    """gamma rounded down to the form 1/g (stated in the manifest)."""
    if gamma.numerator == 1:
        return gamma
    return Fraction(1, -(-gamma.denominator // gamma.numerator))


def parse_gamma(value: Any) -> Fraction:
    """``privacy.gamma``: FastSample's uniform mixture weight, an exact rational in (0, 1)."""
    from dpspark.exact import parse_rational

    gamma = parse_rational(value, "privacy.gamma")
    if not 0 < gamma < 1:
        raise MechanismSpecError("privacy.gamma must lie in (0, 1)")
    return gamma


class CountingHistogram(Mechanism):
    """Shared part of the histogram mechanisms: one count pass, one counting mechanism M on [0, N]."""

    release_kind: ClassVar[str] = "sparse"
    option_parsers: ClassVar[dict[str, Any]] = {"gamma": parse_gamma}
    options: ClassVar[dict[str, Any]] = {"gamma": None}
    supports_rows_per_key: ClassVar[bool] = True
    #: how the algorithm's statement becomes the per-unit one (:func:`contribution.scale_statement`)
    scaling: ClassVar[dict[str, bool]] = {}

    def __init__(self, spec: "ReleaseSpec", lam: int = DEFAULT_LAMBDA) -> None:
        super().__init__(spec)
        self.lam = lam
        self.k = spec.max_keys_per_unit
        self.c = spec.max_rows_per_key
        self.n_range = count_range(spec.max_units, self.k, self.c)
        self.step_epsilon = per_step_epsilon(spec.epsilon, self.k, self.c)
        self.check_universe()
        self.counting = self.make_counting()
        self.certify()

    def input_schema_problem(self, schema: Any, *, text_input: bool = False) -> str | None:
        """Key column types against the universe kind (:mod:`dpspark.universe.keytypes`), before any spend."""
        from dpspark.universe.keytypes import key_type_problem

        return key_type_problem(self.spec.universe, tuple(self.spec.key_columns), schema, text_input=text_input)

    # --- policy -------------------------------------------------------------------------------
    def check_universe(self) -> None:
        """Data-free universe checks of this mechanism (override)."""

    def make_counting(self) -> CountingMechanism:
        """The counting mechanism M on [0, N] at the per-step epsilon (FastSample, or its GeoSample fallback)."""
        exp_eps = choose_exp_eps(2 * self.step_epsilon)  # e^eps~ just below e^eps_step (add/remove)
        gamma = self.spec.options.get("gamma")
        gamma = gamma if gamma is not None else gamma_for(self.spec.beta, self.spec.universe.size)
        mech = FastSample(n=self.n_range, exp_eps=exp_eps, gamma=as_unit_fraction(gamma))
        return mech.fallback if mech.fallback is not None else mech

    def bias_draws(self) -> int:
        """Biased mod-d draws on the changed bin's path (0 when d is a power of two)."""
        return 0 if is_power_of_two(self.counting.d) else 1

    def step_delta(self) -> Fraction:
        """delta of one unit step (0 for the pure mechanisms)."""
        return Fraction(0)

    def extra_copies(self) -> int:
        """How many times the per-step rational extra (rng bias) counts per unit: k (one draw per key)."""
        return self.k * self.c if self.scaling.get("group") else self.k

    def stated_exp_eps(self) -> Fraction:
        """The per-unit e^eps the release states: (p/q)^(k c), rounded up when too large (:func:`stated_exp_eps`)."""
        return stated_exp_eps(self.counting.exp_eps ** (self.k * self.c))

    def planned_statement(self) -> Any:
        """The per-unit privacy statement the release will make (data-free), under AddRemove(max_units)."""
        from dpspark.privacy import AddRemove, PrivacyStatement

        extra, grow = biased_draw_factor(self.bias_draws(), self.lam)
        copies = self.extra_copies()
        return PrivacyStatement.from_exp_eps(self.stated_exp_eps(), extra * copies, self.step_delta() * grow * copies,
                                             self.name, AddRemove(self.spec.max_units))

    def certify(self) -> None:
        """The per-unit (epsilon, delta) this plan states is within the requested budget, exactly."""
        extra, grow = biased_draw_factor(self.bias_draws(), self.lam)
        copies = self.extra_copies()
        if not within_epsilon(self.stated_exp_eps(), extra * copies, self.spec.epsilon):
            raise MechanismSpecError("internal error: the plan's exact epsilon would exceed the configured epsilon")
        if self.step_delta() * grow * copies > (self.spec.delta or 0):
            raise MechanismSpecError("internal error: the plan's exact delta would exceed the configured delta")

    # --- statements ---------------------------------------------------------------------------
    def plan(self) -> dict[str, Any]:
        """The counting mechanism's exact parameters and the contribution bounds."""
        return {
            "mechanism": self.name,
            "counting": self.counting.describe(),
            "count_range": self.n_range,
            "max_keys_per_unit": self.k,
            "max_rows_per_key": self.c,
            "epsilon_per_step": str(self.step_epsilon),
        }

    def privacy_summary(self) -> dict[str, Any]:
        """The per-unit statement the release will make, exactly: e^eps = (p/q)^(k c), extra, delta."""
        st = self.planned_statement()
        from dpspark.lookup.describe import relation_line

        return {"statement": relation_line(st), "epsilon_requested": str(self.spec.epsilon),
                "delta_requested": None if self.spec.delta is None else str(self.spec.delta)}

    def accuracy_summary(self) -> dict[str, Any]:
        """The per-query error bar a with its beta (exact)."""
        return {"per_query_error_bar": self.counting.accuracy(self.spec.beta), "beta": str(self.spec.beta)}

    # --- with data ----------------------------------------------------------------------------
    def run(self, backend: "Backend", rng: "RandomSource", progress: Progress) -> HistogramRelease:
        """One count pass, then the driver-side histogram algorithm; the statement is scaled per unit."""
        indices, counts = backend.compute(CountsStage.from_spec(self.spec))
        return self.release_from_counts(indices, counts, rng, progress)

    def release_from_counts(self, indices: list[int], counts: list[int], rng: "RandomSource", progress: Progress) -> HistogramRelease:
        """The release from exact sparse counts (0-based indexes); noise is drawn once."""
        from dataclasses import replace

        release = self.histogram((indices, counts), rng, progress)
        privacy = scale_statement(release.privacy, self.k, self.c, self.spec.max_units, **self.scaling)
        stated = stated_exp_eps(privacy.exp_eps)
        if stated != privacy.exp_eps:  # too many bits for the format: an upper bound, rounded up
            from dpspark.privacy import PrivacyStatement

            privacy = PrivacyStatement.from_exp_eps(
                stated, privacy.bias_epsilon, privacy.delta, privacy.theorem, privacy.relation,
                "; ".join(t for t in (privacy.notes, rounding_note(privacy.exp_eps, stated)) if t),
                privacy.replacement_delta)
        if not within_epsilon(privacy.exp_eps, privacy.bias_epsilon, self.spec.epsilon):
            raise RuntimeError("internal error: the release's exact epsilon exceeds the configured epsilon")
        if privacy.delta > (self.spec.delta or 0):
            raise RuntimeError("internal error: the release's exact delta exceeds the configured delta")
        return release if privacy is release.privacy else replace(release, privacy=privacy)

    def histogram(self, data: Any, rng: "RandomSource", progress: Progress) -> HistogramRelease:  # pragma: no cover
        """The driver-side algorithm (override)."""
        raise NotImplementedError


class DenseHistogram(CountingHistogram):
    """BasicHistogram over all of X (BV Algorithm 5.1, Thm 5.2): every bin released, pure DP.

    Privacy, per unit under add/remove among at most n units: M runs on [0, k c n] at e^eps~ <=
    e^(epsilon/(k c)); a key moving by up to c changes one independent bin's law by at most (p/q)^c, so
    e^eps = (p/q)^(k c) plus k times the changed bin's rng bias (:mod:`dpspark.mechanisms.histogram.contribution`).
    """

    name: ClassVar[str] = "dense"

    def check_universe(self) -> None:
        size = self.spec.universe.size
        if size > DENSE_MAX_BINS:
            raise MechanismSpecError(
                f"mechanism 'dense' releases every bin; the universe has {size} > {DENSE_MAX_BINS} keys")

    def noise_law(self) -> dict[str, str] | None:
        """The implemented law of a neighbouring pair, for the ledger's PLD statement (else None).

        Only when M is GeoSample (FastSample's public fallback, t* >= N: the two-sided geometric at e^eps~ =
        p/q clamped to [0, N], exactly, BV Thm 4.7(i)). A unit moves at most k keys, each by at most c; every
        other bin has the same law on both sides, and each changed one is clamp(x + Z) against clamp(x + e + Z),
        0 < e <= c, with independent noise: post-processing of k copies of geometric(p/q, c) (log-concave:
        shift c dominates e). Each one mod-d draw puts every probability within 1 +- 2^-lam (bias 0 when d is
        a power of two).
        """
        from dpspark.noise.geosample import GeoSample

        if not isinstance(self.counting, GeoSample):
            return None
        bias = Fraction(0) if is_power_of_two(self.counting.d) else Fraction(1, 1 << self.lam)
        return {"law": "geometric", "base": str(self.counting.exp_eps), "sensitivity": str(self.c),
                "bias": str(bias), "copies": str(self.k)}

    def histogram(self, data: Any, rng: "RandomSource", progress: Progress) -> HistogramRelease:
        from dpspark.mechanisms.histogram import basic_histogram

        size = self.spec.universe.size
        return basic_histogram(data, range(size), size, self.n_range, self.counting, rng, beta=self.spec.beta)


class StabilityHistogram(CountingHistogram):
    """StabilityHistogram (BV Algorithm 5.4, Thm 5.5): noisy counts of non-empty bins above tau; (eps, delta).

    Privacy, per unit under add/remove among at most n units: M runs on [0, k c n] at e^eps~ <=
    e^(epsilon/(k c)); tau is set at count c so that delta_c = Pr[M(c, U) > tau] <= delta/k; one key
    moving by up to c is (c eps~, delta_c)-DP (:mod:`dpspark.mechanisms.histogram.stability`), and the k
    independent keys compose to e^eps = (p/q)^(k c) (+ k rng bias), delta = k delta_c (times the rng factor).
    """

    name: ClassVar[str] = "stability"
    delta: ClassVar[str] = "required"
    options: ClassVar[dict[str, Any]] = {}
    option_parsers: ClassVar[dict[str, Any]] = {}
    scaling: ClassVar[dict[str, bool]] = {"per_key": True}

    def make_counting(self) -> CountingMechanism:
        from dpspark.mechanisms.histogram.stability import stability_mechanism, stability_threshold

        assert self.spec.delta is not None
        mech = stability_mechanism(self.n_range, self.step_epsilon, self.spec.delta / self.k)
        self.tau = stability_threshold(mech, self.threshold_delta, self.c)
        if self.tau >= self.n_range:
            raise MechanismSpecError(
                "privacy.delta is too small for this n: the stability threshold tau reaches n and nothing "
                "could ever be released; raise delta or max_units")
        return mech

    @property
    def threshold_delta(self) -> Fraction:
        """delta per step, with room for the rng's (1 + 2^-lam) factor so the stated delta stays <= requested."""
        assert self.spec.delta is not None
        return self.spec.delta / self.k * (1 - Fraction(1, 1 << 100))

    def step_delta(self) -> Fraction:
        """delta_c = Pr[M(c, U) > tau]: one key going from 0 to at most c (the per-key delta)."""
        mech = self.counting
        return Fraction(mech.d - mech.scaled_cdf(self.c, self.tau), mech.d)

    def plan(self) -> dict[str, Any]:
        return {**super().plan(), "tau": self.tau}

    def histogram(self, data: Any, rng: "RandomSource", progress: Progress) -> HistogramRelease:
        from dpspark.mechanisms.histogram import stability_histogram

        size = self.spec.universe.size
        return stability_histogram(data, size, self.n_range, self.counting, self.threshold_delta, rng, beta=self.spec.beta,
                                   rows_per_key=self.c)


class PureSparseHistogram(CountingHistogram):
    """PureSparseHistogram (BV Algorithm 6.9, Thm 6.10): pure DP over huge universes (|X| >= 2 k c n + 1).

    Privacy, per unit under add/remove among at most n units: the algorithm runs on datasets of total
    count <= N = k c n at e^eps~ <= e^(epsilon/(k c)) and is pure eps~-DP (plus its rng bias) for one row
    added or removed (Thm 6.10 via Lemma 3.2'); a unit is at most k c rows and every dataset between D and
    D + unit has total <= N, so by group privacy e^eps = (p/q)^(k c) and extra = k c x the per-row extra.
    Its cost grows like N^2: k c multiplies it.
    """

    name: ClassVar[str] = "pure_sparse"
    scaling: ClassVar[dict[str, bool]] = {"group": True}

    def check_universe(self) -> None:
        size, need = self.spec.universe.size, 2 * self.n_range + 1
        if size < need:
            bounds = f"k = max_keys_per_unit = {self.k}" + (f", c = max_rows_per_key = {self.c}" if self.c > 1 else "")
            what = "2kn+1" if self.c == 1 else "2kcn+1"
            raise MechanismSpecError(
                f"mechanism 'pure_sparse' needs a universe of at least {what} = {need} keys "
                f"({bounds}); this universe has {size}. "
                "Use mechanism = 'dense' for small universes.")

    @property
    def mixing(self) -> Fraction:
        """gamma = beta/3 rounded down to 1/g (the {0..n} mixing weight)."""
        beta = self.spec.beta
        return Fraction(1, -(-3 * beta.denominator // beta.numerator))

    def bias_draws(self) -> int:
        from dpspark.mechanisms.histogram.pure_sparse import pure_sparse_bias_draws

        return pure_sparse_bias_draws(self.n_range, self.spec.universe.size, self.counting, self.mixing)

    def accuracy_summary(self) -> dict[str, Any]:
        """The per-query error bar and, before the spend, which keys the release will hide (public parameters)."""
        from dpspark.mechanisms.histogram.hiding import hiding_words

        return {**super().accuracy_summary(), "hidden": hiding_words(self)}

    def histogram(self, data: Any, rng: "RandomSource", progress: Progress) -> HistogramRelease:
        from dpspark.mechanisms.histogram import pure_sparse_histogram

        size = self.spec.universe.size
        return pure_sparse_histogram(data, size, self.n_range, self.counting, self.mixing, rng,
                                     beta=self.spec.beta, progress=progress)
