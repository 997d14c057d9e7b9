"""``answers`` on hostile data: NULL, NaN, +-inf, text that is not a number, huge values, filters an attacker
writes. Both engines give identical exact totals (Spark with ANSI on and off), equal to the definition
computed here in Python; no data value makes a data pass raise; int64 never wraps; bad filters are refused
at config time."""

from __future__ import annotations

import csv
import re
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpspark.engine.numeric import NUMBER_PATTERN
from dpspark.mechanisms.answers.queries import QueryError, Scalar, parse_queries, scalars_of
from dpspark.mechanisms.registry import construct

CELLS = ["1.5", "-2.25", "", "abc", "NaN", "inf", "-Infinity", "1e400", "-1e400", "1e-400", "0.49999999999999994",
         "2.5", "-2.5", "0.5", "  3", "+4", ".5", "5.", "1E3", "123456789012345678901234567890", "7", "-0", "x1"]
N = 240


def _rows() -> list[dict[str, str]]:
    rows = []
    for i in range(N):
        rows.append({
            "u": "" if i % 17 == 5 else str((i * 7) % 29),
            "x": CELLS[(i * 5) % len(CELLS)],
            "y": CELLS[(i * 3 + 1) % len(CELLS)] if i % 4 else str(i % 9),
            "g": ["a", "b", "", "b'c"][i % 4],
        })
    return rows


ROWS = _rows()


def read(cell: str | None) -> float | None:
    """numeric.py's rule, written independently: plain decimal text -> its double, anything else NULL."""
    if cell is None or cell == "" or not re.match(NUMBER_PATTERN, cell):
        return None
    return float(cell)


def text(cell: str) -> str | None:
    return None if cell == "" else cell


# (query, the same filter in Python: TRUE only)
QUERIES: list[tuple[dict, Callable[[dict], bool] | None]] = [
    ({"name": "rows", "kind": "count"}, None),
    ({"name": "s_drop", "kind": "sum", "column": "x", "lo": "-3", "hi": "5"}, None),
    ({"name": "s_half", "kind": "sum", "column": "x", "lo": "-2", "hi": "2", "scale_bits": 2, "nulls": "1/2"}, None),
    ({"name": "s_int", "kind": "sum", "column": "x", "lo": "-10", "hi": "10", "scale_bits": 0}, None),  # ties: 2.5, 0.5
    ({"name": "s_big", "kind": "sum", "column": "x", "lo": "-1000000", "hi": "1000000", "scale_bits": 20}, None),
    ({"name": "m_a", "kind": "mean", "column": "x", "lo": "0", "hi": "10", "mean": "noisy_count", "filter": "g = 'a'"},
     lambda r: text(r["g"]) == "a"),
    ({"name": "m_imp", "kind": "mean", "column": "x", "lo": "-1", "hi": "10", "mean": "noisy_count", "nulls": "-3"},
     None),
    ({"name": "s_range", "kind": "sum", "column": "x", "lo": "-4", "hi": "4",
      "filter": "y BETWEEN 2 AND 7.5 AND g != 'b'"},
     lambda r: read(r["y"]) is not None and 2 <= read(r["y"]) <= 7.5 and text(r["g"]) not in (None, "b")),
    ({"name": "c_or", "kind": "count", "hi": 3, "filter": "y > 3 OR g IS NULL"},
     lambda r: text(r["g"]) is None or (read(r["y"]) is not None and read(r["y"]) > 3)),
    ({"name": "s_notin", "kind": "sum", "column": "x", "lo": "-1", "hi": "1", "filter": "NOT (y IN (1, 2, 3.5))"},
     lambda r: read(r["y"]) is not None and read(r["y"]) not in (1, 2, 3.5)),
    ({"name": "h1", "kind": "sum", "column": "x", "lo": "-1", "hi": "1", "scale_bits": 1}, None),
    ({"name": "h2", "kind": "sum", "column": "x", "lo": "0", "hi": "3", "scale_bits": 1}, None),
    ({"name": "h3", "kind": "sum", "column": "y", "lo": "-2", "hi": "6", "scale_bits": 1, "filter": "g = 'b''c'"},
     lambda r: text(r["g"]) == "b'c"),
    ({"name": "h4", "kind": "sum", "column": "y", "lo": "0", "hi": "8", "scale_bits": 1, "filter": "g = 'b''c'"},
     lambda r: text(r["g"]) == "b'c"),
    ({"name": "c_null", "kind": "count", "filter": "g IS NOT NULL AND NOT g IN ('a')"},
     lambda r: text(r["g"]) not in (None, "a")),
]


