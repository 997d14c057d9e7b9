"""Issue 20, sections 1-2, for the histogram, sampler, product and Gaussian families.

* types before the spend: a key column of the wrong type for its universe, a string column in a declared
  (Parquet) schema read as numbers or bits, are refused by the preflight, before any budget is spent;
* one null rule on both engines: NULL, NaN and unparseable text follow the declared ``nulls``, +-inf is a
  non-zero bit (binary) or clipped (Gaussian); Arrow and Spark (ANSI on and off) give identical sums and
  releases, and a non-numeric text value never reaches an exception.
"""

from __future__ import annotations

import csv
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpspark.cli.app import main as cli
from dpspark.api.config import ConfigError, load_config
from dpspark.engine.arrow.backend import ArrowBackend
from dpspark.engine.numeric import NullRule
from dpspark.engine.stages import SumsStage
from dpspark.engine.runner import run_release
from dpspark.ledger import Ledger
from dpspark.lookup import open_release
from dpspark.rng import SeededRandom
from dpspark.mechanisms.samplers.binary_input import parse_binary_input
from dpspark.mechanisms.samplers.stages import column_sums
from dpspark.mechanisms.registry import construct

#: a non-numeric text value that must never appear in any error message
SECRET = "zq-SECRET-77"
INF, NAN = float("inf"), float("nan")
# report: test inputs (floats only as data)
X_VALUES = [0.0, 1.0, None, NAN, INF, -INF, 2.5, -0.0, 1.0, 0.0, -3.0, 1e308]
Y_VALUES = [True, False, None, True]
Z_VALUES = [0, 1, None, -1, 2, 0, 1]
TEXT_VALUES = ["1", "0", "", SECRET, "1.0", "-2", "+0", "1e3", "nan", "inf", " 1", "0.0", "abc"]


