"""Issue 36, section 3: numbers with their units, decimals instead of fractions, integer counts, readable reprs.

Real releases on the Arrow engine (a groups release with a median, public and private keys) and one real release
of every registered mechanism (:mod:`tests.support.every_kind`).
"""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path

import pyarrow as pa
import pytest

from dpspark.lookup import open_release
from tests.support.every_kind import MECHANISMS, release_of

AGGS = [{"name": "n", "kind": "count"},
        {"name": "age", "kind": "mean", "column": "x", "lo": "0", "hi": "100"},
        {"name": "med", "kind": "quantile", "column": "x", "lo": "0", "hi": "100", "q": "1/2", "bins": 100}]


def survey() -> pa.Table:
    """3000 rows in three groups a, b, c (x = i mod 97), plus one row of group z."""
    n = 3000
    return pa.table({"g": [["a", "b", "c"][i % 3] for i in range(n)] + ["z"],
                     "x": [float(i % 97) for i in range(n)] + [3.0]})


@pytest.fixture(scope="module")
def groups_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import dpspark
    from dpspark.rng import SeededRandom

    out = tmp_path_factory.mktemp("newuser") / "groups"
    with dpspark.Session(survey(), max_units=10_000, rng=SeededRandom(1)) as s:
        s.groups(by="g", keys=["a", "b", "c"], aggregates=AGGS, epsilon="1", delta="1e-8", output=out)
    return out


def test_a_quantiles_error_column_names_its_unit(groups_release: Path) -> None:
    rel = open_release(groups_release)
    frame = rel.to_pandas()
    assert "med_rank_error" in frame.columns and "med_rank_error_exact" in frame.columns
    assert "med_error" not in frame.columns  # it read as +-15 points; it is +-15 rows of rank
    assert "age_error" in frame.columns  # a mean's bar is in its value's units
    for key, row in zip(rel.keys(), frame.itertuples()):
        assert Fraction(row.med_rank_error_exact) == rel.lookup(key)["med"].error
    assert "med_rank_error" in rel.html_note() and "rows of rank" in rel.html_note()
    assert "rows of rank, not in the value" in rel._repr_html_()


def test_counts_are_integers_other_values_floats(groups_release: Path) -> None:
    frame = open_release(groups_release).to_pandas()
    assert str(frame["n"].dtype) == "Int64" and str(frame["n_error"].dtype) == "Int64"
    assert all(isinstance(v, int) for v in frame["n"].tolist())
    assert frame["age"].dtype == float
    assert str(frame["n"].iloc[0]).isdigit()  # 970, not 970.0


def test_value_decimal_rounds_to_the_nearest() -> None:
    from dpspark.text.decimals import bar_decimal, value_decimal

    assert value_decimal(Fraction(102186, 2201)) == "46.4271"  # the user's mean_age
    assert value_decimal(Fraction(2300000, 89)) == "25842.7"  # mean_income
    assert value_decimal(Fraction(-5, 3)) == "-1.66667" and value_decimal(970) == "970"
    assert value_decimal(Fraction(1, 10**7)) == "1e-7" and value_decimal(Fraction(999999996, 10**9)) == "1"
    for x in (Fraction(102186, 2201), Fraction(1, 3), Fraction(2, 3), Fraction(123456789, 7)):
        text = value_decimal(x)
        assert abs(Fraction(text.replace("e", "E")) - x) <= x * Fraction(1, 10**5)  # 6 digits, nearest
    # an error bar is an upper bound: rounded up, never below the exact bar
    for bar in (Fraction(45, 2), Fraction(1, 3), Fraction(4297450, 3728277)):
        assert Fraction(bar_decimal(bar)) >= bar
    assert bar_decimal(Fraction(4297450, 3728277)) == "1.16"


def test_lookup_prints_decimals_and_exact_keeps_fractions(groups_release: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    from dpspark.cli.app import main

    rel = open_release(groups_release)
    age = rel.lookup("a")["age"]
    assert age.value.denominator != 1  # the case the user hit: a fraction
    assert main(["lookup", str(groups_release), "a"]) == 0
    row = capsys.readouterr().out.splitlines()[1]
    assert not re.search(r"\d/\d", row), row  # no fraction in the table
    from dpspark.text.decimals import bar_decimal, value_decimal

    assert f"{value_decimal(age.value)} +- {bar_decimal(age.error)}" in row
    assert "rows of rank" in row  # the median's bar says its unit
    assert main(["lookup", "--exact", str(groups_release), "a"]) == 0
    row = capsys.readouterr().out.splitlines()[1]
    assert f"{age.value.numerator}/{age.value.denominator}" in row


# --- a readable repr() for every release kind --------------------------------------------------------------
@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("reprs")


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_every_kind_has_a_readable_repr(root: Path, mechanism: str) -> None:
    rel = open_release(release_of(mechanism, root))
    text = repr(rel)
    assert " object at 0x" not in text
    assert text.startswith(f"dpspark release: {rel.kind}")
    assert "privacy:" in text and "accuracy:" in text and str(rel.manifest.max_units) in text
    assert not re.search(r"\d{21,}", text)  # numbers a reader takes in
    if callable(getattr(rel, "to_pandas", None)) and rel.kind not in ("compact", "sparse"):
        assert "values (to_pandas()):" in text


def test_repr_needs_no_pandas(groups_release: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    rel = open_release(groups_release)
    monkeypatch.setitem(sys.modules, "pandas", None)  # the read library needs numpy and pyarrow only
    text = repr(rel)
    assert text.startswith("dpspark release: groups") and "the values need pandas" in text
