"""The cost of the groups pre-pass (noisy unit count, "auto" limits) against the groups pass, on Arrow.

    PYTHONPATH=$PWD .venv/bin/python scripts/bench/groups_units.py [--units 1000000] [--rows 3] [--reps 5]

Writes a Parquet file of ``units`` people with ``rows`` rows each over 50 regions, then times, in one process,
the pre-pass (:class:`~dpspark.mechanisms.groups.unit_profile.UnitProfileStage`) and the groups pass
(:class:`~dpspark.mechanisms.groups.stage.GroupsStage`, count and sum, k = 2, c = 2) on the Arrow backend, and
whole ``Session.groups`` releases without an "auto" limit: "before" with the pre-pass forced (as every release
ran it before the pass counted its own units) and "after" (one pass), interleaved, wall and CPU seconds;
prints medians and ratios, writes JSON to /tmp/bench_groups_units.json. Timing code only.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--units", type=int, default=1_000_000)
    ap.add_argument("--rows", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dpspark.engine.backend import open_backend
    from dpspark.mechanisms.groups.aggregates import parse_aggregates
    from dpspark.mechanisms.groups.stage import GroupsStage
    from dpspark.mechanisms.groups.unit_profile import UnitProfileStage
    from dpspark.rng import SeededRandom
    from dpspark.universe import CategoricalUniverse

    n = args.units * args.rows
    rng = np.random.default_rng(0)
    regions = [f"r{i}" for i in range(50)]
    table = pa.table({"pid": np.repeat(np.arange(args.units, dtype=np.int64), args.rows),
                      "region": pa.array(rng.integers(0, 50, n)).cast(pa.string()),
                      "x": rng.integers(0, 100, n)})
    table = table.set_column(1, "region", pa.compute.binary_join_element_wise("r", table.column("region"), ""))
    path = Path(tempfile.mkdtemp()) / "people.parquet"
    pq.write_table(table, path)
    stage = GroupsStage(key_columns=("region",), universe=CategoricalUniverse(tuple(regions), "region"),
                        unit_column="pid", max_units=args.units, max_groups_per_unit=2, max_rows_per_group=2,
                        aggregates=parse_aggregates([{"name": "n", "kind": "count"},
                                                     {"name": "s", "kind": "sum", "column": "x", "lo": "0",
                                                      "hi": "100"}]))
    times: dict[str, list[float]] = {"pre-pass": [], "groups pass": []}
    with open_backend("arrow", rng=SeededRandom(1), source=str(path)) as backend:
        for _ in range(args.reps):
            for name, st in (("pre-pass", UnitProfileStage(stage)), ("groups pass", stage)):
                t0 = time.perf_counter()
                backend.compute(st)
                times[name].append(time.perf_counter() - t0)  # report
    cpu: dict[str, list[float]] = {}
    _release(path, args.units, False)  # warm-up (imports, first plan), not timed
    for _ in range(args.reps):  # whole releases, before (pre-pass forced) and after (one pass), interleaved
        for name, forced in (("release before", True), ("release after", False)):
            t0, c0 = time.perf_counter(), time.process_time()
            _release(path, args.units, forced)
            times.setdefault(name, []).append(time.perf_counter() - t0)  # report
            cpu.setdefault(name, []).append(time.process_time() - c0)  # report
    med = {k: statistics.median(v) for k, v in times.items()}  # report
    med_cpu = {k: statistics.median(v) for k, v in cpu.items()}  # report
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(f"{args.units} units x {args.rows} rows, Arrow, {args.reps} reps, load {' '.join(load)}")
    print(f"{'pass':<14}{'median s':>10}")
    for k in ("pre-pass", "groups pass"):
        print(f"{k:<14}{med[k]:>10.3f}")
    print(f"{'ratio':<14}{med['pre-pass'] / med['groups pass']:>10.2f}")  # report
    print(f"{'release (no auto)':<18}{'wall s':>9}{'CPU s':>9}")
    for k in ("release before", "release after"):
        print(f"{k:<18}{med[k]:>9.3f}{med_cpu[k]:>9.3f}")
    ratio = {"wall": med["release after"] / med["release before"],  # report
             "cpu": med_cpu["release after"] / med_cpu["release before"]}  # report
    print(f"{'after / before':<18}{ratio['wall']:>9.2f}{ratio['cpu']:>9.2f}")
    print(f"load after: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    Path("/tmp/bench_groups_units.json").write_text(json.dumps({"args": vars(args), "median_s": med,
                                                                "median_cpu_s": med_cpu, "ratio": ratio,
                                                                "load": load, "times": times, "cpu": cpu}))


def _release(path: Path, units: int, forced: bool) -> None:
    """One ``Session.groups`` release (count and sum by region, k = c = 2), the pre-pass forced or not."""
    import dpspark
    from dpspark.mechanisms.groups.mechanism import GroupsMechanism
    from dpspark.rng import SeededRandom

    real = GroupsMechanism.pre_pass
    GroupsMechanism.pre_pass = (lambda self: True) if forced else real  # type: ignore[method-assign]
    try:
        with tempfile.TemporaryDirectory() as out, \
                dpspark.Session(str(path), unit_column="pid", max_units=units, rng=SeededRandom(1)) as s:
            s.groups(by="region", keys=[f"r{i}" for i in range(50)], epsilon="1", output=Path(out) / "rel",
                     max_groups_per_unit=2, max_rows_per_group=2,
                     aggregates=[{"name": "n", "kind": "count"},
                                 {"name": "s", "kind": "sum", "column": "x", "lo": "0", "hi": "100"}])
    finally:
        GroupsMechanism.pre_pass = real  # type: ignore[method-assign]


if __name__ == "__main__":
    main()