def fixed(x: float | None, s: Scalar) -> int:
    """The definition: clip(x 2^b, -Delta, Delta), rounded half away from zero; NULL -> imputed or 0."""
    if x is None:
        imp = s.imputed()
        return 0 if imp is None else imp
    y = Fraction(s.delta) if x == float("inf") else -Fraction(s.delta) if x == float("-inf") else Fraction(x) * (1 << s.scale_bits)
    y = max(-s.delta, min(s.delta, y))
    r = (abs(y) + Fraction(1, 2)).__floor__()
    return r if y >= 0 else -r


def reference(rows: list[dict], scalars: list[Scalar], filters: list, unit: str | None) -> list[int]:
    out = []
    for s, keep in zip(scalars, filters):
        per: dict[Any, int] = {}
        for i, r in enumerate(rows):
            u = i if unit is None else text(r[unit])
            if u is None:
                continue
            passes = keep is None or keep(r)
            if s.column is None:
                v = 1 if passes and (s.present is None or read(r[s.present]) is not None) else 0
            else:
                v = fixed(read(r[s.column]), s) if passes else 0
            per[u] = per.get(u, 0) + v
        out.append(sum(min(max(t, s.lo), s.hi) for t in per.values()))
    return out


def _scalars() -> tuple[list[Scalar], list]:
    queries = parse_queries([q for q, _ in QUERIES])
    scalars, filters = [], []
    for q, (_, keep) in zip(queries, QUERIES):
        for s in q.scalars():
            scalars.append(s)
            filters.append(keep)
    return scalars, filters


def _csv(tmp: Path) -> Path:
    path = tmp / "hostile.csv"
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["u", "x", "y", "g"])
        w.writeheader()
        w.writerows(ROWS)
    return path


def test_arrow_totals_on_hostile_csv_equal_the_definition(tmp_path: Path) -> None:
    from dpspark.mechanisms.answers.arrow_kernel import scalar_totals_arrow
    from dpspark.engine.arrow.backend import open_dataset

    dataset, _ = open_dataset(str(_csv(tmp_path)))
    assert dataset.schema.field("x").type == pa.string()  # text: every cell parsed by the one rule
    scalars, filters = _scalars()
    for unit in (None, "u"):
        assert scalar_totals_arrow(dataset, scalars, unit) == reference(ROWS, scalars, filters, unit)


def test_noisy_count_mean_drops_or_imputes_in_its_count(tmp_path: Path) -> None:
    scalars, filters = _scalars()
    by = {s.label: s for s in scalars}
    assert by["m_a#count"].present == "x" and by["m_imp#count"].present is None
    assert by["m_a#sum"].nulls.drop and by["m_imp#sum"].imputed() == -3 * 256
    ref = dict(zip([s.label for s in scalars], reference(ROWS, scalars, filters, None)))
    nulls = sum(1 for r in ROWS if read(r["x"]) is None)
    assert nulls > 0 and ref["m_imp#count"] == N and ref["m_a#count"] < N // 4 + 1


