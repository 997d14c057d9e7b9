"""Issue 15, section 2: lookups answer every valid key, readable numbers, CJK widths, below-threshold bins, plot, help."""

from __future__ import annotations

import argparse
import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from dpspark.cli.app import build_parser, main
from dpspark.lookup import BELOW_THRESHOLD, KeyNotInUniverseError, open_release
from dpspark.lookup.describe import readable
from dpspark.lookup.display import display_width, format_table
from dpspark.universe import IntRangeUniverse, StringUniverse
from tests.support.release_support import hand_release, write

CITY = StringUniverse(16, "city")
CITIES = {"Berlin": 40, "東京": 30, "Paris": 25, "Köln": 9, "Rom": 3}  # threshold 12: Köln and Rom are below
SECRET = "a name longer than sixteen bytes, e.g. a secret"
KAV = Path(__file__).resolve().parents[2] / "support" / "data" / "compact_kav" / "release"


@pytest.fixture(scope="module")
def cities(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pairs = sorted((CITY.encode(k), c) for k, c in CITIES.items())
    return write(tmp_path_factory.mktemp("cities"), CITY, ["city"],
                 hand_release(CITY, [i for i, _ in pairs], [c for _, c in pairs]))


# ---- 2.1 every valid key is answered -------------------------------------------------------------


def test_lookup_answers_valid_keys_and_marks_invalid_ones(cities: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lookup", str(cities), "Paris", SECRET, "Berlin", "nowhere"]) == 1
    captured = capsys.readouterr()
    rows = captured.out.splitlines()
    assert rows[1].split()[:2] == ["Paris", "25"]
    assert rows[2].startswith("(key #2: invalid)")
    assert rows[3].split()[:2] == ["Berlin", "40"] and rows[4].split()[:2] == ["nowhere", "0"]
    assert "invalid key #2:" in captured.err and "longer than max_bytes = 16" in captured.err
    assert "secret" not in captured.out + captured.err  # never echoed
    assert main(["lookup", str(cities), "Paris"]) == 0


def test_counts_mask_option_answers_every_valid_key(cities: Path) -> None:
    rel = open_release(cities)
    with pytest.raises(KeyNotInUniverseError, match="position 1") as err:
        rel.counts(["Paris", SECRET])
    assert "secret" not in str(err.value)
    got = rel.counts(["Paris", SECRET, "Berlin", 7, None], invalid="mask")
    assert isinstance(got, np.ma.MaskedArray)
    assert got.mask.tolist() == [False, True, False, True, True]
    assert got.compressed().tolist() == [25, 40]
    with pytest.raises(ValueError, match="invalid must be one of"):
        rel.counts(["Paris"], invalid="skip")


def test_counts_mask_option_on_the_scalar_path_and_compact_releases() -> None:
    rel = open_release(KAV)
    keys = [1388, 10**30, -1, 2496, "x"]  # 10**30 does not fit Arrow: scalar path
    got = rel.counts(keys, invalid="mask")
    assert got.mask.tolist() == [False, True, True, False, True]
    assert got.compressed().tolist() == [rel.count(1388), rel.count(2496)]


# ---- 2.2 readable numbers ------------------------------------------------------------------------


def test_readable_numbers() -> None:
    assert readable(Fraction(1, 2**126)) == "2^-126"
    assert readable(Fraction(614891469123651721, 18446744073709551616)) == "0.0333…"
    assert readable(Fraction(1, 20)) == "1/20" and readable(Fraction(41, 32)) == "41/32"
    assert readable(2**300) == "2^300" and readable(10**25 + 7) == "1e25…"
    assert readable(Fraction(3, 7 * 10**40)) == "4.29e-41…"
    for value in (Fraction(7**90, 3**150), Fraction(-(10**30), 7), 3**80, Fraction(1, 3**200)):
        assert not re.search(r"\d{21}", readable(value))


def test_inspect_prints_no_long_numbers_unless_exact(cities: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(cities)]) == 0
    out = capsys.readouterr().out
    assert not re.search(r"\d{21}", out), re.search(r"\d{21}", out)
    assert "delta = 2^-40" in out
    assert main(["inspect", "--exact", str(cities)]) == 0
    assert re.search(r"\d{21}", capsys.readouterr().out)  # the replacement delta in full


def test_inspect_of_a_compact_release_is_readable(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(KAV)]) == 0
    out = capsys.readouterr().out
    assert not re.search(r"\d{21}", out) and "0x" not in out.split("Files:")[0]
    assert main(["inspect", "--exact", str(KAV)]) == 0
    assert "0x" in capsys.readouterr().out  # the modulus in hex


