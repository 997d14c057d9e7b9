"""Issue 36 §2: the Gaussian learner counts the rows each covariance pass clips, warns on a skewed column, and
states its accuracy in the data's units and in words a user can act on.

* The clipped count reads singles only: a unit moves it by at most one (l2 sensitivity 1). MUTANT: counting
  every row of every unit moves it by a unit's row count - caught.
* Its noise (every pass: coarse mean, covariance passes, mean): the certified rho of the implemented discrete
  Gaussian at sensitivity 1 is <= CLIP_SHARE of the pass's rho, the pass's matrix or sums keep the rest, and
  the run's rho is the exact sum within the budget. MUTANT: the count charged on top of the pass (the matrix at the whole pass rho) - exceeds the pass's budget, caught.
* The warning: none on Gaussian rows (false alarm <= 3e-8 per pass, a few passes: <= 1e-6), and one on a
  log-normal column; chi^2 tails against known quantiles.
* rel.accuracy's noise claim is in the data's units (main wrote the fixed-point integers, ~1e16), and the
  plan's text says the data are too small for the target (main advised a larger max_units).
"""

from __future__ import annotations

import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpspark.mechanisms.gaussian_model import clipping as cl
from dpspark.mechanisms.gaussian_model.fixed import identity
from dpspark.mechanisms.gaussian_model.source import ArraySource, clipped_moments_of, clipped_sums_of
from dpspark.noise.dgauss import l2_rho

KEY = bytes(range(16))


def test_clipped_count_moves_by_at_most_one_per_unit() -> None:
    """Adding a unit: one far single +1, one near single +0, a far unit with 3 rows +0 (not a single)."""
    d, t = 3, 100
    rows = np.array([[1.0, 2, 3], [30, 0, 0], [0, 4, 0], [-20, -20, 0]])
    base = ArraySource(rows, 0, KEY, None, np.arange(4))
    c0 = clipped_moments_of(identity(d, 0), base._singles, [0] * d, t).clipped
    assert c0 == 2
    for extra, ids, moved in ((np.array([[50.0, 0, 0]]), [4], 1), (np.array([[1.0, 1, 1]]), [4], 0),
                              (np.full((3, d), 99.0), [4, 4, 4], 0)):
        other = ArraySource(np.vstack([rows, extra]), 0, KEY, None, np.r_[np.arange(4), ids])
        assert clipped_moments_of(identity(d, 0), other._singles, [0] * d, t).clipped - c0 == moved
        # the mean steps' count (clipped_sums_of with_count) is the same count
        assert clipped_sums_of(identity(d, 0), other._singles, [0] * d, t, with_count=True)[-1] - c0 == moved
    # MUTANT: counting every row of every unit (not the singles) moves by the unit's row count
    every = clipped_moments_of(identity(d, 0), np.vstack([rows, np.full((3, d), 99.0)]).astype(np.int64), [0] * d, t)
    assert every.clipped - c0 == 3 > 1


def _run(x: np.ndarray, rho: Fraction, kappa: int = 400):  # type: ignore[no-untyped-def]
    from dpspark.mechanisms.gaussian_model.mechanism import learn_in_memory

    return learn_in_memory("gaussian_learner", x, Fraction(100), Fraction(kappa), rho)


def test_clip_count_noise_is_certified_within_the_pass_budget() -> None:
    from dpspark.mechanisms.gaussian_model.budget import SPLITS
    from dpspark.mechanisms.gaussian_model.covariance import predicted_rounds, round_rhos
    from dpspark.mechanisms.gaussian_model.model_noise import plan_noise

    rho = Fraction(1, 2)
    x = np.random.default_rng(1).multivariate_normal([3, -2], [[9.0, 2.0], [2.0, 25.0]], size=2000)
    _, run = _run(x, rho)
    assert run.rho == sum((n.rho for n in run.noises), Fraction(0)) <= rho
    _, coarse_rho, cov_rho, mean_rho = SPLITS["gaussian_learner"].parts(rho)
    planned = [coarse_rho] + round_rhos(cov_rho, predicted_rounds(2, Fraction(400), 2000, cov_rho)) + [mean_rho]
    passes = [p for p in run.passes if "clipped" in p]  # the coarse mean, the covariance passes, the mean
    assert len(passes) == len(planned) == len(run.passes) >= 3
    by_label = {n.label: n for n in run.noises}
    for p, pass_rho in zip(passes, planned):
        clip, matrix = by_label[f"{p['pass']}: clipped rows count"], by_label[p["pass"]]
        # the implemented law's certified rho at l2 sensitivity 1 (grid 1: the count is in units)
        assert clip.grid == 1 and l2_rho(clip.sampler, 1) == clip.rho == Fraction(p["clipped_rho"])
        assert clip.rho <= cl.CLIP_SHARE * pass_rho and matrix.rho <= (1 - cl.CLIP_SHARE) * pass_rho
        assert clip.rho + matrix.rho <= pass_rho
        assert Fraction(p["clipped_sigma"]) == clip.sampler.sigma
        # MUTANT: the count charged on top of a pass whose matrix (sums) keeps the whole pass rho
        whole = plan_noise(matrix.dims, matrix.l2_sq, pass_rho, 10**6, "mutant")
        assert whole.rho + clip.rho > pass_rho


