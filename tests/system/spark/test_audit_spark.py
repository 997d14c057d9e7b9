"""Mutant 2 (StabilityHistogram with threshold tau = 0) caught through the Spark path at tiny size.

Pipeline: a pyarrow-written Parquet file -> the job's Spark counting stage
(``read_input``, ``sparse_counts``, ``collect_counts``, ``counts_to_python``,
config from ``dpspark.api.config.parse_config``) -> the driver mechanism: the real
job's ``run_mechanism`` (honest) or the same StabilityHistogram with tau
forced to 0 (mutant), audited against the honest release's claim.

Neighbours (add/remove one unit, the manifest's primary relation): D's rows
are keys [1, 2, 2, 6], D' = [1, 2, 2] (key 6, index 6, has count 1 in D only).
n = 4, epsilon = 1, delta = 1/10. At tau = 0 the mutant shows key 6 with
probability Pr[FastSample(1) >= 1] ~ 0.72 on D and never on D', while the claim
allows only delta_M <= 1/10.

False-alarm rate <= 1e-6 for every audit here (one event per driver,
Bonferroni over its 4 one-sided Clopper-Pearson bounds). Sample sizes come
from the planner (power >= 1 - 1e-6 against the mutant): about 140 runs per
side, and the honest pipeline passes at the same sizes.

Cost. One Spark counting run costs ~0.7-2 s on 2 shared cores, so ~280 of
them (both sides) take minutes: that variant, one Spark run per audit run,
is ``@pytest.mark.slow``. The default test runs the Spark stage twice per
side, checks that its output is identical every time (no unit column, so
counting is deterministic), and runs the audit's planned number of driver
runs on it; honest and mutant drivers share every Spark run.
"""

from __future__ import annotations

import time
from fractions import Fraction
from pathlib import Path
from unittest import mock

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dpspark.mechanisms.histogram.stability as stability_module
from dpspark.audit import (
    Claim,
    check_neighbours,
    evaluate_counts,
    job_driver,
    key_appears,
    on_output,
    plan_runs,
    sample_event_counts,
    spark_pipeline,
)
from dpspark.api.config import ReleaseConfig, parse_config
from dpspark.mechanisms.histogram import stability_histogram
from dpspark.engine.runner import count_mechanism
from dpspark.rng import RandomSource, SeededRandom, SystemRandom

pytestmark = pytest.mark.spark

X = 6  # the key (and 0-based index: int_range lo = 0) present in D only
ROWS_D, ROWS_D_PRIME = [1, 2, 2, X], [1, 2, 2]


def config(tmp: Path, name: str, rows: list[int]) -> ReleaseConfig:
    path = tmp / f"{name}.parquet"
    pq.write_table(pa.table({"k": pa.array(rows, pa.int64())}), path)
    raw = {
        "input": {"path": str(path)},
        "keys": {"columns": ["k"]},
        "universe": {"kind": "int_range", "lo": 0, "hi": 7},
        "privacy": {"mechanism": "stability", "epsilon": "1", "delta": "1/10", "max_units": 4},
        "output": {"path": str(tmp / f"{name}-out")},
    }
    return parse_config(raw, tmp / f"{name}.toml")


def mutant_driver(cfg: ReleaseConfig, indexes: list[int], counts: list[int], rng: RandomSource):  # type: ignore[no-untyped-def]
    """The job's stability driver with tau forced to 0 (its statement still names the intended delta)."""
    assert cfg.delta is not None
    mech = count_mechanism(cfg)  # the honest plan (its certified tau); only the driver's threshold is broken
    with mock.patch.object(stability_module, "stability_threshold", lambda mechanism, delta, count=1: 0):
        return stability_histogram(
            (indexes, counts), cfg.universe.size, cfg.max_units, mech,
            cfg.delta * (1 - Fraction(1, 1 << 100)), rng, beta=cfg.beta,
        )


DRIVERS = {"honest": job_driver, "mutant": mutant_driver}
EVENTS = {name: [on_output(name, key_appears(X))] for name in DRIVERS}


@pytest.fixture()
def neighbours(tmp_path: Path) -> tuple[ReleaseConfig, ReleaseConfig]:
    return config(tmp_path, "d", ROWS_D), config(tmp_path, "dprime", ROWS_D_PRIME)


