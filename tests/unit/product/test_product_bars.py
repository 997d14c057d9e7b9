"""Issue 36 §1: the product learner runs by default and states per-feature error bars the data's size supports.

* :func:`~dpspark.mechanisms.product.rounds.abs_quantile` is the exact quantile of |Z| under the implemented
  discrete Gaussian (checked against the enumerated pmf; MUTANT: one step lower breaks the tail).
* The bars' claim: for each feature j, Pr[|q_j - f_j| > b_j] <= beta, f_j the data's own frequency. Over T
  independent runs the failures of feature j are dominated by Binomial(T, beta); each feature's count is
  checked at its exact 1e-6/d upper quantile (false alarm <= 1e-6 in all). MUTANT: bars divided by max_units
  instead of the noisy count (the estimator of issue 25) - caught.
* The default (no privacy.alpha) plans and runs at the issue's size (8 features, 61,697 units, epsilon = 1,
  where alpha = 1/10 needed over 10^6 units); an alpha the user sets is still refused before any data.
* A release states the bars in to_pandas() and explains ``flipped`` there and in ``inspect``.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpspark.api.config import ConfigError, ReleaseSpec
from dpspark.mechanisms.product import learner as lr
from dpspark.mechanisms.product import rounds as rd
from dpspark.mechanisms.product.simulate import SimulatedCounts
from dpspark.mechanisms.registry import construct
from dpspark.rng import SeededRandom
from tests.unit.product.test_product_learner import upper_quantile


@pytest.mark.parametrize("sigma,radius", [(Fraction(1), 0), (Fraction(3, 2), 4), (Fraction(7), 20)])
def test_abs_quantile_is_the_exact_quantile_of_the_implemented_law(sigma: Fraction, radius: int) -> None:
    mech = rd.DiscreteGaussian(sigma=sigma, data_radius=radius)
    pmf = mech.pmf()  # index i is the value i - R
    for t in range(0, mech.R + 1):
        assert rd.abs_tail(mech, t) == sum(p for i, p in enumerate(pmf) if abs(i - mech.R) > t)
    for tail in (Fraction(1, 2), Fraction(1, 20), Fraction(1, 1000), Fraction(1, 10**9)):
        t = rd.abs_quantile(mech, tail)
        assert rd.abs_tail(mech, t) <= tail
        # MUTANT: one step below the returned quantile (an off-by-one bisection) exceeds the tail
        assert t == 0 or rd.abs_tail(mech, t - 1) > tail


# --- the bars' claim on simulated data ---------------------------------------------------------
P = [0.52, 0.31, 0.12, 0.07, 0.45, 0.83, 0.22, 0.64]  # survey-like marginals: flipped, bucket 1 and the rest
BETA = Fraction(1, 20)


def _failures(T: int, n: int, max_units: int, rho: Fraction) -> tuple[list[int], list[int], list[float]]:
    """Per feature: runs with |q_j - f_j| > b_j, and with the bar divided by max_units (the mutant)."""
    plan = lr.LearnerPlan.build(len(P), max_units, rho, Fraction(1, 10), BETA, enforce=False)
    gen = np.random.default_rng(36)
    fails, mutant, ratios = [0] * len(P), [0] * len(P), []
    for t in range(T):
        sim = SimulatedCounts(P, n, gen)
        run = lr.run_learner(plan, sim, SeededRandom(t))
        size, counts = sim._slices[(0, plan.batches, plan.batches)]  # the units read and their counts
        err = [abs(run.q[j] - Fraction(int(counts[j]), size)) for j in range(len(P))]
        assert all(0 < b <= 1 for b in run.bars)
        for j in range(len(P)):
            fails[j] += err[j] > run.bars[j]
            mutant[j] += err[j] > run.bars[j] * size / max_units
        ratios.append(float(max(run.bars) / max(err)))  # report
    return fails, mutant, ratios


def test_error_bars_hold_at_beta_for_each_feature() -> None:
    T = 200
    k = upper_quantile(T, BETA, 1e-6 / len(P))
    fails, mutant, ratios = _failures(T, 8000, 32000, Fraction(1, 50))
    assert max(fails) <= k, (fails, k, mutant)
    assert max(mutant) > k, (mutant, k, fails)
    assert float(np.median(ratios)) >= 1  # report: the bar is above the typical largest error


def test_default_runs_at_the_issue_size_and_an_explicit_alpha_is_refused(tmp_path: Path) -> None:
    """8 features, 61,697 units, epsilon = 1: main refused the default alpha = 1/10 (needs > 10^6 units)."""
    base = {"input": {"path": str(tmp_path), "format": "parquet"}, "columns": {"names": [f"b{j}" for j in range(8)]},
            "privacy": {"mechanism": "product_learner", "epsilon": "1", "delta": "1/1000000000",
                        "max_units": 61697, "unit_column": "id"},
            "output": {"path": str(tmp_path / "out")}}
    mech = construct(ReleaseSpec.from_dict(base))
    assert not mech.alpha_set and mech.plan_obj.n_needed > 61697
    assert "alpha" not in mech.accuracy_summary() and "error_bars" in mech.accuracy_summary()
    assert [c.quantity for c in mech.accuracy_statement().claims] == []  # bars come with the release
    with pytest.raises(ConfigError, match="needs at least .* units"):
        ReleaseSpec.from_dict({**base, "privacy": {**base["privacy"], "alpha": "1/10"}})


def test_release_states_bars_and_explains_flipped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """On the Arrow engine: the section's error_bars, to_pandas()'s error_bar columns, the flipped note in
    to_pandas().attrs and in ``inspect``, and the per-feature claim in the accuracy statement."""
    from dpspark.api.config import load_config
    from dpspark.cli.app import main as cli
    from dpspark.engine.runner import run_release
    from dpspark.lookup import open_release

    N = 20000
    x = np.random.default_rng(3).random((N, len(P))) < np.array(P)
    pq.write_table(pa.table({"id": pa.array(range(N), pa.int64()),
                             **{f"x{j}": pa.array(x[:, j]) for j in range(len(P))}}), tmp_path / "in.parquet")
    names = ", ".join(f'"x{j}"' for j in range(len(P)))
    (tmp_path / "c.toml").write_text(f"""
