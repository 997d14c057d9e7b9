"""The README's Python API example runs as written (on the shared local Spark session)."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[3] / "README.md"

pytestmark = pytest.mark.spark


def example() -> str:
    text = README.read_text(encoding="utf-8")
    block = re.search(r"<!-- readme-api-example -->\n```python\n(.*?)```", text, re.S)
    assert block, "README lost its Python API example"
    return block.group(1)


def test_readme_python_api_example_runs(spark, tmp_path: Path) -> None:
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(example(), "README.md", "exec"), {})  # noqa: S102 - our own README
    finally:
        os.chdir(cwd)
    printed = out.getvalue()
    assert "noisy_count" in printed
    assert not spark.sparkContext._jsc.sc().isStopped()  # the session reused the active one and left it running


def test_readme_families_example_runs(spark, tmp_path: Path) -> None:
    text = README.read_text(encoding="utf-8")
    block = re.search(r"<!-- readme-families-example -->\n```python\n(.*?)```", text, re.S)
    assert block, "README lost its answers/learner example"
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        with contextlib.redirect_stdout(out):
            env: dict = {}
            exec(compile(block.group(1), "README.md", "exec"), env)  # noqa: S102 - our own README
    finally:
        os.chdir(cwd)
    rel, row, first = env["rel"], env["row"], env["first"]
    truth = {"users": 2000, "spend": sum(min(i % 150, 100) for i in range(2000))}
    for name, value in rel.answers().items():
        assert abs(value - truth[name]) <= rel.bound(name)  # the probability-1 bound, on every answer
    assert abs(first["value"] - 2000) <= first["R"]
    assert len(row.sample) == 2 and set(row.sample) <= {0, 1}
    assert "replacement" in row.privacy
