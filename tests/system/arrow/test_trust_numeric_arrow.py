"""Issue 31 ("Trust, turn 4") sections 2 and 4 on the Arrow engine: real Parquet files, the public release path.

§2: the 2^63 edge for each groups aggregate kind (the kernel's exact statistics through the release's range
checks), and every registered mechanism's kernels on data at its public bounds with max_units units.
§4: neighbours D and D' that differ in one row (a value past DBL_MAX / 2^b, a NULL, one unit more than
max_units) give identical warnings, stderr/stdout and outcome.
"""

from __future__ import annotations

import copy
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpspark.mechanisms.groups.aggregates import parse_aggregates
from dpspark.mechanisms.groups.algorithm import release_groups
from dpspark.mechanisms.groups.arrow_stats import groups_on
from dpspark.mechanisms.groups.stage import GroupsStage
from dpspark.rng import SeededRandom
from dpspark.universe import CategoricalUniverse
from tests.support.golden import CASES, Case

SECRET = bytes(range(16))
#: 2 H >= 2^63 > H at scale_bits 0: two rows at hi sum past 2^63
EDGE_HI = 2**62 + 1
KINDS = ["count", "sum", "mean", "variance", "quantile"]


def edge_aggregates(kind: str) -> Any:
    """A count and one aggregate of ``kind`` whose statistics cross 2^63 at two rows of a group."""
    spec: dict[str, Any] = {"name": "a", "kind": kind, "column": "x", "lo": "0", "hi": str(EDGE_HI)}
    if kind == "count":
        spec = {"name": "a", "kind": "count"}
    elif kind == "quantile":
        spec.update(q="1/2", bins=16)
    else:
        spec["scale_bits"] = 0
    return parse_aggregates([{"name": "n", "kind": "count"}, spec])


def edge_table(rows: int) -> pa.Table:
    """``rows`` units, all in group "a", every value at hi (2^62 as a double) or beyond (DBL_MAX)."""
    xs = [float(2**62)] * rows
    xs[-1] = float(np.finfo(np.float64).max)
    return pa.table({"k": pa.array(["a"] * rows), "u": pa.array(range(rows), pa.int64()),
                     "x": pa.array(xs, pa.float64())})


def edge_stage(kind: str, rows: int) -> GroupsStage:
    return GroupsStage(key_columns=("k",), universe=CategoricalUniverse(("a", "b"), "k"), unit_column="u",
                       max_units=rows, max_groups_per_unit=1, max_rows_per_group=1,
                       aggregates=edge_aggregates(kind))


def release_edge(stats: Any, kind: str, rows: int) -> Any:
    return release_groups(stats, edge_aggregates(kind), {"epsilon": "1", "delta": "1/1000000"},
                          SeededRandom(b"edge"), max_units=rows, keys=[0, 1])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("rows", [1, 2, 3])
def test_groups_2_63_edge_on_arrow(tmp_path: Path, kind: str, rows: int) -> None:
    """max_units rows at hi in one group: statistics at and past 2^63 are exact and release (main: sum, mean
    and variance failed from 2 rows as "an engine bug", after the spend)."""
    pq.write_table(edge_table(rows), tmp_path / "in.parquet")
    import pyarrow.dataset as ds

    stats = groups_on(ds.dataset(tmp_path / "in.parquet"), edge_stage(kind, rows), SECRET)
    g = list(stats)[0]
    assert g.stats["n"] == (rows,)
    if kind in ("sum", "mean", "variance"):
        assert g.stats["a"][1] == rows * 2**62 + (EDGE_HI - 2**62)  # the last row clips to H = 2^62 + 1
    rel = release_edge(stats, kind, rows)
    assert rel.keys == [0, 1]


