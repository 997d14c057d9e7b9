"""The product and Gaussian families run on the Arrow engine, with the Spark engine's exact releases.

tests/support/golden.json holds the seeded releases of these cases made on Spark (the golden test checks them
there); here the same cases run on Arrow and must give the same fingerprints, bit for bit. The Spark-marked
twin (tests/system/spark/test_arrow_families_spark.py) compares both engines directly on harder inputs.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from dpspark.engine.backend import supported_engines
from dpspark.engine.plan import choose_engine
from tests.support.golden import CASES, fingerprint_case, load_golden

FAMILY_CASES = ["product_sampler", "product_learner", "gaussian_covariance", "gaussian_mean", "gaussian_learner"]


@pytest.mark.parametrize("case_id", FAMILY_CASES)
def test_spark_golden_release_is_identical_on_arrow(tmp_path: Path, case_id: str) -> None:
    case = CASES[case_id]
    assert case.engine == "spark"  # the stored fingerprint was made on Spark
    got = fingerprint_case(dataclasses.replace(case, engine="arrow"), None, tmp_path)
    assert got == load_golden()[case_id]


@pytest.mark.parametrize("case_id", FAMILY_CASES)
def test_both_engines_supported_and_arrow_is_the_local_default(tmp_path: Path, case_id: str) -> None:
    from dpspark.api.config import ReleaseSpec
    from dpspark.engine.plan import build_mechanism

    import pyarrow.parquet as pq

    case = CASES[case_id]
    pq.write_table(case.table(), tmp_path / "in.parquet")
    raw = {"input": {"path": "in.parquet"}, **case.config, "output": {"path": "release"}}
    spec = ReleaseSpec.from_dict(raw, base_dir=tmp_path)
    mech = build_mechanism(spec)
    assert supported_engines(mech) == ("arrow", "spark")
    assert choose_engine(spec, mech, None, have_spark=False) == "arrow"
    assert choose_engine(spec, mech, None, have_spark=True) == "spark"


@pytest.mark.parametrize("case_id", ["product_learner", "gaussian_learner"])
def test_session_on_pandas_runs_on_arrow(tmp_path: Path, case_id: str) -> None:
    """A pandas input runs these families on the Arrow engine, as a local file does (no Spark session)."""
    from dpspark.api.session import Session
    from dpspark.rng import SeededRandom

    case = CASES[case_id]
    priv = dict(case.config["privacy"])
    sections = {k: v for k, v in case.config.items() if k != "privacy"}
    lines: list[str] = []
    session = Session(case.table().to_pandas(), max_units=priv.pop("max_units"), unit_column=priv.pop("unit_column"),
                      rng=SeededRandom(b"pandas"), progress=lines.append)
    rel = session.release(mechanism=priv.pop("mechanism"), epsilon=priv.pop("epsilon"), output=tmp_path / "out",
                          sections=sections, **priv)
    assert rel.kind and any(line.endswith("on Arrow") for line in lines)
