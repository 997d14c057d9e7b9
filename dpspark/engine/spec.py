"""The plain-data release spec: what to read, which keys and universe, which mechanism with which public parameters.

Nothing here builds a mechanism or parses a file. The TOML and dict parsers live in :mod:`dpspark.api.config`
(one small parser per section); the plan (:func:`dpspark.engine.runner.prepare`) builds and certifies the
mechanism once from this spec.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpspark.errors import DPSparkError

if TYPE_CHECKING:
    from dpspark.universe import Universe

__all__ = ["PYTHON_SOURCE", "BudgetSpec", "ConfigError", "InputSpec", "ReleaseSpec"]

#: the source name of a spec given as Python dicts (``ReleaseSpec.from_dict``)
PYTHON_SOURCE = "<python>"


class ConfigError(DPSparkError, ValueError):
    """A release config is invalid; the message names the file and the field."""


@dataclass(frozen=True)
class InputSpec:
    """Where the rows come from: a file path (with format) or a catalog table."""

    path: str | None
    table: str | None
    format: str | None
    options: dict[str, str] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        """Config-level description for the manifest (no data-derived content).

        A path is recorded by its last component only (``flights.parquet``, a directory's or an object-store
        prefix's name): a published release must not show the curator's directory layout (README, "The release
        directory"). A catalog table is recorded by its name, as configured.
        """
        out: dict[str, Any] = {"format": self.format} if self.path else {"table": self.table}
        if self.path:
            out["path"] = input_name(self.path)
        if self.options:  # as "key=value" strings: the manifest's input description holds no nested tables
            out["options"] = [f"{k}={v}" for k, v in sorted(self.options.items())]
        return out


def input_name(path: str) -> str:
    """The last component of a local path or URI (``s3a://bucket/data/flights/`` -> ``flights``); the manifest's
    record of the input, which names the data without the folders it sits in."""
    tail = path.split("://", 1)[-1].rstrip("/\\")
    name = tail.replace("\\", "/").rsplit("/", 1)[-1]
    return name or path


@dataclass(frozen=True)
class BudgetSpec:
    """Privacy-budget ledger settings: which ledger, which declared dataset id, optional total."""

    ledger: Path
    dataset: str
    total_epsilon: Fraction | None
    total_delta: Fraction | None  # None when the config does not name it (the ledger's total stays as it is)


@dataclass(frozen=True)
class ReleaseSpec:
    """A validated release: what to read, which keys, which universe, which mechanism with which public parameters.

    The same object comes from a TOML file or from Python dicts (:class:`dpspark.api.config.ReleaseSpec`
    adds ``from_toml``/``from_dict``); both go through one validator, :func:`dpspark.api.config.parse_config`.
    """

    source: Path
    input: InputSpec
    key_columns: tuple[str, ...]
    universe: "Universe | None"
    universe_spec: dict[str, Any]
    mechanism: str
    epsilon: Fraction
    delta: Fraction | None
    beta: Fraction
    max_units: int
    unit_column: str | None
    out_of_universe: str
    output: Path
    spark_conf: dict[str, str] = field(default_factory=dict)
    budget: BudgetSpec | None = None
    pad_seconds: Fraction | None = None
    options: dict[str, Any] = field(default_factory=dict)
    max_keys_per_unit: int = 1
    max_rows_per_key: int = 1
    on_excess_units: str = "truncate"
    #: the mechanism's own config sections, parsed by it (e.g. ``[queries]``)
    sections: dict[str, Any] = field(default_factory=dict)
    #: privacy.allow_large_delta: the config accepts delta >= 1/max_units on purpose
    allow_large_delta: bool = False

    @property
    def gamma(self) -> Fraction | None:
        """FastSample's uniform weight, when the mechanism takes one and the config sets it."""
        return self.options.get("gamma")

    @property
    def field_degree(self) -> int | None:
        """compact: the configured m (None: the smallest that fits)."""
        return self.options.get("m")

    @property
    def sampler(self) -> str:
        """compact: the empty-bin sampler."""
        return self.options.get("sampler", "rounded-cdf")

    def exact_parameters(self, mech: Any = None) -> dict[str, Any]:
        """The privacy parameters as exact strings, for the manifest.

        ``mech``: this spec's constructed mechanism; its own options (``exact_options``) are added when its
        class declares any. Without it, only the parameters every mechanism shares.
        """
        out = {
            "mechanism": self.mechanism,
            "epsilon": str(self.epsilon),
            "delta": None if self.delta is None else str(self.delta),
            "beta": str(self.beta),
            "gamma": None if self.gamma is None else str(self.gamma),
            "max_units": self.max_units,
            "unit_column": self.unit_column,
            "out_of_universe": self.out_of_universe,
            "pad_seconds": None if self.pad_seconds is None else str(self.pad_seconds),
            # the configured contribution rules (never whether truncation removed anyone)
            "max_keys_per_unit": self.max_keys_per_unit,
            "max_rows_per_key": self.max_rows_per_key,
            "on_excess_units": self.on_excess_units,
        }
        if self.allow_large_delta:  # recorded only when set, so other manifests stay as they were
            out["allow_large_delta"] = True
        if mech is None or not type(mech).options:
            return out
        return {**out, **{k: v for k, v in mech.exact_options().items() if k != "gamma"}}
