"""Statistical accuracy of PCE / PME on the driver backend (exact aggregates), each bound failing w.p. <= 1e-6.

The error splits into a sampling part and a privatisation part, each bounded from stated tails:

* privatisation (given the data): the final pass adds independent noise Z_i to D + 1 integers (D upper
  coordinates and the count). The implemented discrete Gaussian has Pr[|Z| >= t] <= 2 e^{-t^2/2sigma^2}
  + (f + e + 1) m / 2^bits (ideal law sigma-subgaussian, CKS20 Cor. 9, plus the floor's mass); with
  t = sigma sqrt(2 ln(4(D+1)/p)) and a union bound, every |Z_i| <= t except w.p. <= p. PSD projection is
  non-expansive towards the PSD empirical matrix, so ||W (Sigma^ - Sigma_emp) W^T||_F <= ||W||^2 (
  sqrt(2 D) G t / (2c) + ||S||_F |1/(2c) - 1/(2m)|) in real units, W = Sigma^-1/2 A^-1.
* sampling (covariance): pairs D / sqrt(2) are i.i.d. N(0, Sigma) given the content-free buckets; for m
  Gaussian rows, ||(1/m) Z^T Z - I||_op <= 2 delta + delta^2, delta = (sqrt(d) + t)/sqrt(m), w.p.
  >= 1 - 2 e^{-t^2/2} (Vershynin 2012, Cor. 5.35), Frobenius <= sqrt(d) op; fixed-point rounding adds
  at most (2 max||u|| ||e|| + ||e||^2)/2 per term, ||e|| <= sqrt(d) 2^-b.
* sampling (mean): N ||Sigma^-1/2 (xbar - mu)||^2 ~ chi^2_d, Laurent-Massart at p.

Each test budgets p = 1e-7 per bound (<= 1e-6 in all) and also shows the check catches a broken variant.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpspark.mechanisms.gaussian_model.covariance import PublicBounds, Run, naive_pce_release, pce
from dpspark.mechanisms.gaussian_model.fixed import Scales, as_real
from dpspark.mechanisms.gaussian_model.mean import pme
from dpspark.mechanisms.gaussian_model.source import ArraySource, upper_pairs
from dpspark.rng import SeededRandom
from dpspark.mechanisms.registry import construct

KEY = bytes(range(16, 32))
P = 1e-7  # report: failure budget per bound


def _problem(d: int, kappa: float, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    g = np.random.default_rng(seed)  # report: test data, not noise
    q, _ = np.linalg.qr(g.normal(size=(d, d)))  # report
    sigma = (q * np.geomspace(1.0, kappa, d)) @ q.T  # report
    mu = g.normal(size=d)  # report
    mu *= 20.0 / np.linalg.norm(mu)  # report
    return g.multivariate_normal(mu, sigma, size=n), mu, sigma  # report


def _tail_t(noise, coords: int) -> float:  # type: ignore[no-untyped-def]
    s = noise.sampler
    floor_mass = (s.floor + s.extra + 1) * s.m / 2.0**s.bits  # report
    assert floor_mass <= P / (2 * coords)
    return float(s.sigma) * math.sqrt(2 * math.log(4 * coords / P))  # report


def _whiten(sigma: np.ndarray) -> np.ndarray:
    vals, vecs = np.linalg.eigh(sigma)  # report
    return (vecs / np.sqrt(vals)) @ vecs.T  # report


def _cov_bounds(run: Run, src: ArraySource, a_int, est: np.ndarray, sigma: np.ndarray, scales: Scales) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """(privatisation bound, sampling bound) for est at Sigma, from the run's final pass (module docstring)."""
    d = sigma.shape[0]
    count_noise, final = run.noises[0], run.noises[-1]
    c, m = run.outputs[0][0], src.pair_count()
    t_int = run.passes[-1]["norm_bound_sq"]
    exact = src.second_moments(a_int, t_int)
    assert exact.kept == m  # no pair term was removed by the norm test (else the bound does not apply)
    one = float(1 << (2 * scales.y_bits))  # report
    s_f = math.sqrt(sum(float(v) ** 2 * (1 if i == j else 2) for (i, j), v in zip(upper_pairs(d), exact.upper))) / one  # report
    big_d = d * (d + 1) // 2
    w = _whiten(sigma) @ np.linalg.inv(as_real(a_int, scales.matrix_bits))  # report
    wn = np.linalg.norm(w, 2) ** 2  # report
    c_lo = c - _tail_t(count_noise, 1)  # report
    assert c_lo > 0
    priv = wn * (math.sqrt(2 * big_d) * final.grid * _tail_t(final, big_d + 1) / one / (2 * c_lo)
                 + s_f * abs(1 / (2 * c_lo) - 1 / (2 * m)) + s_f * _tail_t(count_noise, 1) / (2 * c_lo * c_lo))  # report
    t = math.sqrt(2 * math.log(2 / P))  # report
    delta = (math.sqrt(d) + t) / math.sqrt(m)  # report
    pairs = src._pairs.astype(np.float64) / 2.0**scales.data_bits  # report
    u = np.max(np.linalg.norm(pairs, axis=1))  # report
    e = math.sqrt(d) * 2.0 ** -scales.data_bits  # report
    rounding = np.linalg.norm(_whiten(sigma), 2) ** 2 * (2 * u * e + e * e) / 2 * math.sqrt(d)  # report
    return priv, math.sqrt(d) * (2 * delta + delta * delta) + rounding  # report


