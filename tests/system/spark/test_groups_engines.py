"""``groups`` releases on Spark end to end, and identical to the Arrow engine's for one seed.

Every aggregate kind (count, sum, mean, variance, quantile) over a table with NULL keys and units and NULL,
NaN, +-inf and -0.0 values; public and private keys; the three inputs Spark reads (a Parquet path, a Spark
DataFrame, a CSV path of text) and both truncation rules (units over max_units, rows as units over it). The
CLI with ``--engine spark`` releases both example shapes; bounded noise holds with probability 1, so its
counts are checked against the truth exactly.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.spark

SEED = 11
AGGS = [{"name": "flights", "kind": "count"},
        {"name": "distance", "kind": "sum", "column": "distance", "lo": "0", "hi": "5000", "nulls": "0"},
        {"name": "delay", "kind": "mean", "column": "delay", "lo": "-100", "hi": "300", "scale_bits": 4},
        {"name": "delay_var", "kind": "variance", "column": "delay", "lo": "-100", "hi": "300", "scale_bits": 4},
        {"name": "median_delay", "kind": "quantile", "column": "delay", "q": "1/2", "lo": "-100", "hi": "300"}]
CARRIERS = ["AA", "B6", "UA", "DL", "ZZ"]


def _table(n: int = 3000, users: int = 500) -> pa.Table:
    import numpy as np

    rng = np.random.default_rng(4)
    carrier = rng.choice(CARRIERS, n).astype(object)
    carrier[rng.random(n) < 0.02] = None
    user = rng.integers(0, users, n).astype(object)
    user[rng.random(n) < 0.02] = None
    distance = rng.integers(-50, 5200, n).astype(object)
    distance[rng.random(n) < 0.05] = None
    delay = rng.normal(10, 40, n).round(2).astype(object)
    odd = rng.random(n)
    for lo, hi, v in ((0.0, 0.03, None), (0.03, 0.05, float("nan")), (0.05, 0.06, float("inf")),
                      (0.06, 0.07, float("-inf")), (0.07, 0.08, -0.0), (0.08, 0.09, 1e300)):
        delay[(odd >= lo) & (odd < hi)] = v
    return pa.table({"carrier": pa.array(carrier.tolist(), pa.string()), "user": pa.array(user.tolist(), pa.int64()),
                     "distance": pa.array(distance.tolist(), pa.int64()),
                     "delay": pa.array(delay.tolist(), pa.float64())})


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from pyarrow import csv

    tmp = tmp_path_factory.mktemp("groups-engines")
    tab = _table()
    pq.write_table(tab, tmp / "flights.parquet")
    csv.write_csv(tab, tmp / "flights.csv")
    return {"parquet": tmp / "flights.parquet", "csv": tmp / "flights.csv", "dir": tmp}


def _release(data: Any, out: Path, *, spark: Any = None, unit: str | None = "user", max_units: int = 10_000,
             epsilon: str = "1", **kw: Any) -> Any:
    import dpspark
    from dpspark.rng import SeededRandom

    with dpspark.Session(data, max_units=max_units, unit_column=unit, spark=spark, rng=SeededRandom(SEED)) as s:
        return s.groups(by="carrier", aggregates=AGGS, epsilon=epsilon, delta="1e-8", output=out, **kw)


def _files(rel: Path) -> dict[str, str]:
    """sha256 of every release file but the manifest (which names the engine and the time)."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(rel.iterdir())
            if p.is_file() and "manifest" not in p.name}


CASES = {
    # public keys, units, no truncation, a Parquet path read by Spark (zCDP: the quickest plan to certify)
    "public-parquet": dict(spark_input="parquet", keys=["AA", "B6", "UA", "QQ"], max_groups_per_unit=2,
                           max_rows_per_group=3, noise="zcdp"),
    # private keys, units over max_units (the unit cut), a Spark DataFrame
    "private-frame": dict(spark_input="frame", universe={"kind": "string", "max_bytes": 4}, max_units=300,
                          max_groups_per_unit=3, max_rows_per_group=2, epsilon="12"),
    # public keys, rows as units over max_units (the row cut), CSV text read as strings by both engines
    "public-csv-rows": dict(spark_input="csv", keys=["AA", "B6", "UA", "DL"], unit=None, max_units=1200),
}


