"""Apply scripts/dev/layout_map.toml to a checkout: move every dpspark module, rewrite every reference to it.

Usage (from the root of a CLEAN checkout; it refuses a dirty tree or one already moved)::

    python3 scripts/dev/move_layout.py            # move and rewrite, leaves the result uncommitted
    python3 scripts/dev/move_layout.py --plan     # print what would move, touch nothing

What it does, in order:

1. checks the map: every ``dpspark/**/*.py`` listed exactly once, no two destinations equal;
2. ``git mv`` each file (and the package data files), creates the ``__init__.py`` files of new packages,
   deletes emptied old directories (a leftover directory would import as a namespace package);
3. rewrites references in dpspark/, tests/, scripts/, jobs/, docs/, conf/, README.md and pyproject.toml:
   * ``from dpspark.a import b`` where ``b`` is a moved submodule -> ``from <new parent> import <new name> as b``;
   * every dotted name ``dpspark.a.b[.attr]`` (imports, ``import_module`` and registry strings
     ``"dpspark.a.b:Class"``, monkeypatch targets ``"dpspark.engine.runner._run"``, ``:mod:`` references), by its
     longest moved prefix;
   * file paths ``dpspark/a/b.py`` and directories ``dpspark/a/``, also spelled ``"dpspark" / "a" / "b.py"``;
   * the relative submodule names of the lazy ``_NAMES`` tables (``lazy_exports(__name__, _NAMES)``);
     a name that left its package becomes absolute, which ``dpspark/_lazy.py`` is patched to accept.
   Dotted names that a release's manifest states (found in the committed golden fixtures, e.g. the
   derivation text "dpspark.mechanisms.histogram.stability") are left alone inside string literals, so that outputs
   stay bit-identical; JSON files (fixtures, schemas) are never rewritten.
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import subprocess
import sys
import tokenize
import tomllib
from pathlib import Path

MAP = Path(__file__).with_name("layout_map.toml")
#: where references are rewritten (JSON is data: golden fixtures and schemas are never rewritten)
TREES = ("dpspark", "tests", "scripts", "jobs", "docs", "conf")
FILES = ("README.md", "pyproject.toml")
TEXT_SUFFIXES = {".py", ".md", ".toml", ".sh", ".txt", ".cfg", ".ini", ".conf", ".properties", ".yml", ".yaml", ""}
GOLDEN = ("tests/support", "tests/data")

DOTTED = re.compile(r"(?<![\w.])dpspark(?:\.[A-Za-z_]\w*)+")
PATH = re.compile(r"(?<![\w/.-])dpspark/(?:\w+/)*(?:\w+\.py\b)?")
JOINED = re.compile(r'"dpspark"((?:\s*/\s*"\w+(?:\.py)?")+)')
HOLD = "dpspark\x01"  # a new name already rewritten: DOTTED does not match it
LAZY_ENTRY = re.compile(r'^(\s*"\w+"\s*:\s*")(\w+)(",?)', re.M)


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


def dotted(path: str) -> str:
    """``dpspark/a/b.py`` -> ``dpspark.a.b``; ``dpspark/a/__init__.py`` -> ``dpspark.a``."""
    parts = path.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


class Layout:
    """The map, and the old -> new tables of modules, files and directories derived from it."""

    def __init__(self, table: dict) -> None:
        self.move: dict[str, str] = table["move"]
        self.data: dict[str, str] = table.get("data", {})
        self.new_init: dict[str, str] = table.get("new_init", {})
        self.split_later: dict[str, str] = table.get("split_later", {})
        self.lazy_init: list[str] = [p for p, on in table.get("lazy_init", {}).items() if on]
        self.modules = {dotted(a): dotted(b) for a, b in self.move.items()}
        self.files = {**self.move, **self.data}
        # old directory -> new directory: where its __init__ goes (a module facade counts as its folder),
        # else the one folder all its files go to (dpspark/mechanisms/gaussian_model/ has no __init__)
        dirs: dict[str, set[str]] = {}
        for a, b in self.move.items():
            dirs.setdefault(a.rsplit("/", 1)[0], set()).add(b.rsplit("/", 1)[0])
        self.dirs: dict[str, str] = {}
        for d, targets in dirs.items():
            init = self.move.get(f"{d}/__init__.py")
            self.dirs[d] = init.rsplit("/", 1)[0] if init else sorted(targets)[0]
            package = dotted(f"{d}/__init__.py")
            if package not in self.modules:
                self.modules[package] = dotted(f"{self.dirs[d]}/__init__.py")

    def new_module(self, name: str) -> str | None:
        """The new dotted name of ``name`` (a module, or an attribute path under one), None if unmoved."""
        parts = name.split(".")
        for i in range(len(parts), 1, -1):
            head = ".".join(parts[:i])
            if head in self.modules:
                new = self.modules[head]
                return None if new == head else ".".join([new, *parts[i:]])
        return None

    def new_path(self, path: str) -> str | None:
        if path in self.files:
            return None if self.files[path] == path else self.files[path]
        d = path.rstrip("/")
        if path.endswith("/") and d in self.dirs and self.dirs[d] != d:
            return self.dirs[d] + "/"
        return None


def check(layout: Layout, root: Path) -> list[str]:
    """Problems that make the map unusable on this checkout (empty list: go)."""
    problems = []
    tracked = {p for p in git(root, "ls-files", "dpspark").split() if p.endswith(".py")}
    moves = [(a, b) for a, b in layout.move.items() if a != b]
    if moves and all(a not in tracked and b in tracked for a, b in moves):
        return ["this checkout is already moved (every destination exists, no source does)"]
    if missing := sorted(tracked - set(layout.move)):
        problems.append(f"not in the map: {missing}")
    if absent := sorted(set(layout.files) - tracked - set(layout.data)):
        problems.append(f"mapped but not in the checkout (already moved?): {absent}")
    problems += shadowed(layout, root)
    targets = list(layout.files.values()) + list(layout.new_init)
    if dup := sorted({t for t in targets if targets.count(t) > 1}):
        problems.append(f"two files would land on: {dup}")
    return problems


def bound_names(source: str) -> set[str]:
    """Names a package ``__init__`` binds: they hide a submodule of the same name from attribute lookups."""
    names: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
            if any(isinstance(t, ast.Name) and t.id == "_NAMES" for t in node.targets) and isinstance(node.value, ast.Dict):
                names.update(k.value for k in node.value.keys if isinstance(k, ast.Constant))
    return names


def shadowed(layout: Layout, root: Path) -> list[str]:
    """Moved modules whose new name their new package's ``__init__`` also binds (``monkeypatch`` and
    ``from pkg import name`` would then find the function, not the module)."""
    init_source = {new: (root / old).read_text(encoding="utf-8")
                   for old, new in layout.move.items() if new.endswith("/__init__.py") and (root / old).exists()}
    init_source.update(layout.new_init)
    problems = []
    for old, new in layout.move.items():
        if old == new or new.endswith("__init__.py"):
            continue
        source = init_source.get(new.rsplit("/", 1)[0] + "/__init__.py")
        name = new.rsplit("/", 1)[1].removesuffix(".py")
        if source is not None and name in bound_names(source):
            problems.append(f"{new}: its package __init__ binds {name!r} too; pick another module name")
    return problems


def make_lazy(source: str, package: str) -> str:
    """An ``__init__`` whose ``from <package>.<sub> import names`` lines become one lazy ``_NAMES`` table."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    table: dict[str, str] = {}
    spans = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith(package + "."):
            sub = node.module.removeprefix(package + ".")
            if "." in sub:
                continue
            table.update({a.asname or a.name: sub for a in node.names if (a.asname or a.name) == a.name})
            spans.append((node.lineno - 1, node.end_lineno))
    if not spans:
        return source
    block = ["from dpspark._lazy import lazy_exports\n", "\n", "_NAMES = {\n",
             *[f'    "{name}": "{sub}",\n' for name, sub in table.items()], "}\n",
             "__getattr__ = lazy_exports(__name__, _NAMES)\n"]
    for start, end in reversed(spans[1:]):
        del lines[start:end]
    lines[spans[0][0]:spans[0][1]] = block
    return "".join(lines)