def _maha(est: np.ndarray, sigma: np.ndarray) -> float:
    w = _whiten(sigma)  # report
    return float(np.linalg.norm(w @ est @ w - np.eye(sigma.shape[0])))  # report


@pytest.mark.parametrize("d, n, alpha", [(5, 400_000, 0.5), pytest.param(20, 1_200_000, 1.0, marks=pytest.mark.slow)])
def test_pce_error_within_its_stated_bounds(d: int, n: int, alpha: float) -> None:
    x, _, sigma = _problem(d, 100.0, n, seed=d)
    scales = Scales(12, 16)
    bounds = PublicBounds(d, Fraction(40), Fraction(100), Fraction(1, 10**7), n)
    src = ArraySource(x, scales.data_bits, KEY)
    run = Run(src, scales, bounds, SeededRandom(d))
    est, a_int = pce(run, Fraction(1))
    priv, sampling = _cov_bounds(run, src, a_int, est, sigma, scales)
    assert priv + sampling <= alpha  # n is large enough for the target alpha at this (d, kappa, rho)
    err = _maha(est, sigma)
    assert err <= priv + sampling
    # the check has teeth: forgetting to halve the pair-difference covariance is far outside the bound
    assert _maha(2 * est, sigma) > priv + sampling


@pytest.mark.parametrize("d, n", [(5, 40_000), (20, 200_000)])
def test_pme_error_within_its_stated_bounds(d: int, n: int) -> None:
    x, mu, sigma = _problem(d, 100.0, n, seed=100 + d)
    scales = Scales(12, 16)
    bounds = PublicBounds(d, Fraction(40), Fraction(100), Fraction(1, 10**7), n)
    src = ArraySource(x, scales.data_bits, KEY)
    run = Run(src, scales, bounds, SeededRandom(d))
    from dpspark.mechanisms.gaussian_model.mean import whitening

    m_int = whitening(sigma, scales.matrix_bits)  # known covariance: M = Sigma^-1/2 (quantised)
    est = pme(run, m_int, Fraction(1), Fraction(1, 2))
    count_noise, sums_noise = run.noises[0], run.noises[-1]
    c = run.outputs[0][0]
    radius, centres = run.passes[-1]["radius"], run.passes[-1]["centres"]
    from dpspark.mechanisms.gaussian_model.source import _apply

    y = _apply(m_int, src._singles).astype(object)
    assert all(abs(int(v) - c0) <= radius for row in y for v, c0 in zip(row, centres))  # no value was clamped
    one = float(1 << scales.y_bits)  # report
    ybar = np.array([float(sum(int(v) for v in y[:, j])) / n for j in range(d)]) / one  # report
    w = _whiten(sigma) @ np.linalg.inv(as_real(m_int, scales.matrix_bits))  # report
    t_c, t_s = _tail_t(count_noise, 1), _tail_t(sums_noise, d + 1)  # report
    c_lo = c - t_c  # report
    centred = np.abs(ybar - np.array(centres) / one)  # report
    priv = np.linalg.norm(w, 2) * (math.sqrt(d) * sums_noise.grid * t_s / one / c_lo
                                   + np.linalg.norm(centred) * n * abs(1 / c_lo - 1 / n) + np.linalg.norm(centred) * n * t_c / c_lo**2)  # report
    x_lm = math.log(1 / P)  # report
    sampling = math.sqrt((d + 2 * math.sqrt(d * x_lm) + 2 * x_lm) / n) + np.linalg.norm(w, 2) * math.sqrt(d) * 2.0 ** -scales.y_bits  # report
    w_true = _whiten(sigma)  # report
    err = float(np.linalg.norm(w_true @ (est - mu)))  # report
    assert err <= priv + sampling <= 0.2
    assert float(np.linalg.norm(w_true @ (est + 0.5 - mu))) > priv + sampling  # teeth: a shifted estimate fails


