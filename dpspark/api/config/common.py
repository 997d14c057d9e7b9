"""What every section parser of a release config shares: limits, the error helpers and the exact-number reader."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping

from dpspark.engine.spec import PYTHON_SOURCE, ConfigError
from dpspark.exact import parse_rational

FORMATS = ("parquet", "csv", "orc", "json")
DEFAULT_BETA = Fraction(1, 20)
#: [privacy] fields every mechanism accepts; a mechanism adds its own (``Mechanism.options``)
COMMON_PRIVACY_FIELDS = {
    "delta", "beta", "unit_column", "out_of_universe", "pad_seconds",
    "max_keys_per_unit", "max_rows_per_key", "on_excess_units", "allow_large_delta",
}
#: what happens when the input holds more units than privacy.max_units
EXCESS_RULES = ("truncate", "refuse")
#: Largest privacy.epsilon a release takes. e^64 > 6 * 10^27: a bound that large protects nobody, and the
#: exact parameters (e^eps~ = p/q, the counting mechanisms' ranges d ~ p^t) grow with epsilon until the
#: release's own reader refuses them (its exact numbers are bounded against hostile files).
MAX_EPSILON = 64
#: Largest privacy.max_units (n): 2^48 ~ 2.8 * 10^14 units. The release states n exactly and its reader takes
#: at most 256-bit integers; the counting ranges (k c n) and the gaussian/answers fixed-point sums must fit too.
MAX_UNITS = 1 << 48


class ConfigFloatError(ConfigError, TypeError):
    """A privacy amount given as a float: not exact, so refused (a TypeError, as everywhere in dpspark)."""


def fail(source: Path, msg: str) -> ConfigError:
    """A :class:`ConfigError` naming the config file."""
    return ConfigError(f"{source}: {msg}")


def exact(section: Mapping[str, Any], key: str, source: Path, where: str = "privacy") -> Fraction:
    """``section[key]`` as an exact Fraction; a float is refused with a hint (a :class:`ConfigFloatError`)."""
    value = section[key]
    if isinstance(value, float):
        if source.name == PYTHON_SOURCE:
            raise ConfigFloatError(
                f"{key} is a float ({value!r}), which is not exact (a binary float is not the number you typed); "
                f"pass a string or a Fraction, e.g. {key}=\"{value}\"")
        raise ConfigFloatError(
            f"{source}: {where}.{key} is a TOML float ({value!r}), which is not exact; quote it, e.g. {key} = \"{value}\"")
    try:
        return parse_rational(value, f"{where}.{key}")
    except (TypeError, ValueError) as err:
        raise fail(source, str(err)) from None