@pytest.mark.parametrize("case", list(CASES))
def test_arrow_and_spark_releases_are_identical(spark: Any, inputs: dict[str, Path], tmp_path: Path,
                                                case: str) -> None:
    kw = dict(CASES[case])
    where = kw.pop("spark_input")
    source = inputs["csv" if where == "csv" else "parquet"]
    on_arrow = _release(source, tmp_path / "arrow", **kw)
    data = spark.read.parquet(str(source)) if where == "frame" else source
    on_spark = _release(data, tmp_path / "spark", spark=spark, **kw)
    assert on_spark.to_arrow().equals(on_arrow.to_arrow())
    assert on_spark.section == on_arrow.section
    assert _files(tmp_path / "spark") == _files(tmp_path / "arrow")
    assert len(on_arrow.keys()) >= 3  # the comparison is not of empty releases


def test_spark_engine_differs_from_arrow_under_another_seed(spark: Any, inputs: dict[str, Path],
                                                            tmp_path: Path) -> None:
    """The comparison above has teeth: another seed (or another engine rule) changes the release."""
    import dpspark
    from dpspark.rng import SeededRandom

    kw = dict(CASES["public-parquet"])
    kw.pop("spark_input")
    on_arrow = _release(inputs["parquet"], tmp_path / "arrow", **kw)
    with dpspark.Session(inputs["parquet"], max_units=10_000, unit_column="user", spark=spark,
                         rng=SeededRandom(SEED + 1)) as s:
        other = s.groups(by="carrier", aggregates=AGGS, epsilon="1", delta="1e-8", output=tmp_path / "o", **kw)
    assert not other.to_arrow().equals(on_arrow.to_arrow())


def _truth(tab: pa.Table, unit: str | None) -> dict[str, int]:
    """Rows per carrier with non-NULL carrier (and unit)."""
    out: dict[str, int] = {}
    for c, u in zip(tab.column("carrier").to_pylist(), tab.column("user").to_pylist()):
        if c is not None and (unit is None or u is not None):
            out[c] = out.get(c, 0) + 1
    return out


def test_cli_engine_spark_public_and_private_keys(spark: Any, inputs: dict[str, Path], tmp_path: Path,
                                                  capsys: Any) -> None:
    from dpspark.cli.app import main
    from dpspark.lookup import open_release

    aggs = "".join(f'[[aggregates]]\nname = "{a["name"]}"\nkind = "{a["kind"]}"\n'
                   + "".join(f'{k} = {v!r}\n'.replace("'", '"') for k, v in a.items() if k not in ("name", "kind"))
                   for a in AGGS)
    public = (f'[input]\npath = "{inputs["parquet"]}"\n[privacy]\nmechanism = "groups"\nepsilon = "5"\n'
              'delta = "1e-8"\nmax_units = 10000\nunit_column = "user"\n[groups]\nby = ["carrier"]\n'
              'keys = ["AA", "B6", "UA", "DL"]\nmax_groups_per_unit = 5\nmax_rows_per_group = 6\n'
              f'noise = "bounded"\n{aggs}[output]\npath = "public"\n')
    private = (f'[input]\npath = "{inputs["parquet"]}"\n[privacy]\nmechanism = "groups"\nepsilon = "2"\n'
               'delta = "1e-8"\nmax_units = 10000\nunit_column = "user"\n[groups]\nby = ["carrier"]\n'
               'max_groups_per_unit = 2\nmax_rows_per_group = 3\n[universe]\nkind = "string"\nmax_bytes = 4\n'
               f'{aggs}[output]\npath = "private"\n')
    truth = _truth(_table(), "user")
    for name, text in (("public", public), ("private", private)):
        (tmp_path / f"{name}.toml").write_text(text, encoding="utf-8")
        assert main(["release", "--config", str(tmp_path / f"{name}.toml"), "--engine", "spark"]) == 0
        rel = open_release(tmp_path / name)
        assert rel.kind == "groups" and rel.manifest.rng_name == "os.urandom"
        assert set(rel.keys()) <= set(truth)
    rel = open_release(tmp_path / "public")
    assert rel.keys() == ["AA", "B6", "UA", "DL"]
    for key in rel.keys():  # bounded noise: within its bar with probability 1; k and c bound nothing here (<= 4
        # listed carriers and <= 6 rows per user and carrier)
        entry = rel.lookup(key)["flights"]
        assert entry.always is not None and abs(entry.value - truth[key]) <= entry.always
    assert len(open_release(tmp_path / "private").keys()) >= 4  # ~580 users per carrier: all selected
    capsys.readouterr()
    assert main(["lookup", str(tmp_path / "public"), "UA"]) == 0
    assert capsys.readouterr().out.splitlines()[1].startswith("UA")
