"""``Session.groups`` end to end on the Arrow engine: pandas in, an opened groups release out, one charge.

Bounded noise gives a probability-1 bound, so the released counts are checked against the true counts exactly.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

SEED = 3


def _frame(n: int = 3000) -> Any:
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(1)
    return pd.DataFrame({"carrier": rng.choice(["AA", "B6", "UA", "DL"], n),
                         "distance": rng.integers(100, 3000, n), "delay": rng.normal(10, 30, n).round(1)})


AGGS = [{"name": "flights", "kind": "count"},
        {"name": "distance", "kind": "sum", "column": "distance", "lo": "0", "hi": "5000"}]


def test_session_groups_on_pandas_end_to_end(tmp_path: Path) -> None:
    import pandas as pd

    import dpspark
    from dpspark.rng import SeededRandom

    df = _frame()
    truth = df.groupby("carrier").size().to_dict()
    keys = pd.DataFrame({"carrier": ["AA", "B6", "UA"]})
    with dpspark.Session(df, max_units=10_000, budget={"epsilon": "4", "delta": "1e-6"}, rng=SeededRandom(SEED)) as s:
        g = s.groups(by=["carrier"], keys=keys, aggregates=AGGS, epsilon="1", delta="1e-8", noise="bounded",
                     output=tmp_path / "g")
        assert s.remaining.epsilon.le(Fraction(3)) and s.remaining.delta == Fraction(1, 10**6) - Fraction(1, 10**8)
    assert g.kind == "groups" and g.keys() == ["AA", "B6", "UA"]
    out = g.to_pandas()
    assert list(out.columns)[:5] == ["carrier", "flights", "flights_error", "distance", "distance_error"]
    for key in g.keys():
        entry = g.lookup(key)["flights"]
        assert entry.always is not None and abs(entry.value - truth[key]) <= entry.always  # probability 1
    # the same seed gives the same release
    with dpspark.Session(df, max_units=10_000, rng=SeededRandom(SEED)) as s:
        again = s.groups(by="carrier", keys=["AA", "B6", "UA"], aggregates=AGGS, epsilon="1", delta="1e-8",
                         noise="bounded", output=tmp_path / "again")
    assert again.to_arrow().equals(g.to_arrow())


def test_private_keys_release_only_observed_keys(tmp_path: Path) -> None:
    import dpspark
    from dpspark.rng import SeededRandom

    with dpspark.Session(_frame(), max_units=10_000, rng=SeededRandom(SEED)) as s:
        g = s.groups(by="carrier", universe={"kind": "string", "max_bytes": 4},
                     aggregates=[{"name": "n", "kind": "count"}], epsilon="1", delta="1e-8", output=tmp_path / "p")
    assert set(g.keys()) <= {"AA", "B6", "UA", "DL"} and len(g.keys()) == 4  # ~750 rows each: all selected
    assert g.section["keys"] == "private"


@pytest.mark.parametrize("keys", [["AA", "B6"], [f"K{i}" for i in range(200)] + ["AA"]])
def test_ledger_spends_the_configured_budget_once_whatever_the_groups(tmp_path: Path, keys: list[str]) -> None:
    import dpspark
    from dpspark.ledger import Ledger

    ledger = tmp_path / "ledger.sqlite"
    Ledger(ledger).set_total("flights", "4", "1e-6")
    with dpspark.Session(_frame(), max_units=10_000, ledger=ledger, dataset="flights") as s:
        g = s.groups(by="carrier", keys=keys, aggregates=AGGS, epsilon="1/2", output=tmp_path / "g")
    assert len(g.keys()) == len(keys)
    spent = Ledger(ledger).spent("flights")
    assert (spent.epsilon, spent.delta) == (Fraction(1, 2), 0)
    assert [r.status for r in Ledger(ledger).releases("flights")] == ["released"]


def test_cli_release_and_lookup(tmp_path: Path, capsys: Any) -> None:
    from dpspark.cli.app import main

    _frame().to_parquet(tmp_path / "flights.parquet")
    cfg = tmp_path / "g.toml"
    cfg.write_text('[input]\npath = "flights.parquet"\n[privacy]\nmechanism = "groups"\nepsilon = "1"\n'
                   'max_units = 10000\n[groups]\nby = "carrier"\nkeys = ["AA", "UA"]\n'
                   '[[aggregates]]\nname = "flights"\nkind = "count"\n'
                   '[[aggregates]]\nname = "delay"\nkind = "mean"\ncolumn = "delay"\nlo = "-100"\nhi = "300"\n'
                   '[output]\npath = "rel"\n')
    assert main(["release", "--config", str(cfg)]) == 0
    capsys.readouterr()
    assert main(["lookup", str(tmp_path / "rel"), "UA"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["key", "flights", "delay"] and lines[1].startswith("UA")


def test_cli_plot_draws_every_aggregate_with_its_error_bars(tmp_path: Path, capsys: Any) -> None:
    """``dpspark plot`` of a groups release: a PNG, and one panel per aggregate whose bars and error bars are the
    released values and errors (from the same table ``to_pandas`` reads)."""
    from dpspark.cli.app import main
    from dpspark.lookup import open_release

    _frame().to_parquet(tmp_path / "flights.parquet")
    cfg = tmp_path / "g.toml"
    cfg.write_text('[input]\npath = "flights.parquet"\n[privacy]\nmechanism = "groups"\nepsilon = "1"\n'
                   'max_units = 10000\n[groups]\nby = "carrier"\nkeys = ["AA", "B6", "UA"]\n'
                   '[[aggregates]]\nname = "flights"\nkind = "count"\n'
                   '[[aggregates]]\nname = "distance"\nkind = "sum"\ncolumn = "distance"\nlo = "0"\nhi = "5000"\n'
                   '[output]\npath = "rel"\n')
    assert main(["release", "--config", str(cfg)]) == 0
    assert main(["plot", str(tmp_path / "rel"), "-o", str(tmp_path / "g.png")]) == 0
    capsys.readouterr()
    png = (tmp_path / "g.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    rel = open_release(tmp_path / "rel")
    panels = rel.plot_bars(top=10)
    frame = rel.to_pandas()
    assert [p["ylabel"] for p in panels] == ["flights", "distance"]
    for p in panels:
        assert p["labels"] == ["AA", "B6", "UA"]
        assert p["values"] == [float(v) for v in frame[p["ylabel"]]]
        assert p["errors"] == [float(v) for v in frame[p["ylabel"] + "_error"]] and min(p["errors"]) > 0
