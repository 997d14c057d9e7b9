"""The dpspark zip that ships to executors: contents, reproducible bytes, and importable where dpspark is not installed."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

import pytest

from dpspark.engine.spark.remote import package_zip
from tests.support.spark_procs import ROOT, ExecutorPython, make_executor_python


@pytest.fixture(scope="module")
def executor(tmp_path_factory: pytest.TempPathFactory) -> ExecutorPython:
    return make_executor_python(tmp_path_factory.mktemp("executor"))


def test_zip_holds_the_package_sources_and_data_and_no_caches(tmp_path: Path) -> None:
    names = set(zipfile.ZipFile(package_zip(tmp_path)).namelist())
    sources = {
        str(Path("dpspark") / p.relative_to(ROOT / "dpspark"))
        for p in (ROOT / "dpspark").rglob("*.py")
        if "__pycache__" not in p.parts
    }
    assert sources <= names
    assert {"dpspark/__init__.py", "dpspark/engine/spark/counts.py", "dpspark/py.typed"} <= names
    assert any(n.endswith(".json") for n in names)  # package data (the manifest schema)
    assert not [n for n in names if "__pycache__" in n or n.endswith((".pyc", ".nbi", ".nbc"))]


def test_zip_bytes_are_reproducible_and_match_the_script(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, second = package_zip(tmp_path / "a"), package_zip(tmp_path / "b")
    assert first.read_bytes() == second.read_bytes()
    out = subprocess.run(
        [str(ROOT / "scripts" / "package_job"), str(tmp_path / "script")],
        capture_output=True, text=True, timeout=120, check=True,
    )
    built = Path(out.stdout.strip().splitlines()[-1])
    assert built == tmp_path / "script" / "dpspark.zip"
    assert built.read_bytes() == first.read_bytes()


def test_executor_python_has_the_dependencies_but_not_dpspark(executor: ExecutorPython) -> None:
    # The precondition that makes the cluster and Connect tests prove code shipping.
    deps = subprocess.run([str(executor.python), "-c", "import numpy, pyarrow, gmpy2"], capture_output=True,
                          timeout=120)
    assert deps.returncode == 0, deps.stderr
    bare = subprocess.run([str(executor.python), "-c", "import dpspark"], capture_output=True, text=True,
                          timeout=60, cwd="/")
    assert bare.returncode != 0 and "No module named 'dpspark'" in bare.stderr


def test_the_zip_alone_lets_executors_import_the_mapinarrow_code(tmp_path: Path, executor: ExecutorPython) -> None:
    zipped = package_zip(tmp_path)
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import dpspark.engine.spark.counts as c; "
        "f = c.keyed_pick_hash(bytes(16)); print(c.__file__)"
    )
    out = subprocess.run([str(executor.python), "-c", code, str(zipped)], capture_output=True, text=True,
                         timeout=120, cwd="/")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(zipped / "dpspark" / "engine" / "spark" / "counts.py")
