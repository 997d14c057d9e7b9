"""Units never dropped silently, and contribution limits chosen privately (issue 32 §3), on the Arrow engine.

The new user's case: 61,697 people in a real Parquet file, ``max_units`` = 50,000. Before, every count came out at
0.85-0.90 of the truth with no word about it; now the release states a noisy count of the units read (a stated
share of epsilon, in the composed statement) and says, in words, that about 11,697 units were dropped.
"""

from __future__ import annotations

import warnings
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

PEOPLE = 61_697
DECLARED = 50_000
SEED = 5
COUNT = [{"name": "people", "kind": "count"}]
REGIONS = ["north", "south", "east", "west"]


def people(n: int = PEOPLE, groups: int = 1, rows: int = 1) -> Any:
    """``n`` people (pid), each in ``groups`` regions with ``rows`` rows per region."""
    import numpy as np
    import pyarrow as pa

    pid = np.repeat(np.arange(n, dtype=np.int64), groups * rows)
    region = np.repeat(np.arange(n * groups) % 4, rows)  # a unit's groups are distinct (groups <= 4) and balanced
    age = (pid * 7919) % 80 + 18
    return pa.table({"pid": pid, "region": pa.array([REGIONS[r] for r in region]), "age": age})


@pytest.fixture(scope="module")
def survey(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import pyarrow.parquet as pq

    path = tmp_path_factory.mktemp("units") / "survey.parquet"
    pq.write_table(people(), path)
    return path


def _session(data: Any, max_units: int = DECLARED, **kw: Any) -> Any:
    import dpspark
    from dpspark.rng import SeededRandom

    return dpspark.Session(data, unit_column="pid", max_units=max_units, rng=SeededRandom(SEED), **kw)


def test_the_new_users_case_is_stated_in_the_release(survey: Path, tmp_path: Path) -> None:
    """50,000 declared, 61,697 present: the release states the noisy unit count and the drop, in words."""
    from dpspark.cli import main

    with _session(survey, budget={"epsilon": "1"}) as s:
        g = s.groups(by="region", keys=REGIONS, aggregates=COUNT, epsilon="1", output=tmp_path / "rel")
        assert s.remaining.epsilon.le(Fraction(0))  # one charge, the nominal budget: the unit count is inside it
    units = g.section["units"]
    assert units["max_units"] == DECLARED and units["share"] == "1/50" and units["beta"] == "1/20"
    assert abs(units["noisy"] - PEOPLE) <= units["error"] < 1000  # the bar at beta (FastSample, eps/50)
    words = g.units_words()
    assert "MORE than max_units = 50000" in words
    assert f"About {units['noisy'] - DECLARED} units" in words and "were dropped" in words
    with pytest.warns(UserWarning, match="were dropped by the truncation"):
        frame = g.to_pandas()
    assert frame.attrs["units"] == words
    assert ("units", words) in g.describe_lines()
    assert g.html_note() == f"Units: {words}"  # the notebook's note under the values
    # the composed statement: the unit count is one of its steps, and it fits the requested epsilon
    assert "sequential composition of 2 steps" in g.manifest.privacy_text()  # the count and the unit count
    assert g.manifest.add_remove.measure.epsilon.le(Fraction(1))
    import io
    import contextlib

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["inspect", str(tmp_path / "rel")]) == 0
    assert "were dropped by the truncation to max_units" in out.getvalue()


def test_within_max_units_says_no_unit_was_dropped(survey: Path, tmp_path: Path) -> None:
    with _session(survey, max_units=100_000) as s:
        g = s.groups(by="region", keys=REGIONS, aggregates=COUNT, epsilon="1", output=tmp_path / "rel")
    assert "within max_units = 100000; no unit was dropped" in g.units_words()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g.to_pandas()  # no warning when nothing was dropped


def test_the_statement_composes_the_unit_count(survey: Path, tmp_path: Path) -> None:
    from dpspark.lookup import open_release

    with _session(survey) as s:
        s.groups(by="region", keys=REGIONS, aggregates=COUNT, epsilon="1", output=tmp_path / "rel")
    rel = open_release(tmp_path / "rel")
    m = rel.manifest
    assert "sequential composition of 2 steps" in m.privacy_text()
    assert m.add_remove.measure.epsilon.le(Fraction(1))


def test_auto_limits_are_chosen_privately_and_stated(tmp_path: Path) -> None:
    """Every unit in 3 regions with 5 rows each: k = "auto" -> 4 (the power of two covering 3), c -> 8."""
    with _session(people(6000, groups=3, rows=5), max_units=10_000) as s:
        g = s.groups(by="region", keys=REGIONS, aggregates=COUNT, epsilon="2", output=tmp_path / "rel",
                     max_groups_per_unit="auto", max_rows_per_group="auto")
    lim = g.section["limits"]
    assert (lim["max_groups_per_unit"], lim["max_rows_per_group"]) == (4, 8)
    assert lim["auto"] == ["max_groups_per_unit", "max_rows_per_group"] and lim["share"] == "1/10"
    assert g.to_pandas().attrs["limits"].startswith("max_groups_per_unit = 4, max_rows_per_group = 8")
    assert g.manifest.parameters["max_groups_per_unit"] == 4  # the plan the noise was drawn from
    people_in = {k: g.lookup(k)["people"] for k in REGIONS}
    for entry in people_in.values():  # each region: 4500 units x 5 rows, all kept under (4, 8)
        assert abs(entry.value - 4500 * 5) <= entry.error


