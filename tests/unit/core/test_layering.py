"""The house rule in code: the import-linter contracts of pyproject.toml hold, and dpspark has no import cycle.

The contracts (``[tool.importlinter]``): the layers (faces above families above the layers that know no
family), the families' independence (with the two real reuses), a read side (``lookup``, ``release``) that
needs no Spark, no engine and no mechanism class, and the same for each family's read-side codec. Both checks read the import graph statically (grimp), so a function-level
or ``TYPE_CHECKING`` import counts too.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
grimp = pytest.importorskip("grimp")


def import_cycles(graph: "grimp.ImportGraph", package: str = "dpspark") -> list[list[str]]:
    """The strongly connected groups (size > 1) of modules under ``package`` (Tarjan, iterative)."""
    modules = sorted(m for m in graph.modules if m == package or m.startswith(package + "."))
    edges = {m: sorted(n for n in graph.find_modules_directly_imported_by(m) if n in set(modules)) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for root in modules:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            nexts = edges[node]
            if i < len(nexts):
                work.append((node, i + 1))
                nxt = nexts[i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                group = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    group.append(top)
                    if top == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return groups


def test_dpspark_has_no_import_cycle() -> None:
    graph = grimp.build_graph("dpspark", include_external_packages=False)
    cycles = import_cycles(graph)
    assert not cycles, f"{len(cycles)} import cycle(s): {cycles}"


def test_the_cycle_finder_finds_a_planted_cycle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Teeth: a two-module cycle (one import at function level) in a throwaway package is found."""
    pkg = tmp_path / "cyc"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from cyc import b\n")
    (pkg / "b.py").write_text("def f():\n    from cyc import a\n    return a\n")
    (pkg / "c.py").write_text("from cyc import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("cyc", include_external_packages=False, cache_dir=None)
    assert import_cycles(graph, "cyc") == [["cyc.a", "cyc.b"]]


def test_the_import_linter_contracts_hold() -> None:
    code = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    proc = subprocess.run([sys.executable, "-c", code, "--config", str(REPO / "pyproject.toml"), "--no-cache"],
                          cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert "Contracts: 4 kept, 0 broken" in proc.stdout, proc.stdout[-2000:]
