"""Issue 31 section 5: every kind's statements re-derive, so no resealed edit of an exact number is accepted.

A generated test over one real release of every registered mechanism (the golden cases on Arrow; compact: the
checked-in release; bernoulli also with privacy.delta, its zCDP form): each exact number of each privacy
statement (every integer and rational, a num/den part included; the float ``approx`` views and the texts aside)
is doubled and halved, the manifest resealed with hashlib alone, and the release must be refused, by
``open_release`` and by ``dpspark verify``. Old main accepted 8 of bernoulli's 20 such edits (e.g. the
replacement's e^eps halved) and ``verify`` said the statements re-derive.
"""

from __future__ import annotations

import json
import shutil
from fractions import Fraction
from pathlib import Path
from typing import Any, Iterator

import pytest

from dpspark.cli.app import main as cli
from dpspark.lookup import open_release
from dpspark.release.errors import ReleaseFormatError
from dpspark.release.manifest import seal_manifest
from tests.support.every_kind import MECHANISMS, release_of

REPO = Path(__file__).resolve().parents[3]
COMPACT = REPO / "tests" / "support" / "data" / "compact_kav" / "release"
#: the releases of the test: every registered mechanism, and bernoulli's zCDP form
CASES = [m for m in MECHANISMS if m != "compact"] + ["compact", "bernoulli_zcdp"]


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("every")
    out = {m: release_of(m, root) for m in MECHANISMS if m != "compact"}
    out["compact"] = COMPACT  # made once on Spark (the Arrow case would compile the GF kernels for minutes)
    out["bernoulli_zcdp"] = release_of("bernoulli_sampler", root, privacy={"epsilon": "2", "delta": "1/1000000",
                                                                          "samples": 1})
    return out


def statements_of(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each named statement's JSON object, in either statement form (a statement envelope or a counts manifest)."""
    privacy = doc["privacy"]
    if "statements" in privacy:
        return {name: entry["statement"] for name, entry in privacy["statements"].items()}
    return {name: privacy[name] for name in ("add_remove", "replacement") if name in privacy}


def exact_numbers(obj: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    """(path, value) of every exact number under ``obj``: ints and rational strings (the float views and texts aside)."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key not in ("approx", "text", "epsilon_float", "delta_log2"):
                yield from exact_numbers(value, path + (key,))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from exact_numbers(value, path + (i,))
    elif isinstance(obj, int) and not isinstance(obj, bool):
        yield path, obj
    elif isinstance(obj, str):
        try:
            Fraction(obj)
        except (ValueError, ZeroDivisionError):
            return
        yield path, obj


def scaled(value: Any, factor: Fraction) -> Any:
    """``value`` times ``factor``, in its own JSON form (an int stays an int where it can, a string a string)."""
    x = Fraction(value) * factor
    if isinstance(value, int):
        return int(x) if x.denominator == 1 else str(x)
    return str(x)


def edits(doc: dict[str, Any]) -> list[tuple[str, tuple, Any, Any]]:
    """Every (statement, path, old value, new value): each exact number doubled and halved."""
    out = []
    for name, statement in statements_of(doc).items():
        for path, value in exact_numbers(statement):
            for factor in (Fraction(2), Fraction(1, 2)):
                new = scaled(value, factor)
                if new != value and Fraction(new) != Fraction(value):
                    out.append((name, path, value, new))
    return out


def edited(doc: dict[str, Any], name: str, path: tuple, new: Any) -> bytes:
    doc = json.loads(json.dumps(doc))
    cur = statements_of(doc)[name]
    for key in path[:-1]:
        cur = cur[key]
    cur[path[-1]] = new
    return seal_manifest(doc)


@pytest.mark.parametrize("case", CASES)
def test_every_statement_edit_is_refused_after_a_reseal(releases: dict[str, Path], tmp_path: Path, case: str) -> None:
    release = tmp_path / "release"
    shutil.copytree(releases[case], release)
    original = (release / "manifest.json").read_bytes()
    doc = json.loads(original)
    open_release(release)  # the untouched release is good
    all_edits = edits(doc)
    assert len(all_edits) >= 8, all_edits  # the statements hold exact numbers to edit
    accepted = []
    for name, path, old, new in all_edits:
        (release / "manifest.json").write_bytes(edited(doc, name, path, new))
        try:
            open_release(release)
        except ReleaseFormatError as err:
            assert "manifest.json" in str(err) or str(release) in str(err)
            continue
        accepted.append((name, path, old, new))
    assert accepted == []


def test_bernoulli_edits_are_refused_by_verify(releases: dict[str, Path], tmp_path: Path, capsys) -> None:
    """The issue's case: bernoulli's add/remove epsilon lowered (here its e^eps part), resealed: verify fails."""
    release = tmp_path / "release"
    shutil.copytree(releases["bernoulli_sampler"], release)
    assert cli(["verify", str(release)]) == 0
    doc = json.loads((release / "manifest.json").read_bytes())
    exp = statements_of(doc)["add_remove"]["measure"]["epsilon"]["exp"]
    lower = 1 + (Fraction(exp["num"], exp["den"]) - 1) * Fraction(3, 5)
    for name in ("add_remove", "replacement"):
        statements_of(doc)[name]["measure"]["epsilon"]["exp"] = {"num": lower.numerator, "den": lower.denominator}
    (release / "manifest.json").write_bytes(seal_manifest(doc))
    capsys.readouterr()
    assert cli(["verify", str(release)]) == 1
    err = capsys.readouterr().err
    assert "FAILED" in err and "do not re-derive" in err and "re-derive from its parameters" not in err


@pytest.mark.parametrize("key, value", [("n0", 40), ("n0", 82), ("random_bits", 200), ("random_bits", 10), ("d", 3),
                                        ("d", 60000), ("column_ratio", "11/10")])
def test_bernoulli_parameters_that_disagree_with_the_statements_are_refused(releases: dict[str, Path],
                                                                             tmp_path: Path, key: str,
                                                                             value: Any) -> None:
    """Editing a parameter the statements derive from (and not the statements) is refused too."""
    release = tmp_path / "release"
    shutil.copytree(releases["bernoulli_sampler"], release)
    doc = json.loads((release / "manifest.json").read_bytes())
    assert doc["mechanism"]["parameters"][key] != value
    doc["mechanism"]["parameters"][key] = value
    (release / "manifest.json").write_bytes(seal_manifest(doc))
    with pytest.raises(ReleaseFormatError, match=r"manifest\.json"):
        open_release(release)
