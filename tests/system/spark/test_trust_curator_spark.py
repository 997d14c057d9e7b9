"""Issue 31 §1 on Spark: a Session over a Spark DataFrame gives an analyst the same outcome on neighbours D, D'.

The cases and the observation are the Arrow test's (:mod:`tests.unit.api.test_trust_curator`); here the data
is a Spark DataFrame, so the release would run on the Spark engine. The §3 refusals found by the turn-4 review
(:mod:`tests.unit.api.test_trust_refusals`) are checked on a Spark DataFrame's schema too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.unit.api.test_trust_curator import CASES, PAIRS, observe
from tests.unit.api.test_trust_refusals import CASES as REFUSALS
from tests.unit.api.test_trust_refusals import check_refused, table

pytestmark = pytest.mark.spark


def frame(spark: Any, columns: dict[str, list[Any]]) -> Any:
    import pyarrow as pa

    return spark.createDataFrame(pa.table(columns).to_pandas())


@pytest.mark.parametrize("case", sorted(CASES))
def test_neighbours_look_the_same_to_an_analyst_on_spark(spark: Any, case: str, tmp_path: Path, capfd: Any) -> None:
    pair, call = CASES[case]
    n, d, d2 = PAIRS[pair]
    a = observe(frame(spark, d), n, call, tmp_path / "D", capfd)
    b = observe(frame(spark, d2), n, call, tmp_path / "D2", capfd)
    assert a == b
    assert a["outcome"] is not None and a["outcome"][0] == "CuratorOptionError"
    assert a["ledger"] == (0, 0) and a["files"] == [] and a["warnings"] == []


@pytest.mark.slow  # two Spark releases per case (~70 s): the curator's path, not the refusal
@pytest.mark.parametrize("case", ["histogram_out_of_universe", "histogram_on_excess_units"])
def test_the_curator_keeps_the_checks_on_spark(spark: Any, case: str, tmp_path: Path, capfd: Any) -> None:
    pair, call = CASES[case]
    n, d, d2 = PAIRS[pair]
    a = observe(frame(spark, d), n, call, tmp_path / "D", capfd, curator_checks=True)
    b = observe(frame(spark, d2), n, call, tmp_path / "D2", capfd, curator_checks=True)
    assert a["outcome"] is None and b["outcome"] is not None and b["outcome"][0] == "CuratorError"
    assert a["ledger"] == b["ledger"] == (1, 0)


@pytest.mark.parametrize("name", sorted(n for n, c in REFUSALS.items() if c.new and not c.csv))
def test_new_config_errors_are_refused_before_the_spend_on_spark(spark: Any, name: str, tmp_path: Path) -> None:
    check_refused(name, tmp_path, spark.createDataFrame(table().to_pandas()))
