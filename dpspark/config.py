"""Release configs: a TOML file, checked completely before any Spark work starts.

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
    mechanism = "stability"            # pure_sparse | stability | dense | compact
    # compact only: m = 128 (GF(2^m); default the smallest that fits), sampler = "rounded-cdf"
    epsilon = "1"                      # exact: a quoted string, never a TOML float
    delta = "1e-9"                     # stability only
    beta = "1/20"                      # error bars hold with probability >= 1 - beta
    max_units = 1000000                # n: public bound on the number of units (never computed from data)
    unit_column = "user_id"            # optional: each unit contributes one row
    out_of_universe = "drop"           # or "error" (a curator-side check)
    pad_seconds = 60                   # optional: the driver's noise step takes at least this long (timing channel)

    [output]
    path = "releases/queries"

    [budget]                            # optional: spend from a persistent privacy-budget ledger
    ledger = "ledger.sqlite"
    dataset = "warehouse.queries"      # a declared id, not a path: copies cannot reset the budget
    total_epsilon = "4"                # sets the dataset's total on first use
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping

from dpspark.errors import DPSparkError
from dpspark.exact import parse_rational
from dpspark.universe import Universe, UniverseConfigError, universe_from_dict

MECHANISMS = ("pure_sparse", "stability", "dense", "compact")
FORMATS = ("parquet", "csv", "orc", "json")
#: Largest universe the dense mechanism releases in full (every bin is a row of the release).
DENSE_MAX_BINS = 10_000_000
DEFAULT_BETA = Fraction(1, 20)
#: Field degrees and empty-bin samplers a compact release may ask for (dpspark.compact.parameters).
COMPACT_FIELD_DEGREES = (64, 128, 192, 256)
COMPACT_SAMPLERS = ("rounded-cdf", "block")

_SECTIONS: dict[str, tuple[set[str], set[str]]] = {
    "input": (set(), {"path", "table", "format", "options"}),
    "keys": ({"columns"}, set()),
    "universe": (set(), None),  # checked by dpspark.universe
    "privacy": (
        {"mechanism", "epsilon", "max_units"},
        {"delta", "beta", "unit_column", "out_of_universe", "gamma", "m", "sampler", "pad_seconds"},
    ),
    "output": ({"path"}, set()),
    "budget": ({"ledger", "dataset"}, {"total_epsilon", "total_delta"}),
    "spark": (set(), None),  # free-form Spark settings for the embedded session
}


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
        """Config-level description for the manifest (no data-derived content)."""
        out: dict[str, Any] = {"format": self.format} if self.path else {"table": self.table}
        if self.path:
            out["path"] = self.path
        if self.options:
            out["options"] = dict(self.options)
        return out


@dataclass(frozen=True)
class BudgetSpec:
    """Privacy-budget ledger settings: which ledger, which declared dataset id, optional total."""

    ledger: Path
    dataset: str
    total_epsilon: Fraction | None
    total_delta: Fraction


@dataclass(frozen=True)
class ReleaseConfig:
    """A validated release config."""

    source: Path
    input: InputSpec
    key_columns: tuple[str, ...]
    universe: Universe
    universe_spec: dict[str, Any]
    mechanism: str
    epsilon: Fraction
    delta: Fraction | None
    beta: Fraction
    gamma: Fraction | None
    max_units: int
    unit_column: str | None
    out_of_universe: str
    output: Path
    spark_conf: dict[str, str] = field(default_factory=dict)
    budget: BudgetSpec | None = None
    field_degree: int | None = None
    sampler: str = "rounded-cdf"
    pad_seconds: Fraction | None = None

    def exact_parameters(self) -> dict[str, Any]:
        """The privacy parameters as exact strings, for the manifest."""
        return {
            "mechanism": self.mechanism,
            "epsilon": str(self.epsilon),
            "delta": None if self.delta is None else str(self.delta),
            "beta": str(self.beta),
            "gamma": None if self.gamma is None else str(self.gamma),
            "max_units": self.max_units,
            "unit_column": self.unit_column,
            "out_of_universe": self.out_of_universe,
            "pad_seconds": None if self.pad_seconds is None else str(self.pad_seconds),
            **({"m": self.field_degree, "sampler": self.sampler} if self.mechanism == "compact" else {}),
        }


def _fail(source: Path, msg: str) -> ConfigError:
    return ConfigError(f"{source}: {msg}")


def _exact(section: Mapping[str, Any], key: str, source: Path, where: str = "privacy") -> Fraction:
    value = section[key]
    if isinstance(value, float):
        raise _fail(
            source,
            f"{where}.{key} is a TOML float ({value!r}), which is not exact; quote it, e.g. {key} = \"{value}\"",
        )
    try:
        return parse_rational(value, f"{where}.{key}")
    except (TypeError, ValueError) as err:
        raise _fail(source, str(err)) from None


def load_config(path: str | os.PathLike[str], *, output: str | None = None) -> ReleaseConfig:
    """Read and validate a release config; every error is a :class:`ConfigError` naming file and field.

    ``output`` overrides ``[output] path``. Relative paths resolve against the
    config file's folder.
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
    return parse_config(raw, source, output=output)


