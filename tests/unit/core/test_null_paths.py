"""Rule 4: a data pass takes one code path whatever the NULLs in its input.

A branch on a column's ``null_count`` (``if col.null_count: filter``) makes the work done, and so the time, depend
on whether the data holds a NULL. The groups and answers kernels always build and apply the validity mask instead.
This test reads their source (ast) and fails on any ``if`` whose test reads ``null_count``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3] / "dpspark" / "mechanisms"
#: the data-pass modules of the families whose passes this stop made single-path
PASSES = sorted([*(ROOT / "groups").glob("*.py"), *(ROOT / "answers").glob("*.py")])


def _branches_on_null_count(source: str) -> list[int]:
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.If, ast.IfExp, ast.While)):
            if any(isinstance(n, ast.Attribute) and n.attr == "null_count" for n in ast.walk(node.test)):
                lines.append(node.lineno)
    return lines


@pytest.mark.parametrize("path", PASSES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_branch_on_null_count(path: Path) -> None:
    assert _branches_on_null_count(path.read_text()) == [], f"{path}: a branch on null_count (rule 4)"


def test_the_scan_finds_such_a_branch() -> None:
    """The check has teeth: the pattern this stop removed is found."""
    assert _branches_on_null_count("if col.null_count:\n    t = t.filter(v)\n") == [1]
    assert len(PASSES) > 20
