"""The fixed cap of a release without max_units (UNITS_CAP = 2^40): every fit proof that depends on n holds there.

Each test builds, data-free, the plan whose bound the cap must respect, WITHOUT max_units (so at the cap): raising
UNITS_CAP past a bound makes the build refuse (or the stated bound fail), and the test with it. The config parse
itself (max_units optional only for groups and answers) is checked here too, before any Spark or spend.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from dpspark.privacy.relations import UNITS_CAP


def _spec(privacy: dict[str, Any], sections: dict[str, Any], tmp_path: Path) -> Any:
    from dpspark.api.config import ReleaseSpec

    raw = {"privacy": {"epsilon": "1", **privacy}, "output": {"path": str(tmp_path / "out")}, **sections}
    return ReleaseSpec.from_dict(raw, base_dir=tmp_path, input_given=True)


def _groups(tmp_path: Path, aggregates: list[dict[str, Any]], privacy: Any = None, **groups: Any) -> Any:
    section = {"by": ["g"], "keys": [["a"], ["b"]], **groups}
    return _spec({"mechanism": "groups", **(privacy or {})}, {"groups": section, "aggregates": aggregates}, tmp_path)


def test_the_cap_is_the_noisy_unit_counts_range() -> None:
    """Every unit a release at the cap keeps fits the noisy unit count's exact range [0, 2^40]."""
    from dpspark.noise.count_quantile import DEFAULT_CAP

    assert UNITS_CAP == 1 << 40 and UNITS_CAP <= DEFAULT_CAP


def test_a_config_without_max_units_runs_groups_and_answers_at_the_cap(tmp_path: Path) -> None:
    spec = _groups(tmp_path, [{"name": "n", "kind": "count"}])
    assert spec.max_units == UNITS_CAP
    ans = _spec({"mechanism": "gaussian", "delta": "1e-9"}, {"queries": [{"name": "n", "kind": "count"}]}, tmp_path)
    assert ans.max_units == UNITS_CAP
    assert ans.exact_parameters()["max_units"] == UNITS_CAP  # the manifest's n: the cap, worded as no limit


def test_delta_is_held_against_a_declared_n_only(tmp_path: Path) -> None:
    """delta < 1/n is checked against a declared max_units (1e-9 x 2^40 > 1 would refuse every usual delta)."""
    from dpspark.engine.spec import ConfigError

    q = {"queries": [{"name": "n", "kind": "count"}]}
    assert _spec({"mechanism": "gaussian", "delta": "1e-9"}, q, tmp_path).delta == Fraction(1, 10**9)
    with pytest.raises(ConfigError, match="1/max_units"):
        _spec({"mechanism": "gaussian", "delta": "1e-3", "max_units": 10**6}, q, tmp_path)


@pytest.mark.parametrize("mechanism,extra", [
    ("stability", {"delta": "1e-9"}), ("dense", {}), ("compact", {}),
])
def test_a_family_calibrated_on_n_refuses_a_config_without_it(tmp_path: Path, mechanism: str, extra: Any) -> None:
    """Before any Spark or spend: the message names max_units, the mechanism and why."""
    from dpspark.engine.spec import ConfigError

    sections = {"keys": {"columns": ["g"]}, "universe": {"kind": "categorical", "values": ["a", "b"]}}
    with pytest.raises(ConfigError) as err:
        _spec({"mechanism": mechanism, **extra}, sections, tmp_path)
    msg = str(err.value)
    assert "max_units" in msg and repr(mechanism) in msg and "calibrated on n" in msg


def test_answers_gaussian_window_radius_fits_below_2_48(tmp_path: Path) -> None:
    """The gaussian answers' window radius is n, which must stay < 2^48 (answers/mechanism.py)."""
    from dpspark.engine.plan import build_mechanism
    from dpspark.engine.spec import ConfigError

    q = {"queries": [{"name": "n", "kind": "count"}]}
    mech = build_mechanism(_spec({"mechanism": "gaussian", "delta": "1e-9"}, q, tmp_path))
    assert mech.dg.data_radius == UNITS_CAP < 1 << 48
    with pytest.raises(ConfigError, match="2\\^48"):  # the bound the cap must stay under, with teeth
        build_mechanism(_spec({"mechanism": "gaussian", "delta": "1e-15", "max_units": 1 << 48}, q, tmp_path))


def test_answers_decimal38_holds_the_widest_clip_bound_at_the_cap(tmp_path: Path) -> None:
    """n x a scalar's fixed-point sensitivity (< 2^63, queries.MAX_DELTA) stays below 10^38: decimal(38,0) sums."""
    from dpspark.engine.plan import build_mechanism
    from dpspark.mechanisms.answers.queries import MAX_DELTA

    wide = {"name": "s", "kind": "sum", "column": "x", "lo": "0", "hi": str(1 << 40), "scale_bits": 22}
    mech = build_mechanism(_spec({"mechanism": "bounded_noise", "delta": "1e-9"}, {"queries": [wide]}, tmp_path))
    widest = max(s.delta for s in mech.scalars)
    assert widest == 1 << 62 and widest < MAX_DELTA
    assert UNITS_CAP * MAX_DELTA < 10**38  # the proof's bound at the largest sensitivity any query may have
    from dpspark.mechanisms.answers.spark_kernel import scalar_stage

    scalar_stage(mech.scalars, None, UNITS_CAP)  # the engine's own decimal(38,0) check (check_capacity) passes


@pytest.mark.parametrize("kind", ["count", "sum", "variance"])
def test_groups_gaussian_window_holds_at_the_cap(tmp_path: Path, kind: str) -> None:
    """A group's statistic spans about 2^5 n grid units at most (a sum over [-400, 400], grid g <= 16): its discrete
    Gaussian's window (< 2^48 grid units, groups/laws.py) holds at the cap and fails from n = 2^44 (forced gaussian,
    so the auto choice cannot hide a refusal)."""
    from dpspark.engine.plan import build_mechanism
    from dpspark.engine.spec import ConfigError

    agg = {"name": "s", "kind": kind, **({} if kind == "count" else {"column": "x", "lo": "-400", "hi": "400"})}
    privacy = {"delta": "1e-9", "unit_column": "u"}
    mech = build_mechanism(_groups(tmp_path, [agg], privacy, noise="gaussian", max_rows_per_group=3))
    assert all(nz.kind == "gaussian" and nz.law.dg.data_radius < 1 << 48 for nz in mech.planned.noises)
    if kind != "count":  # the bound with teeth: 2^4 x the cap no longer fits
        with pytest.raises(ConfigError, match="2\\^48"):
            _groups(tmp_path, [agg], {**privacy, "max_units": UNITS_CAP << 4, "allow_large_delta": True},
                    noise="gaussian", max_rows_per_group=3)


def test_groups_private_selection_table_saturates_before_the_cap(tmp_path: Path) -> None:
    """The keep table of the private selection stops where the keep probability reaches 1, far below the cap:
    the plan at the cap costs what it costs at n = 10^6 (same table)."""
    from dpspark.mechanisms.groups.selection import SelectionLaw

    at_cap = SelectionLaw(Fraction(1, 2), Fraction(1, 10**9), 2, UNITS_CAP)
    at_million = SelectionLaw(Fraction(1, 2), Fraction(1, 10**9), 2, 10**6)
    assert at_cap.table == at_million.table and len(at_cap.table) < 10**4

