"""Rule 4: the Spark groups pass and the answers passes take one code path whatever a batch or a part holds.

A branch on a batch's or a part's row count (``if batch.num_rows: yield batch``, ``if part.rows: emit``), on
whether some rows need bounding or tie (``if len(crowded):``, ``if np.any(ties): lexsort``), or on whether a
truncation cut exists (``if cut is not None: keep = cut.kept(...)``, the cut being None only when the
input held at most n units) makes the work done, and so the time, depend on the data beyond its size. This test
reads the named per-batch functions (ast) and fails on any ``if``/``while`` whose test reads a row count or
compares a cut with None.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3] / "dpspark" / "mechanisms"
#: (module, function): the per-batch and per-partition steps made single-path (issue 35 §2, rule 4)
FUNCTIONS = [
    ("groups/spark_partials.py", "_chunks"),
    ("groups/spark_stats.py", "_part"),
    ("groups/spark_stats.py", "partition_stats"),
    ("groups/spark_stats.py", "summed_stats"),
    ("groups/spark_stats.py", "kept"),
    ("groups/core.py", "bound"),
    ("groups/core.py", "_bound_rounds"),
    ("groups/core.py", "_bound_sorted"),
    ("groups/core.py", "pair_pick"),
    ("groups/spark_rows.py", "first_read"),
    ("groups/spark_rows.py", "combined"),
    ("answers/arrow_kernel.py", "_batches"),
    ("answers/spark_arrow.py", "_chunks"),
    ("groups/arrow_pass.py", "add_reduced"),
    ("../engine/arrow/counts.py", "_first_k_per_unit"),
]
_COUNTS = {"num_rows", "rows", "null_count"}


def _data_branches(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.If, ast.IfExp, ast.While)):
            continue
        for n in ast.walk(node.test):
            counts = isinstance(n, ast.Attribute) and n.attr in _COUNTS
            no_cut = (isinstance(n, ast.Compare) and any(isinstance(c, ast.Constant) and c.value is None
                                                           for c in n.comparators)
                      and isinstance(n.left, ast.Name) and n.left.id == "cut")  # a default argument is public
            emptiness = (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "any"
                         and isinstance(n.func.value, ast.Name))  # ``if mask.any():``, ``if np.any(ties):``
            emptiness |= isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "len"
            if counts or no_cut or emptiness:
                lines.append(node.lineno)
                break
    return lines


def _function(path: Path, name: str) -> ast.AST:
    found = [n for n in ast.walk(ast.parse(path.read_text()))
             if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name]
    assert found, f"{path}: no function {name}"
    return found[0]


@pytest.mark.parametrize("module,name", FUNCTIONS, ids=lambda x: x)
def test_no_branch_on_the_rows_or_the_cut(module: str, name: str) -> None:
    assert _data_branches(_function(ROOT / module, name)) == [], f"{module}:{name}: a branch on the data (rule 4)"


def test_the_scan_finds_such_branches() -> None:
    """The check has teeth: each pattern this stop removed is found."""
    for src in ("if b.num_rows:\n    got.append(b)\n", "if part.rows:\n    out.append(p)\n",
                "if cut is not None:\n    keep = cut.kept(h)\n", "if is_read.any():\n    t = t.filter(m)\n",
                "x = a if batch.num_rows else b\n", "if len(crowded):\n    keep = rank(crowded)\n",
                "if np.any(sp[1:] == sp[:-1]):\n    order = np.lexsort(keys)\n"):
        assert _data_branches(ast.parse(src)) == [1], src
    assert _data_branches(ast.parse("if stage.unit_column is None:\n    pass\n")) == []  # a public branch