# ------------------------------------------------------------------------------------------------ families
def bound_table(case: Case, value: float, rows_per_unit: int = 2) -> pa.Table:
    """The case's columns over max_units units of ``rows_per_unit`` rows each: every float at ``value`` (past
    every public clip bound), integers and booleans 1 (binary columns at their top), every text the first
    value of its column (all rows in one key): each statistic at its public bound."""
    t = case.table()
    priv = case.config["privacy"]
    unit, n = priv.get("unit_column"), priv["max_units"]
    rows = n * rows_per_unit
    cols: dict[str, pa.Array] = {}
    for f in t.schema:
        if f.name == unit:
            cols[f.name] = pa.array([i // rows_per_unit for i in range(rows)], f.type)
        elif pa.types.is_floating(f.type):
            cols[f.name] = pa.array([value] * rows, f.type)
        elif pa.types.is_boolean(f.type):
            cols[f.name] = pa.array([True] * rows, f.type)
        elif pa.types.is_integer(f.type):
            cols[f.name] = pa.array([1] * rows, f.type)
        else:
            first = next(v for v in t.column(f.name).to_pylist() if v is not None)
            cols[f.name] = pa.array([first] * rows, f.type)
    return pa.table(cols)


def run_table(case: Case, table: pa.Table, workdir: Path, engine: str = "arrow", spark: Any = None,
              config: dict[str, Any] | None = None) -> Path:
    """The case's seeded release over ``table`` (a Parquet file), through the public runner."""
    from dpspark.api.config import ReleaseSpec
    from dpspark.engine.runner import run_release

    workdir.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, workdir / "in.parquet")
    raw = {"input": {"path": "in.parquet"}, **copy.deepcopy(config or case.config), "output": {"path": "release"}}
    spec = ReleaseSpec.from_dict(raw, base_dir=workdir)
    return run_release(spec, spark=spark, rng=SeededRandom(case.seed_bytes()), progress=lambda _m: None,
                       engine=engine)


ARROW_CASES = sorted(c for c in CASES if "+" not in c)  # every registered mechanism (the filter variant: Spark)


@pytest.mark.parametrize("value", [1e308, -1e308])
@pytest.mark.parametrize("case_id", ARROW_CASES)
def test_every_family_at_its_public_bounds_with_max_units_units(tmp_path: Path, case_id: str, value: float) -> None:
    """Each mechanism's kernels on max_units units at the public bounds (two rows each) release."""
    case = CASES[case_id]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = run_table(case, bound_table(case, value), tmp_path / "run")
    assert (out / "manifest.json").exists()
    assert [str(w.message) for w in caught] == []


# ------------------------------------------------------------------------------------------------ §4 D / D'
def neighbours(case: Case) -> dict[str, pa.Table]:
    """D: max_units units of ordinary values; D' differs in one row: extreme, NULL, or one unit more."""
    t = case.table()
    priv = case.config["privacy"]
    unit, n = priv["unit_column"], priv["max_units"]
    reps = -(-n // t.num_rows) + 1
    big = pa.concat_tables([t] * reps)
    D = big.slice(0, n).set_column(big.schema.get_field_index(unit), unit, pa.array(range(n), pa.int64()))
    over = big.slice(0, n + 1).set_column(big.schema.get_field_index(unit), unit, pa.array(range(n + 1), pa.int64()))
    x = [f.name for f in t.schema if pa.types.is_floating(f.type)][0]
    i = D.schema.get_field_index(x)
    vals = D.column(x).to_pylist()
    row = next(j for j, v in enumerate(vals) if v is not None and v == v)
    extreme, null = list(vals), list(vals)
    extreme[row], null[row] = float(np.finfo(np.float64).max), None
    return {"D": D, "extreme": D.set_column(i, x, pa.array(extreme, pa.float64())),
            "null": D.set_column(i, x, pa.array(null, pa.float64())), "over": over}


def observe(fn: Any, capfd: pytest.CaptureFixture[str]) -> tuple[list[str], str, str, str]:
    """(warnings, stdout, stderr, outcome) of ``fn()``: everything a caller sees besides the release."""
    capfd.readouterr()
    outcome = "ok"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with np.errstate(all="warn"):
            try:
                fn()
            except Exception as err:  # noqa: BLE001 - the type is what is compared
                outcome = type(err).__name__
    out, err = capfd.readouterr()
    return [f"{w.category.__name__}: {w.message}" for w in caught], out, err, outcome


#: the mechanisms that read float columns; the gaussian_model ones take ~10 s each (slow)
SIDE_CASES = ["groups", "bounded_noise", "gaussian"] + [
    pytest.param(c, marks=pytest.mark.slow) for c in ("gaussian_mean", "gaussian_covariance", "gaussian_learner")]


@pytest.mark.parametrize("case_id", SIDE_CASES)
def test_neighbours_look_the_same_on_arrow(tmp_path: Path, case_id: str, capfd: pytest.CaptureFixture[str]) -> None:
    """Warnings, stdout, stderr and the outcome do not depend on one row (an extreme value, a NULL, one unit
    past max_units). The groups config here reads x at scale_bits 16, so DBL_MAX x 2^16 overflowed on main."""
    case = CASES[case_id]
    config = copy.deepcopy(case.config)
    for q in config.get("aggregates", []) + config.get("queries", []):
        if "column" in q:
            q["scale_bits"] = 16
    tables = neighbours(case)
    run_table(case, tables["D"], tmp_path / "warm-up", config=config)  # first-use caches (numpy error state: all)
    seen = {name: observe(lambda t=t, name=name: run_table(case, t, tmp_path / name, config=config), capfd)
            for name, t in tables.items()}
    assert seen["D"][3] == "ok"
    for name in ("extreme", "null", "over"):
        assert seen[name] == seen["D"], name
