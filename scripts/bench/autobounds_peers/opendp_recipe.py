"""OpenDP (Polars API): the documented recipe for unknown bounds - private quantiles for the bounds, then the
sum and mean per key with them; run with the opendp venv.

One compositor (pure epsilon, one row per unit) split by weights: ``share`` to dp.quantile(0.01) and
dp.quantile(0.99) over a public candidate grid (0 and +-2^(i/4), 2^-2 <= |x| <= 2^20: a public guess covering every column), the rest to group_by(key).agg(dp.sum, dp.mean)
under a Margin with the public keys (invariant "keys"). Reads the spec JSON on argv[1]; prints one JSON line.
"""

from __future__ import annotations

import json
import sys
import warnings

import opendp.prelude as dp
import polars as pl

dp.enable_features("contrib")
warnings.filterwarnings("ignore")
spec = json.loads(open(sys.argv[1]).read())
eps, share, rows = float(spec["epsilon"]), float(spec["share"]), int(spec["rows"])
grid = sorted({0.0, *(s * 2 ** (i / 4) for s in (-1, 1) for i in range(-8, 4 * 20 + 1))})  # public guess: |x| <= 2^20
data = pl.read_parquet(spec["data"]).select("key", "value").lazy()
trials = []
for t in range(int(spec["trials"])):
    ctx = dp.Context.compositor(
        data=data, privacy_unit=dp.unit_of(contributions=1), privacy_loss=dp.loss_of(epsilon=eps),
        split_by_weights=[share, 1 - share],
        margins=[dp.polars.Margin(by=[], max_length=rows),
                 dp.polars.Margin(by=["key"], max_length=rows, max_groups=len(spec["keys"]), invariant="keys")])
    q = ctx.query().select(pl.col("value").dp.quantile(0.01, grid).alias("lo"),
                           pl.col("value").dp.quantile(0.99, grid).alias("hi")).release().collect()
    lo, hi = float(q["lo"][0]), float(q["hi"][0])
    if hi <= lo:
        hi = lo + 1.0
    v = pl.col("value")
    df = ctx.query().group_by("key").agg(v.dp.sum((lo, hi)).alias("sum"), v.dp.mean((lo, hi)).alias("mean")) \
        .release().collect()
    trials.append({"lo": lo, "hi": hi, "groups": {str(r["key"]): {"sum": float(r["sum"]), "mean": float(r["mean"])}
                                                   for r in df.iter_rows(named=True)}})
print(json.dumps({"trials": trials}))
