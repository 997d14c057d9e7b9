"""PipelineDP 0.3.1 (local backend) on the two groups workloads; run with the pipelinedp venv's python.

One DPEngine.aggregate call per trial, NaiveBudgetAccountant(eps, delta) over it (PipelineDP splits the
budget among its mechanisms itself): public: metrics SUM, MEAN, PERCENTILE(50) with public_partitions
(pure: delta 0, Laplace); private: COUNT and SUM with the default TRUNCATED_GEOMETRIC partition
selection. Bounds: one partition per row-unit, one contribution per partition, values in [lo, hi].
Seconds per trial include the Parquet read (pyarrow) into Python tuples, which the local backend needs.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pipeline_dp  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from common import emit, load_spec, num, run_trials  # noqa: E402


def _rows(spec: dict) -> list:
    uid = spec.get("unit") or "row_id"  # multi-row units (issue 34): the unit column is the privacy id
    t = pq.read_table(spec["data"], columns=[uid, "key", "value"])
    return list(zip(t.column(uid).to_pylist(), t.column("key").to_pylist(), t.column("value").to_pylist()))


def _run(spec: dict, metrics: list, delta: float, public_keys: list | None) -> list:
    accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=float(spec["epsilon"]), total_delta=delta)
    engine = pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend())
    params = pipeline_dp.AggregateParams(
        metrics=metrics, noise_kind=pipeline_dp.NoiseKind.LAPLACE,
        max_partitions_contributed=int(spec.get("k", 1)),
        max_contributions_per_partition=int(spec.get("c", 1)),
        min_value=float(spec["lo"]), max_value=float(spec["hi"]))
    extractors = pipeline_dp.DataExtractors(privacy_id_extractor=lambda r: r[0],
                                            partition_extractor=lambda r: r[1], value_extractor=lambda r: r[2])
    result = engine.aggregate(_rows(spec), params, extractors, public_partitions=public_keys)
    accountant.compute_budgets()
    return list(result)  # the local backend is lazy: this runs it


def public(spec: dict, trial: int) -> dict:
    m = pipeline_dp.Metrics
    out = _run(spec, [m.SUM, m.MEAN, m.PERCENTILE(50)], 0.0, list(spec["keys"]))
    return {str(k): {"sum": num(v.sum), "mean": num(v.mean), "median": num(v.percentile_50)} for k, v in out}


def private(spec: dict, trial: int) -> dict:
    m = pipeline_dp.Metrics
    out = _run(spec, [m.COUNT, m.SUM], float(spec["delta"]), None)
    return {str(k): {"count": num(v.count), "sum": num(v.sum)} for k, v in out}


def main() -> None:
    spec = load_spec()
    trials = run_trials(spec, public if spec["workload"] == "public" else private)
    emit("pipelinedp", "pipeline-dp", trials, ["local backend; budget split by NaiveBudgetAccountant"])


if __name__ == "__main__":
    main()