def _bit(v: object, nulls: int) -> int:
    """The documented rule: 1 iff non-zero (inf included), the nulls value when missing."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return nulls
    return int(v != 0)


def _text_bit(v: str | None, nulls: int) -> int:
    """Text: a plain decimal number (NUMBER_PATTERN: no nan/inf words, no spaces) is parsed, else missing."""
    import re

    from dpspark.engine.numeric import NUMBER_PATTERN

    if v is None or v == "" or not re.match(NUMBER_PATTERN, v):
        return nulls
    return int(float(v) != 0)  # report: test oracle


def _messy(rows: int = 240) -> pa.Table:
    return pa.table({
        # half the units have two rows (the per-unit OR matters), half one row
        "u": pa.array([i // 2 if i < rows // 2 else i for i in range(rows)], pa.int64()),
        "x": pa.array([X_VALUES[i % len(X_VALUES)] for i in range(rows)], pa.float64()),
        "y": pa.array([Y_VALUES[i % len(Y_VALUES)] for i in range(rows)], pa.bool_()),
        "z": pa.array([Z_VALUES[i % len(Z_VALUES)] for i in range(rows)], pa.int8()),
    })


def _clean(table: pa.Table, nulls: int) -> pa.Table:
    """The same rows as 0/1 int8 bits, by the documented rule (the oracle)."""
    return pa.table({"u": table.column("u")} | {
        c: pa.array([_bit(v, nulls) for v in table.column(c).to_pylist()], pa.int8()) for c in ("x", "y", "z")})


def _stage(batches: int | None = 2) -> SumsStage:
    return SumsStage(columns=("x", "y", "z"), lo=(0,) * 3, hi=(1,) * 3, scale_bits=0, unit_column="u",
                     max_units=1000, batches=batches)


def _write_text_csv(path: Path, rows: int = 130) -> list[list[str | None]]:
    """A CSV of text bits (every column a string to both readers), junk included; returns the cells."""
    cells = [[str(i // 2), TEXT_VALUES[i % len(TEXT_VALUES)], TEXT_VALUES[(3 * i + 1) % len(TEXT_VALUES)]]
             for i in range(rows)]
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["u", "a", "b"])
        w.writerows(cells)
    return cells


# ------------------------------------------------------------------------------------------------ config
def test_binary_nulls_field() -> None:
    assert parse_binary_input({"names": ["a"]}).nulls == 0  # default: today's rule, stated
    assert parse_binary_input({"names": ["a"], "nulls": 1}).nulls == 1
    assert parse_binary_input({"array": "f", "width": 2, "nulls": "1"}).nulls == 1
    with pytest.raises(ValueError, match="divide by the public n"):
        parse_binary_input({"names": ["a"], "nulls": "drop"})
    with pytest.raises(ValueError, match="0 or 1"):
        parse_binary_input({"names": ["a"], "nulls": "1/2"})
    with pytest.raises(ValueError, match="float"):
        parse_binary_input({"names": ["a"], "nulls": 1.0})


def test_gaussian_nulls_field() -> None:
    from dpspark.mechanisms.gaussian_model.mechanism import parse_gaussian

    base = {"columns": ["a"], "radius": "10", "kappa": "2"}
    assert parse_gaussian(base)["nulls"] == NullRule()  # default: drop
    assert parse_gaussian({**base, "nulls": "1/2"})["nulls"] == NullRule(Fraction(1, 2))
    with pytest.raises(ValueError, match="gaussian.nulls"):
        parse_gaussian({**base, "nulls": "maybe"})


# ------------------------------------------------------------------------------------------------ Arrow
def test_arrow_binary_sums_follow_the_rule(tmp_path: Path) -> None:
    """NULL / NaN count the nulls value, +-inf and any non-zero value 1: the sums of the messy table are the
    sums of its documented 0/1 image, and the declared value matters."""
    pq.write_table(_messy(), tmp_path / "m.parquet")
    out = {}
    for nulls in (0, 1):
        pq.write_table(_clean(_messy(), nulls), tmp_path / "c.parquet")
        got = column_sums(ArrowBackend(str(tmp_path / "m.parquet"), SeededRandom(1)), _stage(None), None, nulls)
        want = column_sums(ArrowBackend(str(tmp_path / "c.parquet"), SeededRandom(1)), _stage(None), None, nulls)
        assert got == want
        out[nulls] = got[0]
    assert out[0]["units"] == out[1]["units"] == 180
    assert out[0]["sum_y"] < out[1]["sum_y"] and out[0]["sum_z"] < out[1]["sum_z"]  # the rule decides


def test_arrow_text_bits_never_raise(tmp_path: Path) -> None:
    cells = _write_text_csv(tmp_path / "t.csv")
    stage = SumsStage(columns=("a", "b"), lo=(0, 0), hi=(1, 1), scale_bits=0, unit_column="u", max_units=1000)
    got = column_sums(ArrowBackend(str(tmp_path / "t.csv"), SeededRandom(1)), stage, None, 0)
    per_unit: dict[str, list[int]] = {}
    for u, a, b in cells:
        acc = per_unit.setdefault(u, [0, 0])
        acc[0] |= _text_bit(a, 0)
        acc[1] |= _text_bit(b, 0)
    assert [got[0]["sum_a"], got[0]["sum_b"]] == [sum(v[0] for v in per_unit.values()),
                                                  sum(v[1] for v in per_unit.values())]


def test_bernoulli_release_on_messy_data_is_the_release_on_its_clean_image(tmp_path: Path) -> None:
    from dpspark.api.session import Session

    pq.write_table(_messy(), tmp_path / "m.parquet")
    pq.write_table(_clean(_messy(), 1), tmp_path / "c.parquet")
    kw = {"mechanism": "bernoulli_sampler", "epsilon": "1/8", "samples": 2,
          "sections": {"columns": {"names": ["x", "y", "z"], "nulls": 1}}}
    a = Session(str(tmp_path / "m.parquet"), max_units=400, unit_column="u", rng=SeededRandom(3)).release(
        output=str(tmp_path / "a"), **kw)
    b = Session(str(tmp_path / "c.parquet"), max_units=400, unit_column="u", rng=SeededRandom(3)).release(
        output=str(tmp_path / "b"), **kw)
    assert a.samples() == b.samples() and len(a.samples()) == 2


# ------------------------------------------------------------------------------------------------ before the spend
def _no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    import dpspark.engine.spark.local as session

    def refuse(*_a: object, **_k: object) -> None:
        raise AssertionError("Spark was started before a data-free check refused the release")

    monkeypatch.setattr(session, "local_session", refuse)
    monkeypatch.setattr(session, "active_session", refuse)


BUDGET = '[budget]\nledger = "l.sqlite"\ndataset = "d"\ntotal_epsilon = "10"\ntotal_delta = "1/1000"\n'
REFUSED = {
    "bernoulli_string": ('[columns]\nnames = ["x", "s"]\n[privacy]\nmechanism = "bernoulli_sampler"\n'
                         'epsilon = "1/4"\nmax_units = 400\nunit_column = "u"\n', "column 's' has type string"),
    "product_struct": ('[columns]\nnames = ["x", "st"]\n[privacy]\nmechanism = "product_learner"\nepsilon = "1"\n'
                       'delta = "1/10000000"\nmax_units = 1000000\nunit_column = "u"\n', "column 'st' has type struct"),
    "gaussian_string": ('[gaussian]\ncolumns = ["x", "s"]\nradius = "10"\nkappa = "2"\n[privacy]\n'
                        'mechanism = "gaussian_learner"\nepsilon = "1"\ndelta = "1/1000000"\nmax_units = 1000\n'
                        'unit_column = "u"\n', "gaussian.columns: column 's' has type string"),
    "int_range_by_string": ('[keys]\ncolumns = ["s"]\n[universe]\nkind = "int_range"\nlo = 0\nhi = 9\n[privacy]\n'
                            'mechanism = "stability"\nepsilon = "1"\ndelta = "1/1000000"\nmax_units = 400\n'
                            'unit_column = "u"\n', "key column 's' has type string"),
    "string_by_int": ('[keys]\ncolumns = ["i"]\n[universe]\nkind = "string"\nmax_bytes = 4\n[privacy]\n'
                      'mechanism = "pure_sparse"\nepsilon = "1"\nmax_units = 400\nunit_column = "u"\n',
                      "key column 'i' has type int64"),
    "string_by_binary": ('[keys]\ncolumns = ["bin"]\n[universe]\nkind = "categorical"\nvalues = ["a", "b"]\n'
                         '[privacy]\nmechanism = "kary_sampler"\nepsilon = "1"\nmax_units = 400\nunit_column = "u"\n',
                         "key column 'bin' has type binary"),
    "tuple_second_float": ('[keys]\ncolumns = ["i", "x"]\n[universe]\nkind = "tuple"\n[[universe.components]]\n'
                           'kind = "int_range"\nlo = 0\nhi = 3\n[[universe.components]]\nkind = "int_range"\nlo = 0\n'
                           'hi = 3\n[privacy]\nmechanism = "compact"\nepsilon = "1"\nmax_units = 400\n'
                           'unit_column = "u"\n', "key column 'x' has type double"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_wrong_types_refused_before_any_spend(tmp_path: Path, capsys, monkeypatch, case: str) -> None:
    _no_spark(monkeypatch)
    body, message = REFUSED[case]
    pq.write_table(pa.table({
        "u": pa.array(range(4), pa.int64()), "x": [0.0, 1.0, 1.0, 0.0], "s": [SECRET, "1", "0", "1"],
        "i": pa.array([1, 2, 3, 0], pa.int64()), "bin": [b"a", b"b", b"a", b"a"],
        "st": [{"f": 1}, {"f": 0}, None, {"f": 1}]}), tmp_path / "in.parquet")
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[input]\npath = "in.parquet"\n{body}[output]\npath = "out"\n{BUDGET}', encoding="utf-8")
    if "universe.components" in body:  # the config's own loader must take a tuple universe
        load_config(cfg)
    assert cli(["release", "--config", str(cfg)]) != 0
    err = capsys.readouterr().err
    assert message in err and "before any budget is spent" in err, err
    assert SECRET not in err
    ledger = tmp_path / "l.sqlite"
    assert not ledger.exists() or Ledger(ledger).spent("d").epsilon == 0
    assert not (tmp_path / "out").exists()


def test_text_inputs_take_strings_for_numbers_and_integer_keys(tmp_path: Path) -> None:
    """CSV / JSON: the types come from the data, so a string column may stand for numbers or integer keys."""
    schema = pa.schema([("u", pa.string()), ("s", pa.string())])
    for case in ("bernoulli_string", "int_range_by_string", "gaussian_string"):
        body, _ = REFUSED[case]
        (tmp_path / "in.csv").write_text("u,x,s\n1,1,1\n")
        cfg = tmp_path / f"{case}.toml"
        cfg.write_text(f'[input]\npath = "in.csv"\n{body}[output]\npath = "out"\n', encoding="utf-8")
        mech = construct(load_config(cfg))
        assert mech.input_schema_problem(schema, text_input=True) is None, case
        assert mech.input_schema_problem(schema) is not None, case


# ------------------------------------------------------------------------------------------------ Spark
def _ansi(spark: object) -> object:
    """Yield once with ANSI on and once off, restoring the session's setting."""
    before = spark.conf.get("spark.sql.ansi.enabled")  # type: ignore[attr-defined]
    try:
        for value in ("true", "false"):
            spark.conf.set("spark.sql.ansi.enabled", value)  # type: ignore[attr-defined]
            yield value
    finally:
        spark.conf.set("spark.sql.ansi.enabled", before)  # type: ignore[attr-defined]


