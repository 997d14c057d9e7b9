"""``pure_groups`` (docs/groups.md §H), data-free faces: the plan and its exact statement, refusals before any spend,
and the release round trip (exact GroupStats in place of the engine; the Arrow run is in
tests/system/arrow/test_pure_groups.py)."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from dpspark.api.config import PYTHON_SOURCE, ConfigError, parse_config
from dpspark.engine.plan import build_mechanism
from dpspark.lookup import open_release
from dpspark.mechanisms.groups.algorithm import GroupStats
from dpspark.mechanisms.histogram.pure_sparse_sums import ideal_exp_eps
from dpspark.release.errors import ReleaseFormatError
from dpspark.release.kinds import writer_for
from dpspark.rng import SeededRandom

S = 1 << 8
AGGS = [{"name": "n", "kind": "count"}, {"name": "total", "kind": "sum", "column": "v", "lo": "0", "hi": "100"}]
UNIVERSE = {"kind": "int_range", "lo": 0, "hi": (1 << 63) - 1}


def raw_config(tmp: Path, groups: Any = None, aggs: Any = None, universe: Any = UNIVERSE, **privacy: Any) -> dict:
    raw = {"privacy": {"mechanism": "pure_groups", "epsilon": "1", "max_units": 200, **privacy},
           "output": {"path": str(tmp / "rel")}, "groups": groups if groups is not None else {"by": "k"},
           "aggregates": aggs if aggs is not None else AGGS}
    if universe is not None:
        raw["universe"] = universe
    return raw


def build(tmp: Path, raw: dict) -> Any:
    return build_mechanism(parse_config(raw, tmp / PYTHON_SOURCE, input_given=True, certify=False))


def test_plan_states_pure_epsilon_within_the_budget_with_the_sums_factor(tmp_path: Path) -> None:
    mech = build(tmp_path, raw_config(tmp_path, groups={"by": "k", "max_groups_per_unit": 2,
                                                        "max_rows_per_group": 3}, unit_column="u"))
    assert mech.n_rows == 2 * 3 * 200 and mech.counting.n == mech.n_rows
    law = mech.sum_laws["total"]
    # e^eps = (p/q)^(k c) (p_s/q_s)^(k g): the count per row, the sum per grid step (g steps per unit and key)
    assert mech.statement.measure.epsilon.exp == mech.counting.exp_eps ** 6 * law.exp_eps ** (2 * law.g)
    assert mech.statement.measure.epsilon.exp == ideal_exp_eps(mech.counting, mech.laws, 2, 3)
    st = mech.planned_statements()
    add_remove = dict(st)["add_remove"]
    assert add_remove.measure.delta == 0 and add_remove.measure.epsilon.le(Fraction(1))
    assert mech.laws[0].zero == -law.a_lo == 0 and mech.laws[0].values == law.a_hi - law.a_lo + 1
    assert mech.count_bar >= 1 and mech.sum_bars["total"] > 0
    # the count law's uniform part: every one of the 2^63 empty keys together draws from it w.p. < 10^-7
    assert mech.counting.gamma * (1 << 63) < Fraction(1, 10**7)
    assert mech.plan()["s_bits"] > 1200 * 64  # n (log2 3|X| + log2 V) bits at least
    bar, beta = mech.simultaneous  # BV Thm 6.2(iii): all keys of 2^63 at once, far above the per-key bar
    assert bar > 2 * mech.count_bar and mech.beta / 2 < beta <= mech.beta
    claims = {(c.quantity.split(":")[0], c.scope): c.bound for c in mech.accuracy().claims}
    assert claims == {("n", "per_query"): mech.count_bar, ("total", "per_query"): mech.sum_bars["total"],
                      ("n", "simultaneous"): bar}


@pytest.mark.parametrize(("groups", "aggs", "universe", "privacy", "fragment"), [
    ({"by": "k", "keys": [1, 2]}, None, UNIVERSE, {}, "selects keys privately"),
    (None, [{"name": "m", "kind": "mean", "column": "v", "lo": "0", "hi": "1"}], UNIVERSE, {}, "exactly one count"),
    (None, [AGGS[1]], UNIVERSE, {}, "exactly one count"),
    (None, [AGGS[0], {"name": "s", "kind": "sum", "column": "v"}], UNIVERSE, {}, "lo and hi"),
    (None, None, None, {}, "missing section [universe]"),
    (None, None, {"kind": "int_range", "lo": 0, "hi": 300}, {}, "at least 2 k c n + 1 = 401"),
    (None, None, UNIVERSE, {"delta": "1e-9"}, "delta"),
    ({"by": "k", "noise": "zcdp"}, None, UNIVERSE, {}, "groups.noise"),
    ({"by": "k", "max_rows_per_group": 2}, None, UNIVERSE, {}, "privacy.unit_column"),
])
def test_refusals_before_any_spend(tmp_path: Path, groups: Any, aggs: Any, universe: Any, privacy: dict,
                                   fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        build(tmp_path, raw_config(tmp_path, groups, aggs, universe, **privacy))
    assert fragment in str(info.value), str(info.value)


STATS = [GroupStats(7, {"n": (150,), "total": (150, 150 * 90 * S)}), GroupStats(1 << 40, {"n": (2,), "total": (2, 0)})]


def write(tmp: Path, seed: int = 3) -> Any:
    tmp.mkdir(parents=True, exist_ok=True)
    raw = raw_config(tmp)
    spec = parse_config(raw, tmp / PYTHON_SOURCE, input_given=True, certify=False)
    mech = build_mechanism(spec)
    units = {"noisy": 200, "error": 5, "beta": str(mech.beta), "max_units": 200, "share": "1/50"}
    release = mech.release_from_stats(STATS, SeededRandom(seed), lambda m: None, units)
    writer_for("pure_groups")(spec.output, release=release, universe=None, key_columns=[],
                              config=spec.exact_parameters(mech), input_description={"path": "x"},
                              rng_name="test", created_utc=None)
    return mech, open_release(spec.output)


def test_release_round_trip_reads_back_with_bars_and_the_heavy_key(tmp_path: Path) -> None:
    mech, rel = write(tmp_path)
    frame = rel.to_pandas()
    assert 1 <= len(frame) <= mech.n_rows and rel.section["keys"] == "private"
    assert [a["noise"] for a in rel.section["aggregates"]] == ["pure_sparse", "pure_sparse"]
    heavy = frame[frame["k"] == 7]
    assert len(heavy) == 1  # 150 rows of 200: far above the largest empty-key noise
    assert abs(heavy["n"].iloc[0] - 150) <= mech.count_bar
    assert abs(heavy["total"].iloc[0] - 150 * 90) <= mech.sum_bars["total"]
    assert set(frame["n_error_exact"]) == {str(mech.count_bar)}
    assert rel.manifest.add_remove.measure.epsilon.le(Fraction(1)) and rel.manifest.add_remove.measure.delta == 0
    again = write(tmp_path / "again")[1].to_pandas()
    assert again.equals(frame)  # one seed, one release


def test_section_codec_refuses_another_mechanism(tmp_path: Path) -> None:
    from dpspark.mechanisms.groups.pure_section import check_kind

    _, rel = write(tmp_path)

    class Other:
        mechanism = "groups"

    with pytest.raises(ReleaseFormatError, match="pure_groups"):
        check_kind(dict(rel.section), Other(), "x")


def test_a_filter_that_does_not_fit_the_schema_is_refused_from_the_schema(tmp_path: Path) -> None:
    """The filter's types are checked from the schema alone, before the spend, as groups does (schema_check)."""
    import pyarrow as pa

    mech = build(tmp_path, raw_config(tmp_path, groups={"by": "k", "filter": "v = 'text'"}))
    schema = pa.schema([("k", pa.int64()), ("v", pa.int64())])
    assert "groups.filter" in (mech.input_schema_problem(schema) or "")
    fine = build(tmp_path, raw_config(tmp_path, groups={"by": "k", "filter": "v > 3"}))
    assert fine.input_schema_problem(schema) is None