# ---- 2.3 display width -------------------------------------------------------------------------


def test_table_columns_align_by_display_width(cities: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert display_width("東京") == 4 and display_width("Köln") == 4 and display_width("e\u0301") == 1
    lines = format_table([("key", "n"), ("東京", "1"), ("Paris", "2")])
    assert len({display_width(line.split("  ")[0].rstrip()) <= 5 for line in lines}) == 1
    assert main(["lookup", str(cities), "東京", "Paris"]) == 0
    rows = capsys.readouterr().out.splitlines()[:3]
    starts = {display_width(row[: row.index(count)]) for row, count in zip(rows, ("noisy", "30", "25"))}
    assert len(starts) == 1  # the count column starts at the same terminal column


# ---- 2.4 below-threshold bins --------------------------------------------------------------------


def test_table_and_pandas_mark_bins_below_the_threshold(cities: Path) -> None:
    rel = open_release(cities)
    table = rel.table()
    notes = dict(zip(table.column("city").to_pylist(), table.column("note").to_pylist()))
    assert notes == {"Berlin": None, "東京": None, "Paris": None, "Köln": BELOW_THRESHOLD, "Rom": BELOW_THRESHOLD}
    assert rel.table(["city", "note"]).column_names == ["city", "note"]
    assert "note" not in rel.table(["city", "noisy_count"]).column_names
    frame = rel.to_pandas()
    assert frame.loc[frame["city"] == "Rom", "note"].item() == "below threshold: may be noise"
    # key columns, the noisy count, then the error bar (engine issue: the to_pandas layout)
    assert list(frame.columns) == ["city", "noisy_count", "error_bar", "error_bar_beta", "error_bar_holds_above", "note"]
    assert (frame["error_bar"] == rel.manifest.accuracy.a_per_query).all()


def test_lookup_marks_a_below_threshold_count(cities: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lookup", str(cities), "Rom", "Berlin"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert "below threshold: may be noise" in rows[1] and "may be noise" not in rows[2]


# ---- 2.5 the plot ---------------------------------------------------------------------------------


def _plot(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> tuple[int, object]:
    import matplotlib.pyplot as plt

    figures: list[object] = []
    real_close = plt.close
    monkeypatch.setattr(plt, "close", lambda fig=None: figures.append(fig))
    code = main(argv)
    for fig in figures:
        real_close(fig)
    return code, figures[0].axes[0] if figures else None  # type: ignore[attr-defined]


def test_plot_hides_below_threshold_bins_labels_the_axis_and_orders(
    cities: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = str(tmp_path / "p.png")
    code, ax = _plot(monkeypatch, ["plot", str(cities), "-o", out])
    assert code == 0 and "2 bins below the threshold hidden" in capsys.readouterr().out
    labels = [t.get_text() for t in ax.get_xticklabels()]  # type: ignore[attr-defined]
    assert len(labels) == 3 and labels[0] == "Berlin" and "Rom" not in labels
    assert ax.get_xlabel().startswith("city")  # type: ignore[attr-defined]
    code, ax = _plot(monkeypatch, ["plot", str(cities), "--show-below-threshold", "--order", "universe", "-o", out])
    labels = [t.get_text() for t in ax.get_xticklabels()]  # type: ignore[attr-defined]
    from dpspark.cli.plotfont import covered, drawable_label, font_chain

    drawable = covered(font_chain())
    shortlex = sorted(CITIES, key=lambda k: CITY.encode(k))  # the universe's order
    assert code == 0 and labels == [drawable_label(k, drawable) for k in shortlex]
    assert "universe order" in ax.get_xlabel()  # type: ignore[attr-defined]


def test_plot_draws_cjk_with_a_font_or_escapes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from dpspark.cli import plotfont

    assert plotfont.drawable_label("東京 x", frozenset(map(ord, "東京x"))) == "東京 x"
    assert plotfont.drawable_label("東京 x", frozenset(map(ord, "x"))) == "\\u6771\\u4eac x"
    chain = plotfont.font_chain()
    assert chain[0] == "DejaVu Sans" and all(name in plotfont.CJK_FONTS for name in chain[1:])
    drawable = plotfont.covered(chain)
    assert ord("A") in drawable
    assert plotfont.drawable_label("Köln Ωμέγα", drawable) == "Köln Ωμέγα"  # the default font has these glyphs
    if not any(ord("東") in plotfont.covered([name]) for name in chain):
        assert plotfont.drawable_label("東京", drawable) == "\\u6771\\u4eac"  # no CJK font here: escaped


# ---- 2.6 help texts -------------------------------------------------------------------------------


def test_every_subcommand_has_a_one_line_description_and_an_example() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(sub.choices) >= {"mechanism", "release", "lookup", "inspect", "plot", "budget"}
    for name, p in sub.choices.items():
        text = p.format_help()
        first = text.split("\n\n")[1]
        assert "``" not in text and not first.startswith("The "), name
        assert first.count("\n") == 0 and first.endswith("."), (name, first)
        assert "example" in text and f"dpspark {name} " in text.split("example")[-1], name
    assert "WRONG KEYS" in " ".join(sub.choices["lookup"].format_help().split())  # what --no-verify gives up


# ---- 2.7 universe limits --------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism, max_bytes, expect", [
    ("stability", 32, "max_bytes <= 15"), ("stability", 16, "max_bytes <= 15"), ("compact", 32, "max_bytes <= 31"),
])
def test_universe_limit_is_stated_for_the_chosen_mechanism(tmp_path: Path, mechanism: str, max_bytes: int, expect: str) -> None:
    from dpspark.api.config import ConfigError, load_config

    (tmp_path / "in.parquet").write_bytes(b"PAR1")
    delta = 'delta = "1e-9"' if mechanism == "stability" else ""
    (tmp_path / "c.toml").write_text(f"""
[input]
path = "in.parquet"
[keys]
columns = ["q"]
[universe]
kind = "string"
max_bytes = {max_bytes}
[privacy]
mechanism = "{mechanism}"
epsilon = "1"
{delta}
max_units = 100
[output]
path = "out"
""")
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path / "c.toml")
    assert expect in str(err.value) and "must be <= 31" not in str(err.value)
    if mechanism != "compact":
        assert "only mechanism 'compact'" in str(err.value)


def test_pure_sparse_progress_is_in_words() -> None:
    """2.2: no 's = 2^6079689' in the progress lines."""
    from dpspark.noise import GeoSample
    from dpspark.mechanisms.histogram import pure_sparse_histogram
    from dpspark.rng import SeededRandom

    lines: list[str] = []
    pure_sparse_histogram(([1], [2]), 1000, 3, GeoSample(n=3, exp_eps=Fraction(3, 2)), Fraction(1, 60),
                          SeededRandom(b"ps"), progress=lines.append)
    first = lines[0]
    assert "s = 2^" not in first and "empty keys" in first and "-bit numbers" in first
    assert not any(re.search(r"\d{21}", line) for line in lines)


def test_mechanism_command_prints_readable_gamma(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mechanism", "--n", "1000", "--epsilon", "1/10", "--gamma", "2^-70", "--count", "5"]) == 0
    out = capsys.readouterr().out
    assert "gamma, t*      2^-70," in out and not re.search(r"\d{21}", out)
