"""Choosing between the answers mechanisms: bounded noise's always-bound against the Gaussian's 95% bound."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from dpspark.api.config import ReleaseSpec
from dpspark.cli.app import main
from dpspark.mechanisms.answers.choice import compare, crossing_k, gaussian_bound
from dpspark.mechanisms.registry import construct
from dpspark.noise.bounded_calibrate import calibrate

EPS, DELTA = "1", "1e-6"


def _spec(mechanism: str, k: int) -> ReleaseSpec:
    queries = [{"name": f"c{i}", "kind": "count"} for i in range(k)]
    priv = {"mechanism": mechanism, "epsilon": EPS, "delta": DELTA, "max_units": 1000}
    return ReleaseSpec.from_dict({"privacy": priv, "queries": queries, "output": {"path": "/tmp/dpspark-unused"}},
                                 input_given=True)


def _certified(k: int):
    return compare(k, EPS, DELTA, bounded_M=calibrate(k, EPS, DELTA).M)


def test_gaussian_bound_is_the_gaussian_mechanisms_own() -> None:
    """The comparison's Gaussian bar is exactly what the ``gaussian`` answers release states."""
    mech = construct(_spec("gaussian", 5))
    assert gaussian_bound(5, EPS, DELTA, 1000) == (mech.dg.sigma, mech.law.bound95)


def test_small_k_picks_gaussian_and_large_k_bounded_noise() -> None:
    small, large = _certified(10), _certified(4000)
    assert small.gaussian_t95 < small.bounded_R and small.pick == "gaussian"
    assert large.bounded_R <= large.gaussian_t95 and large.pick == "bounded_noise"
    assert small.bounded_certified and "smaller: gaussian" in small.words()


def test_crossing_k_separates_the_certified_bars() -> None:
    """At the reported crossing the certified bounded bar is at most the Gaussian's; at half of it, above."""
    cross = crossing_k(EPS, DELTA)
    assert cross is not None and 100 < cross < 10_000
    at, half = _certified(cross), _certified(cross // 2)
    assert at.bounded_R <= at.gaussian_t95
    assert half.bounded_R > half.gaussian_t95


def test_dry_run_accuracy_shows_both_mechanisms() -> None:
    """A dry run of either answers mechanism prints both bars side by side (bounded's certified M when it has one)."""
    bounded = construct(_spec("bounded_noise", 3))
    line = bounded.accuracy_summary()["compared"]
    assert f"bounded_noise within +-{bounded.cal.M - 1} always" in line and "(estimate)" not in line
    gauss = construct(_spec("gaussian", 3))
    line = gauss.accuracy_summary()["compared"]
    assert f"gaussian within +-{gauss.law.bound95} with probability 0.95" in line and "(estimate)" in line
    assert line.endswith("smaller: gaussian")


def test_cli_choose_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", "choose", "--epsilon", "3", "--delta", "1e-5", "--k", "20"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    cross = out["crossing_k"]
    assert isinstance(cross, int) and out["at_crossing"]["k"] == cross
    assert out["at_k"]["k"] == 20 and out["at_k"]["smaller"] == "gaussian"
    assert out["at_k"]["bounded_noise_R_certified"] is True
    assert Fraction(out["at_k"]["gaussian_sigma"]) > 0
    assert f"from k = {cross} on" in captured.err


def test_answers_refuse_on_excess_units_that_they_never_act_on() -> None:
    """``on_excess_units = "refuse"`` would be stated by inspect but never acted on: refused before any spend."""
    from dpspark.engine.spec import ConfigError

    priv = {"mechanism": "bounded_noise", "epsilon": EPS, "delta": DELTA, "max_units": 1000,
            "on_excess_units": "refuse"}
    with pytest.raises(ConfigError, match="does not apply to answers"):
        ReleaseSpec.from_dict({"privacy": priv, "queries": [{"name": "c", "kind": "count"}],
                               "output": {"path": "/tmp/dpspark-unused"}}, input_given=True)
