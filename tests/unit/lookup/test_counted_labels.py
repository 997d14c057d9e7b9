"""Issue 25, 1.2 and 1.3: a release says what it counted, and ``to_pandas`` can drop the bins that may be noise.

After contribution bounding a count is "distinct units per key, at most k keys per unit" (or "rows per key, at
most c per unit and key"), not a count of the data's rows: ``lookup``, ``inspect``, ``to_pandas`` and the plot's
axis say so, and none says "true count". A pure_sparse release lists many random keys at or below the threshold
by design; ``to_pandas(above_threshold=True)`` keeps the others. Real releases (the golden cases on Arrow).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dpspark.cli.app import main
from dpspark.lookup import BELOW_THRESHOLD, open_release
from tests.support.every_kind import release_of

DISTINCT_10 = "distinct units (user) per key, at most 10 keys per unit"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("counted")


@pytest.fixture(scope="module")
def ten_keys(root: Path) -> Path:
    """A stability release whose users count in up to 10 cities each."""
    return release_of("stability", root, privacy={"max_keys_per_unit": 10, "epsilon": "8"})


def test_lookup_says_what_was_counted(ten_keys: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lookup", str(ten_keys), "Paris", "Oslo"]) == 0
    out = capsys.readouterr().out
    assert f"Counted: {DISTINCT_10} (after contribution bounding, not rows of the data)." in out
    assert "exact count >" in out.splitlines()[1] and "true count" not in out


def test_inspect_says_what_was_counted(ten_keys: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(ten_keys)]) == 0
    out = capsys.readouterr().out
    assert f"counted      {DISTINCT_10} (after contribution bounding, not rows of the data)" in out
    assert "true count" not in out


def test_to_pandas_says_what_was_counted(ten_keys: Path) -> None:
    frame = open_release(ten_keys).to_pandas()
    assert frame.attrs["counted"] == DISTINCT_10
    assert frame.columns.name == "distinct units per key"  # printed above the index
    assert "distinct units per key" in frame.to_string().splitlines()[0]


def test_rows_per_key_when_a_unit_adds_several_rows(root: Path) -> None:
    rel = release_of("dense", root, privacy={"max_rows_per_key": 3, "max_keys_per_unit": 2})
    want = "rows per key, at most 3 per unit and key, at most 2 keys per unit (unit: user)"
    frame = open_release(rel).to_pandas()
    assert frame.attrs["counted"] == want and frame.columns.name == "rows per key (<= 3 per unit)"
    assert f"Counted: {want}" in open_release(rel).accuracy_text


def test_the_plot_axis_says_what_was_counted(ten_keys: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from dpspark.cli.plot import count_label

    label = count_label(open_release(ten_keys).manifest.raw["config"])
    assert label == "noisy count:\ndistinct units (user) per key\n(at most 10 keys per unit)"
    assert main(["plot", str(ten_keys), "-o", str(tmp_path / "top.png")]) == 0
    assert (tmp_path / "top.png").stat().st_size > 0


def test_compact_to_pandas_of_given_keys(root: Path) -> None:
    rel = open_release(release_of("compact", root))
    frame = rel.to_pandas(["Paris", "Oslo", "Nowher"])
    assert list(frame["city"]) == ["Paris", "Oslo", "Nowher"]
    assert list(frame["noisy_count"]) == list(rel.counts(["Paris", "Oslo", "Nowher"]))
    assert frame.attrs["counted"] == "distinct units (user) per key, at most 1 key per unit"
    with pytest.raises(ValueError, match="to_pandas\\(keys\\)"):
        rel.to_pandas()


def test_pure_sparse_to_pandas_above_threshold(root: Path) -> None:
    rel = open_release(release_of("pure_sparse", root, privacy={"epsilon": "4"}))
    every = rel.to_pandas()
    above = rel.to_pandas(above_threshold=True)
    below = every["note"] == BELOW_THRESHOLD
    assert below.sum() > 10 * len(above) > 0  # mostly random keys, by design: the case in small
    assert above.reset_index(drop=True).equals(every[~below].reset_index(drop=True))
    assert (above["noisy_count"] > rel.accuracy.per_query_above).all() and above["note"].isna().all()
    assert above.attrs["counted"] == every.attrs["counted"]


def test_the_readme_first_example_shows_above_threshold() -> None:
    import re

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- readme-api-example -->\n```python\n(.*?)```", readme, re.S)
    assert block and "to_pandas(above_threshold=True)" in block.group(1)
