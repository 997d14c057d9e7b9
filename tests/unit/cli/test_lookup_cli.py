"""The lookup, inspect and plot commands (registered through add_release_commands)."""

from __future__ import annotations

import argparse
import struct
from pathlib import Path

import pytest

from dpspark.cli.lookup import add_release_commands, parse_key, split_tuple_key
from dpspark.universe import BytesUniverse, CategoricalUniverse, HashedUniverse, IntRangeUniverse, StringUniverse, TupleUniverse
from tests.support.release_support import hand_release, write

U = TupleUniverse((IntRangeUniverse(0, 120, "age"), StringUniverse(8, "city")))


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="dpspark")
    sub = parser.add_subparsers(dest="command", required=True)
    add_release_commands(sub)
    args = parser.parse_args(argv)
    return int(args.func(args))


@pytest.fixture(scope="module")
def rel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    keys = [(30, "Berlin"), (31, "a,b"), (40, "Köln"), (7, "x\\y")]
    pairs = sorted((U.encode(k), c) for k, c in zip(keys, [17, 23, 5, 60]))
    return write(tmp_path_factory.mktemp("cli"), U, ["age", "city"],
                 hand_release(U, [i for i, _ in pairs], [c for _, c in pairs]))


def test_split_tuple_key_escapes() -> None:
    assert split_tuple_key("30,Berlin") == ["30", "Berlin"]
    assert split_tuple_key(r"31,a\,b") == ["31", "a,b"]
    assert split_tuple_key(r"7,x\\y") == ["7", "x\\y"]
    assert split_tuple_key("1,") == ["1", ""]
    with pytest.raises(ValueError, match="backslash"):
        split_tuple_key(r"1,a\b")


def test_parse_key_per_universe() -> None:
    assert parse_key(IntRangeUniverse(0, 9), "7") == 7
    assert parse_key(CategoricalUniverse((1, 2)), "2") == 2
    assert parse_key(CategoricalUniverse(("a",)), "a") == "a"
    assert parse_key(BytesUniverse(3), "ab") == b"ab"
    assert parse_key(HashedUniverse(16, "int"), "-5") == -5
    assert parse_key(U, r"31,a\,b") == (31, "a,b")
    assert parse_key(U, '[31, "a,b"]', as_json=True) == (31, "a,b")
    assert parse_key(BytesUniverse(3), '{"hex": "00ff"}', as_json=True) == b"\x00\xff"
    with pytest.raises(ValueError, match="decimal integer"):
        parse_key(IntRangeUniverse(0, 9), "seven")
    with pytest.raises(ValueError, match="2 comma-separated"):
        parse_key(U, "1,2,3")


def test_lookup_prints_a_table(rel: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["lookup", str(rel), "30,Berlin", r"31,a\,b", "7,x\\\\y", "99,Nowhere"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["key", "noisy", "count", "error", "bar", "per-key", "bar", "holds", "if"]
    rows = [line.split() for line in out[1:5]]
    assert rows[0] == ["30,Berlin", "17", "+-9", "exact", "count", ">", "12"]
    assert rows[1][:3] == [r"31,a\,b", "23", "+-9"]
    assert rows[2][:3] == ["7,x\\\\y", "60", "+-9"]
    assert rows[3][:3] == ["99,Nowhere", "0", "+-9"]
    text = "\n".join(out)
    assert "All keys at once: |noisy - exact count| <= 14" in text and "TEST-ONLY" in text
    assert "Counted: rows per key (each row is one unit)" in text  # issue 25, 1.2: what was counted


def test_lookup_key_json(rel: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["lookup", "--key-json", str(rel), '[40, "Köln"]']) == 0
    assert capsys.readouterr().out.splitlines()[1].split()[:3] == ['[40,', '"Köln"]', "5"]


def test_lookup_errors(rel: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["lookup", str(rel), "200,Berlin"]) == 1  # issue 15 (2.1): marked by position, exit 1
    captured = capsys.readouterr()
    assert "(key #1: invalid)" in captured.out and "Berlin" not in captured.out + captured.err
    assert "invalid key #1:" in captured.err and "not in the release's universe" in captured.err
    assert run(["lookup", str(rel.parent / "missing"), "1,a"]) == 2
    assert "not a release directory" in capsys.readouterr().err


def test_inspect_in_plain_words(rel: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["inspect", str(rel)]) == 0
    out = capsys.readouterr().out
    for fragment in (
        "SparseHistogram with GeoSample counts; requested eps = 1/2, delta = 2^-40",
        "e^eps~       41/32",
        "add/remove   eps = ln(41/32)",
        "replacement  eps = ln(1681/1024)",
        "100 units at most (declared, public)",
        "age: integers 0..120; city: UTF-8 strings of at most 8 bytes",
        "path = data/events.parquet",
        "TEST ONLY: NOT PRIVATE",
        "only if the exact count is > 12",
        "counted      rows per key (each row is one unit) (after contribution bounding, not rows of the data)",
        "bins.parquet:",
        ": OK",
        "Checksums: all files match the manifest",
    ):
        assert fragment in out, fragment


def test_inspect_exact_prints_full_rationals(rel: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from dpspark.release import read_manifest
    from dpspark.release.exactjson import frac_to_str

    assert run(["inspect", "--exact", str(rel)]) == 0
    out = capsys.readouterr().out
    m = read_manifest(rel)
    assert f"delta = {frac_to_str(m.replacement.delta)} (" in out  # long enough to be abbreviated otherwise
    assert len(frac_to_str(m.replacement.delta)) > 40


def test_plot_of_an_empty_release(tmp_path: Path) -> None:
    empty = write(tmp_path, U, ["age", "city"], hand_release(U, [], []), name="empty")
    assert run(["plot", str(empty), "-o", str(tmp_path / "e.png")]) == 0
    assert _png_size(tmp_path / "e.png")[0] > 0


def test_inspect_reports_damaged_files(rel: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / "copy"
    copy.mkdir()
    for p in rel.iterdir():
        (copy / p.name).write_bytes(p.read_bytes())
    data = bytearray((copy / "bins.parquet").read_bytes())
    data[50] ^= 1
    (copy / "bins.parquet").write_bytes(bytes(data))
    assert run(["inspect", str(copy)]) == 1
    out = capsys.readouterr().out
    assert "FAILED (sha256 mismatch" in out and "SOME FILES ARE DAMAGED" in out


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_plot_writes_a_png(rel: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "top.png"
    assert run(["plot", str(rel), "--top", "3", "-o", str(out), "--dpi", "50"]) == 0
    assert "3 bins" in capsys.readouterr().out
    assert out.stat().st_size > 1000
    width, height = _png_size(out)
    from PIL import Image

    with Image.open(out) as img:
        assert img.format == "PNG" and img.size == (width, height)
    assert (width, height) == (300, 225)  # figure 6 x 4.5 inches at 50 dpi


def test_plot_without_matplotlib(rel: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    import builtins

    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    assert run(["plot", str(rel), "-o", str(tmp_path / "x.png")]) == 2
    assert "install the 'plot' extra" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()
