"""Release configs: every bad config fails with a clear message before Spark starts."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from dpspark.api.config import ConfigError, load_config

GOOD = """
[input]
path = "data.parquet"

[keys]
columns = ["q"]

[universe]
kind = "string"
max_bytes = 8

[privacy]
mechanism = "stability"
epsilon = "1/2"
delta = "1e-9"
max_units = 1000
unit_column = "user"

[output]
path = "out/rel"
"""


def write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "data.parquet").write_bytes(b"PAR1")  # existence is all the config checks
    p = tmp_path / "c.toml"
    p.write_text(text)
    return p


def test_good_config_is_exact_and_resolved(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, GOOD))
    assert cfg.epsilon == Fraction(1, 2) and cfg.delta == Fraction(1, 10**9)
    assert cfg.beta == Fraction(1, 20)  # default
    assert cfg.input.format == "parquet" and cfg.input.path == str(tmp_path / "data.parquet")
    assert cfg.output == (tmp_path / "out" / "rel").resolve()
    assert cfg.universe.size == (256**9 - 1) // 255
    assert cfg.exact_parameters()["epsilon"] == "1/2"


@pytest.mark.parametrize(
    "old, new, message",
    [
        ('epsilon = "1/2"', "epsilon = 0.5", "TOML float"),
        ('epsilon = "1/2"', 'epsilon = "half"', "privacy.epsilon"),
        ('epsilon = "1/2"', 'epsilon = "0"', "epsilon must be > 0"),
        ('delta = "1e-9"', "", "delta is required"),
        ('mechanism = "stability"', 'mechanism = "laplace"', "privacy.mechanism must be one of"),
        ('mechanism = "stability"', 'mechanism = "compact"', "delta does not apply"),
        ('mechanism = "stability"', 'mechanism = "stability"\nm = 64', "applies only to mechanism = 'compact'"),
        ('kind = "string"', 'kind = "strings"', "unknown universe kind"),
        ("max_bytes = 8", "", "missing required field"),
        ('path = "data.parquet"', 'path = "nope.parquet"', "does not exist"),
        ('path = "data.parquet"', 'path = "data.txt"', "cannot be inferred"),
        ("max_units = 1000", "max_units = 0", "max_units"),
        ("max_units = 1000", 'max_units = "1000"', "max_units"),
        ('unit_column = "user"', 'unit_column = "q"', "must not be one of the key columns"),
        ('columns = ["q"]', 'columns = ["q", "r"]', "component"),
        ("[output]", "[outputs]", "unknown section"),
        ('mechanism = "stability"', 'mechanism = "stability"\nbogus = 1', "unknown field"),
        ('mechanism = "stability"', 'mechanism = "stability"\npad_seconds = 1.5', "TOML float"),
        ('mechanism = "stability"', 'mechanism = "stability"\npad_seconds = -1', "pad_seconds must lie in"),
        ('mechanism = "stability"', 'mechanism = "stability"\npad_seconds = 100000', "pad_seconds must lie in"),
    ],
)
def test_bad_configs_name_the_problem(tmp_path: Path, old: str, new: str, message: str) -> None:
    assert old in GOOD
    with pytest.raises(ConfigError, match=message) as err:
        load_config(write(tmp_path, GOOD.replace(old, new)))
    assert "c.toml" in str(err.value)


def test_pure_sparse_needs_a_big_universe(tmp_path: Path) -> None:
    text = GOOD.replace('mechanism = "stability"', 'mechanism = "pure_sparse"').replace('delta = "1e-9"', "")
    text = text.replace('kind = "string"\nmax_bytes = 8', "kind = \"int_range\"\nlo = 1\nhi = 2000")
    with pytest.raises(ConfigError, match="at least 2kn\\+1 = 2001"):
        load_config(write(tmp_path, text))
    ok = load_config(write(tmp_path, text.replace("hi = 2000", "hi = 2001")))
    assert ok.universe.size == 2001


def test_delta_refused_for_pure_mechanisms(tmp_path: Path) -> None:
    text = GOOD.replace('mechanism = "stability"', 'mechanism = "pure_sparse"')
    with pytest.raises(ConfigError, match="does not apply"):
        load_config(write(tmp_path, text))


def test_dense_limits_and_missing_file(tmp_path: Path) -> None:
    text = GOOD.replace('mechanism = "stability"', 'mechanism = "dense"').replace('delta = "1e-9"', "")
    with pytest.raises(ConfigError, match="releases every bin"):
        load_config(write(tmp_path, text))
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[input\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(bad)


def test_universe_above_2_128_is_refused(tmp_path: Path) -> None:
    text = GOOD.replace("max_bytes = 8", "max_bytes = 20")
    with pytest.raises(ConfigError, match="2\\^128"):
        load_config(write(tmp_path, text))


def test_shipped_example_configs_parse() -> None:
    root = Path(__file__).resolve().parents[3] / "conf"
    configs = sorted(root.glob("*.toml"))
    assert configs, "conf/ must ship example configs"
    for path in configs:
        try:
            load_config(path)
        except ConfigError as err:
            assert "does not exist" in str(err), err  # demo data is generated by scripts/demo


COMPACT = GOOD.replace('mechanism = "stability"', 'mechanism = "compact"').replace('delta = "1e-9"\n', "")


def test_compact_config_is_planned_before_spark(tmp_path: Path) -> None:
    from dpspark.engine.runner import compact_plan, describe_plan

    cfg = load_config(write(tmp_path, COMPACT))
    assert cfg.mechanism == "compact" and cfg.field_degree is None and cfg.sampler == "rounded-cdf"
    plan = compact_plan(cfg)
    assert plan.m == 128 and plan.ell == 1001  # |X| > 2^64 needs m = 128; l = n + 1
    assert plan.epsilon_count + plan.epsilon2 == cfg.epsilon
    assert describe_plan(cfg)["plan"]["compact"]["coefficient_file_bytes"] == 1001 * 16
    assert cfg.exact_parameters()["m"] is None
    pinned = load_config(write(tmp_path, COMPACT.replace("max_units = 1000", "max_units = 1000\nm = 192")))
    assert compact_plan(pinned).m == 192


@pytest.mark.parametrize(
    "extra, message",
    [
        ("m = 64", "more than 2\\^64 keys"),  # strings of <= 8 bytes: |X| > 2^64
        ("m = 100", "must be one of"),
        ("m = true", "must be one of"),
        ('sampler = "uniform"', "privacy.sampler must be one of"),
        ('sampler = "block"', "no supported field degree"),  # Alg 8.5 needs 2^m >= d: a toy-size reference
        ('gamma = "2"', "gamma must lie in"),
    ],
)
def test_bad_compact_configs(tmp_path: Path, extra: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as err:
        load_config(write(tmp_path, COMPACT.replace("max_units = 1000", f"max_units = 1000\n{extra}")))
    assert "c.toml" in str(err.value)


def test_compact_universe_too_big_for_64_bit_field_and_sampler(tmp_path: Path) -> None:
    text = COMPACT.replace('kind = "string"\nmax_bytes = 8', 'kind = "int_range"\nlo = 0\nhi = 18446744073709551615')
    text = text.replace("max_units = 1000", "max_units = 1000\nm = 64")
    with pytest.raises(ConfigError, match="no supported field degree in \\(64,\\)"):
        load_config(write(tmp_path, text))
    assert load_config(write(tmp_path, text.replace("m = 64", "m = 128"))).field_degree == 128


def test_pad_seconds_is_exact_and_stated(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, GOOD.replace('mechanism = "stability"', 'mechanism = "stability"\npad_seconds = "5/2"')))
    assert cfg.pad_seconds == Fraction(5, 2) and cfg.exact_parameters()["pad_seconds"] == "5/2"
    assert load_config(write(tmp_path, GOOD)).pad_seconds is None
