"""Issue 33 s1: a ledger entry records the release's exact rho when the release states rho-zCDP under add/remove
(the shipped example configs, their real mechanisms, planned without data), and its (epsilon, delta) otherwise."""

from __future__ import annotations

import tomllib
from fractions import Fraction
from pathlib import Path

import pytest

from dpspark.api.config import parse_config
from dpspark.engine.plan import plan_release
from dpspark.ledger.statement import spend_rho
from dpspark.privacy import AddRemove, ZCDP
from dpspark.privacy.mixed_composition import converted_upper

CONF = Path(__file__).resolve().parents[3] / "conf"
ZCDP_CONFIGS = ["gaussian_mean", "gaussian_covariance", "answers_gaussian", "product_learner", "product_sampler"]
OTHER_CONFIGS = ["groups-public-keys", "groups-private-keys", "bernoulli_sampler", "queries-stability",
                 "answers_bounded_noise"]


def _plan(name: str):  # type: ignore[no-untyped-def]
    raw = tomllib.loads((CONF / f"{name}.toml").read_text())
    raw.pop("input", None)  # the example's data file is made by a script; the plan reads none
    spec = parse_config(raw, CONF / f"{name}.toml", input_given=True, certify=False)
    return spec, plan_release(spec, have_spark=True).mechanism


@pytest.mark.parametrize("name", ZCDP_CONFIGS)
def test_zcdp_releases_are_recorded_by_their_rho(name: str) -> None:
    spec, mech = _plan(name)
    rho = spend_rho(spec, mech)
    assert rho is not None and rho > 0
    assert converted_upper(rho, Fraction(spec.delta)) <= spec.epsilon  # never more than the configured charge
    stated = [st for attr in ("planned_statements", "statements") if callable(getattr(mech, attr, None))
              for key, st in getattr(mech, attr)() if key == "add_remove"]
    for attr in ("statement", "planned_statement"):
        if not stated and callable(getattr(mech, attr, None)):
            stated = [getattr(mech, attr)()]
    assert stated[0].relation == AddRemove(spec.max_units) and stated[0].measure == ZCDP(rho)


@pytest.mark.parametrize("name", OTHER_CONFIGS)
def test_other_releases_keep_their_configured_epsilon_delta(name: str) -> None:
    spec, mech = _plan(name)
    assert spend_rho(spec, mech) is None
