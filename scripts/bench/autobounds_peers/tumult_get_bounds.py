"""Tumult Analytics: get_bounds, then sum and average per key with those bounds; run with the tumult venv.

Budget (pure, AddOneRow): get_bounds takes ``share`` of epsilon, sum and average half of the rest each.
Reads the spec JSON on argv[1] (data: Parquet with columns key, value; keys; epsilon; share; trials) and prints
one JSON line: per trial the bounds and {key: {sum, mean}}.
"""

from __future__ import annotations

import json
import os
import sys

os.environ["PYSPARK_PYTHON"] = sys.executable
os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
os.environ.setdefault("JAVA_HOME", "/usr/lib/jvm/java-17-openjdk-amd64")
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from pyspark.sql import SparkSession  # noqa: E402
from tmlt.analytics import AddOneRow, KeySet, PureDPBudget, QueryBuilder, Session  # noqa: E402

spec = json.loads(open(sys.argv[1]).read())
spark = (SparkSession.builder.master("local[2]").appName("autobounds-tumult").config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "4").config("spark.ui.showConsoleProgress", "false").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
sdf = spark.read.parquet(spec["data"]).select("key", "value").cache()
sdf.count()
eps, share = float(spec["epsilon"]), float(spec["share"])
keys = KeySet.from_dict({"key": list(spec["keys"])})
trials = []
for t in range(int(spec["trials"])):
    sess = Session.from_dataframe(privacy_budget=PureDPBudget(eps), source_id="data", dataframe=sdf,
                                  protected_change=AddOneRow())
    b = sess.evaluate(QueryBuilder("data").get_bounds("value"), PureDPBudget(eps * share)).toPandas().iloc[0]
    lo, hi = float(b["value_lower_bound"]), float(b["value_upper_bound"])
    rest = PureDPBudget(eps * (1 - share) / 2)
    out: dict = {}
    for r in sess.evaluate(QueryBuilder("data").groupby(keys).sum("value", lo, hi, name="sum"), rest).toPandas().itertuples():
        out.setdefault(str(r.key), {})["sum"] = float(r.sum)
    for r in sess.evaluate(QueryBuilder("data").groupby(keys).average("value", lo, hi, name="mean"), rest).toPandas().itertuples():
        out.setdefault(str(r.key), {})["mean"] = float(r.mean)
    trials.append({"lo": lo, "hi": hi, "groups": out})
print(json.dumps({"trials": trials}))
spark.stop()
