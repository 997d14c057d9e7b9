"""Issue 34 §4: a quantile whose own rank bar covers the whole group is flagged, in to_pandas and in plot."""

from __future__ import annotations

from pathlib import Path

import pytest

from dpspark.lookup import open_release
from dpspark.mechanisms.groups.algorithm import GroupStats
from tests.unit.groups.test_face import raw_config, write

AGGS = [{"name": "n", "kind": "count"},
        {"name": "med", "kind": "quantile", "column": "x", "lo": "0", "hi": "8", "q": "1/2", "bins": 8}]


def _release(tmp: Path) -> tuple:
    # AA: 800 rows around 4 (the bar is a few rows: informative); B6: no rows; UA: one row
    stats = [GroupStats(0, {"n": (800,), "med": (0, 0, 0, 200, 400, 200, 0, 0, 0)}),
             GroupStats(2, {"n": (1,), "med": (0, 0, 0, 0, 0, 0, 0, 0, 1)})]
    out, released, mech = write(tmp, raw_config(tmp, aggs=AGGS), stats)
    return open_release(out), released, mech


def test_to_pandas_flags_a_quantile_whose_rank_bar_reaches_the_count(tmp_path: Path) -> None:
    rel, released, mech = _release(tmp_path)
    bar = mech.planned.errors["med"]
    frame = rel.to_pandas()
    assert "med_uninformative" in frame.columns and "n_uninformative" not in frame.columns
    expected = [v["med"].error >= v["n"].value for v in released.values]
    assert frame["med_uninformative"].tolist() == expected
    counts = dict(zip(rel.keys(), (v["n"].value for v in released.values)))
    assert counts["AA"] > 400 > bar  # the big group is informative
    assert bar >= 10 and expected == [False, True, True]  # B6 (0 rows) and UA (1 row): the bar covers every rank


def test_plot_greys_the_flagged_values(tmp_path: Path) -> None:
    rel, _, _ = _release(tmp_path)
    panels = {p["ylabel"]: p for p in rel.plot_bars(top=10)}
    assert panels["med"]["muted"] == rel.uninformative()["med"]
    assert any(panels["med"]["muted"]) and "uninformative" in panels["med"]["title"]
    assert not any(panels["n"]["muted"])


def test_no_count_no_flag(tmp_path: Path) -> None:
    out, _, _ = write(tmp_path, raw_config(tmp_path, aggs=AGGS[1:]),
                      [GroupStats(0, {"med": (0, 0, 0, 0, 1, 0, 0, 0, 0)})])
    rel = open_release(out)
    assert rel.uninformative() == {} and "med_uninformative" not in rel.to_pandas().columns


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_flag_is_post_processing_of_released_values(tmp_path: Path, seed: int) -> None:
    """The flag equals error >= count on the written table (read back exactly), whatever the noise."""
    out, released, _ = write(tmp_path, raw_config(tmp_path, aggs=AGGS),
                             [GroupStats(1, {"n": (3,), "med": (0, 0, 0, 1, 1, 1, 0, 0, 0)})], seed=seed)
    rel = open_release(out)
    for key, flag in zip(rel.keys(), rel.uninformative()["med"]):
        got = rel.lookup(key)
        assert flag == (got["med"].error >= got["n"].value)


def test_the_plot_command_draws_muted_bars(tmp_path: Path) -> None:
    import argparse

    pytest.importorskip("matplotlib")
    from dpspark.cli.plot import _plot_bars

    rel, _, _ = _release(tmp_path)
    out = tmp_path / "bars.png"
    assert _plot_bars(argparse.Namespace(output=str(out), dpi=40), rel.plot_bars(top=10), False) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"
