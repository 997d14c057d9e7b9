"""OpenDP 0.16 (Polars API) on the two groups workloads; run with the opendp venv's python.

public: one query `group_by("key").agg(dp.sum, dp.mean, dp.median)` under a Margin with invariant
"keys" (OpenDP's public-key mode: the key set is not protected), pure eps over rows (contributions=1).
private: `group_by("key").agg(dp.len(), dp.sum)` without a key invariant: OpenDP then releases only the
groups whose noisy length passes a threshold it derives from delta (its key selection).
The whole (eps, delta) goes to the one query; OpenDP splits it among the expressions itself.
Multi-row units (issue 34): the unit column is the identifier and OpenDP truncates to k keys per unit and
c rows per key itself, so its sensitivities are those of every other system (k groups, c rows per group).
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


def _unit(spec: dict) -> "dict":
    """The privacy unit. Rows as units: 1 contribution. Multi-row units (issue 34): the unit column is OpenDP's
    identifier and the query truncates every unit to k keys and c rows per key itself (``_truncated``), so
    OpenDP derives the same bounds as every other system: k groups, c rows per group (k c rows in all).
    (Before: declared bounds ``Bound(per_group=c)`` with no ``by``, i.e. c = 5 rows per unit in all, a
    bound the other systems do not use, so at k = 4 its count noise had a quarter of their sensitivity.)"""
    if not spec.get("unit"):
        return {"contributions": 1}
    return {"contributions": 1, "identifier": spec["unit"]}


def _truncated(spec: dict, q: "object") -> "object":
    """OpenDP's own truncation to c rows per (unit, key) (a random sample, its default) and k keys per unit
    (the first k: keep="sample" fails in OpenDP 0.16 on one key column, "multiple fields with name 'key'")."""
    if not spec.get("unit"):
        return q
    return q.truncate_per_group(int(spec["c"]), by=["key"]).truncate_num_groups(int(spec["k"]), by=["key"], keep="first")


def _context(spec: dict, keys_public: bool) -> "dp.Context":
    # max_groups: public (the key list's length) on the public workload; float sums need it
    margin = dp.polars.Margin(by=["key"], max_length=int(spec["rows"]),
                              max_groups=len(spec["keys"]) if keys_public else None,
                              invariant="keys" if keys_public else None)
    loss = (dp.loss_of(epsilon=float(spec["epsilon"])) if keys_public
            else dp.loss_of(epsilon=float(spec["epsilon"]), delta=float(spec["delta"])))
    return dp.Context.compositor(
        data=pl.scan_parquet(spec["data"]).select("key", "value", *([spec["unit"]] if spec.get("unit") else [])),
        privacy_unit=dp.unit_of(**_unit(spec)),
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
    query = _truncated(spec, _context(spec, False).query()).group_by("key").agg(
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
