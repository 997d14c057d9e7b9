"""Exact privacy and accuracy statements of CompactHistogram (BV Theorem 8.3, derived form).

Derivation (docs/balcer-vadhan-notes.md §C2, for add/remove neighbours). Write
m_c(v) = Pr[M(c,U) = v], g(v) = Pr[G(U0) = v], d0 = 2^m, l = n + 1 and
S = supp(D) (|S| <= n < l). The release p has degree <= n; given the noisy
counts v_s, each u_s is uniform on G^{-1}(v_s) (d0 g(v_s) elements) and p is
uniform among the d0^(l-|S|) polynomials with p(phi(s)) = iota^{-1}(u_s).
Hence, with v_s = h_p(s),

    Pr_D[p] = prod_s m_{c_s}(v_s) * prod_s 1/(d0 g(v_s)) * d0^{-(l-|S|)}
            = d0^{-l} * prod_{s in S} m_{c_s}(v_s) / g(v_s).

Add/remove one unit changes exactly one count c -> c+1:

* c >= 1: one factor m_c(v)/g(v) becomes m_{c+1}(v)/g(v); ratio <= e^{eps~}.
* c = 0 (a new non-zero bin): the factor 1 becomes m_1(v)/g(v)
  = (m_1(v)/m_0(v)) (m_0(v)/g(v)) in [e^{-eps~ - eps_b}, e^{eps~ + eps_a}].

So the loss is at most eps~ + max(eps_a, eps_b) = eps~ + sampler_epsilon, where
e^{-eps_a} m_0 <= g <= e^{eps_b} m_0 (certified rationals, see
:mod:`dpspark.mechanisms.compact.empty_bin`). Replacing a unit (two add/remove steps) costs
2 eps~ + eps_a + eps_b (a removed bin and a new bin contribute eps~+eps_a and
eps~+eps_b, never the same side twice).

Per-key contribution bound c (a unit moves each of its keys' counts by up to c) [derived, same
identity]: a count a >= 1 moving to a + e (e <= c) changes one factor by m_{a+e}(v)/m_a(v) <= (p/q)^e;
a count 0 moving to e gives the factor m_e(v)/g(v) = (m_e(v)/m_0(v)) (m_0(v)/g(v)) within
[e^{-c eps~ - eps_b}, e^{c eps~ + eps_a}]. The sampler factor and the key's draws count once per key,
not once per row, so a key costs c eps~ + sampler_epsilon + rng_bias and the k keys of a unit multiply:
the statement below (for one row) is scaled to e^eps = (p/q)^(k c), extra = k (sampler_epsilon +
rng_bias) (:func:`dpspark.mechanisms.histogram.contribution.scale_statement`). The identity needs
|S| < l for every dataset: l = k n + 1 bounds the non-zero keys while M runs on [0, k c n].
tests/unit/compact/test_compact_rows.py enumerates the exact law at c = 2, 3.

Randomness bias (docs/balcer-vadhan-notes.md §E12): the factors of unchanged bins are identical
functions of their draws under D and D', so only the changed bin's draws
count: its noisy count U ~ Unif([1, d]) (biased unless d is a power of two)
and its u_s ~ Unif(G^{-1}(v)) (counted as biased always). R is drawn with
rng.bits (exact). Hence bias_epsilon(draws_per_bin) with draws_per_bin <= 2.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from dpspark.mechanisms.compact.empty_bin import EmptyBinSampler
from dpspark.noise import CountingMechanism
from dpspark.mechanisms.histogram.basic import basic_accuracy
from dpspark.mechanisms.histogram.inputs import is_power_of_two
from dpspark.mechanisms.histogram.result import AccuracyStatement, PrivacyStatement, _frac, add_remove_statement
from dpspark.rng import bias_epsilon

THEOREM = (
    "BV Thm 8.3 (derived identity Pr_D[p] = d0^-l prod_s m_{c_s}(v_s)/g(v_s)): "
    "eps = ln(exp_eps) + sampler_epsilon + rng bias under add/remove"
)


@dataclass(frozen=True)
class CompactPrivacy:
    """The exact pieces of CompactHistogram's privacy loss.

    Add/remove: ln(exp_eps) + sampler_epsilon + rng_bias.
    Replacement: 2 ln(exp_eps) + eps_a + eps_b + 2 rng_bias.
    """

    exp_eps: Fraction
    eps_a: Fraction
    eps_b: Fraction
    rng_draws_per_bin: int
    lam: int

    @property
    def sampler_epsilon(self) -> Fraction:
        """max(eps_a, eps_b): certified bound on max_v |ln(g(v)/m_0(v))|."""
        return max(self.eps_a, self.eps_b)

    @property
    def rng_bias(self) -> Fraction:
        """bias_epsilon of the changed bin's biased draws (docs/balcer-vadhan-notes.md §E12)."""
        return bias_epsilon(self.rng_draws_per_bin, self.lam)

    def add_remove(self, n: int) -> PrivacyStatement:
        """The release's statement under add/remove: eps = ln(exp_eps) + (sampler_epsilon + rng_bias)."""
        return add_remove_statement(
            n,
            exp_eps=self.exp_eps,
            bias_epsilon=self.sampler_epsilon + self.rng_bias,
            delta=Fraction(0),
            theorem=THEOREM,
            notes=(
                "bias_epsilon here = sampler_epsilon (certified max_v |ln(g(v)/m_0(v))|) + rng bias "
                f"({self.rng_draws_per_bin} biased draw(s) on the changed bin); replacement costs "
                "2 ln(exp_eps) + eps_a + eps_b + 2 rng bias"
            ),
        )

    def replacement_extra(self) -> Fraction:
        """The rational part of the replacement loss: eps_a + eps_b + 2 rng_bias (plus 2 ln(exp_eps))."""
        return self.eps_a + self.eps_b + 2 * self.rng_bias

    def describe(self) -> dict[str, Any]:
        """Exact JSON-ready pieces."""
        return {
            "exp_eps": {"num": self.exp_eps.numerator, "den": self.exp_eps.denominator},
            "eps_a": _frac(self.eps_a),
            "eps_b": _frac(self.eps_b),
            "sampler_epsilon": _frac(self.sampler_epsilon),
            "rng_draws_per_bin": self.rng_draws_per_bin,
            "rng_lambda": self.lam,
            "rng_bias": _frac(self.rng_bias),
            "add_remove": "ln(exp_eps) + sampler_epsilon + rng_bias",
            "replacement": "2 ln(exp_eps) + eps_a + eps_b + 2 rng_bias",
        }


def compact_privacy(mechanism: CountingMechanism, sampler: EmptyBinSampler, lam: int) -> CompactPrivacy:
    """The exact privacy pieces for M, G and an rng with ``lam`` extra bits."""
    eps_a, eps_b = sampler.ratio_bounds()
    draws = (0 if is_power_of_two(mechanism.d) else 1) + 1
    return CompactPrivacy(exp_eps=mechanism.exp_eps, eps_a=eps_a, eps_b=eps_b, rng_draws_per_bin=draws, lam=lam)


def compact_accuracy(mechanism: CountingMechanism, universe_size: int, beta: Fraction) -> AccuracyStatement:
    """Per-query (a_M(beta), beta) on every bin; simultaneous (a_M(beta/|X|), beta) by a union bound.

    Non-zero bins release M(c_x, U) exactly; empty bins release G(U0), which is
    stochastically <= M(0, U) (both samplers), so Pr[G(U0) > a] <= Pr[|M(0,U)| > a].
    """
    every_bin = basic_accuracy(mechanism, universe_size, beta)  # BasicHistogram's statement over all of X
    return replace(
        every_bin,
        notes="empty bins: G(U0) is stochastically <= M(0,U); simultaneous by a union bound over all of X",
    )