[input]
path = "in.parquet"
[columns]
names = [{names}]
[privacy]
mechanism = "product_learner"
epsilon = "1"
delta = "1/1000000000"
max_units = 30000
unit_column = "id"
[output]
path = "release"
""")
    rel = open_release(run_release(load_config(tmp_path / "c.toml"), rng=SeededRandom(2), progress=lambda _m: None))
    frame = rel.to_pandas()
    assert list(frame.columns) == ["column", "q", "q_exact", "error_bar", "error_bar_exact", "flipped"]
    bars = [Fraction(b) for b in frame["error_bar_exact"]]
    assert bars == rel.error_bars and all(0 < b < Fraction(1, 50) for b in bars)
    assert frame["flipped"].tolist() == [True, False, False, False, False, True, False, True]  # p > 1/2
    assert "Pr[column = 1]" in frame.attrs["flipped"]
    claim = rel.accuracy.claims[0]
    assert claim.scope == "per_query" and claim.bound == max(bars) and claim.beta == Fraction(1, 20)
    assert "no record was truncated" in claim.condition
    assert cli(["inspect", str(tmp_path / "release")]) == 0
    text = capsys.readouterr().out
    assert "error bars" in text and "x0, x5, x7: the algorithm estimated Pr[column = 0]" in text
    assert "error_bar" in rel._repr_html_() and "estimated Pr[column = 0]" in rel._repr_html_()


def test_section_check_reads_bars_and_older_releases() -> None:
    from dpspark.mechanisms.product.section import check_distribution_section
    from dpspark.release.errors import ReleaseFormatError

    old = {"q": ["1/3", "0", "1"], "columns": ["a", "b", "c"], "flipped": [False, False, True]}
    check_distribution_section(old, None, "m")  # a release before issue 36: no error_bars
    check_distribution_section({**old, "error_bars": ["1/100", "1", "0"]}, None, "m")
    for bars, words in ((["1/100", "1"], "one bar per column"), (["1/100", "2", "0"], "outside"),
                        (["1/100", 0.5, "0"], "not an exact rational"), ("1/100", "one bar per column")):
        with pytest.raises(ReleaseFormatError, match=words):
            check_distribution_section({**old, "error_bars": bars}, None, "m")
