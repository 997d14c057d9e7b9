"""The groups family's faces, data-free: config sections, the release round trip, the section check, the CLI.

The engine is replaced by exact :class:`GroupStats` here (``GroupsMechanism.release_from_stats``); the
end-to-end runs on Arrow are in tests/system/arrow/test_groups_session.py.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from dpspark.api.config import PYTHON_SOURCE, ConfigError, parse_config
from dpspark.engine.plan import build_mechanism
from dpspark.lookup import open_release
from dpspark.mechanisms.groups.algorithm import GroupStats
from dpspark.mechanisms.groups.writer import statement_release
from dpspark.release.errors import ReleaseFormatError
from dpspark.release.kinds import writer_for
from dpspark.release.manifest import seal_manifest
from dpspark.rng import SeededRandom

S = 1 << 8
AGGS = [{"name": "flights", "kind": "count"},
        {"name": "dist", "kind": "sum", "column": "distance", "lo": "0", "hi": "5000"},
        {"name": "delay", "kind": "mean", "column": "delay", "lo": "-100", "hi": "300", "nulls": "0"}]


def raw_config(tmp: Path, groups: dict[str, Any] | None = None, aggs: list[dict[str, Any]] | None = None,
               **privacy: Any) -> dict[str, Any]:
    priv = {"mechanism": "groups", "epsilon": "1", "max_units": 1000, **privacy}
    return {"privacy": priv, "output": {"path": str(tmp / "rel")},
            "groups": groups if groups is not None else {"by": ["carrier"], "keys": ["AA", "B6", "UA"]},
            "aggregates": aggs if aggs is not None else AGGS}


def spec_of(tmp: Path, raw: dict[str, Any]) -> Any:
    return parse_config(raw, tmp / PYTHON_SOURCE, input_given=True, certify=False)


def build(tmp: Path, raw: dict[str, Any]) -> Any:
    return build_mechanism(spec_of(tmp, raw))


STATS = [GroupStats(0, {"flights": (3,), "dist": (3, 3000 * S), "delay": (3, 30 * S)}),
         GroupStats(2, {"flights": (1,), "dist": (1, 100 * S), "delay": (1, 5 * S)})]


def write(tmp: Path, raw: dict[str, Any] | None = None, stats: list[GroupStats] = STATS, seed: int = 7) -> tuple:
    tmp.mkdir(parents=True, exist_ok=True)
    raw = raw or raw_config(tmp)
    spec = spec_of(tmp, raw)
    mech = build_mechanism(spec)
    released = mech.release_from_stats(stats, SeededRandom(seed))
    out = writer_for("groups")(spec.output, release=statement_release(mech, released), universe=None,
                               key_columns=[], config=spec.exact_parameters(mech), input_description={"path": "x"},
                               rng_name="test", created_utc=None)
    return out, released, mech


# --- the round trip ------------------------------------------------------------------------------------------
def test_release_round_trip_is_exact(tmp_path: Path) -> None:
    out, released, mech = write(tmp_path)
    rel = open_release(out)
    assert rel.kind == "groups" and rel.keys() == ["AA", "B6", "UA"]
    for key, values in zip(released.keys, released.values):
        got = rel.lookup(mech.key_of(key)[0])
        for name, v in values.items():
            assert (got[name].value, got[name].error, got[name].confidence, got[name].always) == (
                v.value, v.error, v.confidence, v.always)
    df = rel.to_pandas()
    floats = ["flights", "flights_error", "dist", "dist_error", "delay", "delay_error"]
    exact = [f"{n}{s}" for n in ("flights", "dist", "delay") for s in ("_exact", "_error_exact", "_confidence")]
    assert list(df.columns) == ["carrier", *floats, *exact]
    assert [Fraction(v) if v is not None else None for v in df["flights_exact"]] == [
        v["flights"].value for v in released.values]  # the exact strings beside the floats
    assert df["flights"].tolist() == [float(v["flights"].value) for v in released.values]
    # the planned error bar of a count is the same for every group, and exact
    assert {rel.lookup(k)["flights"].error for k in rel.keys()} == {mech.planned.errors["flights"][0]}
    # B6 has no rows: a public key is released anyway (zero statistics plus noise)
    assert "B6" in rel and "ZZ" not in rel
    with pytest.raises(KeyError, match="no released group"):
        rel.lookup("ZZ")


def test_same_seed_same_release(tmp_path: Path) -> None:
    a, _, _ = write(tmp_path / "a")
    b, _, _ = write(tmp_path / "b")
    assert open_release(a).to_arrow().equals(open_release(b).to_arrow())


def test_two_key_columns_lookup_by_tuple(tmp_path: Path) -> None:
    raw = raw_config(tmp_path, groups={"by": ["carrier", "year"], "keys": [["AA", 2013], ["UA", 2014]]},
                     aggs=[{"name": "n", "kind": "count"}])
    mech = build(tmp_path, raw)
    idx = mech.public_indexes
    # the stage's universe is the product of the listed values; groups outside the list are dropped
    stats = [GroupStats(i, {"n": (5,)}) for i in range(4)]
    out, released, _ = write(tmp_path, raw, stats)
    assert released.keys == idx
    rel = open_release(out)
    assert rel.keys() == [("AA", 2013), ("UA", 2014)] and rel.lookup(("UA", 2014))["n"].value is not None


# --- parallel composition: charged once per aggregate ------------------------------------------------------
def test_statement_does_not_grow_with_the_number_of_groups(tmp_path: Path) -> None:
    few = build(tmp_path, raw_config(tmp_path, groups={"by": "c", "keys": ["a", "b"]}))
    many = build(tmp_path, raw_config(tmp_path, groups={"by": "c", "keys": [f"k{i}" for i in range(500)]}))
    assert few.planned.statement.measure == many.planned.statement.measure
    assert few.planned.statement.measure.epsilon.le(Fraction(1))
    assert "once per aggregate's noisy statistic" in few.privacy_summary()["composition"]


# --- config errors name the field, before any data -----------------------------------------------------------
@pytest.mark.parametrize("groups, aggs, privacy, fragment", [
    ({"keys": ["a"]}, None, {}, "groups.by"),
    ({"by": "c", "keys": ["a"], "noise": "laplace"}, None, {}, "groups.noise"),
    ({"by": "c", "keys": ["a", "a"]}, None, {}, "groups.keys lists a key twice"),
    ({"by": ["c", "d"], "keys": ["a"]}, None, {}, "groups.keys[0]"),
    ({"by": "c", "keys": ["a"], "keys_file": "k.csv"}, None, {}, "groups.keys_file"),
    ({"by": "c", "keys": ["a"], "max_groups_per_unit": 2}, None, {}, "privacy.unit_column"),
    ({"by": "c", "keys": ["a"], "max_rows_per_group": 0}, None, {}, "groups.max_rows_per_group"),
    ({"by": "c", "keys": ["a"], "beta": 0.05}, None, {}, "groups.beta"),
    ({"by": "c", "keys": ["a"], "colour": 1}, None, {}, "'colour'"),
    ({"by": "c"}, None, {}, "[universe]"),
    ({"by": "c"}, None, {"delta": "1e-9"}, "[universe]"),
    (None, [{"name": "s", "kind": "sum", "column": "x", "lo": 0.5, "hi": "1"}], {}, "aggregate 's'.lo"),
    (None, [{"name": "s", "kind": "sum", "column": "x", "lo": "0"}], {}, "aggregate 's'.hi"),
    (None, [{"name": "n", "kind": "count", "nulls": "0"}], {}, "a count takes no 'nulls'"),
    (None, [{"name": "a", "kind": "sum", "column": "x", "lo": "0", "hi": "1", "nulls": "0"},
            {"name": "b", "kind": "mean", "column": "x", "lo": "0", "hi": "1"}], {}, "aggregate 'b'.nulls"),
    (None, [{"name": "carrier", "kind": "count"}], {}, "'carrier' twice"),
    (None, [{"name": "q", "kind": "quantile", "column": "x", "lo": "0", "hi": "1"}], {}, "aggregate 'q'.q"),
    (None, None, {"max_keys_per_unit": 2, "unit_column": "u"}, "groups.max_groups_per_unit"),
])
def test_config_errors_name_the_field(tmp_path: Path, groups: Any, aggs: Any, privacy: dict, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        build(tmp_path, raw_config(tmp_path, groups, aggs, **privacy))
    assert fragment in str(info.value) and PYTHON_SOURCE in str(info.value), str(info.value)


def test_private_keys_need_delta_and_a_universe(tmp_path: Path) -> None:
    raw = raw_config(tmp_path, groups={"by": "c"})
    raw["universe"] = {"kind": "string", "max_bytes": 4}
    with pytest.raises(ConfigError, match="privacy.delta"):
        build(tmp_path, raw)
    raw["privacy"]["delta"] = "1e-9"
    mech = build(tmp_path, raw)
    assert mech.key_rows is None and mech.plan()["keys"] == "private selection"
    raw["groups"]["keys"] = ["a"]
    with pytest.raises(ConfigError, match=r"\[universe\] applies to private key selection only"):
        build(tmp_path, raw)


def test_toml_and_dict_share_the_validator(tmp_path: Path) -> None:
    from dpspark.api.config import load_config

    (tmp_path / "keys.csv").write_text("carrier\nAA\nB6\n")
    (tmp_path / "in.parquet").write_bytes(b"")
    cfg = tmp_path / "g.toml"
    cfg.write_text('[input]\npath = "in.parquet"\n[privacy]\nmechanism = "groups"\nepsilon = "1"\nmax_units = 10\n'
                   '[groups]\nby = "carrier"\nkeys_file = "keys.csv"\n[[aggregates]]\nname = "n"\nkind = "count"\n'
                   '[output]\npath = "rel"\n')
    mech = build_mechanism(load_config(cfg, certify=False))
    assert mech.key_rows == (("AA",), ("B6",))
    cfg.write_text(cfg.read_text().replace('kind = "count"', 'kind = "median"'))
    with pytest.raises(ConfigError, match=r"g.toml: \[aggregates\] aggregate 'n'.kind"):
        load_config(cfg, certify=False)


# --- the section check refuses tampering --------------------------------------------------------------------
def _reseal(out: Path, change: Any) -> None:
    obj = json.loads((out / "manifest.json").read_text())
    change(obj)
    (out / "manifest.json").write_bytes(seal_manifest(obj))


@pytest.mark.parametrize("change, fragment", [
    (lambda o: o["section"].update(keys="bogus"), "groups.keys"),
    (lambda o: o["section"].pop("beta"), "a groups section holds exactly"),
    (lambda o: o["section"]["aggregates"][0].update(kind="sum"), "groups.aggregates"),
    (lambda o: o["section"].update(groups=4), "rows where the manifest implies 4"),
    (lambda o: o["section"].update(table="other"), "not among the release files"),
    (lambda o: o["config"].update(epsilon="1/2"), "requested budget"),
    (lambda o: o["mechanism"].update(name="gaussian"), "mechanism 'groups'"),
])
def test_section_check_refuses_a_resealed_edit(tmp_path: Path, change: Any, fragment: str) -> None:
    out, _, _ = write(tmp_path)
    _reseal(out, change)
    with pytest.raises(ReleaseFormatError) as info:
        open_release(out)
    assert fragment in str(info.value) and str(out) in str(info.value), str(info.value)


def test_table_edit_is_refused(tmp_path: Path) -> None:
    """A display float that disagrees with the exact value is refused (table and manifest resealed)."""
    import hashlib

    import pyarrow as pa
    import pyarrow.parquet as pq

    out, _, _ = write(tmp_path)
    path = out / "groups.parquet"
    table = pq.read_table(path)
    i = table.column_names.index("dist_float")
    table = table.set_column(i, "dist_float", pa.array([1.5, 2.5, 3.5]))
    pq.write_table(table, path)
    data = path.read_bytes()
    _reseal(out, lambda o: o["files"]["groups.parquet"].update(sha256=hashlib.sha256(data).hexdigest(),
                                                               bytes=str(len(data))))
    with pytest.raises(ReleaseFormatError, match="display float differs"):
        open_release(out)


# --- the CLI ------------------------------------------------------------------------------------------------
def test_cli_lookup_inspect_of_a_groups_release(tmp_path: Path, capsys: Any) -> None:
    from dpspark.cli.app import main

    out, released, _ = write(tmp_path)
    assert main(["lookup", str(out), "AA", "UA", "secret-key"]) == 1
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[0].split() == ["key", "flights", "dist", "delay"]
    assert lines[1].startswith("AA") and "+-" in lines[1]
    assert "(key #3: invalid)" in captured.out and "secret-key" not in captured.out + captured.err
    assert main(["inspect", str(out)]) == 0
    assert "3 released, by carrier (public keys)" in capsys.readouterr().out


def test_a_keys_file_gives_the_inline_keys_rows_universe_and_indexes(tmp_path: Path) -> None:
    """The mechanism reads a keys file column-wise (groups/keys_file.py): the same key rows, universe and
    0-based indexes as the same keys listed inline (two columns, integers and text, a non-sorted order)."""
    from dpspark.api.config import load_config

    (tmp_path / "keys.csv").write_text("carrier,month\nB6,3\nAA,1\nB6,1\nUA,12\n")
    (tmp_path / "in.parquet").write_bytes(b"")
    head = ('[input]\npath = "in.parquet"\n[privacy]\nmechanism = "groups"\nepsilon = "1"\nmax_units = 10\n'
            '[groups]\nby = ["carrier", "month"]\n')
    tail = '[[aggregates]]\nname = "n"\nkind = "count"\n[output]\npath = "rel"\n'
    from_file, inline = tmp_path / "f.toml", tmp_path / "i.toml"
    from_file.write_text(head + 'keys_file = "keys.csv"\n' + tail)
    inline.write_text(head + 'keys = [["B6", 3], ["AA", 1], ["B6", 1], ["UA", 12]]\n' + tail)
    a, b = (build_mechanism(load_config(c, certify=False)) for c in (from_file, inline))
    assert a.key_rows == b.key_rows == (("B6", 3), ("AA", 1), ("B6", 1), ("UA", 12))
    assert a.universe.to_dict() == b.universe.to_dict()
    assert a.public_indexes == b.public_indexes
    assert [a.key_of(i) for i in a.public_indexes] == list(a.key_rows)