def claim_and_plan(cfg: ReleaseConfig) -> tuple[Claim, int]:
    """The honest release's claim and the planned runs per side (false alarm 1e-6, power 1 - 1e-6)."""
    mech = count_mechanism(cfg)
    claim = Claim.from_statement(job_driver(cfg, [1, 2, X], [1, 2, 1], SeededRandom(0)).privacy)
    p_appear = 1 - float(Fraction(mech.scaled_cdf(1, 0), mech.d))  # analysis: Pr[M(1,U) >= 1] at tau = 0
    assert p_appear > 0.7 and float(claim.delta) <= 0.1  # analysis
    plan = plan_runs(claim.e_epsilon, p_appear, 0.0, delta=claim.delta, events=1)
    return claim, plan.runs_per_side


def verdicts(hits_d: dict[str, list[int]], hits_dp: dict[str, list[int]], runs: int, claim: Claim):  # type: ignore[no-untyped-def]
    return {
        name: evaluate_counts([e.name for e in EVENTS[name]], hits_d[name], runs, hits_dp[name], runs, claim)
        for name in DRIVERS
    }


def check(verdict_by_name, claim: Claim) -> None:  # type: ignore[no-untyped-def]
    assert verdict_by_name["honest"].passed, verdict_by_name["honest"].report()
    bad = verdict_by_name["mutant"]
    assert not bad.passed, bad.report()
    worst = bad.worst()
    assert worst.direction == "D vs D'" and worst.hits_b == 0 and worst.hockey_stick_lower > claim.delta


def test_mutant_2_spark_counts_then_driver(spark, neighbours: tuple[ReleaseConfig, ReleaseConfig]) -> None:  # type: ignore[no-untyped-def]
    """Spark stage 2x per side (identical output each time), then ~140 driver runs per side per driver (~10-20 s)."""
    d, dp = neighbours
    claim, runs = claim_and_plan(d)
    assert 100 < runs < 200
    collect = spark_pipeline(spark, {"counts": lambda cfg, idx, cnt, rng: dict(zip(idx, cnt))})
    counted = {}
    for side, cfg in (("d", d), ("dp", dp)):
        outs = [collect(cfg, SeededRandom(i))["counts"] for i in range(2)]
        assert outs[0] == outs[1]
        counted[side] = (cfg, outs[0])
    assert counted["d"][1] == {1: 1, 2: 2, X: 1}
    check_neighbours(counted["d"][1], counted["dp"][1], "add/remove")

    def driver_only(side: str):  # type: ignore[no-untyped-def]
        cfg, counts = counted[side]
        idx, cnt = list(counts), list(counts.values())
        return lambda _data, rng: {name: drv(cfg, idx, cnt, rng) for name, drv in DRIVERS.items()}

    all_events = [e for name in DRIVERS for e in EVENTS[name]]
    rng = SystemRandom()
    hd = sample_event_counts(driver_only("d"), None, all_events, runs, rng)
    hdp = sample_event_counts(driver_only("dp"), None, all_events, runs, rng)
    check(verdicts({"honest": hd[:1], "mutant": hd[1:]}, {"honest": hdp[:1], "mutant": hdp[1:]}, runs, claim), claim)


@pytest.mark.slow
def test_mutant_2_one_spark_run_per_audit_run(spark, neighbours: tuple[ReleaseConfig, ReleaseConfig]) -> None:  # type: ignore[no-untyped-def]
    """Every audit run is a whole Spark counting run + driver: ~140 Spark runs per side (measured 239 s, 2 x 138 Spark runs, on 2 busy shared cores)."""
    d, dp = neighbours
    claim, runs = claim_and_plan(d)
    run = spark_pipeline(spark, DRIVERS)
    all_events = [e for name in DRIVERS for e in EVENTS[name]]
    t0 = time.monotonic()
    rng = SystemRandom()
    hd = sample_event_counts(run, d, all_events, runs, rng)
    hdp = sample_event_counts(run, dp, all_events, runs, rng)
    check(verdicts({"honest": hd[:1], "mutant": hd[1:]}, {"honest": hdp[:1], "mutant": hdp[1:]}, runs, claim), claim)
    assert time.monotonic() - t0 < 1800
