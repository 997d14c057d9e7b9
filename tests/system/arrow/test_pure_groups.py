"""``pure_groups`` on the Arrow engine (docs/groups.md §H): string keys of up to 15 bytes (|X| about 2^120),
pure epsilon, counts and sums per released key readable by lookup and inspect, one release per seed."""

from __future__ import annotations

import contextlib
import io
from fractions import Fraction
from pathlib import Path
from typing import Any

SEED = 11
AGGS = [{"name": "flights", "kind": "count"},
        {"name": "dist", "kind": "sum", "column": "distance", "lo": "0", "hi": "3000"}]
HEAVY = {"ATL": 500, "ORD": 300}  # with DEN (120 rows) below the ~170 of the largest empty-key noise


def frame() -> Any:
    import pandas as pd

    rows = [(k, 1000 + 7 * i % 900) for k, m in {**HEAVY, "DEN": 120}.items() for i in range(m)]
    rows += [(f"X{i:04d}", 500) for i in range(30)]  # 30 keys of one row: below every empty key's noise
    return pd.DataFrame(rows, columns=["dest", "distance"])


def release(data: Any, out: Path, spark: Any = None, **privacy: Any) -> Any:
    import dpspark
    from dpspark.rng import SeededRandom

    with dpspark.Session(data, max_units=1000, rng=SeededRandom(SEED), budget={"epsilon": "1"}, spark=spark) as s:
        rel = s.release(mechanism="pure_groups", epsilon="1", output=out, **privacy,
                        sections={"groups": {"by": "dest"}, "aggregates": AGGS,
                                  "universe": {"kind": "string", "max_bytes": 15}})
        assert s.remaining.epsilon.le(Fraction(0))
    return rel


def test_pure_groups_release_reads_back_with_lookup_and_inspect(tmp_path: Path) -> None:
    from dpspark.cli.app import main

    data = frame()
    rel = release(data, tmp_path / "rel")
    assert rel.kind == "pure_groups" and rel.manifest.add_remove.measure.delta == 0
    assert rel.manifest.add_remove.measure.epsilon.le(Fraction(1))
    truth = data.groupby("dest")["distance"].agg(["count", "sum"])
    for key in HEAVY:  # far above the largest noisy count of ~2^120 empty keys: released, within the bars
        entry = rel.lookup(key)
        assert abs(entry["flights"].value - truth.loc[key, "count"]) <= entry["flights"].error
        assert abs(entry["dist"].value - truth.loc[key, "sum"]) <= entry["dist"].error
    assert len(rel.keys()) <= 1000
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["inspect", str(tmp_path / "rel")]) == 0
        assert main(["lookup", str(tmp_path / "rel"), "ATL"]) == 0
    text = out.getvalue()
    assert "pure DP" in text and "pure_sparse" in text and "ATL" in text
    again = release(data, tmp_path / "again")
    assert again.to_arrow().equals(rel.to_arrow())


def test_trim_keeps_the_rows_above_the_simultaneous_bar_which_are_true_keys(tmp_path: Path) -> None:
    """Same seed, same draws: the trimmed table is the full table's rows above the stated bar, all true keys."""
    data = frame()
    full = release(data, tmp_path / "full").to_pandas()
    trimmed = release(data, tmp_path / "trim", trim=True)
    bar = trimmed.manifest.parameters["simultaneous_count_bar"]
    claim = [c for c in trimmed.manifest.accuracy.claims if c.scope == "simultaneous"]
    assert len(claim) == 1 and str(claim[0].bound) == bar
    kept = trimmed.to_pandas()
    want = full[full["flights"] > Fraction(bar)]
    assert list(kept["dest"]) == list(want["dest"]) and 1 <= len(kept) < len(full)
    assert set(kept["dest"]) <= set(data["dest"])  # every kept row is a key with rows