@pytest.mark.spark
def test_spark_binary_sums_match_arrow(spark, tmp_path: Path) -> None:
    """Bernoulli column sums: messy Parquet (NULL, NaN, +-inf, non-0/1) and a CSV of junk text give the
    same totals on Spark, ANSI on and off, as on Arrow; nothing raises."""
    from dpspark.engine.spark.backend import SparkBackend

    pq.write_table(_messy(), tmp_path / "m.parquet")
    _write_text_csv(tmp_path / "t.csv")
    text_stage = SumsStage(columns=("a", "b"), lo=(0, 0), hi=(1, 1), scale_bits=0, unit_column="u",
                           max_units=1000, batches=2)
    want_m = column_sums(ArrowBackend(str(tmp_path / "m.parquet"), SeededRandom(1)), _stage(), None, 1)
    want_t = column_sums(ArrowBackend(str(tmp_path / "t.csv"), SeededRandom(1)), text_stage, None, 0)
    dm = spark.read.parquet(str(tmp_path / "m.parquet"))
    dt = spark.read.option("header", "true").option("inferSchema", "false").csv(str(tmp_path / "t.csv"))
    # the array form: NULL arrays, short arrays and NULL elements are missing bits (nulls = 1 here)
    arrays = [None, [], [0, None, 2], [1, 0, 0, 5], [None, None, None], [0, 0]]
    pq.write_table(pa.table({"u": pa.array(range(120), pa.int64()),
                             "f": pa.array([arrays[i % len(arrays)] for i in range(120)], pa.list_(pa.int16()))}),
                   tmp_path / "a.parquet")
    elems = tuple(f"__dp_elem{j}" for j in range(3))
    arr_stage = SumsStage(columns=elems, lo=(0,) * 3, hi=(1,) * 3, scale_bits=0, unit_column="u", max_units=1000)
    want_a = column_sums(ArrowBackend(str(tmp_path / "a.parquet"), SeededRandom(1)), arr_stage, "f", 1)
    assert [want_a[0][f"sum_{e}"] for e in elems] == [80, 80, 100]  # 0s: 2, 2 and 1 of the 6 arrays
    da = spark.read.parquet(str(tmp_path / "a.parquet"))
    for ansi in _ansi(spark):
        assert column_sums(SparkBackend(dm, SeededRandom(1)), _stage(), None, 1) == want_m, ansi
        assert column_sums(SparkBackend(dt, SeededRandom(1)), text_stage, None, 0) == want_t, ansi
        assert column_sums(SparkBackend(da, SeededRandom(1)), arr_stage, "f", 1) == want_a, ansi


