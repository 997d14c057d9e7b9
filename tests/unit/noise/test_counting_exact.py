"""Exact checks of GeoSample and FastSample (Balcer-Vadhan section 4) with rationals.

Every probability below is a Fraction computed from the integer scaled CDF;
every privacy ratio is compared exactly against e^{eps~} = p/q.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest

from dpspark.noise import FastSample, GeoSample, truncation_condition
from dpspark.noise.counting_base import CountingMechanism
from dpspark.noise.verifier import check_sampler, verify_mechanism, worst_privacy_ratio

EPSILONS = ["1/10", "1/2", "1", "2"]
NS = [1, 2, 3, 5, 8, 12]
GAMMAS = ["1/2", "1/5", "1/20", "1/1000"]


def clamped_geometric_pmf(n: int, c: int, r: Fraction) -> list[Fraction]:
    """Closed form of clamp_[0,n](c + Geo), Pr[Geo = k] = (p-q)/(p+q) (q/p)^|k|, r = p/q."""
    p, q = r.numerator, r.denominator
    ratio = Fraction(q, p)
    core = Fraction(p - q, p + q)
    out = []
    for z in range(n + 1):
        if z == 0:
            out.append(ratio**c * Fraction(p, p + q))  # Pr[Geo <= -c]
        elif z == n:
            out.append(ratio ** (n - c) * Fraction(p, p + q))  # Pr[Geo >= n-c]
        else:
            out.append(core * ratio ** abs(z - c))
    if n == 0:
        return [Fraction(1)]
    return out


def truncated_mixture_pmf(n: int, c: int, r: Fraction, t: int, g: int) -> list[Fraction]:
    """Lemma 4.12: (1-1/g) clamp(c + Z_t) + (1/g) Unif([0,n])."""
    p, q = r.numerator, r.denominator
    dprime = (p + q) * p**t
    zt = {0: Fraction((p - q) * p**t + 2 * q ** (t + 1), dprime)}
    for k in range(1, t + 1):
        zt[k] = zt[-k] = Fraction((p - q) * q**k * p ** (t - k), dprime)
    clamp = [Fraction(0)] * (n + 1)
    for k, pr in zt.items():
        clamp[min(n, max(0, c + k))] += pr
    gamma = Fraction(1, g)
    return [(1 - gamma) * pr + gamma / (n + 1) for pr in clamp]


def geo_configs() -> list[GeoSample]:
    out = [GeoSample(n=n, epsilon=e) for e, n in itertools.product(EPSILONS, NS)]
    out += [GeoSample(n=n, epsilon=e, rule="pow2") for e, n in itertools.product(EPSILONS[:3], NS)]
    out += [GeoSample(n=4, exp_eps=Fraction(3, 2)), GeoSample(n=3, exp_eps=Fraction(7, 3))]
    return out


def fast_configs() -> list[FastSample]:
    out = []
    for e, n, g in itertools.product(EPSILONS, NS, GAMMAS):
        out.append(FastSample(n=n, epsilon=e, gamma=g))
    for e, n in itertools.product(EPSILONS[:3], [3, 8]):
        out.append(FastSample(n=n, epsilon=e, gamma="1/5", rule="pow2"))
    return out


def label(m: CountingMechanism) -> str:
    return f"{m.name}(n={m.n}, exp_eps={m.exp_eps}, d_bits={m.d.bit_length()})"


# ---------------------------------------------------------------- GeoSample


@pytest.mark.parametrize("mech", geo_configs(), ids=label)
def test_geosample_pmf_is_the_clamped_geometric(mech: GeoSample) -> None:
    for c in range(mech.n + 1):
        assert mech.pmf(c) == clamped_geometric_pmf(mech.n, c, mech.exp_eps)


@pytest.mark.parametrize("mech", geo_configs(), ids=label)
def test_geosample_is_exactly_eps_tilde_dp_and_tight(mech: GeoSample) -> None:
    report = verify_mechanism(mech)
    # the geometric mechanism's loss is attained exactly when n >= 1
    assert report.worst_ratio == mech.exp_eps


def test_geosample_eps_tilde_is_at_most_half_eps() -> None:
    import math

    for e in ["1/10", "1/2", "1", "2", "5"]:
        mech = GeoSample(n=3, epsilon=e)
        eps = Fraction(e)
        assert mech.exp_eps > 1
        # p/q <= e^{eps/2}: compare p^2 <= q^2 e^eps via a certified upper bound of e^eps
        assert mech.epsilon_tilde <= float(eps) / 2  # report-level sanity
        assert mech.epsilon_tilde >= 0.45 * float(eps)  # the p/q rule lands near eps/2
    # pow2 rule lands much lower at small eps (spec: as low as 0.22 eps)
    assert GeoSample(n=3, epsilon="1/10", rule="pow2").epsilon_tilde < 0.031
    assert math.isclose(GeoSample(n=3, epsilon="1/10").epsilon_tilde, 0.0495, abs_tol=1e-3)


# ---------------------------------------------------------------- FastSample


@pytest.mark.parametrize("mech", fast_configs(), ids=label)
def test_fastsample_default_is_private_and_never_capped(mech: FastSample) -> None:
    assert mech.t == mech.t_star
    assert truncation_condition(mech.t, mech.p, mech.q, mech.g, mech.n)
    assert not truncation_condition(mech.t - 1, mech.p, mech.q, mech.g, mech.n) if mech.t else True
    if mech.t_star >= mech.n:
        assert mech.fallback is not None and mech.d == GeoSample(n=mech.n, exp_eps=mech.exp_eps).d
    else:
        assert mech.fallback is None
    report = verify_mechanism(mech)
    assert report.worst_ratio is not None and report.worst_ratio <= mech.exp_eps


@pytest.mark.parametrize("mech", [m for m in fast_configs() if m.fallback is None], ids=label)
def test_fastsample_pmf_is_lemma_4_12_mixture(mech: FastSample) -> None:
    for c in range(mech.n + 1):
        assert mech.pmf(c) == truncated_mixture_pmf(mech.n, c, mech.exp_eps, mech.t, mech.g)


def test_some_default_configs_exercise_the_truncation_path() -> None:
    assert sum(m.fallback is None for m in fast_configs()) >= 10


@pytest.mark.parametrize(
    "n, e, g", [(5, "1/2", 5), (8, "1", 20), (12, "1/10", 1000), (12, "2", 2), (6, "1/2", 5)]
)
def test_forced_t_satisfying_the_condition_is_private(n: int, e: str, g: int) -> None:
    base = FastSample(n=n, epsilon=e, gamma=f"1/{g}")
    for t in range(base.t_star, base.t_star + 3):
        mech = FastSample(n=n, epsilon=e, gamma=f"1/{g}", t=t)
        assert mech.t_is_private and mech.fallback is None
        assert mech.pmf(0) == truncated_mixture_pmf(n, 0, mech.exp_eps, t, g)
        verify_mechanism(mech)


@pytest.mark.parametrize("n, e, g", [(5, "1/2", 5), (8, "1", 20), (12, "1/10", 1000), (12, "2", 2), (6, "1/2", 5)])
def test_forced_t_violating_the_condition_is_flagged(n: int, e: str, g: int) -> None:
    base = FastSample(n=n, epsilon=e, gamma=f"1/{g}")
    bad_t = min(base.t_star - 1, n - 1)
    mech = FastSample(n=n, epsilon=e, gamma=f"1/{g}", t=bad_t)
    assert not mech.t_is_private
    with pytest.raises(AssertionError, match="privacy violated"):
        verify_mechanism(mech)


def test_capped_t_mutant_of_the_reference_implementation_is_caught() -> None:
    # dpfc caps t = min(n, t): at n=5, eps=1/2 (x=4, y=5), gamma=1/5 the loss is 1.22 > eps.
    mech = FastSample(n=5, epsilon="1/2", gamma="1/5", rule="pow2", t=5)
    assert mech.exp_eps == Fraction(5, 4)
    assert not mech.t_is_private
    report = worst_privacy_ratio(mech)
    assert report.worst_ratio is not None
    # ln(ratio) = 1.2241...: bracket e^1.224 < ratio < e^1.225 with rationals
    assert Fraction(3401, 1000) < report.worst_ratio < Fraction(3402, 1000)
    assert report.worst_ratio > Fraction(3, 2)  # far above e^{1/2} = 1.6487 > e^eps~ = 5/4
    with pytest.raises(AssertionError, match="privacy violated"):
        verify_mechanism(mech)


class _NoUniformMixture(FastSample):
    """Mutant: FastSample with the gamma-uniform mixture dropped (pure truncated geometric)."""

    def _cdf(self, c, z):  # type: ignore[override]
        fp = (self._cdf_prime(c, z))
        return fp * (self.n + 1) * self.g

    def _cdf_prime(self, c, z):
        j = z - c
        if j < -self.t:
            return 0
        if j >= self.t:
            return self._dprime
        return self._fprime_offset(j)

    def _search(self, c, u):  # the table fast path would bypass the mutant
        return CountingMechanism._search(self, c, u)


def test_mutant_without_uniform_mixture_is_caught() -> None:
    mech = _NoUniformMixture(n=12, epsilon="2", gamma="1/2")
    assert mech.fallback is None
    report = worst_privacy_ratio(mech)
    assert report.worst_ratio is None  # an output impossible under the neighbour: infinite loss
    with pytest.raises(AssertionError, match="infinite"):
        verify_mechanism(mech)


def test_mutant_running_at_a_larger_epsilon_is_caught() -> None:
    claimed = GeoSample(n=6, epsilon="1/2")
    actual = GeoSample(n=6, exp_eps=claimed.exp_eps * Fraction(21, 20))
    with pytest.raises(AssertionError, match="privacy violated"):
        verify_mechanism(actual, claimed_exp_eps=claimed.exp_eps)


# ---------------------------------------------------------------- sampling and accuracy


@pytest.mark.parametrize("mech", [GeoSample(n=2, exp_eps=Fraction(3, 2)), GeoSample(n=3, exp_eps=Fraction(2))], ids=label)
def test_full_enumeration_of_u_matches_cdf_pmf(mech: GeoSample) -> None:
    assert mech.d <= 1 << 16
    for c in range(mech.n + 1):
        counts = [0] * (mech.n + 1)
        prev = 0
        for u in range(1, mech.d + 1):
            z = mech.sample(c, u)
            assert z >= prev
            prev = z
            counts[z] += 1
        assert [Fraction(k, mech.d) for k in counts] == mech.pmf(c)


def test_binary_search_runs_exactly_ceil_log2_rounds() -> None:
    for mech in [GeoSample(n=12, epsilon="1/2"), FastSample(n=12, epsilon="2", gamma="1/2"), FastSample(n=1000, epsilon="1", gamma="1/10")]:
        calls = []
        orig = mech._cdf

        def counting(c: int, z: int, orig=orig) -> object:
            calls.append(1)
            return orig(c, z)

        mech._cdf = counting  # type: ignore[method-assign]
        mech._table = None  # route FastSample through the generic path so calls are counted
        expected = (mech.n).bit_length()
        for c in (0, 1, mech.n // 2, mech.n):
            for u in (1, 2, mech.d // 3, mech.d - 1, mech.d):
                calls.clear()
                mech.sample(c, u)
                assert len(calls) == expected


def brute_accuracy(mech: CountingMechanism, beta: Fraction) -> int:
    for a in range(mech.n + 1):
        if all(sum(pr for z, pr in enumerate(mech.pmf(c)) if abs(z - c) > a) <= beta for c in range(mech.n + 1)):
            return a
    raise AssertionError("unreachable: a = n always has an empty tail")


@pytest.mark.parametrize("mech", geo_configs()[::3] + fast_configs()[::5], ids=label)
@pytest.mark.parametrize("beta", ["1/20", "1/3", "1/1000"])
def test_accuracy_is_the_exact_smallest_a(mech: CountingMechanism, beta: str) -> None:
    assert mech.accuracy(beta) == brute_accuracy(mech, Fraction(beta))


@pytest.mark.parametrize("n", [65, 80, 200])
def test_accuracy_shortcut_matches_full_scan_beyond_64(n: int) -> None:
    for mech in (GeoSample(n=n, epsilon="1"), FastSample(n=n, epsilon="2", gamma="1/50"), FastSample(n=n, epsilon="1", gamma="1/3", t=4)):
        for a in (0, 1, 3, 10, n // 2 - 1, n // 2, n - 3):
            full = max(mech.tail_count(c, a) for c in range(n + 1))
            assert mech._worst_tail_count(a) == full


def test_accuracy_large_n_is_fast_and_sane() -> None:
    mech = FastSample(n=10**9, epsilon="1/10", gamma="2^-70")
    a = mech.accuracy("1/20")
    assert a == mech.accuracy(Fraction(1, 20))
    assert 40 <= a <= 80  # ~ ln(1/beta)/eps~ = 3.0/0.0495 = 60.5
    assert mech.tail_count(10**6, a) * 20 <= mech.d
    assert mech.tail_count(10**6, a - 1) * 20 > mech.d


# ---------------------------------------------------------------- bad parameters


def test_bad_parameters_get_clear_errors() -> None:
    with pytest.raises(ValueError, match=r"n \(the public bound"):
        GeoSample(n=0, epsilon="1")
    with pytest.raises(TypeError, match="n must be an int"):
        GeoSample(n=5.0, epsilon="1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="epsilon must be > 0"):
        GeoSample(n=5, epsilon="0")
    with pytest.raises(ValueError, match="epsilon must be > 0"):
        FastSample(n=5, epsilon="-1/2", gamma="1/2")
    with pytest.raises(TypeError, match="float"):
        FastSample(n=5, epsilon=0.5, gamma="1/2")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="float"):
        FastSample(n=5, epsilon="1/2", gamma=0.5)  # type: ignore[arg-type]
    for bad in ("2/5", "1/1", "1", "0", "3/2", "-1/4"):
        with pytest.raises(ValueError, match="gamma must be 1/g"):
            FastSample(n=5, epsilon="1/2", gamma=bad)
    with pytest.raises(ValueError, match="pow2"):
        GeoSample(n=5, epsilon="2", rule="pow2")
    with pytest.raises(ValueError, match="rule"):
        GeoSample(n=5, epsilon="1", rule="float")
    with pytest.raises(ValueError, match="exactly one"):
        GeoSample(n=5)
    mech = FastSample(n=5, epsilon="1", gamma="1/4")
    with pytest.raises(ValueError, match=r"c must be a count in \[0, n\]"):
        mech.sample(6, 1)
    with pytest.raises(ValueError, match=r"c must be a count in \[0, n\]"):
        mech.sample(-1, 1)
    with pytest.raises(ValueError, match=r"u must be in \[1, d\]"):
        mech.sample(2, 0)
    with pytest.raises(ValueError, match=r"u must be in \[1, d\]"):
        mech.sample(2, mech.d + 1)
    with pytest.raises(ValueError, match="beta must be in"):
        mech.accuracy("1")
    with pytest.raises(TypeError, match="beta"):
        mech.accuracy(0.05)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="z must be in"):
        mech.scaled_cdf(1, 6)


def test_describe_is_exact_and_json_ready() -> None:
    import json

    mech = FastSample(n=10**6, epsilon="1/2", gamma="1/1000")
    desc = json.loads(json.dumps(mech.describe()))
    assert desc["exp_eps"] == {"num": mech.p, "den": mech.q}
    assert desc["gamma"] == "1/1000" and desc["epsilon"] == "1/2" and desc["t"] == mech.t_star


def test_plain_int_backend_gives_identical_results() -> None:
    from dpspark.noise import bigint
    from dpspark.rng import SeededRandom

    def run() -> list[int]:
        out = []
        for mech in (FastSample(n=10**6, epsilon="1/10", gamma="2^-40"), GeoSample(n=300, epsilon="1/2")):
            rng = SeededRandom(b"backend")
            out += [mech.draw(c, rng) for c in (0, 1, mech.n // 3, mech.n)]
            out += [mech.scaled_cdf(mech.n // 2, z) for z in (0, mech.n // 2 - 5, mech.n // 2 + 5, mech.n - 1)]
        return out

    with_gmp = run()
    bigint.set_backend("int")
    try:
        with_int = run()
    finally:
        bigint.set_backend("gmpy2")
    assert with_gmp == with_int
    with pytest.raises(ValueError, match="backend"):
        bigint.set_backend("float")
