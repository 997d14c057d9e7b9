"""Session releases with max_rows_per_key > 1 for stability, pure_sparse and compact (Arrow engine, no JVM).

Each is accepted by the data-free checks and spends exactly its epsilon; a request the plan refuses (a
universe too small for pure_sparse's 2 k c n + 1) spends nothing and reads no data.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest

import dpspark
from dpspark.rng import SeededRandom

UNIVERSE = {"kind": "int_range", "lo": 0, "hi": 999}


def frame() -> pd.DataFrame:
    """40 users, each with 1-4 rows on key u % 5 and one row on key 7 (so rows per key reach 4)."""
    users, keys = [], []
    for u in range(40):
        users += [u] * (u % 4 + 1) + [u]
        keys += [u % 5] * (u % 4 + 1) + [7]
    return pd.DataFrame({"user_id": users, "k": keys})


@pytest.mark.parametrize("mech,extra", [("stability", {"delta": "1e-7"}), ("pure_sparse", {}), ("compact", {"m": 64})])
def test_session_accepts_rows_per_key_and_spends_exactly(tmp_path: Path, mech: str, extra: dict) -> None:
    with dpspark.Session(frame(), max_units=50, unit_column="user_id", budget={"epsilon": "3", "delta": "1e-6"},
                         rng=SeededRandom(b"rows")) as s:
        s.histogram(keys="k", universe=UNIVERSE, mechanism=mech, epsilon="2", max_keys_per_unit=2,
                    max_rows_per_key=3, output=str(tmp_path / "r"), **extra)
        assert s.remaining.epsilon.as_fraction() == 1
    man = dpspark.lookup.open_release(tmp_path / "r").manifest
    assert man.config["max_rows_per_key"] == 3 and man.count_range == 50 * 2 * 3


def test_pure_sparse_refusal_spends_nothing(tmp_path: Path) -> None:
    with dpspark.Session(frame(), max_units=50, unit_column="user_id", budget={"epsilon": "3"}) as s:
        with pytest.raises(dpspark.DPSparkError, match="at least 2kcn\\+1 = 601 keys"):
            s.histogram(keys="k", universe={"kind": "int_range", "lo": 0, "hi": 599}, mechanism="pure_sparse",
                        epsilon="2", max_keys_per_unit=2, max_rows_per_key=3, output=str(tmp_path / "r"))
        assert s.remaining.epsilon.as_fraction() == Fraction(3)
    assert not (tmp_path / "r").exists()
