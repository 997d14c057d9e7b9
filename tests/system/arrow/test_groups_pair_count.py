"""A count read off an imputing mean's pair, end to end on Arrow: it counts every row, NULLs included."""

from __future__ import annotations

import json
from pathlib import Path


def test_count_from_the_pair_counts_null_rows_on_arrow(tmp_path: Path) -> None:
    import numpy as np
    import pandas as pd

    import dpspark
    from dpspark.rng import SeededRandom

    rng = np.random.default_rng(1)
    n = 3000
    df = pd.DataFrame({"carrier": rng.choice(["AA", "B6", "UA"], n), "delay": rng.normal(10, 30, n).round(1)})
    df.loc[rng.random(n) < 0.3, "delay"] = np.nan  # ~300 NULL rows a key, far above the count's bar
    aggs = [{"name": "flights", "kind": "count"},
            {"name": "delay", "kind": "mean", "column": "delay", "lo": "-100", "hi": "300", "nulls": "0"}]
    with dpspark.Session(df, max_units=10_000, rng=SeededRandom(3)) as s:
        g = s.groups(by="carrier", keys=["AA", "B6", "UA"], aggregates=aggs, epsilon="1", output=tmp_path / "g")
    manifest = json.loads((tmp_path / "g" / "manifest.json").read_text())
    rows = {a["name"]: a for a in manifest["mechanism"]["parameters"]["aggregates"]}
    assert rows["flights"]["form"] == "paircount" and rows["flights"]["statistics"] == rows["delay"]["statistics"]
    truth = df.groupby("carrier").size().to_dict()
    for key in g.keys():
        entry = g.lookup(key)["flights"]
        assert entry.value.denominator == 1 and abs(entry.value - truth[key]) <= entry.error  # seeded: fixed
