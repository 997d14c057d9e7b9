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
    mechanism = "stability"            # a registered mechanism: dpspark.mechanisms.names()
    # compact only: m = 128 (GF(2^m); default the smallest that fits), sampler = "rounded-cdf"
    epsilon = "1"                      # exact: a quoted string, never a TOML float; at most 64
    delta = "1e-9"                     # approximate-DP mechanisms only; below 1/max_units
    # allow_large_delta = true         # accept delta >= 1/max_units on purpose (refused otherwise)
    beta = "1/20"                      # error bars hold with probability >= 1 - beta
    max_units = 1000000                # n: public bound on the number of units (never computed from data); <= 2^48
    unit_column = "user_id"            # optional: the privacy unit (default: every row is a unit)
    max_keys_per_unit = 1              # with unit_column: distinct keys a unit counts in (epsilon/k per bin)
    max_rows_per_key = 1               # with unit_column: rows a unit adds to one key's count (dense only)
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
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping

from dpspark.errors import DPSparkError
from dpspark.exact import parse_rational
from dpspark.universe import Universe, UniverseConfigError, universe_from_dict

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

_SECTIONS: dict[str, tuple[set[str], set[str]]] = {
    "input": (set(), {"path", "table", "format", "options"}),
    "keys": ({"columns"}, set()),
    "universe": (set(), None),  # checked by dpspark.universe
    "privacy": (
        {"mechanism", "epsilon", "max_units"},
        None,  # common fields plus the mechanism's own options, checked once the mechanism is known
    ),
    "output": ({"path"}, set()),
    "budget": ({"ledger", "dataset"}, {"total_epsilon", "total_delta"}),
    "spark": (set(), None),  # free-form Spark settings for the embedded session
}


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
        """Config-level description for the manifest (no data-derived content)."""
        out: dict[str, Any] = {"format": self.format} if self.path else {"table": self.table}
        if self.path:
            out["path"] = self.path
        if self.options:  # as "key=value" strings: the manifest's input description holds no nested tables
            out["options"] = [f"{k}={v}" for k, v in sorted(self.options.items())]
        return out


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

    The same object comes from a TOML file (:meth:`from_toml`) or from Python dicts (:meth:`from_dict`,
    used by :class:`dpspark.Session`); both go through one validator, :func:`parse_config`.
    """

    source: Path
    input: InputSpec
    key_columns: tuple[str, ...]
    universe: Universe | None
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

    @classmethod
    def from_toml(cls, path: str | os.PathLike[str], *, output: str | None = None) -> "ReleaseSpec":
        """Load and validate a TOML release config (see :func:`load_config`)."""
        return load_config(path, output=output)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], *, base_dir: str | os.PathLike[str] = ".", name: str = PYTHON_SOURCE,
                  input_given: bool = False) -> "ReleaseSpec":
        """Validate a config given as Python dicts (the TOML sections); ``input_given``: the caller supplies the data."""
        return parse_config(raw, Path(base_dir) / name, input_given=input_given)

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

    def mechanism_object(self) -> Any:
        """The registered mechanism built from this spec (its plan is certified on construction)."""
        from dpspark.mechanisms.registry import mechanism_class

        return mechanism_class(self.mechanism)(self)

    def exact_parameters(self, mech: Any = None) -> dict[str, Any]:
        """The privacy parameters as exact strings, for the manifest (``mech``: this spec's mechanism, if built)."""
        from dpspark.mechanisms.registry import mechanism_class

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
        cls = mechanism_class(self.mechanism)
        if cls.options and mech is None:
            mech = cls(self)
        extra = {k: v for k, v in mech.exact_options().items() if k != "gamma"} if cls.options else {}
        return {**out, **extra}


#: the name used before the engine port; kept for callers
ReleaseConfig = ReleaseSpec


def _fail(source: Path, msg: str) -> ConfigError:
    return ConfigError(f"{source}: {msg}")


class ConfigFloatError(ConfigError, TypeError):
    """A privacy amount given as a float: not exact, so refused (a TypeError, as everywhere in dpspark)."""


def _exact(section: Mapping[str, Any], key: str, source: Path, where: str = "privacy") -> Fraction:
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


def parse_config(
    raw: Mapping[str, Any], source: Path, *, output: str | None = None, input_given: bool = False
) -> ReleaseConfig:
    """Validate a parsed TOML document (see :func:`load_config`)."""
    base = source.parent
    mech_cls = _mechanism_class_of(raw, source)
    needs_keys = getattr(mech_cls, "needs_keys", True)
    own_sections = dict(getattr(mech_cls, "sections", {}))
    unknown = sorted(set(raw) - set(_SECTIONS) - set(own_sections))
    if unknown:
        expected = ", ".join([*_SECTIONS, *own_sections])
        raise _fail(source, f"unknown section(s) {', '.join(map(repr, unknown))}; expected {expected}")
    for name in own_sections:
        if name not in raw:
            raise _fail(source, f"missing section [{name}] (mechanism {mech_cls.name!r} needs it)")
    if not needs_keys:
        extra = sorted(k for k in ("keys", "universe") if k in raw)
        if extra:
            raise _fail(source, f"[{extra[0]}] does not apply to mechanism {mech_cls.name!r}; remove it")
    for name, (required, optional) in _SECTIONS.items():
        sec = raw.get(name)
        needed = name in ("input", "privacy") or (needs_keys and name in ("keys", "universe"))
        if needed and sec is None and not (name == "input" and input_given):
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

    inp = raw.get("input") or {"table": "<given>"}
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

    cols: list[str] = []
    universe: Universe | None = None
    if needs_keys:
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
            text = str(err)
            if "above the maximum of 2^256" in text:  # [userfix] one message with the chosen mechanism's real limit
                text = text.split(" (max_bytes must be")[0] + "; " + universe_limit_text((raw.get("privacy") or {}).get("mechanism"))
            raise _fail(source, f"[universe] {text}") from None
        ncomp = len(uspec.get("components", [])) if uspec.get("kind") == "tuple" else 1
        if ncomp != len(cols):
            raise _fail(source, f"keys.columns names {len(cols)} column(s) but the universe has {ncomp} component(s)")
    sections: dict[str, Any] = {}
    for name, parse in own_sections.items():
        if not isinstance(raw[name], (dict, list)):
            raise _fail(source, f"[{name}] must be a table or an array of tables")
        try:
            sections[name] = parse(raw[name])
        except TypeError as err:  # a float where an exact number belongs stays a TypeError
            raise ConfigFloatError(f"{source}: [{name}] {err}") from None
        except ValueError as err:
            raise _fail(source, f"[{name}] {err}") from None

    priv = raw["privacy"]
    from dpspark.mechanisms.base import MechanismSpecError
    from dpspark.mechanisms.registry import mechanism_class

    mechanism = priv["mechanism"]  # its class, mech_cls, was looked up before the sections were checked
    allowed = COMMON_PRIVACY_FIELDS | {"mechanism", "epsilon", "max_units"} | set(mech_cls.options)
    bad = sorted(set(priv) - allowed)
    if bad:
        from dpspark.mechanisms.registry import names

        for key in bad:
            takers = [m for m in names() if key in mechanism_class(m).options]
            if takers:
                who = " or ".join(f"'{m}'" for m in takers)
                raise _fail(source, f"privacy.{key} applies only to mechanism = {who}; remove it")
        raise _fail(source, f"[privacy] has unknown field(s) {', '.join(map(repr, bad))}")
    epsilon = _exact(priv, "epsilon", source)
    if epsilon <= 0:
        raise _fail(source, "privacy.epsilon must be > 0")
    if epsilon > MAX_EPSILON:
        raise _fail(source, f"privacy.epsilon = {epsilon} is above the supported maximum of {MAX_EPSILON} "
                            f"(supported range: 0 < epsilon <= {MAX_EPSILON}; e^{MAX_EPSILON} > 6 * 10^27 already "
                            "protects nobody, and larger values make exact parameters the release's reader refuses)")
    beta = _exact(priv, "beta", source) if "beta" in priv else DEFAULT_BETA
    if not 0 < beta < 1:
        raise _fail(source, "privacy.beta must lie in (0, 1)")
    delta = _exact(priv, "delta", source) if "delta" in priv else None
    if mech_cls.delta == "required" and delta is None:
        raise _fail(source, f"privacy.delta is required by mechanism {mechanism!r} (approximate DP)")
    if mech_cls.delta == "forbidden" and delta is not None:
        raise _fail(source, f"privacy.delta does not apply to the pure-DP mechanism {mechanism!r}; remove it")
    if delta is not None and not 0 < delta < 1:
        raise _fail(source, "privacy.delta must lie in (0, 1)")
    options: dict[str, Any] = {}
    for key, parse in getattr(mech_cls, "option_parsers", {}).items():
        if key in priv:
            if isinstance(priv[key], float):
                _exact(priv, key, source)  # the TOML-float refusal, with its hint
            try:
                options[key] = parse(priv[key])
            except (TypeError, ValueError) as err:
                raise _fail(source, str(err)) from None
    n = priv["max_units"]
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise _fail(source, "privacy.max_units (n, the public bound on the number of units) must be an integer >= 1")
    if n > MAX_UNITS:
        raise _fail(source, f"privacy.max_units = {n} is above the supported maximum of 2^48 = {MAX_UNITS} "
                            "(supported range: 1 <= max_units <= 2^48)")
    allow_large = priv.get("allow_large_delta", False)
    if not isinstance(allow_large, bool):
        raise _fail(source, "privacy.allow_large_delta must be true or false")
    if delta is not None and delta * n >= 1 and not allow_large:
        raise _fail(source, f"privacy.delta = {delta} is >= 1/max_units = 1/{n}: a delta that large allows "
                            "releasing a random unit's data in the clear (each unit's record published with "
                            "probability delta, about delta * n >= 1 records in all) and still meets the "
                            "definition; use delta well below 1/max_units, or set privacy.allow_large_delta = true "
                            "if you mean it")
    bounds = {}
    for key in ("max_keys_per_unit", "max_rows_per_key"):
        v = priv.get(key, 1)
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 1_000_000:
            raise _fail(source, f"privacy.{key} must be an integer in [1, 1000000]")
        bounds[key] = v
    excess = priv.get("on_excess_units", "truncate")
    if excess not in EXCESS_RULES:
        raise _fail(source, f"privacy.on_excess_units must be one of {EXCESS_RULES}, got {excess!r}")
    unit = priv.get("unit_column")
    if unit is not None and (not isinstance(unit, str) or not unit):
        raise _fail(source, "privacy.unit_column must be a column name")
    if unit in cols:
        raise _fail(source, "privacy.unit_column must not be one of the key columns")
    if unit is None and (bounds["max_keys_per_unit"] > 1 or bounds["max_rows_per_key"] > 1):
        raise _fail(source, "privacy.max_keys_per_unit and max_rows_per_key need privacy.unit_column "
                            "(without it every row is its own unit, with one key and one row)")
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
        total_delta = _exact(b, "total_delta", source, "budget") if "total_delta" in b else None
        budget = BudgetSpec(ledger.resolve(), b["dataset"], total_eps, total_delta)
    spec = ReleaseSpec(
        source=source,
        input=input_spec,
        key_columns=tuple(cols),
        universe=universe,
        universe_spec={} if universe is None else universe.to_dict(),
        mechanism=mechanism,
        epsilon=epsilon,
        delta=delta,
        beta=beta,
        max_units=n,
        unit_column=unit,
        out_of_universe=oou,
        output=out_path.resolve(),
        spark_conf=spark_conf,
        budget=budget,
        pad_seconds=pad,
        options=options,
        max_keys_per_unit=bounds["max_keys_per_unit"],
        max_rows_per_key=bounds["max_rows_per_key"],
        on_excess_units=excess,
        sections=sections,
        allow_large_delta=allow_large,
    )
    from dpspark.errors import ParameterError

    try:
        mech = spec.mechanism_object()  # the mechanism's data-free checks and certified plan, before any Spark
    except (MechanismSpecError, ParameterError) as err:  # e.g. a counting range d too large to draw from
        raise _fail(source, str(err)) from None
    from dpspark.api.plan_check import check_plan_readable

    check_plan_readable(spec, mech)  # the release's own reader must take what this plan will write
    return spec


def _mechanism_class_of(raw: Mapping[str, Any], source: Path) -> Any:
    """The registered class of ``privacy.mechanism`` (a ConfigError naming the choices when unknown)."""
    from dpspark.mechanisms.registry import UnknownMechanismError, mechanism_class

    priv = raw.get("privacy")
    if not isinstance(priv, dict) or "mechanism" not in priv:
        raise _fail(source, "missing section [privacy] with a mechanism")
    try:
        return mechanism_class(priv["mechanism"])
    except UnknownMechanismError as err:
        raise _fail(source, str(err)) from None


def universe_limit_text(mechanism: object) -> str:
    """The largest universe ``mechanism`` takes, in words (string and bytes keys: the largest max_bytes)."""
    from dpspark.mechanisms.registry import UnknownMechanismError, mechanism_class

    try:
        return mechanism_class(mechanism).universe_limit_text()  # type: ignore[arg-type]
    except (UnknownMechanismError, TypeError):
        return "no mechanism takes universes above 2^256 keys (string/bytes keys: max_bytes <= 31)"