def test_preconditioning_pays_off_at_kappa_1e4() -> None:
    """At kappa = 10^4, fixed n and rho, PCE's Mahalanobis error is <= 1/10 of NaivePCE's (seeded run).

    Both errors are dominated by their privatisation bounds (above); the ratio is far from 1/10
    (about 1/100 here), so the seeded comparison is not a coin flip.
    """
    d, n = 5, 100_000
    x, _, sigma = _problem(d, 1e4, n, seed=7)
    scales = Scales(12, 16)
    bounds = PublicBounds(d, Fraction(40), Fraction(10**4), Fraction(1, 10**7), n)
    src = ArraySource(x, scales.data_bits, KEY)
    naive = naive_pce_release(Run(src, scales, bounds, SeededRandom(1)), Fraction(1, 2))
    full, _ = pce(Run(src, scales, bounds, SeededRandom(1)), Fraction(1, 2))
    assert _maha(full, sigma) <= _maha(naive, sigma) / 10


# ------------------------------------------------------------------------------------------------
# at the n the theorem gives: N from dpspark.mechanisms.gaussian_model.sample_size (data-free), then one run at exactly N
# ------------------------------------------------------------------------------------------------

BETA_N = Fraction(1, 10**6)  # the stated false-alarm rate of every test below (the bound's own beta)


def _run_at(d: int, n: int, kappa: int, seed: int, events: int = 1):  # type: ignore[no-untyped-def]
    """(data, mu, sigma, source, run) configured as a release with max_units = buckets = n would be."""
    from dpspark.mechanisms.gaussian_model.sample_size import mechanism_scales, tested_beta

    x, mu, sigma = _problem(d, float(kappa), n, seed=seed)
    bb = tested_beta(BETA_N, events)
    scales = mechanism_scales(d, Fraction(40), Fraction(kappa), n, bb)
    src = ArraySource(x, scales.data_bits, KEY)  # buckets = n
    run = Run(src, scales, PublicBounds(d, Fraction(40), Fraction(kappa), bb, n), SeededRandom(seed))
    return x, mu, sigma, src, run


@pytest.mark.parametrize("d, kappa, rho, alpha", [(5, 100, Fraction(1), Fraction(1, 2)),
                                                  pytest.param(20, 16, Fraction(4), Fraction(1), marks=pytest.mark.slow)])
def test_pce_at_the_stated_sample_size(d: int, kappa: int, rho: Fraction, alpha: Fraction) -> None:
    """PCE at exactly n = N(d, alpha, beta, rho, kappa): ||Sigma^-1/2 Sigma^ Sigma^-1/2 - I||_F <= alpha.

    False-alarm rate: the bound holds w.p. >= 1 - beta, beta = 1e-6 (norm event, pair count, noisy
    count, Gram, every noise vector; dpspark.mechanisms.gaussian_model.sample_size). The realised-quantity bound of
    :func:`_cov_bounds` (same tails, realised m, c, W) must also be <= alpha at N, and the pair count
    must be above its stated lower bound. Teeth: the un-halved pair covariance (2 Sigma^) fails.
    """
    from dpspark.mechanisms.gaussian_model.sample_size import CovariancePlan, covariance_error_bound, covariance_sample_size, pair_count_lower

    n = covariance_sample_size(d, alpha, BETA_N, rho, Fraction(kappa), radius=Fraction(40))
    assert n is not None
    _, _, sigma, src, run = _run_at(d, n, kappa, seed=d)
    plan = CovariancePlan(d, rho, Fraction(kappa), run.bounds.beta, run.scales, n, n, radius=Fraction(40))
    stated = covariance_error_bound(plan, n, float(BETA_N))  # report
    assert stated <= alpha
    est, a_int = pce(run, rho)
    err = _maha(est, sigma)
    assert err <= alpha
    assert src.pair_count() >= pair_count_lower(n, n, 1e-7)
    priv, sampling = _cov_bounds(run, src, a_int, est, sigma, run.scales)
    assert priv + sampling <= stated  # the realised bound sits below the data-free one at N
    assert _maha(2 * est, sigma) > alpha  # teeth: forgetting to halve the pair-difference covariance


