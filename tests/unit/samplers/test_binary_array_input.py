"""The array form of the binary input (``[columns] array = "f"``, ``width = d``): config errors, the
pre-spend schema check, and equivalence with d named columns (packed words, bernoulli sums; Arrow and Spark)
on real Parquet files with nulls inside arrays, NULL arrays, short arrays and arrays longer than the width."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpspark.cli.app import main as cli
from dpspark.api.config import ConfigError, ReleaseSpec
from dpspark.engine.arrow.backend import ArrowBackend
from dpspark.engine.stages import SumsStage
from dpspark.errors import DPSparkError
from dpspark.ledger import Ledger
from dpspark.rng import SeededRandom
from dpspark.mechanisms.samplers.binary_input import MAX_COLUMNS, BinaryInput, expand_array, parse_binary_input
from dpspark.mechanisms.samplers.stages import column_sums
from dpspark.engine.spark.counts import InputError
from dpspark.mechanisms.registry import construct

LEARNER = {"mechanism": "product_learner", "epsilon": "1", "delta": "1/1000000000", "max_units": 500000,
           "unit_column": "id", "alpha": "1/2", "beta": "1/20"}


def _spec(tmp_path: Path, columns: dict, privacy: dict | None = None) -> ReleaseSpec:
    pq.write_table(pa.table({"id": [1]}), tmp_path / "stand_in.parquet")
    return ReleaseSpec.from_dict({"input": {"path": str(tmp_path / "stand_in.parquet")}, "columns": columns,
                                  "privacy": privacy or LEARNER, "output": {"path": str(tmp_path / "o")}})


# ------------------------------------------------------------------------------------------------ config
@pytest.mark.parametrize("columns, match", [
    ({"names": ["a"], "array": "f", "width": 1}, "mutually exclusive"),
    ({"names": ["a"], "width": 1}, "mutually exclusive"),
    ({}, "needs names or array"),
    ({"width": 3}, "needs names or array"),
    ({"array": "f"}, "array needs width"),
    ({"array": "f", "width": 0}, r"width must lie in \[1, 10000\]"),
    ({"array": "f", "width": -3}, r"width must lie in \[1, 10000\]"),
    ({"array": "f", "width": MAX_COLUMNS + 1}, r"width must lie in \[1, 10000\]"),
    ({"array": "f", "width": "12"}, "width must be an integer"),
    ({"array": "f", "width": 12.0}, "width must be an integer"),
    ({"array": "f", "width": True}, "width must be an integer"),
    ({"array": "", "width": 2}, "name of one array column"),
    ({"array": "f", "width": 2, "kind": "x"}, "unknown field"),
], ids=lambda v: str(v)[:40])
def test_config_errors(tmp_path: Path, columns: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match) as info:
        _spec(tmp_path, columns)
    assert isinstance(info.value, DPSparkError)


def test_config_names_and_input_columns(tmp_path: Path) -> None:
    inp = parse_binary_input({"array": "features", "width": 3})
    assert inp == BinaryInput(("features[0]", "features[1]", "features[2]"), "features")
    assert parse_binary_input({"names": ["a", "b"]}) == BinaryInput(("a", "b"))
    for mech, extra in (("product_learner", {}), ("product_sampler", {"alpha": "1"}),
                        ("bernoulli_sampler", {"delta": None, "alpha": None, "beta": None, "epsilon": "8"})):
        priv = {k: v for k, v in {**LEARNER, "mechanism": mech, **extra}.items() if v is not None}
        m = construct(_spec(tmp_path, {"array": "features", "width": 12}, priv))
        assert m.columns == tuple(f"features[{j}]" for j in range(12)) and m.d == 12
        assert m.input_columns() == ("features", "id")  # the preflight checks the array column and the unit


# ------------------------------------------------------------------------------------------------ preflight
BUDGET = '[budget]\nledger = "l.sqlite"\ndataset = "d"\ntotal_epsilon = "10"\ntotal_delta = "1e-6"\n'


def _release_config(tmp_path: Path, mech: str) -> Path:
    priv = ('mechanism = "bernoulli_sampler"\nepsilon = "8"\nmax_units = 500000\nunit_column = "id"\n'
            if mech == "bernoulli" else
            "\n".join(f'{k} = {v!r}' if isinstance(v, int) else f'{k} = "{v}"' for k, v in LEARNER.items()))
    path = tmp_path / "c.toml"
    path.write_text(f'[input]\npath = "in.parquet"\n[columns]\narray = "f"\nwidth = 12\n[privacy]\n{priv}\n'
                    f'[output]\npath = "rel"\n{BUDGET}', encoding="utf-8")
    return path


@pytest.mark.parametrize("mech", ["bernoulli", "learner"])
@pytest.mark.parametrize("column, why", [
    (None, "has no column(s) 'f'"),
    (pa.array([1, 0], pa.int64()), "must be an array of booleans or integers"),
    (pa.array([[0.5], [1.0]], pa.list_(pa.float64())), "is an array of double"),
    (pa.array([["a"], []], pa.list_(pa.string())), "is an array of string"),
], ids=["missing", "int", "double-array", "string-array"])
def test_bad_array_column_refused_before_the_spend(tmp_path: Path, capsys, monkeypatch, mech: str, column, why) -> None:
    import dpspark.engine.spark.local as session

    def refuse(*_a: object, **_k: object) -> None:
        raise AssertionError("Spark was started before the schema check refused the release")

    monkeypatch.setattr(session, "local_session", refuse)
    monkeypatch.setattr(session, "active_session", refuse)
    monkeypatch.chdir(tmp_path)
    cols = {"id": pa.array([1, 2], pa.int64())} | ({} if column is None else {"f": column})
    pq.write_table(pa.table(cols), tmp_path / "in.parquet")
    assert cli(["release", "--config", str(_release_config(tmp_path, mech))]) == 2
    err = capsys.readouterr().err
    assert why in err and "before any budget is spent" in err
    assert not (tmp_path / "rel").exists()
    ledger = tmp_path / "l.sqlite"
    assert not ledger.exists() or (Ledger(ledger).spent("d").epsilon == 0 and Ledger(ledger).releases("d") == [])


# ------------------------------------------------------------------------------------------------ data
D = 70  # two words: bit 63 is the sign bit of w0, bits 64..69 sit in w1


def _data(tmp_path: Path, *, boolean: bool, seed: int, rows: int = 240, d: int = D) -> tuple[Path, Path, list[str]]:
    """The same rows written as d named columns (cols.parquet) and as one array column ``f`` (array.parquet).

    Arrays: NULL (1 in 10), shorter than d, exactly d, or longer (junk beyond d); elements NULL 1 in 6;
    integer values in {-1, 0, 1, 2}; units with one to three rows."""
    gen = np.random.default_rng(seed)
    ids = gen.integers(0, rows // 2, size=rows)  # report: simulated data
    arrays: list[list | None] = []
    for _ in range(rows):
        if gen.random() < 0.1:  # report: simulated data
            arrays.append(None)
            continue
        length = int(gen.choice([0, 1, d // 2, 63, 64, d, d + 7]))
        vals = gen.integers(-1, 3, size=length)  # report: simulated data
        nulls = gen.random(length) < 1 / 6  # report: simulated data
        arrays.append([None if m else (bool(v) if boolean else int(v)) for v, m in zip(vals, nulls)])
    names = [f"x{j}" for j in range(d)]
    etype = pa.bool_() if boolean else pa.int8()
    cols = {n: pa.array([a[j] if a is not None and j < len(a) else None for a in arrays], etype)
            for j, n in enumerate(names)}
    id_col = pa.array(ids, pa.int64())
    pq.write_table(pa.table({"id": id_col, **cols}), tmp_path / f"cols{seed}.parquet")
    pq.write_table(pa.table({"id": id_col, "f": pa.array(arrays, pa.list_(etype))}), tmp_path / f"array{seed}.parquet")
    return tmp_path / f"cols{seed}.parquet", tmp_path / f"array{seed}.parquet", names


def _stage(columns: tuple[str, ...], batches: int | None) -> SumsStage:
    d = len(columns)
    return SumsStage(columns=columns, lo=(0,) * d, hi=(1,) * d, scale_bits=0, unit_column="id", max_units=1000,
                     batches=batches)


ELEMS = tuple(f"__dp_elem{j}" for j in range(D))


def _values(rows: list[dict], columns: tuple[str, ...]) -> list[list[int]]:
    return [[r["units"]] + [r[f"sum_{c}"] for c in columns] for r in rows]


def test_expand_array_is_the_named_columns(tmp_path: Path) -> None:
    cols, arr, names = _data(tmp_path, boolean=False, seed=1)
    a, c = pq.read_table(arr), pq.read_table(cols)
    for j, col in enumerate(expand_array(a.column("f"), "f", D)):
        assert col.equals(c.column(names[j]).combine_chunks()), j
    assert expand_array(a.slice(0, 0).column("f"), "f", 3)[2].to_pylist() == []  # no rows
    with pytest.raises(InputError, match="array of double"):
        expand_array(pa.array([[1.0]], pa.list_(pa.float64())), "f", 1)


@pytest.mark.parametrize("boolean", [False, True], ids=["int8", "bool"])
def test_bernoulli_sums_on_arrow_match_named_columns(tmp_path: Path, boolean: bool) -> None:
    cols, arr, names = _data(tmp_path, boolean=boolean, seed=2 + boolean)
    for batches in (None, 3):
        want = column_sums(ArrowBackend(str(cols), SeededRandom(1)), _stage(tuple(names), batches))
        got = column_sums(ArrowBackend(str(arr), SeededRandom(1)), _stage(ELEMS, batches), "f")
        assert _values(got, ELEMS) == _values(want, tuple(names))
        assert any(v not in (0, len(got)) for v in _values(got, ELEMS)[0][1:])  # a non-trivial input


# ------------------------------------------------------------------------------------------------ Spark
class _Ctx:
    """The stage context the product rounds and the sums need: df, batch key, pass count, progress."""

    passes_run = 0
    progress = staticmethod(lambda _m: None)

    def __init__(self, df) -> None:  # type: ignore[no-untyped-def]
        self.df = df

    def batch_secret(self) -> bytes:
        return b"k" * 16


@pytest.mark.parametrize("boolean", [False, True], ids=["int8", "bool"])
def test_array_words_are_the_named_columns_words(tmp_path: Path, boolean: bool) -> None:
    """The array packing (numpy packbits) gives the words _pack gives on d named columns, bit 63 included."""
    from dpspark.mechanisms.samplers.spark_arrays import array_words
    from dpspark.mechanisms.product.spark_rounds import _pack

    cols, arr, names = _data(tmp_path, boolean=boolean, seed=7 + boolean)
    c = pq.read_table(cols).combine_chunks().to_batches()[0]
    want = next(_pack(D)(iter([c])))
    got = array_words(pq.read_table(arr).column("f"), D)
    assert got.shape == (c.num_rows, 2)
    assert [got[:, i].tolist() for i in range(2)] == [want.column(i + 1).to_pylist() for i in range(2)]
    assert (got[:, 0] < 0).any() and (got[:, 1] != 0).any()  # bit 63 (the sign) and the second word in use
    assert array_words(pa.array([], pa.list_(pa.int8())), 3).shape == (0, 1)


@pytest.mark.spark
def test_spark_words_and_sums_match_named_columns(spark, tmp_path: Path) -> None:
    """prepare() packs the same words from the array as from d columns, and the bernoulli sums on Spark
    (get(array, j), ANSI on and off) equal those on Arrow, for both forms."""
    from dpspark.engine.spark.backend import SparkBackend
    from dpspark.mechanisms.product.spark_rounds import prepare

    cols, arr, names = _data(tmp_path, boolean=False, seed=4)
    dc, da = spark.read.parquet(str(cols)), spark.read.parquet(str(arr))
    assert dict(da.dtypes)["f"] == "array<tinyint>"
    want = sorted(tuple(r) for r in prepare(dc, names, "id", 8, b"s" * 16).collect())
    got = sorted(tuple(r) for r in prepare(da, names, "id", 8, b"s" * 16, array="f").collect())
    assert got == want
    assert any(w < 0 for r in want for w in r[:2]) and len(want) > 50  # bit 63 set somewhere; many units
    with pytest.raises(InputError, match="must be an array"):
        prepare(dc, names, "id", 8, b"s" * 16, array="x0")
    with pytest.raises(InputError, match="has no column"):
        prepare(dc, names, "id", 8, b"s" * 16, array="f")
    with pytest.raises(InputError, match="must be an array"):  # the bernoulli sums, too (schema only, no job)
        column_sums(SparkBackend(dc, SeededRandom(1)), _stage(ELEMS[:3], None), "x0")
    # the sums: a narrower input (Spark's plan for 70 decimal sums alone takes seconds to compile)
    cols, arr, names = _data(tmp_path, boolean=False, seed=14, d=12)
    elems = ELEMS[:12]
    arrow = column_sums(ArrowBackend(str(cols), SeededRandom(1)), _stage(tuple(names), 2))
    da = spark.read.parquet(str(arr))
    before = spark.conf.get("spark.sql.ansi.enabled")
    try:
        for ansi in ("true", "false"):
            spark.conf.set("spark.sql.ansi.enabled", ansi)
            ctx = SparkBackend(da, SeededRandom(1))
            assert _values(column_sums(ctx, _stage(elems, 2), "f"), elems) == _values(arrow, tuple(names)), ansi
            assert ctx.frame is da and ctx.passes_run == 1  # the backend's own frame is untouched; one pass counted
    finally:
        spark.conf.set("spark.sql.ansi.enabled", before)


@pytest.mark.spark
def test_bool_array_words_match_named_columns(spark, tmp_path: Path) -> None:
    from dpspark.mechanisms.product.spark_rounds import prepare

    cols, arr, names = _data(tmp_path, boolean=True, seed=5, rows=120)
    want = sorted(tuple(r) for r in prepare(spark.read.parquet(str(cols)), names, "id", 4, b"t" * 16).collect())
    got = sorted(tuple(r) for r in prepare(spark.read.parquet(str(arr)), names, "id", 4, b"t" * 16, "f").collect())
    assert got == want


# ------------------------------------------------------------------------------------------------ releases
def test_bernoulli_array_release_through_session(tmp_path: Path) -> None:
    """On Arrow: the array release draws exactly what the named-column release draws (same generator)."""
    from dpspark.api.session import Session

    cols, arr, names = _data(tmp_path, boolean=False, seed=6, rows=400, d=6)
    kw = {"mechanism": "bernoulli_sampler", "epsilon": "1/8", "samples": 2}
    s = Session(str(cols), max_units=400, unit_column="id", rng=SeededRandom(3))
    a = s.release(output=str(tmp_path / "named"), sections={"columns": {"names": names}}, **kw)
    s = Session(str(arr), max_units=400, unit_column="id", rng=SeededRandom(3))
    b = s.release(output=str(tmp_path / "array"), sections={"columns": {"array": "f", "width": 6}}, **kw)
    assert b.columns == [f"f[{j}]" for j in range(6)] and a.columns == names
    assert b.samples() == a.samples() and len(b.samples()) == 2


@pytest.mark.spark
def test_product_learner_array_release_through_session(spark, tmp_path: Path, capsys) -> None:
    from dpspark.lookup import open_release
    from dpspark.mechanisms.product.reader import DistributionLookup
    from dpspark.api.session import Session

    p = [0.5, 0.9, 0.2, 0.05, 0.01, 0.0]
    n = 120000
    x = np.random.default_rng(9).random((n, len(p))) < np.array(p)  # report: simulated data
    flat = pa.array(x.astype(np.int8).reshape(-1))
    offsets = pa.array(np.arange(0, n * len(p) + 1, len(p), dtype=np.int32))
    table = pa.table({"id": pa.array(np.arange(n), pa.int64()), "f": pa.ListArray.from_arrays(offsets, flat)})
    pq.write_table(table, tmp_path / "in.parquet")
    frame = spark.read.parquet(str(tmp_path / "in.parquet"))
    with Session(frame, max_units=n, unit_column="id", budget={"epsilon": "8", "delta": "1/1000000"},
                 rng=SeededRandom(7)) as s:
        rel = s.release(mechanism="product_learner", epsilon="4", delta="1/1000000000",
                        alpha="1", beta="1/10", sections={"columns": {"array": "f", "width": len(p)}},
                        output=tmp_path / "q")
    assert isinstance(rel, DistributionLookup)
    assert rel.columns == [f"f[{j}]" for j in range(len(p))]
    assert np.abs(rel.probabilities() - np.array(p)).max() < 0.1  # report: alpha = 1 at n = 120000
    assert open_release(tmp_path / "q").columns == rel.columns
    assert cli(["inspect", str(tmp_path / "q")]) == 0
    assert "f[0]=" in capsys.readouterr().out


@pytest.mark.spark
def test_session_refuses_a_bad_dataframe_schema_before_the_spend(spark, tmp_path: Path) -> None:
    """A Spark DataFrame given to Session is schema-checked (metadata only) before the session budget pays."""
    from dpspark.errors import DPSparkError
    from dpspark.api.session import Session

    frame = spark.createDataFrame([(1, "not an array", 1)], "id long, f string, x00 int")
    with Session(frame, max_units=100000, unit_column="id", budget={"epsilon": "8", "delta": "1/1000000"},
                 rng=SeededRandom(7)) as s:
        left = s.budget.remaining
        bad = [({"array": "f", "width": 3}, "array"), ({"array": "g", "width": 3}, "'g'"),
               ({"names": ["x00", "x01"]}, "'x01'")]
        for columns, said in bad:
            with pytest.raises(DPSparkError, match=said) as err:
                s.release(mechanism="product_learner", epsilon="4", delta="1/1000000000",
                          alpha="1", beta="1/10", sections={"columns": columns}, output=tmp_path / "q")
            assert "before any budget is spent" in str(err.value)
        assert s.budget.remaining == left  # nothing was spent
        assert not (tmp_path / "q").exists()
