"""Tumult Analytics 0.21 on the two groups workloads; run with the tumult venv's python (Spark local[2]).

Tumult answers one aggregate per query, so the budget is split evenly over the queries:
public: groupby(KeySet.from_dict(keys)).sum / .average / .median, each PureDPBudget(eps / 3);
private: get_groups(["key"]) with ApproxDPBudget(eps / 3, delta), then groupby(KeySet.from_dataframe(
those keys)).count() and .sum(), each ApproxDPBudget(eps / 3, 0). Privacy unit: AddOneRow (rows).
Seconds per trial include the Parquet read into Spark; the Spark start-up is outside (first trial
warms the JVM; the bench reports the median).
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import emit, load_spec, num, run_trials  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402
from tmlt.analytics import (AddOneRow, AddRowsWithID, ApproxDPBudget, KeySet, MaxGroupsPerID,  # noqa: E402
                            MaxRowsPerGroupPerID, PureDPBudget, QueryBuilder, Session)

os.environ["PYSPARK_PYTHON"] = sys.executable  # Spark's Python workers must see this venv (tmlt)
os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
os.environ.setdefault("JAVA_HOME", "/usr/lib/jvm/java-17-openjdk-amd64")
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
SPARK = (SparkSession.builder.master("local[2]").appName("groups-bench-tumult")
         .config("spark.driver.memory", os.environ.get("BENCH_SPARK_MEMORY", "6g"))
         .config("spark.sql.shuffle.partitions", "8").config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false").getOrCreate())
SPARK.sparkContext.setLogLevel("ERROR")


def _rows(df: "object", aggs: list[str], into: dict) -> None:
    for r in df.toPandas().itertuples(index=False):
        d = r._asdict()
        into.setdefault(str(d["key"]), {}).update({a: num(d[a]) for a in aggs})


def public(spec: dict, trial: int) -> dict:
    eps, lo, hi = float(spec["epsilon"]), float(spec["lo"]), float(spec["hi"])
    sdf = SPARK.read.parquet(spec["data"]).select("key", "value")
    sess = Session.from_dataframe(privacy_budget=PureDPBudget(eps), source_id="data", dataframe=sdf,
                                  protected_change=AddOneRow())
    keys = KeySet.from_dict({"key": list(spec["keys"])})
    out: dict = {}
    part = PureDPBudget(eps / 3)
    _rows(sess.evaluate(QueryBuilder("data").groupby(keys).sum("value", lo, hi, name="sum"), part), ["sum"], out)
    _rows(sess.evaluate(QueryBuilder("data").groupby(keys).average("value", lo, hi, name="mean"), part),
          ["mean"], out)
    _rows(sess.evaluate(QueryBuilder("data").groupby(keys).median("value", lo, hi, name="median"), part),
          ["median"], out)
    return out


def private(spec: dict, trial: int) -> dict:
    eps, delta, lo, hi = float(spec["epsilon"]), float(spec["delta"]), int(spec["lo"]), int(spec["hi"])
    unit = spec.get("unit")  # multi-row units (issue 34): AddRowsWithID and Tumult's own truncation
    sdf = SPARK.read.parquet(spec["data"]).select("key", "value", *([unit] if unit else []))
    sess = Session.from_dataframe(privacy_budget=ApproxDPBudget(eps, delta), source_id="data", dataframe=sdf,
                                  protected_change=AddRowsWithID(unit) if unit else AddOneRow())

    def q() -> QueryBuilder:
        b = QueryBuilder("data")
        if unit:
            b = b.enforce(MaxGroupsPerID("key", int(spec["k"]))).enforce(MaxRowsPerGroupPerID("key", int(spec["c"])))
        return b

    groups = sess.evaluate(q().get_groups(["key"]), ApproxDPBudget(eps / 3, delta))
    keys = KeySet.from_dataframe(groups)
    out: dict = {}
    part = ApproxDPBudget(eps / 3, 0)
    _rows(sess.evaluate(q().groupby(keys).count(name="count"), part), ["count"], out)
    _rows(sess.evaluate(q().groupby(keys).sum("value", lo, hi, name="sum"), part), ["sum"], out)
    return out


def main() -> None:
    spec = load_spec()
    trials = run_trials(spec, public if spec["workload"] == "public" else private)
    notes = ["budget split evenly over 3 queries (one aggregate per query)"]
    emit("tumult", "tmlt.analytics", trials, notes)
    SPARK.stop()


if __name__ == "__main__":
    main()
