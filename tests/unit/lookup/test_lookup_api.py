"""The lookup library: counts, vectorized counts, estimates, errors, verification, and no Spark."""

from __future__ import annotations

import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from dpspark.lookup import KeyNotInUniverseError, open_release
from dpspark.release import files as release_files
from dpspark.universe import CategoricalUniverse, IntRangeUniverse, StringUniverse, TupleUniverse
from tests.support.release_support import hand_release, write

AGE = IntRangeUniverse(0, 10**6, "age")
PAIR = TupleUniverse((CategoricalUniverse(("DE", "FR", "IT"), "country"), StringUniverse(6, "city")))


@pytest.fixture(scope="module")
def ages(tmp_path_factory: pytest.TempPathFactory) -> Path:
    gen = np.random.default_rng(5)  # test-input generation only
    indices = sorted(set(gen.integers(1, AGE.size + 1, size=5000).tolist()))
    counts = [i % 101 for i in indices]
    return write(tmp_path_factory.mktemp("ages"), AGE, ["age"], hand_release(AGE, indices, counts))


@pytest.fixture(scope="module")
def pairs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    keys = [("DE", "Köln"), ("FR", "Metz"), ("IT", "Roma"), ("DE", "Bonn")]
    idx = sorted((PAIR.encode(k), c) for k, c in zip(keys, [11, 22, 33, 44]))
    return write(tmp_path_factory.mktemp("pairs"), PAIR, ["country", "city"],
                 hand_release(PAIR, [i for i, _ in idx], [c for _, c in idx], per_query_above=-1))


def test_counts_match_scalar_counts_and_absent_is_zero(ages: Path) -> None:
    rel = open_release(ages)
    gen = np.random.default_rng(6)
    queries = gen.integers(0, 10**6 + 1, size=20000)
    got = rel.counts(queries)
    assert got.dtype == np.int64 and got.shape == (20000,)
    for q in queries[:300].tolist():
        assert got[queries.tolist().index(q)] == rel.count(q)
    released = dict(zip((i - 1 for i in _indices(rel)), _counts(rel)))
    assert got.tolist() == [released.get(q, 0) for q in queries.tolist()]
    assert rel.counts(pa.array(queries)).tolist() == got.tolist()
    assert rel.counts([]).tolist() == []


def _indices(rel):
    from dpspark.universe import index_from_bytes

    return [index_from_bytes(w) for w in rel.table(["index"]).column("index").to_pylist()]


def _counts(rel):
    return rel.table(["noisy_count"]).column("noisy_count").to_pylist()


def test_tuple_keys_as_tuples_table_or_struct(pairs: Path) -> None:
    rel = open_release(pairs)
    keys = [("DE", "Köln"), ("FR", "Metz"), ("IT", "Roma"), ("DE", "Bonn"), ("FR", "Nice")]
    expected = [11, 22, 33, 44, 0]
    assert [rel.count(k) for k in keys] == expected
    assert rel.count(["DE", "Bonn"]) == 44
    assert rel.counts(keys).tolist() == expected
    table = pa.table({"city": [k[1] for k in keys], "country": [k[0] for k in keys]})
    assert rel.counts(table).tolist() == expected
    struct = pa.StructArray.from_arrays([table["country"].combine_chunks(), table["city"].combine_chunks()], ["country", "city"])
    assert rel.counts(struct).tolist() == expected


def test_keys_outside_the_universe(pairs: Path, ages: Path) -> None:
    rel = open_release(pairs)
    with pytest.raises(KeyNotInUniverseError) as info:
        rel.count(("XX", "SecretTown"))
    assert "SecretTown" not in str(info.value) and "XX" not in str(info.value)  # never echoes the key
    with pytest.raises(KeyNotInUniverseError, match="1 of 2 keys.*position 1"):
        rel.counts([("DE", "Köln"), ("DE", "Frankfurt am Main")])  # longer than 6 bytes
    with pytest.raises(KeyNotInUniverseError, match="tuples of 2"):
        rel.counts(["DE"])
    ages_rel = open_release(ages)
    with pytest.raises(KeyNotInUniverseError, match=r"2 of 3 keys .*\(1 null\)"):
        ages_rel.counts(pa.array([5, None, -1], pa.int64()))
    with pytest.raises(KeyNotInUniverseError):
        ages_rel.count("5")
    with pytest.raises(KeyNotInUniverseError, match="wrong type"):
        ages_rel.counts(["5", "6"])
    with pytest.raises(KeyNotInUniverseError):
        ages_rel.counts([10**7])
    with pytest.raises(KeyNotInUniverseError):
        ages_rel.counts([2**70])  # beyond int64: the scalar path refuses it too


