"""STDDEV_POP: compiled to a groups variance aggregate stated ``post = "sqrt"`` in the release file; every reader
shows the square root and its interval, post-processing of the released variance and its bar (clamped at 0,
mapped through the increasing root)."""

from __future__ import annotations

import math
import random
from fractions import Fraction
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from dpspark.sql import SqlError, compile_query
from dpspark.lookup.stddev import stddev_bar

Q = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, privacy_unit_column = u, keys = k) "


def _cases() -> list[tuple[Fraction, Fraction]]:
    rng = random.Random(11)
    out = [(Fraction(-3), Fraction(1)), (Fraction(-1), Fraction(5)), (Fraction(0), Fraction(0)), (Fraction(4), Fraction(4)),
           (Fraction(1, 100), Fraction(9)), (Fraction(10 ** 6), Fraction(3))]
    out += [(Fraction(rng.randint(-50, 400), rng.randint(1, 9)), Fraction(rng.randint(0, 300), rng.randint(1, 9)))
            for _ in range(300)]
    return out


def _covers(bar: Any, v: Fraction, e: Fraction) -> bool:
    """Every true variance V >= 0 the variance's bar allows has sqrt(V) in [lo, hi] and within error of sd."""
    sd, lo, hi, error = bar(v, e)
    low = max(v - e, Fraction(0))
    if v + e < 0:
        return True  # no V >= 0 is allowed: nothing to cover
    for t in range(11):
        V = low + (v + e - low) * Fraction(t, 10)
        root = math.sqrt(float(V))
        if not (lo <= root <= hi and abs(root - sd) <= error):
            return False
    return True


@pytest.mark.parametrize("v, e", _cases())
def test_the_bar_maps_the_variance_interval_exactly(v: Fraction, e: Fraction) -> None:
    assert _covers(stddev_bar, v, e)
    sd, lo, hi, _ = stddev_bar(v, e)
    assert sd == math.sqrt(float(max(v, 0))) and lo <= sd <= hi
    assert hi <= math.nextafter(math.sqrt(float(max(v + e, 0))), math.inf)  # tight: no wider than the map


def test_a_delta_method_bar_is_caught() -> None:
    """The mutant e / (2 sd) (the delta method) is not a valid bar near 0: the coverage check fails on it."""
    def mutant(v: Fraction, e: Fraction) -> tuple[float, float, float, float]:
        sd = math.sqrt(float(max(v, 0)))
        half = float(e) / (2 * sd) if sd else float(e)
        return sd, sd - half, sd + half, half

    assert not all(_covers(mutant, v, e) for v, e in _cases())
    assert stddev_bar(None, None) == (None, None, None, None)


def test_stddev_compiles_to_the_variance_aggregate() -> None:
    call = compile_query(Q + "g, STDDEV_POP(x, contribution_bounds_per_group => (0, 100)) AS sd FROM t GROUP BY g",
                         private=["t"], public=["k"], unit_column="u")
    assert call.kwargs["aggregates"] == [{"name": "sd", "kind": "variance", "column": "x", "lo": "0", "hi": "100",
                                          "post": "sqrt"}]


def test_stddev_without_bounds_has_them_chosen_privately_with_group_by() -> None:
    call = compile_query(Q.replace(", keys = k", ", delta = 1e-9") + "g, STDDEV_POP(x) AS sd FROM t GROUP BY g",
                         private=["t"], public=["k"], unit_column="u")
    assert call.kwargs["aggregates"] == [{"name": "sd", "kind": "variance", "column": "x", "post": "sqrt"}]


@pytest.mark.parametrize("body, words", [
    ("STDDEV_POP(x, contribution_bounds_per_group => (0, 1)) AS sd FROM t", "without GROUP BY"),
    ("g, STDDEV_POP(x, contribution_bounds_per_group => (0, 1)) AS sd, COUNT(*) AS sd_variance FROM t GROUP BY g",
     "same name"),
    ("g, STDDEV_POP(x, contribution_bounds_per_group => (0, 1)) AS sd, COUNT(*) AS sd_lo FROM t GROUP BY g",
     "same name"),
])
def test_stddev_refusals(body: str, words: str) -> None:
    with pytest.raises(SqlError, match=words):
        compile_query(Q.replace(", keys = k", ", delta = 1e-9") + body, private=["t"], public=["k"], unit_column="u")


@pytest.mark.parametrize("aggs, words", [
    ([{"name": "n", "kind": "count", "post": "sqrt"}], "applies to kind"),
    ([{"name": "s", "kind": "sum", "column": "x", "lo": "0", "hi": "1", "post": "sqrt"}], "applies to kind"),
    ([{"name": "s", "kind": "variance", "column": "x", "lo": "0", "hi": "1", "post": "log"}], "applies to kind"),
    ([{"name": "s", "kind": "variance", "column": "x", "lo": "0", "hi": "1", "post": "sqrt"},
      {"name": "s_variance", "kind": "count"}], "rename 's_variance'"),
])
def test_the_post_field_is_checked_before_the_spend(aggs: list[dict[str, Any]], words: str) -> None:
    from dpspark.mechanisms.groups.aggregates import GroupsError, parse_aggregates

    with pytest.raises(GroupsError, match=words):
        parse_aggregates(aggs)