@pytest.mark.spark
def test_bernoulli_csv_release_same_on_both_engines(spark, tmp_path: Path) -> None:
    _write_text_csv(tmp_path / "t.csv", rows=400)
    cfg = tmp_path / "c.toml"
    cfg.write_text('[input]\npath = "t.csv"\n[columns]\nnames = ["a", "b"]\nnulls = 1\n[privacy]\n'
                   'mechanism = "bernoulli_sampler"\nepsilon = "1/8"\nmax_units = 400\nunit_column = "u"\n'
                   'samples = 2\n[output]\npath = "out"\n', encoding="utf-8")
    a = open_release(run_release(load_config(cfg, output=str(tmp_path / "a")), rng=SeededRandom(6),
                                 progress=lambda _m: None, engine="arrow"))
    for ansi in _ansi(spark):
        s = open_release(run_release(load_config(cfg, output=str(tmp_path / f"s{ansi}")), spark=spark,
                                     rng=SeededRandom(6), progress=lambda _m: None))
        assert s.samples() == a.samples(), ansi


@pytest.mark.spark
@pytest.mark.parametrize("nulls", [0, 1])
def test_product_words_follow_the_rule(spark, tmp_path: Path, nulls: int) -> None:
    """The product rounds' packed records: messy columns (float with NaN/inf, bool and int8 with NULLs, and
    text with junk) pack to the words of their documented 0/1 image, ANSI on and off."""
    from dpspark.mechanisms.product.spark_rounds import prepare

    pq.write_table(_messy(), tmp_path / "m.parquet")
    pq.write_table(_clean(_messy(), nulls), tmp_path / "c.parquet")
    dm, dc = spark.read.parquet(str(tmp_path / "m.parquet")), spark.read.parquet(str(tmp_path / "c.parquet"))
    cells = _write_text_csv(tmp_path / "t.csv")
    dt = spark.read.option("header", "true").csv(str(tmp_path / "t.csv"))
    img = pa.table({"u": [c[0] for c in cells], "a": pa.array([_text_bit(c[1], nulls) for c in cells], pa.int8()),
                    "b": pa.array([_text_bit(c[2], nulls) for c in cells], pa.int8())})
    pq.write_table(img, tmp_path / "ti.parquet")
    di = spark.read.parquet(str(tmp_path / "ti.parquet"))
    key = b"k" * 16

    def words(df: object, cols: list[str]) -> list[tuple]:
        return sorted(tuple(r) for r in prepare(df, cols, "u", 8, key, nulls=nulls).collect())

    want = words(dc, ["x", "y", "z"])
    want_t = words(di, ["a", "b"])
    for ansi in _ansi(spark):
        assert words(dm, ["x", "y", "z"]) == want, ansi
        assert words(dt, ["a", "b"]) == want_t, ansi


