"""STDDEV_POP: compiled to the groups variance aggregate ``<name>_variance``; the square root and its interval
are post-processing of the released variance and its bar (clamped at 0, mapped through the increasing root)."""

from __future__ import annotations

import math
import random
from fractions import Fraction
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from dpspark.sql import SqlError, compile_query
from dpspark.sql.stddev import stddev_bar

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
    assert call.kwargs["aggregates"] == [{"name": "sd_variance", "kind": "variance", "column": "x", "lo": "0",
                                          "hi": "100"}]
    assert call.stddev == {"sd": "sd_variance"}


def test_stddev_without_bounds_has_them_chosen_privately_with_group_by() -> None:
    call = compile_query(Q.replace(", keys = k", ", delta = 1e-9") + "g, STDDEV_POP(x) AS sd FROM t GROUP BY g",
                         private=["t"], public=["k"], unit_column="u")
    assert call.kwargs["aggregates"] == [{"name": "sd_variance", "kind": "variance", "column": "x"}]
    assert call.stddev == {"sd": "sd_variance"}


@pytest.mark.parametrize("body, words", [
    ("STDDEV_POP(x, contribution_bounds_per_group => (0, 1)) AS sd FROM t", "without GROUP BY"),
    ("g, STDDEV_POP(x, contribution_bounds_per_group => (0, 1)) AS sd, COUNT(*) AS sd_variance FROM t GROUP BY g",
     "same name"),
])
def test_stddev_refusals(body: str, words: str) -> None:
    with pytest.raises(SqlError, match=words):
        compile_query(Q.replace(", keys = k", ", delta = 1e-9") + body, private=["t"], public=["k"], unit_column="u")


def test_session_sql_stddev_is_the_root_of_the_groups_variance(tmp_path: Path) -> None:
    import numpy as np

    import dpspark
    from dpspark.rng import SeededRandom

    rng = np.random.default_rng(1)
    t = pa.table({"u": rng.integers(0, 3000, 6000), "g": rng.choice(["a", "b"], 6000), "x": rng.normal(50, 10, 6000)})

    def session() -> Any:
        return dpspark.Session(tables={"t": t, "k": pa.table({"g": ["a", "b"]})}, public_tables=["k"],
                               max_units=10_000, unit_column="u", rng=SeededRandom(5))

    with session() as s:
        rel = s.sql(Q + "g, STDDEV_POP(x, contribution_bounds_per_group => (0, 100)) AS sd FROM t GROUP BY g",
                    output=tmp_path / "sql")
    with session() as s:
        api = s.groups(by=["g"], keys=["a", "b"], epsilon="1", output=tmp_path / "api",
                       aggregates=[{"name": "sd_variance", "kind": "variance", "column": "x", "lo": "0", "hi": "100"}])
    assert rel.to_arrow().equals(api.to_arrow())
    frame = rel.to_pandas()
    for key, sd, err, lo, hi in zip(frame["g"], frame["sd"], frame["sd_error"], frame["sd_lo"], frame["sd_hi"]):
        v, e = api.lookup(key)["sd_variance"].value, api.lookup(key)["sd_variance"].error
        assert (sd, lo, hi, err) == stddev_bar(v, e) and lo <= sd <= hi
    assert list(frame.columns[:5]) == ["g", "sd", "sd_error", "sd_lo", "sd_hi"]