@pytest.mark.parametrize("d", [5, 20])
def test_pme_at_the_stated_sample_size(d: int) -> None:
    """PME (known covariance) at exactly n = N(d, alpha = 1/10, beta = 1e-6, rho = 1): ||Sigma^-1/2 (mu^ - mu)|| <= alpha.

    False-alarm rate <= beta = 1e-6 (histogram, clamp, counts, sums, Laurent-Massart). Teeth: a centre
    one histogram bin off (each y_j shifted by the bin width sqrt(k) = 1, an off-by-one bug) fails.
    """
    from dpspark.mechanisms.gaussian_model.mean import whitening
    from dpspark.mechanisms.gaussian_model.sample_size import mean_sample_size

    alpha, rho, kappa = Fraction(1, 10), Fraction(1), 100
    n = mean_sample_size(d, alpha, BETA_N, rho, Fraction(kappa), Fraction(40))
    assert n is not None
    _, mu, sigma, _, run = _run_at(d, n, kappa, seed=100 + d)
    m_int = whitening(sigma, run.scales.matrix_bits)
    est = pme(run, m_int, Fraction(1), rho)
    w = _whiten(sigma)  # report
    assert float(np.linalg.norm(w @ (est - mu))) <= alpha  # report
    off = np.linalg.solve(as_real(m_int, run.scales.matrix_bits), np.ones(d))  # report: one bin (width 1) per y_j
    assert float(np.linalg.norm(w @ (est + off - mu))) > alpha  # report


def test_sample_size_is_monotone_as_theory_says() -> None:
    """N falls as alpha or rho grows and rises with kappa (PPC rounds); halving alpha multiplies the mean's N
    by between 2 (the privacy terms, ~ 1/alpha) and 4 (the sampling term, ~ 1/alpha^2)."""
    from dpspark.mechanisms.gaussian_model.sample_size import covariance_sample_size, mean_sample_size

    def cov(alpha: Fraction, rho: Fraction, kappa: int) -> int:
        n = covariance_sample_size(5, alpha, BETA_N, rho, Fraction(kappa), radius=Fraction(40))
        assert n is not None
        return n

    by_alpha = [cov(a, Fraction(1), 1) for a in (Fraction(1, 4), Fraction(1, 2), Fraction(1))]
    by_rho = [cov(Fraction(1, 2), r, 1) for r in (Fraction(1, 4), Fraction(1), Fraction(4))]
    by_kappa = [cov(Fraction(1, 2), Fraction(1), k) for k in (1, 16, 100, 10**4)]
    assert by_alpha[0] > by_alpha[1] > by_alpha[2]
    assert by_rho[0] > by_rho[1] > by_rho[2]
    assert by_kappa == sorted(by_kappa) and by_kappa[0] < by_kappa[-1]
    mean = [mean_sample_size(5, a, BETA_N, Fraction(1), Fraction(100), Fraction(40)) for a in (Fraction(1, 10), Fraction(1, 20))]
    assert mean[0] is not None and mean[1] is not None and 2 * mean[0] < mean[1] <= 4 * mean[0] + 100  # between 1/alpha and 1/alpha^2


@pytest.mark.parametrize("kind, units", [("gaussian_covariance", 10**6), ("gaussian_mean_known", 10**6),
                                         ("gaussian_mean", 4 * 10**6), ("gaussian_learner", 4 * 10**6)])