def parse_config(raw: Mapping[str, Any], source: Path, *, output: str | None = None) -> ReleaseConfig:
    """Validate a parsed TOML document (see :func:`load_config`)."""
    base = source.parent
    unknown = sorted(set(raw) - set(_SECTIONS))
    if unknown:
        raise _fail(source, f"unknown section(s) {', '.join(map(repr, unknown))}; expected {', '.join(_SECTIONS)}")
    for name, (required, optional) in _SECTIONS.items():
        sec = raw.get(name)
        if name in ("input", "keys", "universe", "privacy") and sec is None and not (name == "output" and output):
            raise _fail(source, f"missing section [{name}]")
        if sec is None:
            continue
        if not isinstance(sec, dict):
            raise _fail(source, f"[{name}] must be a table")
        if optional is None:
            continue
        bad = sorted(set(sec) - required - optional)
        if bad:
            raise _fail(source, f"[{name}] has unknown field(s) {', '.join(map(repr, bad))}")
        missing = sorted(required - set(sec))
        if missing:
            raise _fail(source, f"[{name}] is missing {', '.join(map(repr, missing))}")

    inp = raw["input"]
    if ("path" in inp) == ("table" in inp):
        raise _fail(source, "[input] needs exactly one of 'path' or 'table'")
    in_path = inp.get("path")
    fmt = inp.get("format")
    if in_path is not None:
        if not isinstance(in_path, str) or not in_path:
            raise _fail(source, "input.path must be a non-empty string")
        if "://" not in in_path and not os.path.isabs(in_path):
            in_path = str((base / in_path).resolve())
        if fmt is None:
            suffix = Path(in_path.rstrip("/")).suffix.lstrip(".").lower()
            fmt = {"parquet": "parquet", "pq": "parquet", "csv": "csv", "orc": "orc", "json": "json", "jsonl": "json"}.get(suffix)
            if fmt is None:
                raise _fail(source, f"input.format is not given and cannot be inferred from the path; use one of {FORMATS}")
        if fmt not in FORMATS:
            raise _fail(source, f"input.format must be one of {FORMATS}, got {fmt!r}")
        if "://" not in in_path and not os.path.exists(in_path):
            raise _fail(source, f"input.path does not exist: {in_path}")
        if "://" not in in_path and not os.access(in_path, os.R_OK):
            raise _fail(source, f"input.path is not readable: {in_path}")
    table = inp.get("table")
    if table is not None and (not isinstance(table, str) or not table):
        raise _fail(source, "input.table must be a non-empty string")
    options = inp.get("options", {})
    if not isinstance(options, dict):
        raise _fail(source, "input.options must be a table of strings")
    input_spec = InputSpec(in_path, table, fmt if in_path else None, {str(k): str(v) for k, v in options.items()})

    cols = raw["keys"]["columns"]
    if isinstance(cols, str):
        cols = [cols]
    if not isinstance(cols, list) or not cols or not all(isinstance(c, str) and c for c in cols):
        raise _fail(source, "keys.columns must be a non-empty list of column names")
    if len(set(cols)) != len(cols):
        raise _fail(source, "keys.columns has a duplicate column")

    uspec = dict(raw["universe"])
    try:
        universe = universe_from_dict(uspec, base_dir=base)
    except UniverseConfigError as err:
        raise _fail(source, f"[universe] {err}") from None
    ncomp = len(uspec.get("components", [])) if uspec.get("kind") == "tuple" else 1
    if ncomp != len(cols):
        raise _fail(source, f"keys.columns names {len(cols)} column(s) but the universe has {ncomp} component(s)")

    priv = raw["privacy"]
    mechanism = priv["mechanism"]
    if mechanism not in MECHANISMS:
        raise _fail(source, f"privacy.mechanism must be one of {MECHANISMS}, got {mechanism!r}")
    epsilon = _exact(priv, "epsilon", source)
    if epsilon <= 0:
        raise _fail(source, "privacy.epsilon must be > 0")
    beta = _exact(priv, "beta", source) if "beta" in priv else DEFAULT_BETA
    if not 0 < beta < 1:
        raise _fail(source, "privacy.beta must lie in (0, 1)")
    delta = _exact(priv, "delta", source) if "delta" in priv else None
    if mechanism == "stability":
        if delta is None:
            raise _fail(source, "privacy.delta is required by mechanism 'stability' (approximate DP)")
        if not 0 < delta < 1:
            raise _fail(source, "privacy.delta must lie in (0, 1)")
    elif delta is not None:
        raise _fail(source, f"privacy.delta does not apply to the pure-DP mechanism {mechanism!r}; remove it")
    gamma = _exact(priv, "gamma", source) if "gamma" in priv else None
    if gamma is not None and not 0 < gamma < 1:
        raise _fail(source, "privacy.gamma must lie in (0, 1)")
    n = priv["max_units"]
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise _fail(source, "privacy.max_units (n, the public bound on the number of units) must be an integer >= 1")
    size = universe.size
    field_degree, sampler = _compact_fields(priv, mechanism, source)
    if mechanism == "compact":
        _check_compact_plan(source, n, size, epsilon, beta, gamma, field_degree, sampler)
    if mechanism == "pure_sparse" and size < 2 * n + 1:
        raise _fail(
            source,
            f"mechanism 'pure_sparse' needs a universe of at least 2n+1 = {2 * n + 1} keys; "
            f"this universe has {size}. Use mechanism = 'dense' for small universes.",
        )
    if mechanism == "dense" and size > DENSE_MAX_BINS:
        raise _fail(source, f"mechanism 'dense' releases every bin; the universe has {size} > {DENSE_MAX_BINS} keys")
    if universe.index_width > 16 and mechanism != "compact":  # compact: binary(32) indexes, |X| <= 2^m <= 2^256
        raise _fail(source, "universes larger than 2^128 keys are supported only by mechanism 'compact' (m = 192 or 256)")
    unit = priv.get("unit_column")
    if unit is not None and (not isinstance(unit, str) or not unit):
        raise _fail(source, "privacy.unit_column must be a column name")
    if unit in cols:
        raise _fail(source, "privacy.unit_column must not be one of the key columns")
    oou = priv.get("out_of_universe", "drop")
    if oou not in ("drop", "error"):
        raise _fail(source, "privacy.out_of_universe must be 'drop' or 'error'")

    pad = _exact(priv, "pad_seconds", source) if "pad_seconds" in priv else None
    if pad is not None and not 0 <= pad <= 86400:
        raise _fail(source, "privacy.pad_seconds must lie in [0, 86400] seconds")

    out = output if output is not None else (raw.get("output") or {}).get("path")
    if not isinstance(out, str) or not out:
        raise _fail(source, "missing [output] path")
    # [output] path is relative to the config file; an --output override to the working directory
    out_path = Path(out) if (os.path.isabs(out) or output is not None) else (base / out)
    spark_conf = {str(k): str(v) for k, v in (raw.get("spark") or {}).items()}
    budget = None
    if "budget" in raw:
        b = raw["budget"]
        if not isinstance(b["ledger"], str) or not isinstance(b["dataset"], str) or not b["dataset"]:
            raise _fail(source, "budget.ledger must be a path and budget.dataset a declared dataset id")
        ledger = Path(b["ledger"]) if os.path.isabs(b["ledger"]) else (base / b["ledger"])
        total_eps = _exact(b, "total_epsilon", source, "budget") if "total_epsilon" in b else None
        total_delta = _exact(b, "total_delta", source, "budget") if "total_delta" in b else Fraction(0)
        budget = BudgetSpec(ledger.resolve(), b["dataset"], total_eps, total_delta)
    return ReleaseConfig(
        source=source,
        input=input_spec,
        key_columns=tuple(cols),
        universe=universe,
        universe_spec=universe.to_dict(),
        mechanism=mechanism,
        epsilon=epsilon,
        delta=delta,
        beta=beta,
        gamma=gamma,
        max_units=n,
        unit_column=unit,
        out_of_universe=oou,
        output=out_path.resolve(),
        spark_conf=spark_conf,
        budget=budget,
        field_degree=field_degree,
        sampler=sampler,
        pad_seconds=pad,
    )


