"""Release configs: a TOML file, checked completely before any Spark work starts.

One small parser per section (:mod:`.input`, :mod:`.keys`, :mod:`.privacy`, :mod:`.output`, the
mechanism's own sections in :mod:`.layout`); the plain-data spec they fill is :mod:`dpspark.engine.spec`,
whose names this package re-exports.

Example (see ``conf/*.toml`` for commented versions)::

    [input]
    path = "data/queries.parquet"      # or: table = "db.queries"
    format = "parquet"                 # parquet | csv | orc | json (default: from the extension)

    [keys]
    columns = ["query"]

    [universe]                          # one column; several columns: kind = "tuple", components = [...]
    kind = "string"
    max_bytes = 16

    [privacy]
    mechanism = "stability"            # a registered mechanism: dpspark.mechanisms.names()
    # compact only: m = 128 (GF(2^m); default the smallest that fits), sampler = "rounded-cdf"
    epsilon = "1"                      # exact: a quoted string, never a TOML float; at most 64
    delta = "1e-9"                     # approximate-DP mechanisms only; below 1/max_units
    # allow_large_delta = true         # accept delta >= 1/max_units on purpose (refused otherwise)
    beta = "1/20"                      # error bars hold with probability >= 1 - beta
    max_units = 1000000                # n: public bound on the number of units (never computed from data); <= 2^48;
                                       # optional for groups and answers (left out: no limit, the fixed cap 2^40)
    unit_column = "user_id"            # optional: the privacy unit (default: every row is a unit)
    max_keys_per_unit = 1              # with unit_column: distinct keys a unit counts in (epsilon/k per bin)
    max_rows_per_key = 1               # with unit_column: rows a unit adds to one key's count (noise scales with c)
    on_excess_units = "truncate"       # more than max_units units: keep max_units by keyed hash, or "refuse"
    out_of_universe = "drop"           # or "error" (a curator-side check)
    pad_seconds = 60                   # optional: the driver's noise step takes at least this long (timing channel)

    [output]
    path = "releases/queries"

    [budget]                            # optional: spend from a persistent privacy-budget ledger
    ledger = "ledger.sqlite"
    dataset = "warehouse.queries"      # a declared id, not a path: copies cannot reset the budget
    total_epsilon = "4"                # sets the dataset's total on first use; must match it afterwards
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Mapping

from dpspark.api.config.common import (COMMON_PRIVACY_FIELDS, DEFAULT_BETA, EXCESS_RULES, FORMATS, MAX_EPSILON,
                                       MAX_UNITS, ConfigFloatError)
from dpspark.api.config.input import parse_input
from dpspark.api.config.keys import parse_keys, universe_limit_text
from dpspark.api.config.layout import check_layout, mechanism_class_of, parse_own_sections
from dpspark.api.config.output import parse_budget, parse_output, parse_spark
from dpspark.api.config.privacy import parse_privacy
from dpspark.engine import spec as _spec
from dpspark.engine.spec import PYTHON_SOURCE, BudgetSpec, ConfigError, InputSpec

__all__ = [
    "COMMON_PRIVACY_FIELDS", "DEFAULT_BETA", "EXCESS_RULES", "FORMATS", "MAX_EPSILON", "MAX_UNITS", "PYTHON_SOURCE",
    "BudgetSpec", "ConfigError", "ConfigFloatError", "InputSpec", "ReleaseConfig", "ReleaseSpec", "load_config",
    "parse_config", "universe_limit_text",
]


class ReleaseSpec(_spec.ReleaseSpec):
    """A validated release (:class:`dpspark.engine.spec.ReleaseSpec`), loaded from a TOML file or Python dicts.

    The same object comes from a TOML file (:meth:`from_toml`) or from Python dicts (:meth:`from_dict`,
    used by :class:`dpspark.Session`); both go through one validator, :func:`parse_config`.
    """

    @classmethod
    def from_toml(cls, path: str | os.PathLike[str], *, output: str | None = None) -> "ReleaseSpec":
        """Load and validate a TOML release config (see :func:`load_config`)."""
        return load_config(path, output=output)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], *, base_dir: str | os.PathLike[str] = ".", name: str = PYTHON_SOURCE,
                  input_given: bool = False) -> "ReleaseSpec":
        """Validate a config given as Python dicts (the TOML sections); ``input_given``: the caller supplies the data."""
        return parse_config(raw, Path(base_dir) / name, input_given=input_given)

    def exact_parameters(self, mech: Any = None) -> dict[str, Any]:
        """The privacy parameters as exact strings, for the manifest (``mech``: this spec's mechanism, if built)."""
        if mech is None:
            from dpspark.mechanisms.registry import mechanism_class

            cls = mechanism_class(self.mechanism)
            mech = cls(self) if cls.options else None
        return super().exact_parameters(mech)


#: the name used before the engine port; kept for callers
ReleaseConfig = ReleaseSpec


def load_config(path: str | os.PathLike[str], *, output: str | None = None, certify: bool = True) -> ReleaseSpec:
    """Read and validate a release config; every error is a :class:`ConfigError` naming file and field.

    ``output`` overrides ``[output] path``. Relative paths resolve against the
    config file's folder. ``certify``: see :func:`parse_config`.
    """
    source = Path(path)
    try:
        raw = tomllib.loads(source.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {source}") from None
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{source}: not valid TOML: {err}") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{source}: cannot read: {err}") from None
    return parse_config(raw, source, output=output, certify=certify)


def parse_config(
    raw: Mapping[str, Any], source: Path, *, output: str | None = None, input_given: bool = False,
    certify: bool = True,
) -> ReleaseSpec:
    """Validate a parsed TOML document (see :func:`load_config`), one section parser after another.

    ``certify``: also build the mechanism once to certify its plan (:func:`dpspark.engine.plan.build_mechanism`),
    so a spec no release can satisfy is refused here. The CLI and the :class:`~dpspark.Session` pass False:
    their plan (:func:`dpspark.engine.runner.prepare`) builds it, once per release, with the same errors.
    """
    if "sql" in raw:  # a DP SQL query: expanded to the plain config its Session.groups (or answers) call builds
        from dpspark.api.config.sql import expand_sql

        raw = expand_sql(raw, source)
    mech_cls = mechanism_class_of(raw, source)
    own_sections = check_layout(raw, source, mech_cls, input_given=input_given)
    input_spec = parse_input(raw, source)
    cols, universe = parse_keys(raw, source) if getattr(mech_cls, "needs_keys", True) else ([], None)
    sections = parse_own_sections(raw, source, own_sections)
    privacy = parse_privacy(raw["privacy"], source, mech_cls, cols)
    out_path = parse_output(raw, source, output)
    spark_conf = parse_spark(raw)
    budget = parse_budget(raw, source)
    spec = ReleaseSpec(
        source=source,
        input=input_spec,
        key_columns=tuple(cols),
        universe=universe,
        universe_spec={} if universe is None else universe.to_dict(),
        output=out_path,
        spark_conf=spark_conf,
        budget=budget,
        sections=sections,
        **privacy,
    )
    if certify:
        from dpspark.engine.plan import build_mechanism

        build_mechanism(spec)  # the mechanism's data-free checks and certified plan, before any Spark
    return spec
