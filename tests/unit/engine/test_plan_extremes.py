"""Every mechanism at the extremes of its parameter ranges: it plans, writes and reads back, or it is
refused before the spend (issue 20 section 4: a release its own reader refuses must never be written).

Each attempt runs with a [budget] ledger: a refusal must leave the ledger without any spend; a plan must
spend exactly once, write a release that ``open_release`` and ``dpspark inspect`` read, and state a
privacy loss within the configured epsilon.
"""

from __future__ import annotations

import copy
from fractions import Fraction
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpspark.api.config import MAX_EPSILON, MAX_UNITS, ConfigError, ReleaseSpec
from dpspark.ledger import Ledger
from dpspark.mechanisms.registry import names
from dpspark.rng import SeededRandom
from dpspark.mechanisms.registry import construct

KEYED = ("dense", "stability", "pure_sparse", "compact", "kary_sampler")
WITH_DELTA = ("stability", "bounded_noise", "gaussian", "product_sampler", "product_learner",
              "gaussian_covariance", "gaussian_mean", "gaussian_learner")
SPARK_ONLY = ("product_sampler", "product_learner", "gaussian_covariance", "gaussian_mean", "gaussian_learner")
ARROW = tuple(m for m in names() if m not in SPARK_ONLY)


def _table() -> pa.Table:
    n = 40
    return pa.table({
        "u": pa.array([i % 12 for i in range(n)], pa.int64()),
        "k": pa.array([i % 7 for i in range(n)], pa.int64()),
        "s": pa.array([f"q{i % 5}" for i in range(n)]),
        "x": pa.array([i % 9 for i in range(n)], pa.int64()),
        "b0": pa.array([i % 2 for i in range(n)], pa.int64()),
        "b1": pa.array([(i // 3) % 2 for i in range(n)], pa.int64()),
        "x0": pa.array([float(i % 5) - 2 for i in range(n)]),
        "x1": pa.array([float(i % 3) - 1 for i in range(n)]),
    })


def _raw(tmp: Path, mech: str, **privacy: Any) -> dict[str, Any]:
    """A small valid config of ``mech`` (input, budget ledger and output in ``tmp``), privacy fields overridden."""
    priv: dict[str, Any] = {"mechanism": mech, "epsilon": "1", "max_units": 100, "unit_column": "u"}
    raw: dict[str, Any] = {"input": {"path": str(tmp / "in.parquet")}, "privacy": priv,
                           "output": {"path": str(tmp / "out")},
                           "budget": {"ledger": str(tmp / "ledger.sqlite"), "dataset": "d",
                                      "total_epsilon": "1000", "total_delta": "1/2"}}
    if mech in ("dense", "stability", "kary_sampler"):
        raw["keys"], raw["universe"] = {"columns": ["k"]}, {"kind": "int_range", "lo": 0, "hi": 9}
    if mech in ("pure_sparse", "compact"):
        raw["keys"], raw["universe"] = {"columns": ["s"]}, {"kind": "string", "max_bytes": 4}
    if mech in WITH_DELTA:
        priv["delta"] = "1/1000000000"
    if mech in ("bounded_noise", "gaussian"):
        raw["queries"] = [{"name": "c", "kind": "count"},
                          {"name": "t", "kind": "sum", "column": "x", "lo": "0", "hi": "10"}]
    if mech in ("bernoulli_sampler", "product_sampler", "product_learner"):
        raw["columns"] = {"names": ["b0", "b1"]}
    if mech.startswith("product_"):
        priv.update(max_units=20000, alpha="1/2")
    if mech.startswith("gaussian_"):
        raw["gaussian"] = {"columns": ["x0", "x1"], "radius": "10", "kappa": "4"}
    if mech == "groups":
        raw["groups"] = {"by": ["k"], "keys": [0, 1, 2, 3], "noise": "pure"}
        raw["aggregates"] = [{"name": "n", "kind": "count"},
                             {"name": "t", "kind": "sum", "column": "x", "lo": "0", "hi": "10"}]
    if mech == "pure_groups":
        raw["groups"], raw["universe"] = {"by": ["k"]}, {"kind": "int_range", "lo": 0, "hi": (1 << 63) - 1}
        raw["aggregates"] = [{"name": "n", "kind": "count"},
                             {"name": "t", "kind": "sum", "column": "x", "lo": "0", "hi": "10"}]
    priv.update(privacy)
    return raw


def _prepare(tmp: Path) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    pq.write_table(_table(), tmp / "in.parquet")
    return tmp


def _within(exp_eps: Fraction, extra: Fraction, epsilon: Fraction) -> bool:
    """Certified ln(exp_eps) + extra <= epsilon (either sufficient condition)."""
    from dpspark.exact import exp_lower_bound
    from dpspark.exact import within_epsilon

    return within_epsilon(exp_eps, extra, epsilon) or (extra <= epsilon and exp_eps <= exp_lower_bound(epsilon - extra))


def _spends(tmp: Path) -> int:
    ledger = tmp / "ledger.sqlite"
    return len(Ledger(ledger).releases("d")) if ledger.exists() else 0


def attempt(tmp: Path, mech: str, run: bool = True, spark: Any = None, **privacy: Any) -> str:
    """"refused" (before any spend), "planned" (``run=False``) or "released" (written, read back, inspected);
    anything else fails the test. ``spark``: run on that session (the Spark-only mechanisms), else on Arrow."""
    from dpspark.cli.app import main as cli
    from dpspark.engine.runner import run_release
    from dpspark.lookup.open import open_release

    _prepare(tmp)
    raw = _raw(tmp, mech, **privacy)
    try:
        spec = ReleaseSpec.from_dict(copy.deepcopy(raw), base_dir=tmp)
    except (ConfigError, TypeError) as err:
        assert _spends(tmp) == 0 and not (tmp / "out").exists()
        assert str(err)  # a message naming the problem
        return "refused"
    if not run:
        return "planned"
    if spark is None:
        out = run_release(spec, rng=SeededRandom(1), progress=lambda _m: None, engine="arrow")
    else:
        data = spark.read.parquet(str(tmp / "in.parquet"))
        out = run_release(spec, spark=spark, data=data, rng=SeededRandom(1), progress=lambda _m: None)
    assert _spends(tmp) == 1
    rel = open_release(out)
    st = rel.manifest.add_remove if hasattr(rel.manifest, "add_remove") else None
    if st is not None and st.epsilon is not None:  # pure or approximate DP: within the configured epsilon
        assert _within(st.exp_eps, st.bias_epsilon, spec.epsilon)
    assert cli(["inspect", str(out)]) == 0
    return "released"


# the extremes of every common [privacy] field (the config's own bounds, and one step beyond)
COMMON = [
    {}, {"epsilon": str(MAX_EPSILON)}, {"epsilon": str(MAX_EPSILON + 1)}, {"epsilon": "1/10000"},
    {"epsilon": "1/1000000"}, {"max_units": 1}, {"max_units": MAX_UNITS}, {"max_units": MAX_UNITS + 1},
    {"beta": "1/1000000000000"}, {"beta": "999/1000"}, {"max_keys_per_unit": 1000000},
    {"max_keys_per_unit": 10, "max_rows_per_key": 50}, {"max_rows_per_key": 1000000},
]
OWN = {
    "dense": [{"gamma": "1/2"}, {"gamma": "1/" + str(1 << 200)}],
    "pure_sparse": [{"gamma": "1/2"}],
    "compact": [{"m": 64}, {"m": 256}, {"sampler": "block"}, {"max_keys_per_unit": 200}],
    "stability": [{"delta": "1e-300"}, {"delta": "1/101"}, {"max_keys_per_unit": 50}],
    "bounded_noise": [{"delta": "1e-300"}, {"family": "p1"}],
    "gaussian": [{"delta": "1e-300"}],
    "kary_sampler": [{"samples": 8}],
    "bernoulli_sampler": [{"samples": 4}],
}
#: a subset cheap enough for the default suite (the rest is marked slow)
FAST = [{}, {"epsilon": str(MAX_EPSILON)}, {"epsilon": str(MAX_EPSILON + 1)}, {"max_units": MAX_UNITS + 1}]


def _cases(changes: list[dict[str, Any]], mechs: tuple[str, ...]) -> list[Any]:
    return [pytest.param(m, c, id=f"{m}-{'-'.join(f'{k}={str(v)[:12]}' for k, v in c.items()) or 'base'}")
            for m in mechs for c in changes]


def test_every_registered_mechanism_is_covered(tmp_path: Path) -> None:
    from dpspark.engine.backend import supported_engines
    from dpspark.mechanisms.registry import construct

    assert set(names()) == set(ARROW) | set(SPARK_ONLY) and len(names()) == 15
    for m in SPARK_ONLY:  # derived from the stage types each declares (family stages: Arrow kernels too, issue 24)
        raw = _raw(_prepare(tmp_path), m, epsilon="4", max_units=10**7)
        assert supported_engines(construct(ReleaseSpec.from_dict(raw, base_dir=tmp_path))) == ("arrow", "spark"), m


@pytest.mark.parametrize("mech,change", _cases(FAST, ARROW))
def test_extremes_fast(tmp_path: Path, mech: str, change: dict[str, Any]) -> None:
    outcome = attempt(tmp_path, mech, **change)
    if change.get("epsilon") == str(MAX_EPSILON + 1) or change.get("max_units") == MAX_UNITS + 1:
        assert outcome == "refused"
    if not change or change.get("epsilon") == str(MAX_EPSILON):  # the base configs and the largest epsilon release
        assert outcome == "released"


@pytest.mark.slow
@pytest.mark.parametrize("mech,change", _cases([c for c in COMMON if c not in FAST], ARROW)
                         + [pytest.param(m, c, id=f"{m}-own{i}") for m, cs in OWN.items() for i, c in enumerate(cs)])
def test_extremes_slow(tmp_path: Path, mech: str, change: dict[str, Any]) -> None:
    attempt(tmp_path, mech, **change)


def _check_spark_only(tmp_path: Path, mech: str, change: dict[str, Any]) -> None:
    outcome = attempt(tmp_path, mech, run=False, **change)
    assert outcome in ("refused", "planned")
    if change.get("epsilon") == str(MAX_EPSILON + 1) or change.get("max_units") == MAX_UNITS + 1:
        assert outcome == "refused"


@pytest.mark.parametrize("mech,change", _cases([{}, {"epsilon": str(MAX_EPSILON + 1)}], SPARK_ONLY))
def test_spark_only_mechanisms_plan_or_refuse(tmp_path: Path, mech: str, change: dict[str, Any]) -> None:
    """The Spark-only mechanisms at the same extremes: refused at config time, or planned with a readable plan."""
    _check_spark_only(tmp_path, mech, change)


@pytest.mark.slow
@pytest.mark.parametrize("mech,change", _cases([c for c in COMMON if c and c.get("epsilon") != str(MAX_EPSILON + 1)],
                                               SPARK_ONLY))
def test_spark_only_mechanisms_plan_or_refuse_slow(tmp_path: Path, mech: str, change: dict[str, Any]) -> None:
    _check_spark_only(tmp_path, mech, change)


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.parametrize("mech,change", _cases([{}, {"epsilon": str(MAX_EPSILON)}, {"max_units": 1}], SPARK_ONLY))
def test_spark_only_mechanisms_release_or_refuse(spark, tmp_path: Path, mech: str, change: dict[str, Any]) -> None:  # type: ignore[no-untyped-def]
    """End to end on Spark: written and read back, or refused before the spend."""
    outcome = attempt(tmp_path, mech, spark=spark, **change)
    if not change and not mech.startswith("product_"):
        assert outcome == "released"


# --- the regressions of issue 20 section 4 ----------------------------------------------------------


def test_dense_10_keys_50_rows_states_a_readable_upper_bound(tmp_path: Path) -> None:
    """dense, k = 10, c = 50: (p/q)^500 has ~4500-bit parts, which the reader refuses; the plan states it
    rounded up (a valid upper bound), and the release reads back."""
    from dpspark.mechanisms.histogram.mechanism import ROUND_BITS
    from dpspark.release.exactjson import frac_to_str, str_to_frac

    spec = ReleaseSpec.from_dict(_raw(_prepare(tmp_path), "dense", max_keys_per_unit=10, max_rows_per_key=50), base_dir=tmp_path)
    mech = construct(spec)
    exact = mech.counting.exp_eps ** 500
    with pytest.raises(ValueError, match="above 4096 bits"):  # what the reader said of the old release
        str_to_frac(frac_to_str(exact))
    stated = mech.stated_exp_eps()
    assert exact <= stated < exact + Fraction(1, 1 << ROUND_BITS)  # rounded up: still an upper bound
    assert str_to_frac(frac_to_str(stated * stated)) == stated * stated  # the replacement statement fits too
    assert mech.planned_statement().exp_eps == stated


def test_dense_10_keys_50_rows_releases_and_reads_back(tmp_path: Path) -> None:
    from dpspark.lookup.open import open_release

    assert attempt(tmp_path, "dense", max_units=10, max_keys_per_unit=10, max_rows_per_key=50) == "released"
    rel = open_release(tmp_path / "out")
    m = rel.manifest
    exact = construct(ReleaseSpec.from_dict(_raw(_prepare(tmp_path / "again"), "dense", max_units=10, max_keys_per_unit=10,
                                       max_rows_per_key=50))).counting.exp_eps ** 500
    assert m.add_remove.exp_eps == m.exp_epsilon_tilde > exact  # the stated bound, above the exact value
    assert "rounded up to a multiple of 2^-256" in m.privacy_notes


@pytest.mark.parametrize("mech", ["dense", "stability", "kary_sampler", "bounded_noise", "gaussian_mean"])
def test_epsilon_1000_is_a_config_error_with_the_range(tmp_path: Path, mech: str) -> None:
    with pytest.raises(ConfigError, match=rf"supported range: 0 < epsilon <= {MAX_EPSILON}"):
        ReleaseSpec.from_dict(_raw(_prepare(tmp_path), mech, epsilon="1000"), base_dir=tmp_path)
    assert _spends(tmp_path) == 0


def test_epsilon_at_the_maximum_releases(tmp_path: Path) -> None:
    assert attempt(tmp_path / "a", "dense", epsilon=str(MAX_EPSILON)) == "released"
    assert attempt(tmp_path / "b", "kary_sampler", epsilon=str(MAX_EPSILON)) == "released"


def test_delta_one_half_is_refused_unless_allowed(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"delta = 1/2 is >= 1/max_units.*in the clear.*allow_large_delta"):
        ReleaseSpec.from_dict(_raw(_prepare(tmp_path), "stability", delta="0.5"), base_dir=tmp_path)
    with pytest.raises(ConfigError, match="1/max_units"):  # exactly 1/n is refused too
        ReleaseSpec.from_dict(_raw(_prepare(tmp_path), "bounded_noise", delta="1/100"), base_dir=tmp_path)
    with pytest.raises(ConfigError, match="allow_large_delta must be true or false"):
        ReleaseSpec.from_dict(_raw(_prepare(tmp_path), "stability", delta="1/2", allow_large_delta="yes"), base_dir=tmp_path)
    assert _spends(tmp_path) == 0
    spec = ReleaseSpec.from_dict(_raw(_prepare(tmp_path), "stability", delta="0.5", allow_large_delta=True), base_dir=tmp_path)
    assert spec.delta == Fraction(1, 2) and spec.exact_parameters()["allow_large_delta"] is True
    below = ReleaseSpec.from_dict(_raw(_prepare(tmp_path), "stability", delta="1/101"), base_dir=tmp_path)
    assert "allow_large_delta" not in below.exact_parameters()  # unchanged manifests for ordinary configs


def test_plan_check_refuses_what_the_reader_would(tmp_path: Path) -> None:
    """compact keeps e^eps = (p/q)^k exact (its reader checks it): with k = 200 (per-step q = 2^12) the
    replacement statement (p/q)^400 has parts above 4096 bits, so the plan is refused at config time, before any spend."""
    from dpspark.api.plan_check import UnreadablePlanError

    with pytest.raises(UnreadablePlanError, match="before any budget is spent"):
        ReleaseSpec.from_dict(_raw(_prepare(tmp_path), "compact", max_units=2, max_keys_per_unit=200),
                              base_dir=tmp_path)
    assert _spends(tmp_path) == 0


def test_plan_check_on_every_base_config(tmp_path: Path) -> None:
    """check_plan_readable passes on every mechanism's base plan (callable on its own, e.g. from preflight)."""
    from dpspark.api.plan_check import check_plan_readable

    for mech in ("dense", "compact", "kary_sampler", "bounded_noise", "gaussian_mean"):  # each path of the check
        spec = ReleaseSpec.from_dict(_raw(_prepare(tmp_path), mech), base_dir=tmp_path)
        check_plan_readable(spec)
        check_plan_readable(spec, construct(spec))


def test_tiny_epsilon_is_refused_quickly_not_computed(tmp_path: Path) -> None:
    """A per-step epsilon whose counting range would have more than 2^24 bits is refused before the powers are built."""
    import time

    start = time.monotonic()
    with pytest.raises(ConfigError, match="epsilon is too small"):
        ReleaseSpec.from_dict(_raw(_prepare(tmp_path), "dense", epsilon="1/1000000"), base_dir=tmp_path)
    assert time.monotonic() - start < 20


def test_geosample_range_too_large_is_refused_not_aborted(tmp_path: Path) -> None:
    """kary_sampler's GeoSample has d = (p + q) p^(n-1): at n = 2^48 GMP would abort the process."""
    with pytest.raises(ConfigError, match="GeoSample's range d"):
        ReleaseSpec.from_dict(_raw(_prepare(tmp_path), "kary_sampler", max_units=MAX_UNITS), base_dir=tmp_path)


def test_tight_t_is_the_exact_minimum() -> None:
    """The incremental t* search returns the least t meeting FastSample's exact condition."""
    import random

    from dpspark.noise.fastsample import tight_t, truncation_condition

    rnd = random.Random(7)
    for _ in range(300):
        q = rnd.choice([1, 2, 8, 1024, 3])
        p, g, n = q + rnd.randint(1, 4 * q + 3), rnd.randint(2, 10**6), rnd.randint(1, 10**7)
        t = tight_t(p, q, g, n)
        assert truncation_condition(t, p, q, g, n) and (t == 0 or not truncation_condition(t - 1, p, q, g, n))
