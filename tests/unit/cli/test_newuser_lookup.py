"""Issue 36, section 4: lookups and keys, on real releases (Arrow engine).

A valid key a private selection did not release is "not released" (exit 0); "invalid" is kept for keys outside
the universe. An answers release is looked up by query name (no name: every answer); a kind without keys says so
in plain grammar.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dpspark.cli.app import main
from dpspark.lookup import open_release
from tests.support.every_kind import release_of
from tests.unit.lookup.test_newuser_readable import survey

SECRET = "toolongkey"  # outside the universe (strings of at most 4 bytes)


@pytest.fixture(scope="module")
def private_groups(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import dpspark
    from dpspark.rng import SeededRandom

    out = tmp_path_factory.mktemp("private") / "groups"
    with dpspark.Session(survey(), max_units=10_000, rng=SeededRandom(1)) as s:
        s.groups(by="g", universe={"kind": "string", "max_bytes": 4}, aggregates=[{"name": "n", "kind": "count"}],
                 epsilon="1", delta="1e-8", output=out)
    return out


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("kinds")


def test_a_valid_key_that_was_not_selected_is_not_released(private_groups: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    rel = open_release(private_groups)
    assert rel.section["keys"] == "private" and "a" in rel and "z" not in rel  # z: one row, not selected
    assert main(["lookup", str(private_groups), "a", "z"]) == 0
    out = capsys.readouterr()
    assert "(key #2: not released)" in out.out and "invalid" not in out.out + out.err
    assert "key #2: a valid key that was not released" in out.out
    assert not any(ln.split()[0] == "z" for ln in out.out.splitlines() if ln.strip())  # marked by position


def test_invalid_is_kept_for_keys_outside_the_universe(private_groups: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lookup", str(private_groups), "a", SECRET, "z"]) == 1
    out = capsys.readouterr()
    assert "(key #2: invalid)" in out.out and "(key #3: not released)" in out.out
    assert "key #2: not a key of the release's universe" in out.err and SECRET not in out.out + out.err


def test_answers_release_prints_its_answers(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from dpspark.text.decimals import value_decimal

    path = release_of("bounded_noise", root)
    rel = open_release(path)
    assert main(["lookup", str(path)]) == 0  # no name: every answer
    out = capsys.readouterr().out
    for name, value in rel.answers().items():
        line = next(ln for ln in out.splitlines() if ln.startswith(name + " "))
        assert value is None or value_decimal(value) in line
    assert "has no keys" not in out
    assert main(["lookup", str(path), "avg", "no such query"]) == 1
    got = capsys.readouterr()
    assert got.out.splitlines()[1].startswith("avg ") and "(key #2: invalid)" in got.out
    assert "no query of this release has this name" in got.err


def test_a_kind_without_keys_says_so_in_plain_grammar(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = release_of("kary_sampler", root)
    assert main(["lookup", str(path), "a"]) == 2
    err = capsys.readouterr().err
    assert f"this {open_release(path).kind} release has no keys to look up" in err and " a answers" not in err