@pytest.mark.spark
@pytest.mark.parametrize("rule", [NullRule(), NullRule(Fraction(1, 2))], ids=["drop", "impute"])
def test_gaussian_sufficient_statistics_follow_the_rule(spark, tmp_path: Path, rule: NullRule) -> None:
    """The Gaussian source on Spark (ANSI on and off) and the driver source agree on the pair count, the
    single count and the exact second moments of data full of NULL, NaN and +-inf; text junk is missing."""
    from dpspark.mechanisms.gaussian_model.fixed import quantise_matrix
    from dpspark.mechanisms.gaussian_model.source import ArraySource
    from dpspark.mechanisms.gaussian_model.spark_pairs import SparkGaussianSource

    gen = np.random.default_rng(5)
    n = 600
    a = gen.normal(size=n)  # report: simulated data
    b = gen.normal(size=n)  # report: simulated data
    a[::7] = np.nan
    b[3::11] = np.inf
    b[5::13] = -np.inf
    a_list = [None if i % 17 == 0 else float(v) for i, v in enumerate(a)]  # report: NULLs beside the NaNs
    ids = np.arange(n, dtype=np.int64) // 1
    ids[::10] = ids[1::10]  # some units with two rows: not singles
    pq.write_table(pa.table({"uid": ids, "a": pa.array(a_list, pa.float64()), "b": b}), tmp_path / "g.parquet")
    values = np.column_stack([[np.nan if v is None else v for v in a_list], b])
    ref = ArraySource(values, 10, bytes(range(16)), 500, ids, nulls=rule)
    m = quantise_matrix(np.array([[0.5, 0.25], [-0.125, 1.0]]), 8)
    df = spark.read.parquet(str(tmp_path / "g.parquet"))
    for ansi in _ansi(spark):
        src = SparkGaussianSource(df, ["a", "b"], "uid", 10, 500, bytes(range(16)), kernel="arrow", nulls=rule)
        try:
            assert src.pair_count() == ref.pair_count() > 0, ansi
            assert src.single_count() == ref.single_count() > 0, ansi
            assert src.second_moments(m, 1 << 60) == ref.second_moments(m, 1 << 60), ansi
        finally:
            src.close()
    # text: junk in a CSV column is missing, exactly like an empty (NULL) cell
    rows = [(str(i), str(round(float(v), 3)) if i % 9 else SECRET, "1") for i, v in enumerate(gen.normal(size=80))]
    clean = [(u, "" if x == SECRET else x, y) for u, x, y in rows]
    for name, data in (("junk.csv", rows), ("clean.csv", clean)):
        with (tmp_path / name).open("w", newline="") as f:
            csv.writer(f).writerows([("uid", "a", "b"), *data])
    got = []
    for name in ("junk.csv", "clean.csv"):
        df = spark.read.option("header", "true").csv(str(tmp_path / name))
        src = SparkGaussianSource(df, ["a", "b"], "uid", 10, 60, bytes(range(16)), kernel="arrow", nulls=rule)
        try:
            got.append((src.pair_count(), src.single_count(), src.second_moments(m, 1 << 60)))
        finally:
            src.close()
    assert got[0] == got[1] and got[0][1] > 0


