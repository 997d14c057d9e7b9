"""``Session.groups(where=...)`` and ``[groups] filter`` on the Arrow engine (issue 32, section 5).

A filter is a row-level transformation before contribution bounding: the filtered release equals, under one
seed, the release of the rows that pass; a filter that cannot type-check is refused before the spend.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

SEED = 5
AGGS = [{"name": "flights", "kind": "count"},
        {"name": "distance", "kind": "sum", "column": "distance", "lo": "0", "hi": "5000"}]
WHERE = "distance >= 1000 AND (carrier IN ('AA', 'B6') OR delay IS NULL)"


def _frame(n: int = 2000) -> Any:
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(7)
    delay = rng.normal(10, 30, n).round(1)
    delay[rng.random(n) < 0.1] = np.nan
    return pd.DataFrame({"carrier": rng.choice(["AA", "B6", "UA", "DL"], n),
                         "distance": rng.integers(100, 3000, n), "delay": delay})


def _groups(df: Any, out: Path, **kw: Any) -> Any:
    import dpspark
    from dpspark.rng import SeededRandom

    with dpspark.Session(df, max_units=10_000, rng=SeededRandom(SEED)) as s:
        return s.groups(by="carrier", keys=["AA", "B6", "UA", "DL"], aggregates=AGGS, epsilon="1", delta="1e-8",
                        noise="bounded", output=out, **kw)


def test_where_equals_the_release_of_the_rows_that_pass(tmp_path: Path) -> None:
    df = _frame()
    passing = df[(df.distance >= 1000) & (df.carrier.isin(["AA", "B6"]) | df.delay.isna())]
    filtered = _groups(df, tmp_path / "f", where=WHERE)
    direct = _groups(passing.reset_index(drop=True), tmp_path / "d")
    assert filtered.to_arrow().equals(direct.to_arrow())
    assert filtered.manifest.parameters["filter"] == WHERE
    truth = passing.groupby("carrier").size().to_dict()
    for key in filtered.keys():  # bounded noise: probability 1, so the filter's effect is checked exactly
        entry = filtered.lookup(key)["flights"]
        assert abs(entry.value - truth.get(key, 0)) <= entry.always
    unfiltered = _groups(df, tmp_path / "u")
    assert not unfiltered.to_arrow().equals(filtered.to_arrow())  # the filter changes the release


def test_toml_groups_filter(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dpspark.cli.app import main
    from dpspark.lookup import open_release

    df = _frame()
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp_path / "f.parquet")
    (tmp_path / "c.toml").write_text(
        f'[input]\npath = "{tmp_path / "f.parquet"}"\n[privacy]\nmechanism = "groups"\nepsilon = "1"\ndelta = "1e-8"\n'
        'max_units = 10000\n[groups]\nby = "carrier"\nkeys = ["AA", "UA"]\nnoise = "bounded"\n'
        'filter = "carrier = \'AA\' AND distance < 500"\n[[aggregates]]\nname = "n"\nkind = "count"\n'
        '[output]\npath = "out"\n', encoding="utf-8")
    assert main(["release", "--config", str(tmp_path / "c.toml")]) == 0
    rel = open_release(tmp_path / "out")
    truth = int(((df.carrier == "AA") & (df.distance < 500)).sum())
    assert abs(rel.lookup("AA")["n"].value - truth) <= rel.lookup("AA")["n"].always
    assert abs(rel.lookup("UA")["n"].value) <= rel.lookup("UA")["n"].always  # UA rows all fail the filter


@pytest.mark.parametrize("where, words", [
    ("carrier > 3", "carrier"),                  # a string column against a number
    ("nowhere = 1", "nowhere"),                  # a column the input does not have
    ("upper(carrier) = 'AA'", "upper"),          # a function call: outside the grammar
])
def test_a_bad_filter_is_refused_before_the_spend(tmp_path: Path, where: str, words: str) -> None:
    import dpspark
    from dpspark.errors import DPSparkError
    from dpspark.privacy.epsilon import LogEpsilon

    with dpspark.Session(_frame(), max_units=10_000, budget={"epsilon": "3"}) as s:
        with pytest.raises(DPSparkError, match=words):
            s.groups(by="carrier", keys=["AA"], aggregates=AGGS, epsilon="1", output=tmp_path / "o", where=where)
        assert s.remaining.epsilon == LogEpsilon.of(3) and not s.releases
    assert not (tmp_path / "o").exists()


def test_quantiles_only_with_public_keys_and_a_delta_plan_and_run(tmp_path: Path) -> None:
    """Regression (found by the DP SQL fuzz): no noisy statistic but quantiles, public keys and a delta divided
    the delta by zero parts (a ZeroDivisionError, a foreign exception, when the plan was built)."""
    import dpspark
    from dpspark.rng import SeededRandom

    with dpspark.Session(_frame(), max_units=10_000, rng=SeededRandom(SEED)) as s:
        rel = s.groups(by="carrier", keys=["AA", "B6"], epsilon="1", delta="1e-9", output=tmp_path / "q",
                       aggregates=[{"name": "med", "kind": "quantile", "column": "distance", "q": "1/2", "lo": "0",
                                    "hi": "4000"}])
    assert rel.keys() == ["AA", "B6"]