def _compact_fields(priv: Mapping[str, Any], mechanism: str, source: Path) -> tuple[int | None, str]:
    """``privacy.m`` and ``privacy.sampler`` (compact only)."""
    if mechanism != "compact":
        extra = sorted(k for k in ("m", "sampler") if k in priv)
        if extra:
            raise _fail(source, f"privacy.{extra[0]} applies only to mechanism = 'compact'; remove it")
        return None, "rounded-cdf"
    m = priv.get("m")
    if m is not None and (isinstance(m, bool) or not isinstance(m, int) or m not in COMPACT_FIELD_DEGREES):
        raise _fail(source, f"privacy.m (the field GF(2^m)) must be one of {COMPACT_FIELD_DEGREES}, got {m!r}")
    sampler = priv.get("sampler", "rounded-cdf")
    if sampler not in COMPACT_SAMPLERS:
        raise _fail(source, f"privacy.sampler must be one of {COMPACT_SAMPLERS}, got {sampler!r}")
    return m, sampler


def _check_compact_plan(
    source: Path, n: int, size: int, epsilon: Fraction, beta: Fraction, gamma: Fraction | None,
    m: int | None, sampler: str,
) -> None:
    """The compact release's public plan must exist (|X| <= 2^m, some supported m fits), before Spark starts."""
    from dpspark.compact.plan import CompactPlanError, plan_compact

    try:
        plan_compact(n, size, epsilon, beta, gamma=gamma, m=m, sampler=sampler)
    except CompactPlanError as err:
        raise _fail(source, f"mechanism 'compact': {err}") from None