@pytest.mark.spark
def test_int_keys_from_text_same_counts_on_both_engines(spark, tmp_path: Path) -> None:
    """An int_range histogram over a CSV (every column a string): "5", "+5" and "05" are key 5, junk is a
    NULL key (dropped); the same counts on Arrow and Spark (ANSI on and off), with and without units."""
    from dataclasses import replace

    from dpspark.engine.spark.backend import SparkBackend
    from dpspark.engine.stages import CountsStage
    from dpspark.universe import IntRangeUniverse

    keys = ["5", "+5", "05", SECRET, "", "7", "1.0", "99999999999999999999", "3", " 3"]
    with (tmp_path / "k.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["u", "k"])
        w.writerows([(str(i % 37), keys[i % len(keys)]) for i in range(200)])
    stage = CountsStage(key_columns=("k",), universe=IntRangeUniverse(0, 9, column="k"), unit_column="u",
                        out_of_universe="error", max_units=1000, max_keys_per_unit=3)
    df = spark.read.option("header", "true").csv(str(tmp_path / "k.csv"))
    for st in (stage, replace(stage, unit_column=None, max_keys_per_unit=1)):
        want = ArrowBackend(str(tmp_path / "k.csv"), SeededRandom(2)).compute(st)
        assert want[0] == [3, 5, 7] and sum(want[1]) > 0  # keys 3, 5, 7 of [0, 9]: junk never errs
        for ansi in _ansi(spark):
            assert SparkBackend(df, SeededRandom(2)).compute(st) == want, ansi


@pytest.mark.parametrize("body", [
    '[columns]\nnames = ["a"]\n[privacy]\nmechanism = "bernoulli_sampler"\nepsilon = "1"\nmax_units = 400000\n'
    'unit_column = "u"\n',
    '[keys]\ncolumns = ["a"]\n[universe]\nkind = "int_range"\nlo = 0\nhi = 9\n[privacy]\nmechanism = "dense"\n'
    'epsilon = "1"\nmax_units = 400000\nunit_column = "u"\n'], ids=["bernoulli", "histogram"])
def test_csv_infer_schema_conversion_error_quotes_no_value(tmp_path: Path, capsys, body: str) -> None:
    """Arrow infers a CSV's types from its first block: a later value that does not fit fails the scan, and
    Arrow's message would quote it. The engine says what happened without the value."""
    rows = "".join(f"{i},1\n" for i in range(300_000))
    (tmp_path / "in.csv").write_text(f"u,a\n{rows}5,{SECRET}\n")
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[input]\npath = "in.csv"\noptions = {{inferSchema = "true"}}\n{body}[output]\npath = "out"\n',
                   encoding="utf-8")
    assert cli(["release", "--config", str(cfg), "--engine", "arrow"]) != 0
    err = capsys.readouterr().err
    assert "withheld" in err and SECRET not in err, err


