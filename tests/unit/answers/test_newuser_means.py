"""Issue 36, section 6: a mean without extra input works, and the dry run and the release say which mean it is.

Every mean the user wanted needed ``"noisy_count"``; the default was ``"public_n"``, which fails without ``n``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import dpspark
from dpspark.mechanisms.answers.queries import QueryError, parse_query
from dpspark.rng import SeededRandom
from tests.unit.lookup.test_newuser_readable import survey

AGE = {"name": "age", "kind": "mean", "column": "x", "lo": "0", "hi": "100"}


def test_the_default_mean_needs_no_other_input() -> None:
    assert parse_query(dict(AGE), 0).mean == "noisy_count"
    assert len(parse_query(dict(AGE), 0).scalars()) == 2  # a sum and a count
    assert parse_query({**AGE, "n": 3001}, 0).mean == "public_n"  # n given: the mean over it, as before
    assert parse_query({**AGE, "mean": "noisy_count"}, 0).mean == "noisy_count"
    with pytest.raises(QueryError, match="needs the public number of units n"):
        parse_query({**AGE, "mean": "public_n"}, 0)  # asked for explicitly: still needs n


def test_a_mean_without_n_is_answered_and_says_how(tmp_path: Path) -> None:
    with dpspark.Session(survey(), max_units=10_000, rng=SeededRandom(3)) as s:
        a = s.answers(k=2, epsilon="1", delta="1e-8")
        got = a.answer(dict(AGE))
        assert got["noisy_count"] is not None and got["value"] == got["noisy_sum"] / got["noisy_count"]
        assert abs(got["value_float"] - 48.0) < 5  # x = i mod 97 over 3001 rows: mean ~48
        rel = s.release(mechanism="bounded_noise", epsilon="1", delta="1e-8", sections={"queries": [dict(AGE)]},
                        output=tmp_path / "r")
    assert rel.parameters["queries"][0]["mean"] == "noisy_count"  # the manifest states the mode


def test_the_dry_run_states_each_means_mode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import pyarrow.parquet as pq

    from dpspark.cli.app import main

    pq.write_table(survey(), tmp_path / "in.parquet")
    (tmp_path / "cfg.toml").write_text(
        '[input]\npath = "in.parquet"\n[privacy]\nmechanism = "bounded_noise"\nepsilon = "1"\ndelta = "1e-6"\n'
        'max_units = 61697\n[[queries]]\nname = "age"\nkind = "mean"\ncolumn = "x"\nlo = "0"\nhi = "100"\n'
        '[[queries]]\nname = "age_n"\nkind = "mean"\ncolumn = "x"\nlo = "0"\nhi = "100"\nn = 61697\n'
        '[output]\npath = "out"\n')
    assert main(["release", "--config", str(tmp_path / "cfg.toml"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "per_query age: mean = noisy_count: the noisy sum over a noisy count of the same rows" in out
    assert "the default without n" in out
    assert "per_query age_n: mean = public_n: the noisy sum over the public n = 61697" in out
