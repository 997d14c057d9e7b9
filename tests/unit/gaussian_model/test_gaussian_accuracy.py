"""Statistical accuracy of the Gaussian learners on the driver backend (exact aggregates), each check's
false-alarm rate <= 1e-6, each with a broken variant it catches.

* The mean step (known covariance, M = Sigma^-1/2 quantised): with S' the clipped sum around the step's
  centre c and S the unclipped one, M mu^ = c + (S' + N) / n~ and M xbar = c + S / n exactly (fixed point),
  so ||Sigma^-1/2 (mu^ - xbar)|| <= ||Sigma^-1/2 M^-1|| (sqrt(d) t_s / n_lo + ||S' / n|| t_c / n_lo
  + ||S' - S|| / n), the last term the realised clip
  with t the noise tails (the implemented discrete Gaussian: Pr[|Z| >= t] <= 2 e^{-t^2/2sigma^2} + its
  floor mass, CKS20 Cor. 9; p = 1e-7 per vector, union bound), n_lo = n~ - t_c.
* max_units above n (issue 25 §1.1): the estimates divide by the noisy count of the singles, so a run with
  max_units = 4 n has the same accuracy as one with max_units = n. The bounds used (covariance 0.3, mean
  0.1 at d = 5, n = 10^5, kappa = 10) are above the stated tails with p = 1e-7 each: the whitened Gram's
  operator error is <= 2 delta + delta^2, delta = (sqrt 5 + sqrt(2 ln(2/p))) / sqrt n = 0.025 (Vershynin
  2012 Cor. 5.35; Frobenius <= sqrt 5 times: 0.11), ||Sigma^-1/2 (xbar - mu)|| <= sqrt(chi^2_5 tail / n) =
  0.02 (Laurent-Massart), and the privacy noise adds below 0.05 (its tails at these sigmas). A mutant that
  divides by max_units (the product learner's bug) is off by ||(1/4 - 1) I||_F = 1.68.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpspark.mechanisms.gaussian_model.fixed import as_real
from dpspark.mechanisms.gaussian_model.mechanism import learn_in_memory

P = 1e-7  # report: failure budget per tail


def _problem(d: int, kappa: float, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    g = np.random.default_rng(seed)  # report: test data, not noise
    q, _ = np.linalg.qr(g.normal(size=(d, d)))  # report
    sigma = (q * np.geomspace(1.0, kappa, d)) @ q.T  # report
    mu = g.normal(size=d)  # report
    mu *= 20.0 / np.linalg.norm(mu)  # report
    return g.multivariate_normal(mu, sigma, size=n), mu, sigma  # report


def _whiten(sigma: np.ndarray) -> np.ndarray:
    vals, vecs = np.linalg.eigh(sigma)  # report
    return (vecs / np.sqrt(vals)) @ vecs.T  # report


def _maha(est: np.ndarray, sigma: np.ndarray) -> float:
    w = _whiten(sigma)  # report
    return float(np.linalg.norm(w @ est @ w - np.eye(sigma.shape[0])))  # report


def _tail_t(noise, coords: int) -> float:  # type: ignore[no-untyped-def]
    s = noise.sampler
    floor_mass = (s.floor + s.extra + 1) * s.m / 2.0**s.bits  # report
    assert floor_mass <= P / (2 * coords)
    return noise.grid * float(s.sigma) * math.sqrt(2 * math.log(4 * coords / P))  # report


@pytest.mark.parametrize("d, n", [(5, 40_000), (20, 100_000)])
def test_mean_with_known_covariance_within_its_noise_bound(d: int, n: int) -> None:
    from dpspark.mechanisms.gaussian_model.mean import whitening
    from dpspark.mechanisms.gaussian_model.source import ball_clip, centred_rows

    x, mu, sigma = _problem(d, 100.0, n, seed=100 + d)
    got, run = learn_in_memory("gaussian_mean", x, Fraction(40), Fraction(100), Fraction(1, 2), covariance=sigma, seed=d)
    est = got["mean"]
    sc = run.scales
    m_int = whitening(sigma, sc.matrix_bits)
    last = run.passes[-1]
    assert last["pass"] == "mean"
    src = run.source
    count_noise, sums_noise = run.noises[0], run.noises[-1]
    c_lo = run.outputs[0][0] - _tail_t(count_noise, 1)  # report
    one = float(1 << sc.y_bits)  # report
    y = centred_rows(m_int, src._singles, last["centre"])
    y_clip, clipped = ball_clip(y, last["radius_sq"])
    assert clipped <= n // 1000  # the per-row tail (1/100, Laurent-Massart) clips far fewer in practice
    xbar = src._singles.astype(np.float64).mean(axis=0) / 2.0**sc.data_bits  # report: the fixed-point mean
    s_norm = float(np.linalg.norm(y_clip.astype(np.float64).mean(axis=0))) / one  # report: ||S' / n||, real units
    moved = float(np.linalg.norm((y_clip - y).astype(np.float64).sum(axis=0))) / (one * n)  # report: the realised clip
    w = _whiten(sigma) @ np.linalg.inv(as_real(m_int, sc.matrix_bits))  # report
    bound = np.linalg.norm(w, 2) * (math.sqrt(d) * _tail_t(sums_noise, d) / (one * c_lo)
                                    + s_norm * _tail_t(count_noise, 1) / c_lo * 1.001 + moved)  # report
    err = float(np.linalg.norm(_whiten(sigma) @ (est - xbar)))  # report
    assert err <= bound <= 0.05
    assert float(np.linalg.norm(_whiten(sigma) @ (est + 0.1 - xbar))) > bound  # teeth: a shifted estimate fails
    x_lm = math.log(1 / P)  # report
    sampling = math.sqrt((d + 2 * math.sqrt(d * x_lm) + 2 * x_lm) / n)  # report
    assert float(np.linalg.norm(_whiten(sigma) @ (est - mu))) <= sampling + bound  # report


def test_fewer_units_than_max_units_do_not_bias_the_learner() -> None:
    """Issue 25 §1.1: the same data with max_units = n and max_units = 4 n; both within the stated bounds (module
    docstring); the mutant dividing by max_units is far outside them."""
    d, n = 5, 100_000
    x, mu, sigma = _problem(d, 10.0, n, seed=3)
    for units in (n, 4 * n):
        est, run = learn_in_memory("gaussian_learner", x, Fraction(40), Fraction(10), Fraction(1, 2), max_units=units, seed=1)
        assert _maha(est["covariance"], sigma) <= 0.3
        assert float(np.linalg.norm(_whiten(sigma) @ (est["mean"] - mu))) <= 0.1  # report
        if units > n:  # the mutant: the same sums divided by max_units instead of the noisy count
            assert _maha(est["covariance"] * run.outputs[0][0] / units, sigma) > 1.0


def test_preconditioning_rounds_pay_off_at_kappa_1e4() -> None:
    """At kappa = 10^4 the public schedule runs rounds, and their covariance error is <= 1/10 of a single
    final pass's (no round) at the same total budget (seeded; the ratio is about 1/100, not a coin flip)."""
    from dpspark.mechanisms.gaussian_model import covariance as cv

    d, n = 5, 100_000
    x, _, sigma = _problem(d, 1e4, n, seed=7)
    est, run = learn_in_memory("gaussian_covariance", x, Fraction(40), Fraction(10**4), Fraction(1, 2))
    assert any(p["pass"].startswith("covariance round") for p in run.passes)
    saved = cv.MAX_ROUNDS
    try:
        cv.MAX_ROUNDS = 0  # the variant without preconditioning
        flat, run0 = learn_in_memory("gaussian_covariance", x, Fraction(40), Fraction(10**4), Fraction(1, 2))
    finally:
        cv.MAX_ROUNDS = saved
    assert not any(p["pass"].startswith("covariance round") for p in run0.passes)
    assert _maha(est["covariance"], sigma) <= _maha(flat["covariance"], sigma) / 10