def frozen_names(root: Path) -> set[str]:
    """Dotted module names that committed release fixtures state: kept verbatim inside string literals."""
    names: set[str] = set()
    for base in GOLDEN:
        for p in (root / base).rglob("*.json"):
            names.update(DOTTED.findall(p.read_text(encoding="utf-8", errors="replace")))
    return names


def docstring_lines(text: str) -> set[int]:
    """Line numbers of the docstrings of ``text`` (they are documentation, never a manifest's text)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return set()
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


def string_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the string literals of Python source ``text``, docstrings excepted."""
    docs = docstring_lines(text)
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    spans = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.start[0] in docs:
                continue
            if tok.type == tokenize.STRING or tok.type == getattr(tokenize, "FSTRING_MIDDLE", -1):
                spans.append((starts[tok.start[0] - 1] + tok.start[1], starts[tok.end[0] - 1] + tok.end[1]))
    except (tokenize.TokenError, SyntaxError):
        pass
    return spans


def rewrite_from_imports(text: str, layout: Layout) -> str:
    """``from dpspark.a import b`` (b a moved submodule) -> ``from <new parent> import <new name> as b``."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    lines = text.splitlines(keepends=True)
    edits = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                and (node.module == "dpspark" or node.module.startswith("dpspark."))):
            continue
        parent = layout.new_module(node.module) or node.module
        kept, extra = [], []
        for alias in node.names:
            old = f"{node.module}.{alias.name}"
            new = layout.modules.get(old) if old in layout.modules else None
            if new is None or new == f"{parent}.{alias.name}":
                kept.append(alias)
                continue
            new_parent, new_name = new.rsplit(".", 1)
            local = alias.asname or alias.name
            # HOLD keeps the new name from being mapped again (dpspark.mechanisms.compact.mechanism is an old module too)
            extra.append(f"from {new_parent.replace('dpspark', HOLD, 1)} import {new_name}" + ("" if local == new_name else f" as {local}"))
        if not extra:
            continue
        indent = " " * node.col_offset
        out = []
        if kept:
            names = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in kept)
            out.append(f"{indent}from {node.module} import {names}\n")
        out += [f"{indent}{s}\n" for s in extra]
        edits.append((node.lineno - 1, node.end_lineno, out))
    for start, end, out in sorted(edits, reverse=True):
        lines[start:end] = out
    return "".join(lines)


def rewrite_text(text: str, layout: Layout, frozen: set[str], python: bool) -> str:
    """Every dotted module name and dpspark file path in ``text``, mapped."""
    if python:
        text = rewrite_from_imports(text, layout)
    spans = string_spans(text) if python else []

    def in_string(pos: int) -> bool:
        return any(a <= pos < b for a, b in spans)

    def sub_dotted(m: re.Match) -> str:
        name = m.group(0)
        follow = text[m.end():m.end() + 1]
        if name in frozen and follow not in (":", ".") and (not python or in_string(m.start())):
            return name  # a manifest states it: the release must stay bit-identical
        return layout.new_module(name) or name

    text = DOTTED.sub(sub_dotted, text)
    text = PATH.sub(lambda m: layout.new_path(m.group(0)) or m.group(0), text)

    def sub_joined(m: re.Match) -> str:
        parts = re.findall(r'"(\w+(?:\.py)?)"', m.group(1))
        path = "/".join(["dpspark", *parts]) + ("" if parts[-1].endswith(".py") else "/")
        new = layout.new_path(path)
        if new is None:
            return m.group(0)
        return " / ".join(f'"{p}"' for p in new.rstrip("/").split("/"))

    return JOINED.sub(sub_joined, text).replace(HOLD, "dpspark")


def rewrite_lazy_names(text: str, old_package: str, new_package: str, layout: Layout) -> tuple[str, bool]:
    """The relative names of a lazy ``_NAMES`` table, re-pointed; True if one had to become absolute."""
    absolute = False

    def sub(m: re.Match) -> str:
        nonlocal absolute
        new = layout.modules.get(f"{old_package}.{m.group(2)}")
        if new is None:
            return m.group(0)
        parent, name = new.rsplit(".", 1)
        if parent == new_package:
            return f"{m.group(1)}{name}{m.group(3)}"
        absolute = True
        return f"{m.group(1)}{new.replace('dpspark', HOLD, 1)}{m.group(3)}"

    start = text.find("_NAMES = {")
    end = text.find("}", start)
    if start < 0:
        return text, False
    return text[:start] + LAZY_ENTRY.sub(sub, text[start:end]) + text[end:], absolute


LAZY_OLD = 'return getattr(importlib.import_module(f"{package}.{module}"), attr)'
LAZY_NEW = ('target = module if module.startswith("dpspark.") else f"{package}.{module}"  # a moved submodule\n'
            '        return getattr(importlib.import_module(target), attr)')


def text_files(root: Path) -> list[Path]:
    out = [root / f for f in FILES if (root / f).exists()]
    for tree in TREES:
        for p in sorted((root / tree).rglob("*")):
            if p.is_file() and p.suffix in TEXT_SUFFIXES and "__pycache__" not in p.parts and ".venv" not in p.parts:
                out.append(p)
    return out


def apply(layout: Layout, root: Path) -> dict[str, int]:
    """Move and rewrite in the checkout at ``root``; returns counts for the summary."""
    frozen = frozen_names(root)
    # lazy tables are re-pointed from their OLD package (known before the move)
    lazy = {new: dotted(old) for old, new in layout.move.items()
            if old.endswith("__init__.py") and "lazy_exports(" in (root / old).read_text(encoding="utf-8")}
    moved = 0
    for old, new in {**layout.move, **layout.data}.items():
        if old == new:
            continue
        (root / new).parent.mkdir(parents=True, exist_ok=True)
        git(root, "mv", old, new)
        moved += 1
    for path in layout.lazy_init:
        old = next(o for o, n in layout.move.items() if n == path)
        target = root / path
        target.write_text(make_lazy(target.read_text(encoding="utf-8"), dotted(old)), encoding="utf-8")
        lazy[path] = dotted(old)
    # emptied old folders (with their __pycache__) would still import as namespace packages
    for d in sorted({(root / old).parent for old in layout.files}, key=lambda p: -len(p.parts)):
        if d.exists() and not any(p for p in d.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            subprocess.run(["rm", "-rf", str(d)], check=True)
    changed = 0
    patch_lazy = False
    for p in text_files(root):
        rel = str(p.relative_to(root))
        try:
            text = p.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        new = text
        if rel in lazy:
            new, absolute = rewrite_lazy_names(new, lazy[rel], dotted(rel), layout)
            patch_lazy |= absolute
        new = rewrite_text(new, layout, frozen, python=p.suffix == ".py" or new.startswith("#!/usr/bin/env python"))
        if new != text:
            p.write_text(new, encoding="utf-8")
            changed += 1
    if patch_lazy:
        lazy_py = root / "dpspark" / "_lazy.py"
        src = lazy_py.read_text(encoding="utf-8")
        if LAZY_OLD not in src:
            raise SystemExit("dpspark/_lazy.py changed: cannot teach lazy_exports absolute names")
        lazy_py.write_text(src.replace(LAZY_OLD, LAZY_NEW), encoding="utf-8")
    # new __init__ files last: their text names NEW modules, which must not be mapped again
    for path, body in layout.new_init.items():
        target = root / path
        doc = f'"""{dotted(path)}: created by the issue-21 layout move (a curated __init__ is left for later)."""\n'
        target.write_text(doc + ("\n" + body if body else ""), encoding="utf-8")
        git(root, "add", path)
    # every destination folder is a package
    for new in layout.files.values():
        d = (root / new).parent
        while d != root / "dpspark" and d.is_relative_to(root / "dpspark"):
            if not (d / "__init__.py").exists():
                raise SystemExit(f"{d.relative_to(root)} has no __init__.py: add it to [new_init] in the map")
            d = d.parent
    git(root, "add", "-A", *[t for t in (*TREES, *FILES) if (root / t).exists()])
    return {"moved": moved, "rewritten": changed, "new_init": len(layout.new_init), "frozen": len(frozen)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the checkout to move (default: cwd)")
    parser.add_argument("--map", type=Path, default=MAP, help="the layout map (default: next to this script)")
    parser.add_argument("--plan", action="store_true", help="print the moves and the split-later list only")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    layout = Layout(tomllib.loads(args.map.read_text(encoding="utf-8")))
    if problems := check(layout, root):
        print("move_layout: refusing:", *problems, sep="\n  ", file=sys.stderr)
        return 2
    if args.plan:
        for old, new in sorted(layout.move.items(), key=lambda kv: kv[1]):
            if old != new:
                print(f"{old} -> {new}" + ("   [split later]" if old in layout.split_later else ""))
        print(f"{sum(a != b for a, b in layout.move.items())} of {len(layout.move)} modules move; "
              f"{len(layout.split_later)} marked split later")
        return 0
    if dirty := git(root, "status", "--porcelain", "--untracked-files=no"):
        print(f"move_layout: refusing: the checkout has uncommitted changes:\n{dirty}", file=sys.stderr)
        return 2
    counts = apply(layout, root)
    print("move_layout: " + ", ".join(f"{k} {v}" for k, v in counts.items()) + "; review with `git status`, then commit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