def test_manifest_states_the_null_rule() -> None:
    q = parse_queries([{"name": "s", "kind": "sum", "column": "x", "lo": "0", "hi": "1", "nulls": "1/4",
                        "filter": "x > 0"},
                       {"name": "t", "kind": "mean", "column": "x", "lo": "0", "hi": "1", "n": 5}])
    d0, d1 = q[0].describe(), q[1].describe()
    assert d0["nulls"] == "1/4" and "count as 1/4" in d0["nulls_rule"] and d0["filter"] == "x > 0"
    assert d1["nulls"] == "drop" and "dropped" in d1["nulls_rule"] and "+-inf are clipped" in d1["nulls_rule"]
    with pytest.raises(QueryError, match="float"):
        parse_queries([{"name": "s", "kind": "sum", "column": "x", "lo": "0", "hi": "1", "nulls": 0.5}])
    with pytest.raises(QueryError, match="takes no 'nulls'"):
        parse_queries([{"name": "c", "kind": "count", "nulls": "0"}])


@pytest.mark.spark
@pytest.mark.parametrize("ansi", ["true", "false"])
def test_spark_equals_arrow_on_hostile_inputs(spark, tmp_path: Path, ansi: str) -> None:
    from dpspark.mechanisms.answers.arrow_kernel import scalar_totals_arrow
    from dpspark.engine.arrow.backend import open_dataset
    from dpspark.mechanisms.answers.spark_kernel import scalar_totals

    path = _csv(tmp_path)
    scalars, filters = _scalars()
    dataset, _ = open_dataset(str(path))
    df = spark.read.option("header", "true").option("inferSchema", "false").csv(str(path))
    # the same hostile values typed (Parquet doubles: NaN, +-inf, NULL, 1e300) for the numeric columns
    typed = pa.table({"u": [text(r["u"]) for r in ROWS],
                      "x": pa.array([read(r["x"]) if r["x"] != "NaN" else float("nan") for r in ROWS], pa.float64()),
                      "y": pa.array([read(r["y"]) for r in ROWS], pa.float64()),
                      "g": [text(r["g"]) for r in ROWS]})
    pq.write_table(typed, tmp_path / "typed.parquet")
    tdf = spark.read.parquet(str(tmp_path / "typed.parquet"))
    old = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", ansi)
    try:
        for unit in (None, "u"):
            want = reference(ROWS, scalars, filters, unit)
            assert scalar_totals(df, scalars, unit, 1000) == want
            assert scalar_totals_arrow(dataset, scalars, unit) == want
            assert scalar_totals(tdf, scalars, unit, 1000) == want
            assert scalar_totals_arrow(typed, scalars, unit) == want
    finally:
        spark.conf.set("spark.sql.ansi.enabled", old)


