"""Issue 36, section 6: the dry run says what a family will hide, before the spend, from public parameters.

The pure_sparse threshold the dry run prints is the one the release's accuracy statement then states, and the
stability and compact figures are those of their own releases at the same epsilon (real Arrow releases).
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from dpspark.lookup import open_release
from tests.support.every_kind import release_of
from tests.support.golden import CASES


def _spec(case_id: str, tmp_path: Path, **privacy: object):  # type: ignore[no-untyped-def]
    import pyarrow.parquet as pq

    from dpspark.api.config import ReleaseSpec

    pq.write_table(CASES[case_id].table(), tmp_path / "in.parquet")
    raw = copy.deepcopy(CASES[case_id].config)
    raw["privacy"].update(privacy)
    return ReleaseSpec.from_dict({"input": {"path": "in.parquet"}, **raw, "output": {"path": "out"}},
                                 base_dir=tmp_path)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hiding")


def test_the_stated_threshold_is_the_releases(root: Path, tmp_path: Path) -> None:
    from dpspark.mechanisms.histogram.hiding import hidden_at_most, hiding_words
    from dpspark.mechanisms.registry import mechanism_class

    mech = mechanism_class("pure_sparse")(_spec("pure_sparse", tmp_path))
    released = open_release(release_of("pure_sparse", root))
    assert hidden_at_most(mech) == released.accuracy.per_query_above > 0
    words = hiding_words(mech)
    assert f"keys counted at most {released.accuracy.per_query_above} times (units per key" in words
    # stability at the same epsilon (the golden stability case: same data, universe and epsilon) at delta 1e-8
    stab = open_release(release_of("stability", root, privacy={"delta": "1e-8"}))
    assert f"'stability' (approximate DP, delta = 1e-8) would hide at most {stab.accuracy.per_query_above}" in words
    compact = open_release(release_of("compact", root))
    assert f"'compact' answers every key of the universe +-{compact.accuracy.a_per_query}" in words


def test_the_dry_run_prints_it_before_any_spend(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dpspark.cli.app import main

    pq.write_table(pa.table({"k": ["a", "b"]}), tmp_path / "in.parquet")
    (tmp_path / "cfg.toml").write_text(
        '[input]\npath = "in.parquet"\n[keys]\ncolumns = ["k"]\n[universe]\nkind = "string"\nmax_bytes = 15\n'
        '[privacy]\nmechanism = "pure_sparse"\nepsilon = "1"\nmax_units = 100000\n'
        '[budget]\nledger = "ledger.sqlite"\ndataset = "survey"\ntotal_epsilon = "2"\n[output]\npath = "out"\n')
    assert main(["release", "--config", str(tmp_path / "cfg.toml"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    # the user's case: n = 100,000, an all-strings universe, epsilon = 1
    line = next(ln for ln in out.splitlines() if "hidden:" in ln)
    assert "keys counted at most 182 times (units per key, after contribution bounding) may be hidden" in line
    assert "'stability' (approximate DP, delta = 1e-8) would hide at most 23" in line
    assert "'compact' answers every key of the universe +-3 (w.p. >= 0.95 per key)" in line
    assert not (tmp_path / "ledger.sqlite").exists() and not (tmp_path / "out").exists()  # nothing spent


@pytest.mark.parametrize("max_units", [1, 3, 300, 5000])
def test_the_bracketed_threshold_is_the_exact_one(tmp_path: Path, max_units: int) -> None:
    from dpspark.mechanisms.histogram.hiding import exact_hidden_at_most, hidden_at_most
    from dpspark.mechanisms.registry import mechanism_class

    for beta in ("1/20", "1/1000"):
        mech = mechanism_class("pure_sparse")(_spec("pure_sparse", tmp_path, max_units=max_units, beta=beta))
        assert hidden_at_most(mech) == exact_hidden_at_most(mech)
