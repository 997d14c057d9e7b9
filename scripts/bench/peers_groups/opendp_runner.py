"""OpenDP 0.16 (Polars API) on the two groups workloads; run with the opendp venv's python.

public: one query `group_by("key").agg(dp.sum, dp.mean, dp.median)` under a Margin with invariant
"keys" (OpenDP's public-key mode: the key set is not protected), pure eps over rows (contributions=1).
private: `group_by("key").agg(dp.len(), dp.sum)` without a key invariant: OpenDP then releases only the
groups whose noisy length passes a threshold it derives from delta (its key selection).
The whole (eps, delta) goes to the one query; OpenDP splits it among the expressions itself.
Multi-row units (issue 34): each unit is cut to k keys and c rows per key before OpenDP reads the rows, and
OpenDP is given exactly those bounds, so its sensitivities are those of every other system (``_data``).
"""

from __future__ import annotations

import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import polars as pl  # noqa: E402
import opendp.prelude as dp  # noqa: E402

from common import emit, load_spec, num, run_trials  # noqa: E402

dp.enable_features("contrib")
warnings.filterwarnings("ignore", category=FutureWarning)  # dp.len's default sign changes later


def _unit(spec: dict) -> "int | list":
    """Rows as units: 1. Multi-row units (issue 34): ``Bound(by=[key], per_group=c, num_groups=k)``, the bounds
    every other system uses (k groups, c rows per group, so k c rows in all), true of the data OpenDP gets
    because ``_data`` truncates each unit to them first. (Before: ``Bound(per_group=c)`` with no ``by``, i.e.
    c = 5 rows per unit in all, a bound the other systems do not use, so at k = 4 its count noise had a
    quarter of their sensitivity, and no truncation, so none of their bounding bias.)"""
    if not spec.get("unit"):
        return 1
    return [dp.polars.Bound(by=[pl.col("key")], per_group=int(spec["c"]), num_groups=int(spec["k"]))]


def _data(spec: dict) -> "pl.LazyFrame":
    """The rows OpenDP reads: with a unit column, every unit cut to k keys (the first k in a hashed order of
    (unit, key), as a random choice: a fixed key order would always drop the same keys, a bias the others do not
    have) and c rows per key, a per-unit transformation (a unit's rows only), so the declared bounds hold. Not OpenDP's own
    truncate_num_groups: in 0.16 it keeps rank < k with dense ranks from 1 (k - 1 groups; none at k = 1) while
    its analysis assumes k, and a filter rank < k + 1 is analysed as k + 1 groups."""
    lf = pl.scan_parquet(spec["data"])
    unit = spec.get("unit")
    if not unit:
        return lf.select("key", "value")
    k, c = int(spec["k"]), int(spec["c"])
    h = pl.struct(unit, "key").hash(seed=34)  # a pseudo-random key order per unit: no key is always dropped
    lf = lf.filter(pl.struct(h, pl.col("key")).rank("dense").over(unit) <= k)
    return lf.filter(pl.int_range(pl.len()).over([unit, "key"]) < c).select("key", "value")


def _context(spec: dict, keys_public: bool) -> "dp.Context":
    # max_groups: public (the key list's length) on the public workload; float sums need it
    margin = dp.polars.Margin(by=["key"], max_length=int(spec["rows"]),
                              max_groups=len(spec["keys"]) if keys_public else None,
                              invariant="keys" if keys_public else None)
    loss = (dp.loss_of(epsilon=float(spec["epsilon"])) if keys_public
            else dp.loss_of(epsilon=float(spec["epsilon"]), delta=float(spec["delta"])))
    return dp.Context.compositor(
        data=_data(spec),
        privacy_unit=dp.unit_of(contributions=_unit(spec)),
        privacy_loss=loss,
        split_evenly_over=1,
        margins=[dp.polars.Margin(by=[], max_length=int(spec["rows"])), margin],
    )


def public(spec: dict, trial: int) -> dict:
    lo, hi, bins = int(spec["lo"]), int(spec["hi"]), int(spec["bins"])
    candidates = [lo + (hi - lo) * i / bins for i in range(bins + 1)]
    v = pl.col("value").cast(pl.Float64).fill_null(float(lo))
    query = _context(spec, True).query().group_by("key").agg(
        v.dp.sum((float(lo), float(hi))).alias("sum"),
        v.dp.mean((float(lo), float(hi))).alias("mean"),
        v.dp.median(candidates).alias("median"),
    )
    df = query.release().collect()
    return {str(r["key"]): {a: num(r[a]) for a in ("sum", "mean", "median")} for r in df.iter_rows(named=True)}


def private(spec: dict, trial: int) -> dict:
    lo, hi = int(spec["lo"]), int(spec["hi"])
    query = _context(spec, False).query().group_by("key").agg(
        dp.len().alias("count"),
        pl.col("value").fill_null(lo).dp.sum((lo, hi)).alias("sum"),
    )
    df = query.release().collect()
    return {str(r["key"]): {"count": num(r["count"]), "sum": num(r["sum"])} for r in df.iter_rows(named=True)}


def main() -> None:
    spec = load_spec()
    trials = run_trials(spec, public if spec["workload"] == "public" else private)
    notes = ["public keys: Margin(invariant='keys')" if spec["workload"] == "public"
             else "keys: OpenDP's own threshold on the noisy length (from delta)"]
    emit("opendp", "opendp", trials, notes)


if __name__ == "__main__":
    main()
