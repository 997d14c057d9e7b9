"""Universe behaviour lives on the universe classes: no ``isinstance`` ladder over them elsewhere, and the
universe package imports neither Spark nor the layers above it."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[3] / "dpspark"
#: the kinds' classes (``isinstance(x, Universe)``, "is it a universe at all", asks no kind and is allowed)
UNIVERSE_CLASSES = {"IntRangeUniverse", "CategoricalUniverse", "BytesUniverse", "StringUniverse",
                    "HashedUniverse", "TupleUniverse", "_ShortlexUniverse"}
#: what dpspark.universe may not import: Spark, and every dpspark layer above it
UPWARD = ("pyspark", "py4j", "dpspark.engine", "dpspark.api", "dpspark.cli", "dpspark.mechanisms",
          "dpspark.release", "dpspark.lookup", "dpspark.noise", "dpspark.privacy")


def _names(node: ast.AST) -> set[str]:
    return {n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(node) if isinstance(n, (ast.Name, ast.Attribute))}


def class_tests(root: Path, skip: Path | None = None) -> list[str]:
    """``path:line`` of every isinstance/issubclass (or ``type(x) is``) test against a universe class."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if skip is not None and skip in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            hit = False
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
                    "isinstance", "issubclass") and len(node.args) == 2:
                hit = bool(_names(node.args[1]) & UNIVERSE_CLASSES)
            elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.Is, ast.IsNot, ast.Eq, ast.NotEq))
                                                       for op in node.ops):
                sides = [node.left, *node.comparators]
                hit = any(isinstance(s, ast.Call) and isinstance(s.func, ast.Name) and s.func.id == "type"
                          for s in sides) and any(_names(s) & UNIVERSE_CLASSES for s in sides)
            if hit:
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_no_universe_class_tests_outside_the_universe_package() -> None:
    """Code outside dpspark/universe asks a universe (key_kind, parts, words, parse_text, key_fields...),
    never which class it is."""
    assert class_tests(PACKAGE, skip=PACKAGE / "universe") == []


def test_the_check_finds_a_planted_ladder(tmp_path: Path) -> None:
    (tmp_path / "planted.py").write_text(
        "def f(u):\n"
        "    if isinstance(u, IntRangeUniverse):\n"
        "        return 1\n"
        "    if isinstance(u, (universe.BytesUniverse,\n"
        "                      StringUniverse)):\n"
        "        return 2\n"
        "    return type(u) is HashedUniverse\n"
        "ok = isinstance(3, int)\n",
        encoding="utf-8",
    )
    assert class_tests(tmp_path) == ["planted.py:2", "planted.py:4", "planted.py:7"]


def test_universe_imports_nothing_above_it() -> None:
    bad = []
    for path in sorted((PACKAGE / "universe").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            bad += [f"{path.name}: {n}" for n in names if n.startswith(UPWARD)]
    assert bad == []
