"""Docstrings cite documents inside the repository, and every cited docs/ section exists."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
SOURCES = [*sorted((REPO / "dpspark").rglob("*.py")), *sorted((REPO / "scripts").rglob("*.py")),
           *sorted((REPO / "jobs").rglob("*.py")), *sorted((REPO / "conf").glob("*.toml")), REPO / "README.md"]
#: citations of the out-of-repository working spec (its errata list and section numbers)
OUTSIDE = re.compile(r"spec(?:\.md)?\s*(?:errata|erratum|section|sections|§|\d)|\berrata\b|shared/spec", re.IGNORECASE)
CITATION = re.compile(r"docs/([\w.-]+\.md) §([A-Z]\d*)")


def test_no_citation_of_the_outside_spec() -> None:
    tests = [p for p in sorted((REPO / "tests").rglob("*.py")) if p.name != Path(__file__).name]
    hits = [f"{p.relative_to(REPO)}:{i}" for p in [*SOURCES, *tests]
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if OUTSIDE.search(line)]
    assert not hits, f"cite papers (e.g. 'BV Thm 5.5') or docs/ instead: {hits}"


def test_every_cited_docs_section_exists() -> None:
    cited: dict[tuple[str, str], str] = {}
    for p in [*SOURCES, *sorted((REPO / "tests").rglob("*.py"))]:
        for m in CITATION.finditer(p.read_text(encoding="utf-8")):
            cited.setdefault((m.group(1), m.group(2)), str(p.relative_to(REPO)))
    assert len(cited) >= 10, "the pattern finds the citations"  # guards against a regex that matches nothing
    missing = []
    for (doc, section), where in sorted(cited.items()):
        path = REPO / "docs" / doc
        headings = re.findall(r"^## §([A-Z]\d*) ", path.read_text(encoding="utf-8"), re.M) if path.exists() else []
        if section not in headings:
            missing.append(f"{where} cites docs/{doc} §{section}")
    assert not missing, missing


#: a repository path as the README and docs/ write it (dpspark/..., tests/..., scripts/...)
PATH_RE = re.compile(r"`((?:dpspark|tests|scripts|jobs|conf)/[A-Za-z0-9_./-]+)`")


def test_every_path_the_readme_and_docs_name_exists() -> None:
    """After the layout move, a path in the README or docs/ that no longer exists is a stale pointer."""
    named = {}
    for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for m in PATH_RE.finditer(doc.read_text(encoding="utf-8")):
            named.setdefault(m.group(1).rstrip("."), str(doc.relative_to(REPO)))
    assert len(named) >= 20, "the pattern finds the paths"
    missing = sorted(f"{where}: {path}" for path, where in named.items() if not (REPO / path).exists())
    assert not missing, missing