def test_estimate_states_the_condition(ages: Path, pairs: Path) -> None:
    rel = open_release(ages)
    est = rel.estimate(500)
    assert est.value == rel.count(500)
    assert (est.a, est.beta, est.holds_above) == (9, Fraction(1, 20), 12)
    assert (est.a_simultaneous, est.beta_simultaneous) == (14, Fraction(1, 20))
    assert "only if the exact count is > 12" in est.condition
    assert est.interval == (est.value - 9, est.value + 9)
    assert "every key" in open_release(pairs).estimate(("DE", "Bonn")).condition


def test_privacy_statement_in_words(ages: Path) -> None:
    text = open_release(ages).privacy
    assert "added or removed" in text and "n = 100" in text and "ln(41/32)" in text
    assert "Replacing one unit" in text and "ln(1681/1024)" in text
    assert "TEST-ONLY" in text  # written with the seeded generator's name


def test_checksums_are_verified_once(ages: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = release_files.sha256_file
    monkeypatch.setattr(release_files, "sha256_file", lambda *a: calls.append(a) or real(*a))
    rel = open_release(ages)
    assert len(calls) == 1
    rel.counts(list(range(1000)))
    rel.count(3)
    rel.estimate(4)
    assert len(calls) == 1
    rel.verify()
    assert len(calls) == 2
    open_release(ages, verify=False)
    assert len(calls) == 2


def test_importing_lookup_does_not_import_spark() -> None:
    code = (
        "import sys, dpspark.lookup, dpspark.release\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j', 'numba', 'galois', 'matplotlib')\n"
        "         or m.startswith(('dpspark.engine.spark', 'dpspark.mechanisms.histogram'))]\n"
        "assert not heavy, heavy\n"
        "print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_opening_and_looking_up_a_compact_release_stays_small() -> None:
    """Open + look up the compact KAV release: no Spark, no sparse histogram code, no writers, no engine.

    The compact reader lives in its family folder (mechanisms/compact/reader.py); the read side loads that
    codec and the algorithm parts it re-derives with, never a Mechanism class, the registry or the engine.
    """
    release = Path(__file__).resolve().parents[2] / "support" / "data" / "compact_kav" / "release"
    code = (
        "import sys\n"
        "from dpspark.lookup import open_release\n"
        f"rel = open_release({str(release)!r})\n"
        "rel.counts([1, 2, 3])\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j', 'flint')\n"
        "       or (m.startswith('dpspark.mechanisms') and m.split('.')[-1] in ('registry', 'base'))\n"
        "       or (m.startswith('dpspark.') and (m.split('.')[-1] in ('mechanism', 'writer',\n"
        "           'pure_sparse', 'ordstat', 'keepheavy') or m.split('.')[-1].startswith('spark_')\n"
        "           or m.startswith(('dpspark.engine', 'dpspark.api', 'dpspark.release.writer'))))]\n"
        "assert not bad, bad\n"
        "print(len([m for m in sys.modules if m.startswith('dpspark')]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    # 68 before the engine port, 73 after, 75 in family folders (+ text.py), 77 with one envelope and one kind
    # registry (+ release.kinds, the family's kind.py, release.header, release.counts_form; - lookup.readers,
    # release.sections, release.reader), 78 with gf.moduli (the moduli without numba: inspecting a compact
    # release loads no JIT)
    assert int(proc.stdout.strip()) <= 78


def test_opening_a_sparse_release_loads_no_compact_code(ages: Path) -> None:
    """Open + look up a sparse release: its codec (mechanisms/histogram/{kind,files,reader,layout}) and nothing
    of another family, no Mechanism, registry, engine, api, writer or Spark."""
    code = (
        "import sys\n"
        "from dpspark.lookup import open_release\n"
        f"rel = open_release({str(ages)!r})\n"
        "rel.counts([20, 21])\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j', 'numba', 'galois')\n"
        "       or m.startswith(('dpspark.mechanisms.compact', 'dpspark.engine', 'dpspark.api', 'dpspark.gf'))\n"
        "       or (m.startswith('dpspark.mechanisms') and m.split('.')[-1] in ('registry', 'base', 'mechanism',\n"
        "           'writer', 'pure_sparse', 'ordstat', 'keepheavy'))\n"
        "       or m.startswith('dpspark.release.writer')]\n"
        "assert not bad, bad\n"
        "print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
