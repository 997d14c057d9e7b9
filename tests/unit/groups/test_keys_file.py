"""The column-wise keys file reader equals the mechanism's row-wise one (rows, universe, indexes) and refuses
what key_rows refuses, naming the file's row; a reader that sorted the values would change the indexes."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

from dpspark.mechanisms.groups.aggregates import GroupsError
from dpspark.mechanisms.groups.keys_file import read_public_keys
from dpspark.mechanisms.groups.mechanism import public_key_universe, read_keys_file


def _row_wise(path: Path, by: tuple[str, ...]) -> tuple:
    rows = read_keys_file(path, by)
    uni = public_key_universe(by, rows)
    return rows, uni, [uni.encode(r[0] if len(by) == 1 else r) - 1 for r in rows]


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_equal_to_the_row_wise_reader(tmp_path: Path, suffix: str) -> None:
    rnd = random.Random(5)  # input data only
    pairs = list({(rnd.choice(["b", "a", "é", "zz", "q"]), rnd.randrange(-5, 40)) for _ in range(300)})
    rnd.shuffle(pairs)
    table = pa.table({"s": [p[0] for p in pairs], "i": [p[1] for p in pairs], "other": [0.5] * len(pairs)})
    path = tmp_path / f"keys{suffix}"
    pq.write_table(table, path) if suffix == ".parquet" else pcsv.write_csv(table, path)
    for by in (("i",), ("s", "i"), ("i", "s")):
        if by == ("i",):
            one = table.group_by("i").aggregate([])  # unique keys for the one-column case
            path1 = tmp_path / f"one{suffix}"
            pq.write_table(one, path1) if suffix == ".parquet" else pcsv.write_csv(one, path1)
            p = path1
        else:
            p = path
        got = read_public_keys(p, by)
        rows, uni, idx = _row_wise(p, by)
        assert got.rows == rows and got.universe == uni and got.indexes == idx
        values = got.universe.parts[0].values
        assert list(values) != sorted(values)  # first-seen order, not sorted


@pytest.mark.parametrize("table,match", [
    (pa.table({"k": ["a", "b", "a"]}), "lists a key twice"),
    (pa.table({"k": ["a", None]}), r"keys_file\[1\]: a key value is a string or an integer"),
    (pa.table({"k": [0.5, 1.5]}), r"keys_file\[0\]: a key value"),
    (pa.table({"k": [True, False]}), r"keys_file\[0\]: a key value"),
    (pa.table({"k": pa.array([], pa.string())}), "is empty"),
    (pa.table({"j": ["a"]}), "has no column"),
])
def test_refusals_match_the_row_wise_reader(tmp_path: Path, table: pa.Table, match: str) -> None:
    path = tmp_path / "k.parquet"
    pq.write_table(table, path)
    with pytest.raises(GroupsError, match=match):
        read_public_keys(path, ("k",))
    with pytest.raises(GroupsError, match=match):
        read_keys_file(path, ("k",))