def _table() -> pa.Table:
    import numpy as np

    rng = np.random.default_rng(1)
    return pa.table({"u": rng.integers(0, 3000, 6000), "g": rng.choice(["a", "b"], 6000),
                     "x": rng.normal(50, 10, 6000)})


SD_QUERY = Q + "g, STDDEV_POP(x, contribution_bounds_per_group => (0, 100)) AS sd, COUNT(*) AS n FROM t GROUP BY g"


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The SQL release of :data:`SD_QUERY` and the equal ``Session.groups`` call's, under one seed."""
    import dpspark
    from dpspark.rng import SeededRandom

    tmp = tmp_path_factory.mktemp("sd")
    t = _table()

    def session() -> Any:
        return dpspark.Session(tables={"t": t, "k": pa.table({"g": ["a", "b"]})}, public_tables=["k"],
                               max_units=10_000, unit_column="u", rng=SeededRandom(5))

    with session() as s:
        s.sql(SD_QUERY, output=tmp / "sql")
    with session() as s:
        s.groups(by=["g"], keys=["a", "b"], epsilon="1", output=tmp / "api",
                 aggregates=[{"name": "sd", "kind": "variance", "column": "x", "lo": "0", "hi": "100", "post": "sqrt"},
                             {"name": "n", "kind": "count"}])
    return tmp / "sql", tmp / "api"


def test_the_release_file_states_the_standard_deviation(releases: tuple[Path, Path]) -> None:
    """SQL = API byte for byte; any reader of the file (no SQL) shows sd = the root of the exact variance."""
    import json

    from dpspark.lookup import open_release

    sql, api = releases
    assert (sql / "groups.parquet").read_bytes() == (api / "groups.parquet").read_bytes()
    section = json.loads((sql / "manifest.json").read_text())["section"]
    assert [a.get("post") for a in section["aggregates"]] == ["sqrt", None]
    rel = open_release(sql)
    frame = rel.to_pandas()
    assert list(frame.columns[:9]) == ["g", "sd", "sd_error", "sd_lo", "sd_hi", "sd_variance", "sd_variance_error",
                                       "n", "n_error"]
    for key, sd, err, lo, hi, var in zip(frame["g"], frame["sd"], frame["sd_error"], frame["sd_lo"], frame["sd_hi"],
                                         frame["sd_variance_exact"]):
        e = rel.lookup(key)["sd"]
        assert e.post == "sqrt" and Fraction(var) == e.value
        assert (sd, lo, hi, err) == stddev_bar(e.value, e.error) and lo <= sd <= hi
        assert 5 < sd < 15  # the data's standard deviation is 10: the root, not the variance (~100)
    panel = rel.plot_bars(5)[0]
    assert panel["values"] == list(frame["sd"]) and panel["errors"] == list(frame["sd_error"])
    assert "standard deviation" in rel.aggregate_words()[0]


def test_lookup_inspect_verify_and_signing_show_and_cover_it(releases: tuple[Path, Path], tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    import json
    import shutil

    from dpspark.cli.app import main
    from dpspark.lookup import open_release
    from tests.support.release_fixtures import reseal

    sql = tmp_path / "rel"
    shutil.copytree(releases[0], sql)
    sd = open_release(sql).to_pandas().set_index("g")["sd"]
    assert main(["lookup", str(sql), "a"]) == 0
    out = capsys.readouterr().out
    assert " in [" in out and f"{sd['a']:.3g}"[:3] in out and "sd_variance" not in out
    assert main(["inspect", str(sql)]) == 0
    assert "sd: standard deviation" in capsys.readouterr().out
    assert main(["keygen", "--out", str(tmp_path / "k")]) == 0
    assert main(["sign", "--key", str(tmp_path / "k.key"), str(sql)]) == 0
    assert main(["verify", "--key", str(tmp_path / "k.pub"), str(sql)]) == 0
    capsys.readouterr()
    manifest = json.loads((sql / "manifest.json").read_text())
    manifest["section"]["aggregates"][0].pop("post")  # the file no longer says it is a standard deviation
    (sql / "manifest.json").write_text(json.dumps(manifest))
    assert main(["verify", "--key", str(tmp_path / "k.pub"), str(sql)]) != 0  # the signature covers it
    unsigned = tmp_path / "unsigned"
    shutil.copytree(releases[0], unsigned)
    reseal(unsigned, lambda doc: doc["section"]["aggregates"][0].pop("post"))  # resealed: the codec catches it
    assert main(["verify", str(unsigned)]) != 0
    assert "groups.aggregates differ from mechanism.parameters.aggregates" in capsys.readouterr().err


@pytest.mark.parametrize("edit", ["drop", "on_count", "log"])
def test_the_section_codec_refuses_a_wrong_post(releases: tuple[Path, Path], edit: str) -> None:
    """A resealed manifest whose post disagrees with the parameters, sits on a count or is unknown is refused."""
    import copy

    from dpspark.lookup import open_release
    from dpspark.mechanisms.groups.section import check_section
    from dpspark.release.errors import ReleaseFormatError

    rel = open_release(releases[0])
    section = copy.deepcopy(rel.section)
    check_section(section, rel.manifest, "m")
    aggs = section["aggregates"]
    if edit == "drop":
        aggs[0].pop("post")
    elif edit == "on_count":
        aggs[1]["post"] = "sqrt"
    else:
        aggs[0]["post"] = "log"
    with pytest.raises(ReleaseFormatError, match="aggregates"):
        check_section(section, rel.manifest, "m")