def test_auto_limits_are_refused_before_the_spend_without_a_unit_column(tmp_path: Path) -> None:
    import dpspark
    from dpspark.rng import SeededRandom

    with dpspark.Session(people(100), max_units=1000, budget={"epsilon": "1"}, rng=SeededRandom(1)) as s:
        with pytest.raises(Exception, match="needs privacy.unit_column"):
            s.groups(by="region", keys=REGIONS, aggregates=COUNT, epsilon="1", output=tmp_path / "r",
                     max_groups_per_unit="auto")
        assert s.remaining.epsilon.le(Fraction(1)) and not s.remaining.epsilon.lt(Fraction(1))
    assert not (tmp_path / "r").exists()


def test_sql_options_accept_auto(tmp_path: Path) -> None:
    import dpspark
    from dpspark.rng import SeededRandom

    query = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 2, privacy_unit_column = pid, "
             "max_groups_contributed = auto, max_rows_contributed = 'auto', keys = regions) "
             "region, COUNT(*) AS people FROM survey GROUP BY region")
    import pyarrow as pa

    with dpspark.Session(tables={"survey": people(6000, groups=3, rows=5), "regions": pa.table({"region": REGIONS})},
                         public_tables=["regions"], unit_column="pid", max_units=10_000, rng=SeededRandom(SEED)) as s:
        g = s.sql(query, output=tmp_path / "sql")
    assert (g.section["limits"]["max_groups_per_unit"], g.section["limits"]["max_rows_per_group"]) == (4, 8)


def _stages_run(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The stage types every ``backend.compute`` runs from now on (appended as they run)."""
    import dpspark.engine.kernels as kernels

    ran: list[str] = []
    real = kernels.compute_on

    def spy(engine: str, backend: Any, stage: Any) -> Any:
        ran.append(type(stage).__name__)
        return real(engine, backend, stage)

    monkeypatch.setattr(kernels, "compute_on", spy)
    return ran


@pytest.mark.parametrize("unit", ["pid", None])
def test_without_auto_limits_one_pass_gives_the_pre_pass_release(unit: str | None, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """No "auto" limit: one pass (its own count of the units read), and the same release under one seed as with
    the pre-pass forced (units truncated, a filter, NULL units dropped)."""
    import dpspark
    from dpspark.mechanisms.groups.mechanism import GroupsMechanism
    from dpspark.rng import SeededRandom
    from tests.system.spark.test_groups_units_spark import data_files

    t = people(3000, groups=2, rows=3)
    t = t.set_column(0, "pid", pa_nulls(t.column("pid").to_pylist(), every=53))

    def release(out: Path) -> Any:
        privacy = {"unit_column": unit} if unit else {}
        with dpspark.Session(t, max_units=1500, rng=SeededRandom(SEED), **privacy) as s:
            return s.groups(by="region", keys=REGIONS, aggregates=COUNT, epsilon="1", output=out,
                            where="age < 70")

    ran = _stages_run(monkeypatch)
    one = release(tmp_path / "one")
    assert ran == ["GroupsStage"]
    monkeypatch.setattr(GroupsMechanism, "pre_pass", lambda self: True)
    two = release(tmp_path / "two")
    assert ran == ["GroupsStage", "UnitProfileStage", "GroupsStage"]
    assert one.section == two.section and one.section["units"]["noisy"] > 1500 + one.section["units"]["error"]
    assert one.manifest.privacy_text() == two.manifest.privacy_text()
    assert data_files(tmp_path / "one") == data_files(tmp_path / "two")


def pa_nulls(values: list[Any], every: int) -> Any:
    import pyarrow as pa

    return pa.array([None if i % every == 0 else v for i, v in enumerate(values)])


def test_the_dry_run_shows_one_pass_without_auto_limits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """The plan's passes: 1 without an "auto" limit, 2 with one (the dry run's words, then the release's stages)."""
    import json

    import pyarrow.parquet as pq

    from dpspark.cli.app import main as cli

    pq.write_table(people(600, groups=3, rows=2), tmp_path / "in.parquet")
    for auto, passes in (("", "passes           1: one pass"), ('max_groups_per_unit = "auto"',
                                                          "passes           2: a pre-pass")):
        config = tmp_path / "c.toml"
        config.write_text(f"""
[input]
path = "in.parquet"
[privacy]
mechanism = "groups"
epsilon = "1"
max_units = 500
unit_column = "pid"
[groups]
by = ["region"]
keys = {json.dumps(REGIONS)}
{auto}
[[aggregates]]
name = "people"
kind = "count"
[output]
path = "release"
""")
        assert cli(["release", "--config", str(config), "--dry-run"]) == 0
        assert passes in capsys.readouterr().out
    ran = _stages_run(monkeypatch)
    assert cli(["release", "--config", str(config), "--engine", "arrow"]) == 0
    assert ran == ["UnitProfileStage", "GroupsStage"]
