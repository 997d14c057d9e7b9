"""Private keys over three free-text columns (issue 34 §5): a tuple universe of three 31-byte strings has 745
bits, past the old 2^256 cap; its 96-byte index words carry the keys through the groups engine and the released
keys decode to the original tuples."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

LONG = ["x" * 31, "ü" * 15 + "y", "the quick brown fox jumps over!!"[:31]]
KEYS = [(LONG[0], "b", LONG[2]), (LONG[1], LONG[1], "c"), ("", LONG[0], LONG[1])]
UNIVERSE = {"kind": "tuple", "components": [{"kind": "string", "max_bytes": 31, "column": c} for c in "abc"]}


def wide_table() -> pa.Table:
    rows = [(k, u) for i, k in enumerate(KEYS) for u in range(200 * i, 200 * i + 200)]
    rows.append((("lonely", "key", "z"), 10_000))  # one unit: not released at this delta (with high probability)
    return pa.table({"a": [k[0] for k, _ in rows], "b": [k[1] for k, _ in rows], "c": [k[2] for k, _ in rows],
                     "u": [u for _, u in rows], "v": [float(u % 7) for _, u in rows]})


def release(data: Any, out: Path, spark: Any = None) -> Any:
    import dpspark
    from dpspark.rng import SeededRandom

    with dpspark.Session(data, max_units=20_000, unit_column="u", spark=spark, rng=SeededRandom(3)) as s:
        return s.groups(by=["a", "b", "c"], universe=UNIVERSE, epsilon="4", delta="1e-9", output=out,
                        aggregates=[{"name": "n", "kind": "count"},
                                    {"name": "s", "kind": "sum", "column": "v", "lo": "0", "hi": "6"}])


def test_the_universe_is_past_2_256_and_words_are_96_bytes() -> None:
    from dpspark.universe import universe_from_dict

    u = universe_from_dict(UNIVERSE)
    assert u.size > 1 << 256 and u.index_width == 96
    for k in KEYS:
        assert u.decode(u.encode(k)) == k


def test_released_keys_decode_to_the_original_tuples(tmp_path: Path) -> None:
    pq.write_table(wide_table(), tmp_path / "wide.parquet")
    rel = release(tmp_path / "wide.parquet", tmp_path / "rel")
    df = rel.to_pandas()
    got = sorted(zip(df["a"], df["b"], df["c"]))
    assert got == sorted(KEYS)
    assert sorted(df["n"].astype(float).round(-2)) == [200.0, 200.0, 200.0]
    for key in KEYS:  # the lookup encodes the tuple to its 96-byte word and finds the released row
        assert abs(rel.lookup(key)["n"].value - 200) <= 10


def test_a_scalar_universe_keeps_its_2_256_cap() -> None:
    from dpspark.universe import UniverseConfigError, universe_from_dict

    with pytest.raises(UniverseConfigError, match="2\\^256"):
        universe_from_dict({"kind": "string", "max_bytes": 32})