def test_chi2_tail_matches_known_quantiles() -> None:
    for d, x in ((1, 3.841459), (2, 5.991465), (3, 7.814728), (4, 9.487729), (7, 14.06714)):
        assert abs(cl.chi2_sf(d, x) - 0.05) < 1e-6  # report
    assert 0 < cl.gaussian_clip_rate(3) < 0.002 < 1 / 20  # report: far below Laurent-Massart's 1/20


def test_warning_on_a_skewed_column_and_none_on_gaussian_rows() -> None:
    """n = 4000, d = 2, rho = 2: Gaussian rows raise no warning (false alarm <= 3e-8 per pass); a log-normal
    column (income-like) clips far more than a Gaussian would and is flagged."""
    g = np.random.default_rng(36)
    n, rho = 4000, Fraction(2)
    gauss = g.multivariate_normal([40, 30], [[200.0, 30.0], [30.0, 300.0]], size=n)
    skewed = np.c_[g.normal(40, 14, n), np.exp(g.normal(3.3, 1.2, n))]
    found = {}
    for name, x in (("gauss", gauss), ("skewed", skewed)):
        _, run = _run(x, rho, kappa=10000)
        nz = run.noises[0]
        summary = cl.clip_summary(run.passes, 2, run.outputs[0][0], float(nz.grid * nz.sampler.sigma))  # report
        found[name] = summary
    assert not any(s["above_gaussian"] for s in found["gauss"]), found["gauss"]
    assert any(s["above_gaussian"] for s in found["skewed"]), found["skewed"]
    text = cl.clip_warning(found["skewed"], ["age", "income"], 2)
    assert "log" in text and "income" in text and "biased" not in text and "bias the covariance low" in text
    assert cl.clip_warning(found["gauss"], ["a", "b"], 2) == ""


def _config(tmp_path: Path, x: np.ndarray, max_units: int) -> Path:
    n = x.shape[0]
    pq.write_table(pa.table({"uid": pa.array(range(n), pa.int64()), "age": x[:, 0], "income": x[:, 1]}),
                   tmp_path / "in.parquet")
    (tmp_path / "c.toml").write_text(f"""
[input]
path = "in.parquet"
[gaussian]
columns = ["age", "income"]
radius = "100"
kappa = "10000"
[privacy]
mechanism = "gaussian_learner"
epsilon = "8"
delta = "1/1000000000"
max_units = {max_units}
unit_column = "uid"
[output]
path = "release"
""")
    return tmp_path / "c.toml"


def test_release_states_clipping_the_warning_and_data_units(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from dpspark.api.config import load_config
    from dpspark.cli.app import main as cli
    from dpspark.engine.runner import run_release
    from dpspark.lookup import open_release
    from dpspark.mechanisms.registry import construct
    from dpspark.rng import SeededRandom

    g = np.random.default_rng(7)
    n = 4000
    x = np.c_[g.normal(40, 14, n), np.exp(g.normal(3.3, 1.2, n))]
    cfg = load_config(_config(tmp_path, x, 5000))
    text = construct(cfg).accuracy_target()["text"]
    # main: "... is not reached at max_units = 5000; it is with max_units = N" (advice to raise max_units)
    assert "the data are too small for the target" in text and "it is with max_units" not in text
    assert "raising max_units above the data's size does not help" in text
    rel = open_release(run_release(cfg, rng=SeededRandom(3), progress=lambda _m: None))
    claim = rel.accuracy.claims[0]
    assert claim.quantity == "abs_error" and "data's units" in claim.condition
    assert claim.bound < 10**4  # main: ~1e15 fixed-point integers (2^(data + matrix bits) times larger)
    passes = rel.clipped_rows()
    assert passes and all(0 <= c <= n + 100 for _, c, _ in passes)
    assert rel.clipping_warning.startswith("WARNING") and rel.clipping_warning in rel.accuracy.notes
    with pytest.warns(UserWarning, match="far from Gaussian"):
        frame = rel.to_pandas()
    assert frame.attrs["warning"] == rel.clipping_warning
    assert cli(["inspect", str(tmp_path / "release")]) == 0
    out = capsys.readouterr().out
    assert "clipped rows" in out and "WARNING" in out and "in the data's units" in out
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rel.covariance()  # reading the model itself does not warn


def test_section_check_refuses_a_malformed_clipping_record() -> None:
    from dpspark.mechanisms.gaussian_model.section import _check_clipping
    from dpspark.release.errors import ReleaseFormatError

    good = {"noisy_singles": 100, "gaussian_rate": "0.000947", "warning": "",
            "passes": [{"pass": "covariance final", "noisy_clipped": 3, "above_gaussian": False,
                        "gaussian_rate": "0.000947"}]}
    _check_clipping(good, "m")
    for bad in ({**good, "noisy_singles": 0}, {**good, "warning": None}, {**good, "gaussian_rate": "x"},
                {**good, "passes": [{**good["passes"][0], "noisy_clipped": "3"}]},
                {**good, "passes": [{**good["passes"][0], "noisy_clipped": -1}]},
                {**good, "passes": [{**good["passes"][0], "above_gaussian": 1}]}, []):
        with pytest.raises(ReleaseFormatError, match="section.clipping"):
            _check_clipping(bad, "m")
