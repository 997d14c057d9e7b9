"""CompactHistogram on the engine (BV Algorithm 8.2, Thm 8.3): a polynomial over GF(2^m) with l = k n + 1 coefficients.

The public plan (:func:`dpspark.mechanisms.compact.plan.plan_compact`: the epsilon split, M, m, G) is made and
certified when the object is constructed, before any data is read. With ``max_keys_per_unit = k`` and
``max_rows_per_key = c`` at most k n keys are non-zero (so l = k n + 1) and every count lies in
[0, k c n] (M's range); each key gets epsilon/k, of which the sampler keeps a tenth and M's e^eps~ is
certified with (p/q)^c <= e^(9 epsilon / (10 k)).

Privacy claim, per unit under add/remove among at most n units (derived from the identity
Pr_D[p] = d0^-l prod_s m_{c_s}(v_s)/g(v_s), :mod:`dpspark.mechanisms.compact.privacy`): a key moving
from a >= 1 to a + e (e <= c) changes its factor by at most (p/q)^e; a key going from 0 to e <= c
gains the factor m_e(v)/g(v), within e^(+-(e eps~ + sampler_epsilon)). Each changed key also carries
its draws' rng bias once, so the unit's k keys give e^eps = (p/q)^(k c) and
extra = k (sampler_epsilon + rng_bias), certified <= epsilon (:mod:`dpspark.mechanisms.histogram.contribution`).
tests/unit/compact/test_compact_rows.py checks it on the exact law over GF(2^6).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from dpspark.engine.stages import CountsStage
from dpspark.mechanisms.base import Mechanism, MechanismSpecError, Progress
from dpspark.mechanisms.histogram.contribution import count_range, per_step_epsilon, scale_statement
from dpspark.exact import within_epsilon
from dpspark.mechanisms.histogram.mechanism import parse_gamma
from dpspark.rng import DEFAULT_LAMBDA

if TYPE_CHECKING:
    from dpspark.mechanisms.compact import CompactRelease
    from dpspark.mechanisms.compact.plan import CompactPlan
    from dpspark.engine.backend import Backend
    from dpspark.engine.spec import ReleaseSpec
    from dpspark.rng import RandomSource

#: Field degrees and empty-bin samplers a compact release may ask for (dpspark.mechanisms.compact.parameters).
FIELD_DEGREES = (64, 128, 192, 256)
SAMPLERS = ("rounded-cdf", "block")


def parse_m(value: Any) -> int:
    """``privacy.m``: the field GF(2^m)."""
    if isinstance(value, bool) or not isinstance(value, int) or value not in FIELD_DEGREES:
        raise MechanismSpecError(f"privacy.m (the field GF(2^m)) must be one of {FIELD_DEGREES}, got {value!r}")
    return value


def parse_sampler(value: Any) -> str:
    """``privacy.sampler``: the empty-bin sampler G."""
    if value not in SAMPLERS:
        raise MechanismSpecError(f"privacy.sampler must be one of {SAMPLERS}, got {value!r}")
    return value


class CompactHistogram(Mechanism):
    """CompactHistogram_{M,G}: pure DP, every key of X answered by one polynomial evaluation."""

    name: ClassVar[str] = "compact"
    release_kind: ClassVar[str] = "compact"
    max_index_width: ClassVar[int] = 32
    supports_rows_per_key: ClassVar[bool] = True
    options: ClassVar[dict[str, Any]] = {"gamma": None, "m": None, "sampler": "rounded-cdf"}
    option_parsers: ClassVar[dict[str, Any]] = {"gamma": parse_gamma, "m": parse_m, "sampler": parse_sampler}

    def __init__(self, spec: "ReleaseSpec", lam: int = DEFAULT_LAMBDA) -> None:
        super().__init__(spec)
        self.lam = lam
        self.k = spec.max_keys_per_unit
        self.c = spec.max_rows_per_key
        self.n_range = count_range(spec.max_units, self.k, self.c)  # M's range: every count is <= k c n
        self.ell = spec.max_units * self.k + 1  # at most k n non-zero keys
        self.step_epsilon = per_step_epsilon(spec.epsilon, self.k, 1)  # per key; the plan divides M's share by c
        self.compact_plan = self.make_plan(lam)

    def input_schema_problem(self, schema: Any, *, text_input: bool = False) -> str | None:
        """Key column types against the universe kind (:mod:`dpspark.universe.keytypes`), before any spend."""
        from dpspark.universe.keytypes import key_type_problem

        return key_type_problem(self.spec.universe, tuple(self.spec.key_columns), schema, text_input=text_input)

    @classmethod
    def universe_limit_text(cls) -> str:
        return "mechanism 'compact' takes universes of up to 2^256 keys (string/bytes keys: max_bytes <= 31, with m = 256)"

    def make_plan(self, lam: int) -> "CompactPlan":
        """The public plan (M, m, G, l); a :class:`MechanismSpecError` when none exists."""
        from dpspark.mechanisms.compact.plan import CompactPlanError, plan_compact

        opts = self.spec.options
        try:
            return plan_compact(
                self.n_range, self.spec.universe.size, self.step_epsilon, self.spec.beta, gamma=opts.get("gamma"),
                m=opts.get("m"), sampler=opts.get("sampler", "rounded-cdf"), lam=lam, rows_per_key=self.c,
            )
        except CompactPlanError as err:
            raise MechanismSpecError(f"mechanism 'compact': {err}") from None

    def exact_options(self) -> dict[str, Any]:
        """m and sampler as configured (gamma too when given)."""
        opts = self.spec.options
        out: dict[str, Any] = {"m": opts.get("m"), "sampler": opts.get("sampler", "rounded-cdf")}
        return out

    def plan(self) -> dict[str, Any]:
        plan = self.compact_plan
        return {"mechanism": self.name, "counting": plan.mechanism.describe(), "compact": plan.describe(),
                "max_keys_per_unit": self.k, **({"max_rows_per_key": self.c} if self.c > 1 else {})}

    def privacy_summary(self) -> dict[str, Any]:
        plan = self.compact_plan
        return {
            "relation": "add/remove one unit, at most n units",
            "epsilon": (f"<= {self.spec.epsilon} (certified: ln(p/q) + sampler bound + rng bias, x {self.k})" if self.c == 1
                        else f"<= {self.spec.epsilon} (certified: {self.c} ln(p/q) + sampler bound + rng bias, x {self.k})"),
            "exp_eps_per_step": str(plan.mechanism.exp_eps),
            "delta": "0",
        }

    def accuracy_summary(self) -> dict[str, Any]:
        return {"per_query_error_bar": self.compact_plan.mechanism.accuracy(self.spec.beta), "beta": str(self.spec.beta),
                "holds_for": "every key of the universe"}

    def run(self, backend: "Backend", rng: "RandomSource", progress: Progress) -> "CompactRelease":
        indices, counts = backend.compute(CountsStage.from_spec(self.spec))
        return self.release_from_counts(indices, counts, rng, progress)

    def release_from_counts(self, indices: list[int], counts: list[int], rng: "RandomSource", progress: Progress) -> "CompactRelease":
        """Draw the compact release from exact sparse counts (0-based indexes); noise is drawn once."""
        from dataclasses import replace

        from dpspark.mechanisms.compact import compact_histogram

        plan = self.compact_plan if rng.lam == self.lam else self.make_plan(rng.lam)
        release = compact_histogram(
            (indices, counts), self.spec.universe.size, self.n_range, plan.mechanism, rng,
            epsilon2=plan.epsilon2, beta=self.spec.beta, m=plan.m, sampler=plan.sampler.kind, progress=progress,
            ell=self.ell,
        )
        if release.ell != self.ell or plan.ell != self.ell:
            raise RuntimeError("internal error: a compact release must have l = k n + 1 coefficients")
        privacy = scale_statement(release.privacy, self.k, self.c, self.spec.max_units)
        if not within_epsilon(privacy.exp_eps, privacy.bias_epsilon, self.spec.epsilon):
            raise RuntimeError("internal error: the release's exact epsilon exceeds the configured epsilon")
        return release if privacy is release.privacy else replace(release, privacy=privacy)
