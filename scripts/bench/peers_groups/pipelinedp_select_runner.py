"""PipelineDP 0.3.1 select_partitions alone (issue 34 §2): keys selected at (eps, delta) with k partitions per
unit, by WEIGHTED_GAUSSIAN_THRESHOLDING (weights 1/sqrt(m)) and by the default TRUNCATED_GEOMETRIC; run with the
pipelinedp venv's python. Spec: data, epsilon, delta, k, trials. Result: per strategy, the kept keys per trial.
"""

from __future__ import annotations

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pipeline_dp  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from common import load_spec  # noqa: E402


def main() -> None:
    spec = load_spec()
    t = pq.read_table(spec["data"], columns=["unit", "key"])
    rows = list(zip(t.column("unit").to_pylist(), t.column("key").to_pylist()))
    out: dict = {}
    S = pipeline_dp.PartitionSelectionStrategy
    for name in ("WEIGHTED_GAUSSIAN_THRESHOLDING", "TRUNCATED_GEOMETRIC"):
        runs = []
        for _ in range(int(spec["trials"])):
            t0 = time.perf_counter()
            acc = pipeline_dp.NaiveBudgetAccountant(total_epsilon=float(spec["epsilon"]),
                                                    total_delta=float(spec["delta"]))
            engine = pipeline_dp.DPEngine(acc, pipeline_dp.LocalBackend())
            params = pipeline_dp.SelectPartitionsParams(max_partitions_contributed=int(spec["k"]),
                                                        partition_selection_strategy=getattr(S, name))
            ex = pipeline_dp.DataExtractors(privacy_id_extractor=lambda r: r[0], partition_extractor=lambda r: r[1])
            res = engine.select_partitions(rows, params, ex)
            acc.compute_budgets()
            keys = [str(k) for k in res]
            runs.append({"seconds": time.perf_counter() - t0, "keys": keys})
        out[name] = runs
    print("__RESULT__ " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