def test_stated_bound_holds_for_every_n_above_n(kind: str, units: int) -> None:
    """At a fixed max_units and buckets, the bound is <= alpha at N and non-increasing on [N, max_units]
    (so the release's "once n >= N" holds), and above alpha just below N. The estimated-covariance kinds
    take their mean at the unpaired singles' lower bound (about n/e)."""
    from dpspark.mechanisms.gaussian_model.sample_size import (mechanism_scales, release_error_bound, release_events,
                                              release_sample_size, tested_beta)

    d, alpha, rho, kappa, radius = 5, Fraction(1, 2), Fraction(1), Fraction(100), Fraction(40)
    big_n = release_sample_size(kind, d, alpha, BETA_N, rho, kappa, radius, max_units=units, buckets=units)
    assert big_n is not None
    bb = tested_beta(BETA_N, release_events(kind))
    scales = mechanism_scales(d, radius, kappa, units, bb)
    grid = [big_n + (units - big_n) * i // 8 for i in range(9)]
    vals = [release_error_bound(kind, n, d, BETA_N, rho, kappa, radius, scales, units, units, bb) for n in grid]
    assert vals[0] <= alpha and all(b <= a for a, b in zip(vals, vals[1:]))
    assert release_error_bound(kind, big_n * 99 // 100, d, BETA_N, rho, kappa, radius, scales, units, units, bb) > alpha


def test_pair_count_lower_bound_holds_on_the_keyed_hash() -> None:
    """m_lo (McDiarmid, p = 1e-7) is below the realised pair count for B = n and for n < B."""
    from dpspark.mechanisms.gaussian_model.sample_size import pair_count_lower

    for n, b in ((50_000, 50_000), (50_000, 200_000)):
        src = ArraySource(np.zeros((n, 1)), 12, KEY, buckets=b)
        expected = n * (n - 1) / (2 * b) * (1 - 1 / b) ** (n - 2)  # report
        assert pair_count_lower(n, b, 1e-7) <= src.pair_count() <= expected + 6 * math.sqrt(n)  # report


def test_mechanism_plan_states_the_sample_size(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The plan (dry-run) states N from the same function; alpha/beta are exact (a float is a TypeError)."""
    from dpspark.api.config import ReleaseSpec
    from dpspark.mechanisms.gaussian_model.sample_size import release_sample_size

    base = {"input": {"path": str(tmp_path), "format": "parquet"},
            "gaussian": {"columns": ["a", "b", "c"], "radius": "10", "kappa": "100", "alpha": "1/2", "beta": "1/1000000"},
            "privacy": {"mechanism": "gaussian_covariance", "epsilon": "8", "delta": "1/1000000000",
                        "max_units": 10**6, "unit_column": "uid"},
            "output": {"path": str(tmp_path / "o")}}
    mech = construct(ReleaseSpec.from_dict(base))
    target = mech.plan()["accuracy_target"]
    want = release_sample_size("gaussian_covariance", 3, Fraction(1, 2), BETA_N, mech.rho, Fraction(100), Fraction(10),
                               max_units=10**6, buckets=10**6)
    assert want is not None and target["sample_size"] == want and f"n >= {want}" in target["text"]
    assert mech.accuracy_summary()["sample_size"] == want
    claims = mech.model_claims()
    assert [c.min_units for c in claims] == [want] and claims[0].bound == Fraction(1, 2) and claims[0].beta == BETA_N
    from dpspark.privacy import AccuracyClaim

    assert AccuracyClaim.from_description(claims[0].describe()) == claims[0]  # the manifest round trip
    small = construct(ReleaseSpec.from_dict({**base, "privacy": {**base["privacy"], "max_units": 1000}}))
    assert small.plan()["accuracy_target"]["sample_size"] is None and small.model_claims() == []  # stated, not refused
    assert "not reached" in small.accuracy_summary()["text"]
    default = ReleaseSpec.from_dict({**base, "gaussian": {k: v for k, v in base["gaussian"].items() if k not in ("alpha", "beta")}})
    assert construct(default).alpha == Fraction(1, 10)
    with pytest.raises(TypeError, match="float"):
        construct(ReleaseSpec.from_dict({**base, "gaussian": {**base["gaussian"], "alpha": 0.5}}))