@pytest.mark.parametrize("nulls", [0, 1])
def test_array_form_missing_elements_follow_the_rule(nulls: int) -> None:
    """[columns] array: a NULL array, a short array and a NULL element are missing bits (the nulls value);
    the packed words of the rounds and the element bits of the sums agree with the named-column rule."""
    from dpspark.mechanisms.samplers.binary_input import binary_bits, expand_array
    from dpspark.mechanisms.samplers.spark_arrays import array_words

    width = 70  # two words, bit 63 in use
    rows = [None, [], [0, 1, None, 2, -1], [1] * 80, [None] * 70, [0] * 69, [3, 0]]
    values = pa.array(rows, pa.list_(pa.int8()))
    want = np.zeros((len(rows), width), dtype=np.uint8)
    for i, r in enumerate(rows):
        for j in range(width):
            v = r[j] if r is not None and j < len(r) else None
            want[i, j] = _bit(v, nulls)
    elems = np.column_stack([binary_bits(e, nulls) for e in expand_array(values, "f", width)])
    assert (elems == want).all()
    words = array_words(values, width, nulls).view(np.uint64)
    got = np.array([[(int(words[i, j // 64]) >> (j % 64)) & 1 for j in range(width)] for i in range(len(rows))])
    assert (got == want).all()
    assert want[0].sum() == (width if nulls else 0)  # a NULL array: every bit is missing


@pytest.mark.spark
@pytest.mark.slow
def test_gaussian_release_on_junk_csv_is_the_release_with_nulls(spark, tmp_path: Path, capsys) -> None:
    """gaussian_covariance end to end on Spark with ANSI on: a CSV whose cells hold junk text, NaN and inf
    releases exactly what the same CSV with those cells empty (NULL) releases (same seed; nulls = "drop",
    the default, stated by inspect). About a minute on 2 cores."""
    gen = np.random.default_rng(11)
    x = gen.multivariate_normal([1.0, -2.0], [[4.0, 1.0], [1.0, 2.0]], size=4000)  # report: simulated data
    junk = [SECRET, "nan", "abc", "1,5"]
    rows, clean = [], []
    for i, (a, b) in enumerate(x):
        cell = junk[i % 4] if i % 23 == 0 else f"{a:.6f}"  # report: test data
        rows.append((str(i), cell, f"{b:.6f}"))
        clean.append((str(i), "" if i % 23 == 0 else cell, f"{b:.6f}"))
    for name, data in (("junk", rows), ("clean", clean)):
        (tmp_path / name).mkdir()
        with (tmp_path / name / "in.csv").open("w", newline="") as f:
            csv.writer(f).writerows([("uid", "a", "b"), *data])
        (tmp_path / name / "c.toml").write_text(
            '[input]\npath = "in.csv"\n[gaussian]\ncolumns = ["a", "b"]\nradius = "10"\nkappa = "20"\n[privacy]\n'
            'mechanism = "gaussian_covariance"\nepsilon = "4"\ndelta = "1/1000000000"\nmax_units = 4000\n'
            'unit_column = "uid"\n[output]\npath = "release"\n', encoding="utf-8")
    before = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", "true")
    try:
        rels = [open_release(run_release(load_config(tmp_path / name / "c.toml"), spark=spark, rng=SeededRandom(5),
                                         progress=lambda _m: None)) for name in ("junk", "clean")]
    finally:
        spark.conf.set("spark.sql.ansi.enabled", before)
    assert (rels[0].covariance() == rels[1].covariance()).all()
    assert rels[0].parameters["nulls"] == "drop"
    assert cli(["inspect", str(tmp_path / "junk" / "release")]) == 0
    out = capsys.readouterr().out
    assert "dropped" in out and SECRET not in out