def test_plan_states_the_derived_sample_size_and_the_release_its_claims(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The plan (dry-run) states N for the estimated-covariance kinds and for a known covariance, the model-error
    claims carry it (both metrics for the learner); at a max_units below N the plan says the data are too small
    for the target (issue 36: not advice to raise max_units)."""
    from dpspark.api.config import ReleaseSpec
    from dpspark.mechanisms.registry import construct

    base = {"input": {"path": str(tmp_path), "format": "parquet"},
            "gaussian": {"columns": ["a", "b", "c"], "radius": "10", "kappa": "100", "alpha": "1/2", "beta": "1/1000000"},
            "privacy": {"mechanism": "gaussian_covariance", "epsilon": "8", "delta": "1/1000000000",
                        "max_units": 10**6, "unit_column": "uid"},
            "output": {"path": str(tmp_path / "o")}}
    for kind, quantities in (("gaussian_covariance", ["whitened_frobenius_error"]), ("gaussian_mean", ["mahalanobis_error"]),
                             ("gaussian_learner", ["whitened_frobenius_error", "mahalanobis_error"])):
        mech = construct(ReleaseSpec.from_dict({**base, "privacy": {**base["privacy"], "mechanism": kind}}))
        target = mech.plan()["accuracy_target"]
        n = target["sample_size"]
        assert n is not None and f"n >= {n}" in target["text"]
        assert [(c.quantity, c.min_units) for c in mech.model_claims()] == [(q, n) for q in quantities]
        small = construct(ReleaseSpec.from_dict({**base, "privacy": {**base["privacy"], "mechanism": kind,
                                                                    "max_units": n // 2}}))
        assert small.plan()["accuracy_target"]["sample_size"] is None and small.model_claims() == []
        text = small.plan()["accuracy_target"]["text"]
        assert "the data are too small for the target" in text and "it is with max_units" not in text
    known = {**base, "gaussian": {**base["gaussian"], "covariance": [["1", "0", "0"], ["0", "1", "0"], ["0", "0", "1"]]},
             "privacy": {**base["privacy"], "mechanism": "gaussian_mean"}}
    mk = construct(ReleaseSpec.from_dict(known))
    n = mk.plan()["accuracy_target"]["sample_size"]
    assert n is not None and f"n >= {n}" in mk.plan()["accuracy_target"]["text"]
    assert [c.min_units for c in mk.model_claims()] == [n]
    with pytest.raises(TypeError, match="float"):
        construct(ReleaseSpec.from_dict({**base, "gaussian": {**base["gaussian"], "alpha": 0.5}}))


BETA_N = Fraction(1, 10**6)


@pytest.mark.parametrize("d", [5, 20])
def test_known_covariance_mean_at_the_stated_sample_size(d: int) -> None:
    """gaussian_mean with a known covariance at exactly n = N(d, alpha = 1/10, beta = 1e-6, rho = 1/2):
    ||Sigma^-1/2 (mu^ - mu)|| <= alpha. False-alarm rate <= beta = 1e-6 (the events of
    dpspark.mechanisms.gaussian_model.sample_size). Teeth: a centre one unit off in every whitened coordinate fails."""
    from dpspark.mechanisms.gaussian_model.sample_size import release_sample_size

    alpha, rho, kappa = Fraction(1, 10), Fraction(1, 2), 100
    n = release_sample_size("gaussian_mean_known", d, alpha, BETA_N, rho, Fraction(kappa), Fraction(40))
    assert n is not None
    x, mu, sigma = _problem(d, float(kappa), n, seed=200 + d)
    got, _ = learn_in_memory("gaussian_mean", x, Fraction(40), Fraction(kappa), rho, covariance=sigma, seed=d)
    w = _whiten(sigma)  # report
    assert float(np.linalg.norm(w @ (got["mean"] - mu))) <= alpha  # report
    off = np.linalg.solve(w, np.ones(d))  # report: one unit per whitened coordinate
    assert float(np.linalg.norm(w @ (got["mean"] + off - mu))) > alpha  # report


def test_stated_bound_holds_for_every_n_above_n() -> None:
    """At a fixed max_units the known-covariance bound is <= alpha at N and non-increasing on [N, max_units]
    (so "once n >= N" holds), and above alpha just below N (the other kinds: test_gaussian_sample_size.py)."""
    from dpspark.mechanisms.gaussian_model.sample_size import mechanism_scales, release_error_bound, release_sample_size

    d, alpha, rho, kappa, radius, units = 5, Fraction(1, 10), Fraction(1, 2), Fraction(100), Fraction(40), 10**6
    big_n = release_sample_size("gaussian_mean_known", d, alpha, BETA_N, rho, kappa, radius, max_units=units)
    assert big_n is not None
    scales = mechanism_scales(d, radius, kappa, units)
    grid = [big_n + (units - big_n) * i // 8 for i in range(9)]
    vals = [release_error_bound("gaussian_mean_known", n, d, BETA_N, rho, kappa, radius, scales, units) for n in grid]
    assert vals[0] <= alpha and all(b <= a for a, b in zip(vals, vals[1:]))
    assert release_error_bound("gaussian_mean_known", big_n * 99 // 100, d, BETA_N, rho, kappa, radius, scales, units) > alpha