# ----------------------------------------------------------------------------------------- overflow
def _overflow_table() -> tuple[pa.Table, list[Scalar], list[int]]:
    """40 units x 5,000 rows of 2^51 (5000 x 2^51 > 2^63: an int64 per-unit sum wraps), plus mixed units."""
    big = 1 << 51
    units, vals = [], []
    for u in range(40):
        for k in range(5000):
            units.append(u)
            vals.append(big if u < 30 or k % 2 else -big)  # units 30..39: +-2^51 alternating, total 0
    units += [99] * 4099
    vals += [big] * 4097 + [-big, -big]  # the running sum passes 2^63 before coming back to 4095 x 2^51
    table = pa.table({"u": pa.array(units, pa.int64()), "v": pa.array(vals, pa.int64())})
    lo, hi = -big, big
    q = parse_queries([{"name": "s", "kind": "sum", "column": "v", "lo": str(lo), "hi": str(hi), "scale_bits": 0},
                       {"name": "w", "kind": "sum", "column": "v", "lo": "0", "hi": str(hi // 2), "scale_bits": 0}])
    scalars = scalars_of(q)
    want = [30 * hi + 0 + hi, 30 * (hi // 2) + 0 + hi // 2]
    return table, scalars, want


def test_arrow_sums_never_wrap(monkeypatch) -> None:
    from dpspark.mechanisms.answers import arrow_kernel as arrow_answers
    from dpspark.mechanisms.answers.arrow_kernel import exact_sum, scalar_totals_arrow

    table, scalars, want = _overflow_table()
    assert 5000 * (1 << 51) >= 1 << 63  # the scenario overflows int64 per unit
    assert scalar_totals_arrow(table, scalars, "u") == want
    # row-level: 204,099 rows of |v| = 2^51, whose sum would pass 2^63 in int64
    rows = table.column("v").to_pylist()
    assert scalar_totals_arrow(table, scalars, None) == [sum(rows), sum(min(max(v, 0), (1 << 50)) for v in rows)]
    # the fold into Python ints and the multi-scan chunks give the same exact totals
    monkeypatch.setattr(arrow_answers, "FOLD_ROWS", 1000)
    monkeypatch.setattr(arrow_answers, "BATCH_ROWS", 999)
    monkeypatch.setattr(arrow_answers, "UNIT_CELLS", 41)
    assert scalar_totals_arrow(table, scalars, "u") == want
    import numpy as np

    v = np.full(10_000, (1 << 52) - 1, dtype=np.int64)
    assert exact_sum(v, (1 << 52) - 1) == 10_000 * ((1 << 52) - 1)
    assert exact_sum(-v, (1 << 52) - 1) == -10_000 * ((1 << 52) - 1)


@pytest.mark.spark
def test_spark_sums_never_wrap(spark, tmp_path: Path) -> None:
    from dpspark.mechanisms.answers.spark_kernel import scalar_totals

    table, scalars, want = _overflow_table()
    pq.write_table(table, tmp_path / "big.parquet")
    df = spark.read.parquet(str(tmp_path / "big.parquet"))
    old = spark.conf.get("spark.sql.ansi.enabled")
    try:
        for ansi in ("true", "false"):
            spark.conf.set("spark.sql.ansi.enabled", ansi)
            assert scalar_totals(df, scalars, "u", 1000) == want
    finally:
        spark.conf.set("spark.sql.ansi.enabled", old)


def test_sensitivity_past_2_63_is_refused_before_any_data() -> None:
    with pytest.raises(QueryError, match="< 2\\^63"):
        parse_queries([{"name": "s", "kind": "sum", "column": "x", "lo": "0", "hi": str(1 << 60), "scale_bits": 3}])
    parse_queries([{"name": "s", "kind": "sum", "column": "x", "lo": "0", "hi": str((1 << 60) - 1), "scale_bits": 3}])


# ----------------------------------------------------------------------------------------- attacker filters
@pytest.mark.parametrize("filt", [
    "raise_error('x')", "x > 0 AND raise_error(cast(x AS string)) IS NULL",
    "CASE WHEN x > 100 THEN raise_error('big') ELSE true END", "x / 0 > 1", "1 / (x - 3) > 0",
    "assert_true(x < 5)", "java_method('java.lang.System', 'exit', 1) = 1", "x > 0 OR my_udf(x) = 1",
    "x = (SELECT max(x) FROM t)", "x > 1 -- comment", "x > 1 /* c */",
])
def test_hostile_filters_are_refused_at_config_time(tmp_path: Path, filt: str) -> None:
    from dpspark.api.config import ConfigError, ReleaseSpec

    with pytest.raises(QueryError, match="query 'q': filter"):
        parse_queries([{"name": "q", "kind": "sum", "column": "x", "lo": "0", "hi": "1", "filter": filt}])
    (tmp_path / "in.csv").write_text("x\n1\n")
    raw = {"input": {"path": str(tmp_path / "in.csv")},
           "privacy": {"mechanism": "bounded_noise", "epsilon": "1", "delta": "1e-6", "max_units": 10},
           "queries": [{"name": "q", "kind": "count", "filter": filt}], "output": {"path": str(tmp_path / "out")}}
    with pytest.raises(ConfigError, match="query 'q': filter"):
        ReleaseSpec.from_dict(raw)
    assert not (tmp_path / "out").exists()


def test_type_mismatches_are_found_from_the_schema(tmp_path: Path) -> None:
    from dpspark.api.config import ReleaseSpec

    pq.write_table(pa.table({"x": [1.0]}), tmp_path / "in.parquet")

    def mech(queries):
        raw = {"input": {"path": str(tmp_path / "in.parquet")},
               "privacy": {"mechanism": "bounded_noise", "epsilon": "1", "delta": "1e-6", "max_units": 10},
               "queries": queries, "output": {"path": str(tmp_path / "out")}}
        return construct(ReleaseSpec.from_dict(raw))

    schema = pa.schema([("x", pa.float64()), ("g", pa.string()), ("b", pa.bool_()), ("d", pa.date32())])
    ok = mech([{"name": "q", "kind": "sum", "column": "x", "lo": "0", "hi": "1", "filter": "g = 'a' AND b = true"}])
    assert ok.input_schema_problem(schema) is None
    assert set(ok.input_columns()) >= {"x", "g", "b"}
    bad = mech([{"name": "q", "kind": "sum", "column": "g", "lo": "0", "hi": "1"}])
    assert "query 'q'" in bad.input_schema_problem(schema) and bad.input_schema_problem(schema, text_input=True) is None
    assert "string literal" in mech([{"name": "q", "kind": "count", "filter": "x = 'a'"}]).input_schema_problem(schema)
    assert "not a number" in mech([{"name": "q", "kind": "count", "filter": "d > 1"}]).input_schema_problem(schema)
    assert "no column" in mech([{"name": "q", "kind": "sum", "column": "z", "lo": "0", "hi": "1"}]
                               ).input_schema_problem(schema)


def test_arrow_release_on_hostile_csv_runs(tmp_path: Path) -> None:
    """A whole release (Arrow engine) over text full of junk: no exception, answers within their bounds."""
    from dpspark.api.config import ReleaseSpec
    from dpspark.engine.runner import run_release
    from dpspark.lookup import open_release
    from dpspark.rng import SeededRandom

    path = _csv(tmp_path)
    queries = [q for q, _ in QUERIES]
    raw = {"input": {"path": str(path)}, "queries": queries, "output": {"path": str(tmp_path / "rel")},
           "privacy": {"mechanism": "bounded_noise", "epsilon": "1", "delta": "1e-6", "max_units": 1000,
                       "unit_column": "u"}}
    rel = open_release(run_release(ReleaseSpec.from_dict(raw), rng=SeededRandom(5), progress=lambda _m: None,
                                   engine="arrow"))
    scalars, filters = _scalars()
    truth = dict(zip([s.label for s in scalars], reference(ROWS, scalars, filters, "u")))
    for q, _ in QUERIES:
        if q["kind"] == "sum":
            row = rel.row(q["name"])
            assert abs(row["value"] - Fraction(truth[q["name"]], 1 << q.get("scale_bits", 8))) <= row["R"]


def test_engines_for_filters_and_wide_bounds() -> None:
    """Filters no longer force Spark; only a clip range past the Arrow engine's exact 2^52 does (data-free)."""
    from dpspark.api.config import ReleaseSpec
    from dpspark.engine.backend import supported_engines
    from dpspark.mechanisms.registry import construct

    def spec(queries):
        return ReleaseSpec.from_dict({"privacy": {"mechanism": "bounded_noise", "epsilon": "1", "delta": "1e-6",
                                                  "max_units": 10}, "queries": queries,
                                      "output": {"path": "/tmp/dpspark-unused"}}, input_given=True)

    assert supported_engines(construct(spec([{"name": "c", "kind": "count", "filter": "g = 'a'"}]))) == \
        ("arrow", "spark")
    wide = [{"name": "s", "kind": "sum", "column": "x", "lo": "0", "hi": "1", "scale_bits": 52}]
    assert supported_engines(construct(spec(wide))) == ("spark",)
