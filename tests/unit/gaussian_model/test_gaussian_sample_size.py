"""The stated sample size of the estimated-covariance Gaussian releases (issue 23 §1; derivation in
dpspark.mechanisms.gaussian_model.sample_size_estimated, tails in dpspark.mechanisms.gaussian_model.tails).

False alarms: every statistical check states its rate, <= 1e-6 (a union over its trials of the stated failure
probability); each has a broken variant it catches.
* The tails: each bound holds in every seeded trial (T trials x its p); a mutant with the typical value in place
  of the tail bound is exceeded in many of the same trials.
* The real mechanism (the in-process algorithm with dpspark.rng's seeded generator, the discrete Gaussian noise
  it adds in a release) at n = N with beta = 1e-7 in T = 10 trials: the stated error and the stated spectrum
  interval of every pass hold in every trial (false alarm <= T beta = 1e-6).
* Teeth: the derivation with every privacy-noise term dropped states an N at which the real mechanism's error is
  far above alpha in every trial; the real derivation's N passes at the same parameters.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpspark.mechanisms.gaussian_model import sample_size_estimated as se
from dpspark.mechanisms.gaussian_model import tails
from dpspark.mechanisms.gaussian_model.sample_size import (_bisect, input_clamp_fail, mechanism_scales,
                                                          release_error_bound, release_sample_size)

KINDS = ("gaussian_covariance", "gaussian_mean", "gaussian_learner")


def _whiten(sigma: np.ndarray) -> np.ndarray:
    vals, vecs = np.linalg.eigh(sigma)  # report
    return (vecs / np.sqrt(vals)) @ vecs.T  # report


def _problem(d: int, kappa: float, n: int, radius: float, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    g = np.random.default_rng(seed)  # report: test data, not noise
    q, _ = np.linalg.qr(g.normal(size=(d, d)))  # report
    sigma = (q * np.geomspace(1.0, kappa, d)) @ q.T  # report: eigenvalues 1 and kappa both present
    mu = g.normal(size=d)  # report
    mu *= radius / np.linalg.norm(mu)  # report: ||mu|| = R, the largest allowed
    return g.multivariate_normal(mu, sigma, size=n), mu, sigma  # report


# --- the tails ----------------------------------------------------------------------------------------

def test_chi2_survival_matches_closed_forms() -> None:
    for x in (0.5, 3.0, 17.0, 60.0):
        assert tails.chi2_sf(2, x) == pytest.approx(math.exp(-x / 2), rel=1e-12)
        assert tails.chi2_sf(1, x) == pytest.approx(math.erfc(math.sqrt(x / 2)), rel=1e-12)
        assert tails.chi2_sf(3, x) == pytest.approx(math.erfc(math.sqrt(x / 2)) + math.sqrt(2 * x / math.pi) * math.exp(-x / 2), rel=1e-12)
        assert tails.chi2_sf(4, x) == pytest.approx(math.exp(-x / 2) * (1 + x / 2), rel=1e-12)
    # a Monte Carlo check at d = 50 (10^6 draws; 0.0108 +- 0.0001)
    g = np.random.default_rng(5)  # report
    emp = float(np.mean(g.chisquare(50, size=10**6) > 75.0))  # report
    assert abs(tails.chi2_sf(50, 75.0) - emp) < 6e-4


def test_gram_bounds_hold_in_every_trial_and_the_typical_values_do_not() -> None:
    """200 trials of n = 400, d = 3: ||G - I||_op <= gamma and ||G - I||_F <= F at p = 1e-9 each (false alarm
    <= 200 x 2e-9 < 1e-6). Mutants: the typical values (F without its concentration term, sqrt((d^2 + d) / n);
    gamma at t = 0) are exceeded in at least 20 trials."""
    d, n, p, trials = 3, 400, 1e-9, 200
    gamma, _ = tails.gram_operator(d, n, p)
    frob = tails.gram_frobenius(d, n, p)
    typ_f, typ_op = math.sqrt((d * d + d) / n), 2 * math.sqrt(d / n) + d / n  # report
    over_f = over_op = 0
    g = np.random.default_rng(11)  # report
    for _ in range(trials):
        z = g.normal(size=(n, d))  # report
        e = z.T @ z / n - np.eye(d)  # report
        f, op = float(np.linalg.norm(e)), float(np.linalg.norm(e, 2))  # report
        assert f <= frob and op <= gamma
        over_f += f > typ_f
        over_op += op > typ_op
    assert over_f >= 20 and over_op >= 20


def test_noise_matrix_bounds_hold_on_the_implemented_sampler_and_the_allowance_does_not() -> None:
    """The symmetric noise matrix of a covariance pass (diagonal Z_ii, off-diagonal Z_ij / 2, Z from the real plan and
    sampler, seeded): ||N||_op <= the Tropp bound and ||N||_F <= the Laurent-Massart bound in each of 200 trials at
    p = 1e-9 (false alarm < 1e-6). Mutant: the rounds' typical allowance sqrt(d) sd is exceeded in >= 20 trials."""
    from dpspark.mechanisms.gaussian_model.covariance import pass_l2_sq
    from dpspark.mechanisms.gaussian_model.model_noise import plan_noise
    from dpspark.mechanisms.gaussian_model.source import upper_pairs
    from dpspark.rng import SeededRandom

    d, p, trials = 8, 1e-9, 200
    plan = plan_noise(d * (d + 1) // 2, pass_l2_sq(d, 10**6), Fraction(1, 4), 10**9)
    op_b, f_b = tails.sym_operator(plan, d, p), tails.sym_frobenius(plan, d, p)
    typical = math.sqrt(d) * plan.grid * float(plan.sampler.sigma)  # report
    rng = SeededRandom(b"gaussian noise matrix")
    over = 0
    for _ in range(trials):
        z = plan.add([0] * plan.dims, rng)
        m = np.zeros((d, d))  # report
        for (i, j), v in zip(upper_pairs(d), z):
            m[i, j] = m[j, i] = float(v) if i == j else float(v) / 2  # report
        assert float(np.linalg.norm(m)) <= f_b and float(np.linalg.norm(m, 2)) <= op_b
        over += float(np.linalg.norm(m, 2)) > typical
    assert over >= 20


def test_clip_trace_bound_holds_and_is_not_vacuous() -> None:
    """(1/n) sum ((||z_i|| + w)^2 - S)_+ <= clip_trace in each of 100 trials at p = 1e-8 (false alarm 1e-6), and the
    bound is within 3x of the exact mean E (X - S)_+ at w = 0 and large n; the mutant that drops the clipping bias
    (bound 0) is exceeded in every trial."""
    d, n, s_sq, w, p = 5, 20_000, 15.0, 0.05, 1e-8
    bound = tails.clip_trace(d, n, s_sq, w, p)
    g = np.random.default_rng(3)  # report
    for _ in range(100):
        r = np.linalg.norm(g.normal(size=(n, d)), axis=1)  # report
        got = float(np.mean(np.maximum((r + w) ** 2 - s_sq, 0.0)))  # report
        assert 0 < got <= bound
    exact = d * tails.chi2_sf(d + 2, s_sq) - s_sq * tails.chi2_sf(d, s_sq)  # report: E (X - S)_+ for chi^2_d
    assert exact <= tails.clip_trace(d, 10**9, s_sq, 0.0, p) <= 3 * exact


def test_clip_frobenius_bound_holds_and_the_mean_alone_does_not() -> None:
    """The removed second moment of an l2 clip at T (B = I, rows u_i = z_i + w e_1, the ideal clip removes
    (||u_i||^2 - T)_+ along u_i / ||u_i||): ||C||_F <= clip_frobenius in each of 30 trials at p = 1e-8 for each of
    its three events (false alarm 9e-7), and below half the trace; the mutant E f / sqrt(d) (the mean alone, no
    deviation term) is exceeded in at least 5 trials."""
    d, n, t, w, p = 20, 200_000, 32.0, 0.05, 1e-8
    trace = tails.clip_trace(d, n, t, w, p)
    bound = tails.clip_frobenius(d, n, t, w, p, trace)
    mean_only = tails.excess_moments(d, t)[0] / math.sqrt(d)  # report: E f / sqrt d at w = 0, below the w > 0 mean
    assert bound < trace / 2
    g = np.random.default_rng(8)  # report
    over = 0
    for _ in range(30):
        u = g.normal(size=(n, d))  # report
        u[:, 0] += w
        sq = np.sum(u * u, axis=1)  # report
        c = np.maximum(sq - t, 0.0) / sq  # report: (||u||^2 - T)_+ / ||u||^2, times u u^T
        m = (u * c[:, None]).T @ u / n  # report
        got = float(np.linalg.norm(m))  # report
        assert got <= bound
        over += got > mean_only
    assert over >= 5


def test_noise_scale_is_non_decreasing_in_the_threshold() -> None:
    """The derivation bounds a pass's noise at the largest threshold the code can choose: that needs the plan's
    G sigma to be non-decreasing in l2_sq, on the sampler grid (small scales) and on the public grid (large ones).
    Mutant: a plan keyed on the wrong quantity (the reversed list) is decreasing."""
    from dpspark.mechanisms.gaussian_model.model_noise import plan_noise

    for lo, step in ((1, 37), (10**12, 10**11), (10**30, 10**29)):
        scales = [plan_noise(6, lo + k * step, Fraction(1, 8), 10**12).grid * plan_noise(6, lo + k * step, Fraction(1, 8), 10**12).sampler.sigma
                  for k in range(12)]
        assert all(a <= b for a, b in zip(scales, scales[1:])) and scales[0] < scales[-1]
        assert not all(a <= b for a, b in zip(scales[::-1], scales[::-1][1:]))


# --- the stated N -----------------------------------------------------------------------------------------

BASE = dict(d=3, alpha=Fraction(1, 4), beta=Fraction(1, 10**7), rho=Fraction(1, 2), kappa=Fraction(100), radius=Fraction(10))


def _n(kind: str, **kw) -> int | None:  # type: ignore[no-untyped-def]
    a = {**BASE, **kw}
    return release_sample_size(kind, a["d"], a["alpha"], a["beta"], a["rho"], a["kappa"], a["radius"])


@pytest.mark.parametrize("kind", KINDS)
def test_sample_size_is_finite_and_monotone_in_every_public_input(kind: str) -> None:
    base = _n(kind)
    assert base is not None and 1000 < base < 10**6
    assert _n(kind, rho=Fraction(2)) < base
    assert _n(kind, alpha=Fraction(1, 2)) < base
    assert _n(kind, beta=Fraction(1, 1000)) < base
    assert _n(kind, d=5) > base
    assert _n(kind, kappa=Fraction(10**4)) > base
    assert _n(kind, kappa=Fraction(1)) < base


def test_bound_holds_for_every_n_above_n_and_the_search_is_public() -> None:
    """At a fixed max_units the bound is <= alpha at N and non-increasing on [N, max_units] (so "once n >= N"
    holds), and above alpha just below N. The search evaluates the bound at public points only: doubling from 4,
    then midpoints, at most 39 + 64 evaluations, the same sequence on every call."""
    d, alpha, beta, rho, kappa, radius, units = 3, Fraction(1, 4), Fraction(1, 10**7), Fraction(1, 2), Fraction(100), Fraction(10), 10**6
    scales = mechanism_scales(d, radius, kappa, units)
    for kind in KINDS:
        n_at = release_sample_size(kind, d, alpha, beta, rho, kappa, radius, max_units=units)
        assert n_at is not None
        grid = [n_at + (units - n_at) * i // 6 for i in range(7)]
        vals = [release_error_bound(kind, n, d, beta, rho, kappa, radius, scales, units) for n in grid]
        assert vals[0] <= alpha and all(b <= a * (1 + 1e-9) for a, b in zip(vals, vals[1:]))  # report
        assert release_error_bound(kind, n_at * 99 // 100, d, beta, rho, kappa, radius, scales, units) > alpha
    calls: list[list[int]] = [[], []]
    for rec in calls:
        def bound(n: int, rec: list[int] = rec) -> float:
            rec.append(n)
            return release_error_bound("gaussian_learner", n, d, beta, rho, kappa, radius, scales, units)
        _bisect(bound, float(alpha), units)
    assert calls[0] == calls[1] and len(calls[0]) <= 39 + 64
    assert calls[0][:3] == [4, 8, 16]


def _trials(kind: str, d: int, kappa: int, n: int, rho: Fraction, radius: Fraction, seeds: range,
            record: list | None = None) -> list[tuple[float, float]]:  # type: ignore[type-arg]
    """(covariance error, mean error) of the real algorithm (the release's own ``learn``) in seeded trials."""
    from dpspark.mechanisms.gaussian_model.mechanism import learn_in_memory

    out = []
    for s in seeds:
        x, mu, sigma = _problem(d, float(kappa), n, float(radius), seed=4000 + s)
        if record is not None:
            record.append([])
        est, _ = learn_in_memory(kind, x, radius, Fraction(kappa), rho, seed=s)
        w = _whiten(sigma)
        ce = float(np.linalg.norm(w @ est["covariance"] @ w - np.eye(d))) if "covariance" in est else 0.0  # report
        me = float(np.linalg.norm(w @ (est["mean"] - mu))) if "mean" in est else 0.0  # report
        if record is not None:
            record[-1] = [(m, sigma) for m in record[-1]]
        out.append((ce, me))
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_the_real_mechanism_meets_its_stated_bound_at_n(kind: str, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """d = 3, kappa = 100 (two whitening rounds run), ||mu|| = R, alpha = 1/4, beta = 1e-7, n = N: in each of 10
    seeded trials the errors are <= alpha and the spectrum of A Sigma A^T of every pass lies in the stated interval
    [l_r, u_r] (false alarm <= 10 beta = 1e-6)."""
    from dpspark.mechanisms.gaussian_model import covariance as cv
    from dpspark.mechanisms.gaussian_model.fixed import as_real

    d, kappa, rho, radius, alpha, beta = 3, 100, Fraction(1, 2), Fraction(10), Fraction(1, 4), Fraction(1, 10**7)
    n = release_sample_size(kind, d, alpha, beta, rho, Fraction(kappa), radius)
    assert n is not None
    scales = mechanism_scales(d, radius, Fraction(kappa), n)
    trace: dict = {}  # type: ignore[type-arg]
    se.estimated_bounds(kind, d, n, rho, radius, Fraction(kappa), scales, n, float(beta),
                        input_clamp_fail(d, n, Fraction(kappa), radius, scales), trace)
    assert trace["rounds"] == 2
    record: list = []  # type: ignore[type-arg]
    orig = cv.covariance_pass

    def recording(run, matrix, *args, **kwargs):  # type: ignore[no-untyped-def]
        record[-1].append(as_real(matrix, run.scales.matrix_bits))  # report: observe only; the pass runs unchanged
        return orig(run, matrix, *args, **kwargs)

    monkeypatch.setattr(cv, "covariance_pass", recording)
    errors = _trials(kind, d, kappa, n, rho, radius, range(10), record)
    for (ce, me), passes in zip(errors, record):
        assert ce <= alpha and me <= alpha
        assert len(passes) == len(trace["passes"]) == 3
        for (a, sigma), stated in zip(passes, trace["passes"]):
            spec = np.linalg.eigvalsh(a @ sigma @ a.T)  # report
            # 1e-9: this test's own float eigenvalues (Sigma's smallest eigenvalue is 1, so l_0 = a_0^2 is attained)
            assert stated["l"] * (1 - 1e-9) <= spec[0] and spec[-1] <= stated["u"] * (1 + 1e-9)  # report


def test_a_derivation_without_the_privacy_noise_states_an_n_where_the_mechanism_fails(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The mutant: every privacy-noise term dropped (count, coarse mean, passes). At rho = 1/20000, d = 2, kappa = 1,
    alpha = 1/2 its N is below 2000, and there the real mechanism's covariance error exceeds alpha in each of 3
    trials (it is about 10: the noise dominates); the real derivation's N passes 10 trials (false alarm 1e-6)."""
    kind, d, kappa, rho, radius, alpha, beta = "gaussian_covariance", 2, 1, Fraction(1, 20000), Fraction(10), Fraction(1, 2), Fraction(1, 10**7)
    args = (kind, d, alpha, beta, rho, Fraction(kappa), radius)
    real = release_sample_size(*args)
    with monkeypatch.context() as m:
        for name in ("vector_norm", "sym_frobenius", "sym_operator"):
            m.setattr(tails, name, lambda *a: 0.0)
        m.setattr(se, "_noise_tail", lambda *a: 0.0)
        mutant = release_sample_size(*args)
    assert real is not None and mutant is not None and mutant < 2000 < real
    assert all(ce > alpha for ce, _ in _trials(kind, d, kappa, mutant, rho, radius, range(3)))
    assert all(ce <= alpha for ce, _ in _trials(kind, d, kappa, real, rho, radius, range(10)))
