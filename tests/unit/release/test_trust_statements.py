"""Issue 31 section 5: every kind's statements re-derive, so no resealed edit of an exact number is accepted.

A generated test over one real release of every registered mechanism (the golden cases on Arrow; compact: the
checked-in release; bernoulli also with privacy.delta, its zCDP form): each exact number of each privacy
statement (every integer and rational, a num/den part included; the float ``approx`` views and the texts aside)
is doubled and halved, the manifest resealed with hashlib alone, and the release must be refused, by
``open_release`` and by ``dpspark verify``. Old main accepted 8 of bernoulli's 20 such edits (e.g. the
replacement's e^eps halved) and ``verify`` said the statements re-derive.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from fractions import Fraction
from pathlib import Path
from types import ModuleType
from typing import Any

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


def _fuzz_readers() -> ModuleType:
    """scripts/fuzz_readers.py, whose statement edits (each exact number doubled and halved, resealed) are the
    ones its fuzz counts: one definition for the fuzzer and this test."""
    spec = importlib.util.spec_from_file_location("fuzz_readers", REPO / "scripts" / "fuzz_readers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.import_readers()  # the readers it seals and opens with: this process's dpspark
    return module


FUZZ = _fuzz_readers()
statements_of = FUZZ.statements_of


@pytest.mark.parametrize("case", CASES)
def test_every_statement_edit_is_refused_after_a_reseal(releases: dict[str, Path], tmp_path: Path, case: str) -> None:
    release = tmp_path / "release"
    shutil.copytree(releases[case], release)
    original = (release / "manifest.json").read_bytes()
    doc = json.loads(original)
    open_release(release)  # the untouched release is good
    all_edits = FUZZ.statement_edits(doc)
    assert len(all_edits) >= 8, all_edits  # the statements hold exact numbers to edit
    accepted = []
    for edit in all_edits:
        (release / "manifest.json").write_bytes(FUZZ.edited_manifest(doc, edit))
        try:
            open_release(release)
        except ReleaseFormatError as err:
            assert "manifest.json" in str(err) or str(release) in str(err)
            continue
        accepted.append(edit)
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
