"""The config sections of a ``groups`` release: ``[groups]``, ``[[aggregates]]`` and the optional ``[universe]``.

One validator for TOML and Python dicts (the Mechanism's ``sections``; :mod:`dpspark.api.config` calls each
parser on its raw section and names the file). Every check here is data-free.

``[groups]``:

* ``by`` - the key columns (a name or a non-empty list); or ``[]`` with a private join: **one public group**,
  the global answers of a query without ``GROUP BY`` (``keys`` absent or ``[[]]``, ``max_groups_per_unit`` 1).
  The stage groups the joined rows by a constant column :data:`GLOBAL_KEY` (value 0) that the join adds
  (:class:`~dpspark.mechanisms.groups.private_join.PrivateJoin` ``key``), so every guarantee is the stage's own
  with k = 1 and c = the rows a unit adds after the join (``max_rows_per_group``, or "auto");
* ``keys`` - the public key rows: one value per row for one key column, a list per row for several; or
  ``keys_file`` - a CSV or Parquet file of key rows whose columns are ``by`` (read when the mechanism is
  built: public, no data). Neither: the keys are selected privately from ``[universe]``;
* ``max_groups_per_unit`` (k, default 1), ``max_rows_per_group`` (c, default 1): contribution bounds
  (above 1 they need ``privacy.unit_column``), or ``"auto"``: chosen privately from the data
  (:mod:`dpspark.noise.count_quantile`) with ``limits_share`` of epsilon (default :data:`LIMITS_SHARE`,
  charged with the rest before any data is read; the release states the chosen limits);
* ``units_share`` - the share of epsilon that releases a noisy count of the units read (default
  :data:`UNITS_SHARE`; the release states it beside ``max_units``, so units dropped by the truncation to
  ``max_units`` are never dropped silently);
* ``noise`` - "auto" (default: the smallest error bar, docs/groups.md §D), "pure", "zcdp" (the discrete
  Gaussian; "gaussian" is the same) or "bounded";
* ``beta`` - the error bars hold with probability >= 1 - beta (default: ``privacy.beta``);
* ``join`` - a public join (:mod:`dpspark.mechanisms.groups.join`): ``{path = "<CSV/Parquet>", on = [...],
  how = "inner" | "left"}`` (or ``table =`` a pyarrow/pandas table from Python);
* ``bounds_share`` - the exact share of the budget spent choosing the bounds of aggregates given without
  ``lo``/``hi`` (default 1/10; :mod:`dpspark.mechanisms.groups.autobounds`);
* ``filter`` - a row filter in the grammar of :mod:`dpspark.engine.predicate` (as an answers query's
  ``filter``): only rows where it is TRUE are read (a row-level transformation before contribution bounding).

``[[aggregates]]``: tables ``name``, ``kind`` (count, sum, mean, variance, quantile), ``column``, ``lo``, ``hi``,
``scale_bits``, ``q``, ``bins`` (:func:`dpspark.mechanisms.groups.aggregates.parse_aggregate`) and ``nulls``
(:func:`dpspark.engine.numeric.parse_null_rule`: "drop" or the public value a NULL/NaN/unparseable value counts
as; one rule per column).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from dpspark.engine.numeric import NullRule, NullRuleError, parse_null_rule
from dpspark.engine.predicate import Predicate, PredicateError, parse_predicate
from dpspark.exact import parse_rational
from dpspark.mechanisms.groups.aggregates import Aggregate, Bounds, GroupsError, GroupsTypeError, parse_aggregates

#: the ``[groups]`` fields
GROUP_FIELDS = ("by", "keys", "keys_file", "max_groups_per_unit", "max_rows_per_group", "noise", "beta", "filter",
                "join", "limits_share", "units_share", "bounds_share", "selection")
#: default share of epsilon that chooses the "auto" contribution limits (split evenly between k and c when both)
LIMITS_SHARE = Fraction(1, 10)
#: default share of epsilon that releases the noisy count of units read
UNITS_SHARE = Fraction(1, 50)
#: the public fraction of units whose contribution an "auto" limit covers (a private quantile)
LIMITS_COVER = Fraction(9, 10)
#: ``selection`` values (private keys, c > 1): "rows" thresholds the released count, "units" the units per key
SELECTIONS = ("auto", "rows", "units")
#: ``noise`` values and the plan's name for each
NOISE_NAMES = {"auto": "auto", "pure": "pure", "zcdp": "gaussian", "gaussian": "gaussian", "bounded": "bounded"}
#: most public keys a config lists (the release holds one row per key)
MAX_PUBLIC_KEYS = 1_000_000
#: the constant key column of one public group (``by = []``), added after a private join; its one key is 0
GLOBAL_KEY = "_global"


@dataclass(frozen=True)
class GroupsSection:
    """The validated ``[groups]`` section (public parameters only)."""

    by: tuple[str, ...]
    keys: tuple[tuple[Any, ...], ...] | None
    keys_file: str | None
    bounds: Bounds
    noise: str
    beta: Fraction | None
    #: the row filter (None: every row); data-free, parsed here
    filter: Predicate | None = None
    #: private key selection (issue 34 §1): "rows", "units", or "auto" (units unless k = c = 1; docs/groups.md §F)
    selection: str = "auto"
    #: the public join as given (the mechanism reads its table: relative paths resolve against the config)
    join: Any = None
    #: the limits given as "auto" ("max_groups_per_unit", "max_rows_per_group"); ``bounds`` holds 1 for them
    auto: tuple[str, ...] = ()
    #: the share of epsilon that chooses the "auto" limits (0 when none is auto)
    limits_share: Fraction = Fraction(0)
    #: the share of epsilon that releases the noisy count of units read
    units_share: Fraction = UNITS_SHARE
    #: the share of the budget spent choosing the bounds of aggregates given without lo/hi (None: the default)
    bounds_share: Fraction | None = None
    #: ``by = []``: one public group (``by`` is then (GLOBAL_KEY,), ``keys`` ((0,),)); global answers
    one_group: bool = False

    @property
    def public_keys(self) -> bool:
        """True when the keys are public (listed or in a file); False: private selection from a universe."""
        return self.keys is not None or self.keys_file is not None


@dataclass(frozen=True)
class AggregatesSection:
    """The validated ``[[aggregates]]`` tables and the null rule of each value column."""

    aggregates: tuple[Aggregate, ...]
    nulls: tuple[tuple[str, NullRule], ...]

    def describe(self) -> list[dict[str, Any]]:
        """Exact, JSON-ready aggregates with their null rule (the manifest's parameters)."""
        rules = dict(self.nulls)
        out = []
        for agg in self.aggregates:
            row = agg.describe()
            if agg.column is not None:
                row["nulls"] = rules[agg.column].describe()
            out.append(row)
        return out


def _key_value(value: Any, where: str) -> Any:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise GroupsError(f"{where}: a key value is a string or an integer")
    if isinstance(value, str):
        lone = next((i for i, ch in enumerate(value) if "\ud800" <= ch <= "\udfff"), None)
        if lone is not None:  # not UTF-8: no column value equals it, and the key encoding cannot hold it
            raise GroupsError(f"{where}: a key holds a lone surrogate (U+{ord(value[lone]):04X} at character "
                              f"{lone + 1}), which is not valid UTF-8 text; key strings must be UTF-8")
    return value


def key_rows(raw: Any, width: int, where: str = "groups.keys") -> tuple[tuple[Any, ...], ...]:
    """Public key rows as tuples of ``width`` values: scalars for one key column, lists/tuples for several."""
    if isinstance(raw, (str, bytes)) or not isinstance(raw, (list, tuple)):
        raise GroupsError(f"{where} must be a list of key rows")
    if not raw:
        raise GroupsError(f"{where} is empty: list at least one key, or leave it out to select keys privately")
    if len(raw) > MAX_PUBLIC_KEYS:
        raise GroupsError(f"{where}: at most {MAX_PUBLIC_KEYS} public keys")
    rows = []
    for i, row in enumerate(raw):
        parts = tuple(row) if isinstance(row, (list, tuple)) else (row,)
        if len(parts) != width:
            raise GroupsError(f"{where}[{i}] has {len(parts)} value(s); by names {width} column(s)")
        rows.append(tuple(_key_value(v, f"{where}[{i}]") for v in parts))
    if len(set(rows)) != len(rows):
        raise GroupsError(f"{where} lists a key twice")
    for j in range(width):
        kinds = {type(r[j]) for r in rows}
        if len(kinds) > 1:
            raise GroupsError(f"{where}: column {j + 1} mixes strings and integers")
    return tuple(rows)


def _int_field(sec: dict[str, Any], key: str) -> int:
    v = sec.get(key, 1)
    if v == "auto":
        return 1  # a placeholder for the data-free checks; the mechanism chooses it privately
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 1 << 20:
        raise GroupsError(f"groups.{key} must be an int in [1, 2^20] or \"auto\", got {v!r}")
    return v


def _share(sec: dict[str, Any], key: str, default: Fraction) -> Fraction:
    """A share of epsilon in (0, 1/2] (exact; a float is refused)."""
    if key not in sec:
        return default
    if isinstance(sec[key], float):
        raise GroupsTypeError(f"groups.{key} was given as a float ({sec[key]!r}); write it as a string such as "
                              f"\"{sec[key]}\"")
    v = parse_rational(sec[key], f"groups.{key}")
    if not 0 < v <= Fraction(1, 2):
        raise GroupsError(f"groups.{key} must lie in (0, 1/2], got {v}")
    return v


def parse_groups_section(raw: Any) -> GroupsSection:
    """Validate ``[groups]`` (see the module docstring); errors name the field."""
    if isinstance(raw, GroupsSection):
        return raw
    if not isinstance(raw, dict):
        raise GroupsError("[groups] must be a table")
    bad = sorted(set(raw) - set(GROUP_FIELDS))
    if bad:
        raise GroupsError(f"has unknown field(s) {', '.join(map(repr, bad))}; expected {list(GROUP_FIELDS)}")
    by = raw.get("by")
    by = [by] if isinstance(by, str) else by
    if isinstance(by, (list, tuple)) and not by:
        return _one_group(raw)
    if not isinstance(by, (list, tuple)) or not all(isinstance(c, str) and c for c in by):
        raise GroupsError("groups.by must name the key column(s): a name or a non-empty list of names")
    if len(set(by)) != len(by):
        raise GroupsError("groups.by names a column twice")
    if "keys" in raw and "keys_file" in raw:
        raise GroupsError("give groups.keys or groups.keys_file, not both")
    keys = key_rows(raw["keys"], len(by)) if "keys" in raw else None
    keys_file = raw.get("keys_file")
    if keys_file is not None and (not isinstance(keys_file, str) or not keys_file):
        raise GroupsError("groups.keys_file must be a path (CSV or Parquet, columns = groups.by)")
    noise = raw.get("noise", "auto")
    if noise not in NOISE_NAMES:
        raise GroupsError(f"groups.noise must be one of {tuple(NOISE_NAMES)}, got {noise!r}")
    beta = None
    if "beta" in raw:
        if isinstance(raw["beta"], float):
            raise GroupsTypeError(f"groups.beta was given as a float ({raw['beta']!r}); write it as a string "
                                  f"such as \"{raw['beta']}\"")
        beta = parse_rational(raw["beta"], "groups.beta")
        if not 0 < beta < 1:
            raise GroupsError("groups.beta must lie in (0, 1)")
    bounds = Bounds(_int_field(raw, "max_groups_per_unit"), _int_field(raw, "max_rows_per_group"))
    auto = tuple(k for k in ("max_groups_per_unit", "max_rows_per_group") if raw.get(k) == "auto")
    if "limits_share" in raw and not auto:
        raise GroupsError("groups.limits_share applies when a limit is \"auto\" (max_groups_per_unit or "
                          "max_rows_per_group); remove it or set a limit to \"auto\"")
    limits_share = _share(raw, "limits_share", LIMITS_SHARE) if auto else Fraction(0)
    units_share = _share(raw, "units_share", UNITS_SHARE)
    if limits_share + units_share > Fraction(1, 2):
        raise GroupsError(f"groups.limits_share + groups.units_share = {limits_share + units_share} leaves less "
                          "than half of epsilon for the aggregates; lower them")
    selection = raw.get("selection", "auto")
    if selection not in SELECTIONS:
        raise GroupsError(f"groups.selection must be one of {SELECTIONS}, got {selection!r}")
    return GroupsSection(tuple(by), keys, keys_file, bounds, NOISE_NAMES[noise], beta, _filter(raw.get("filter")),
                         selection=selection, join=raw.get("join"), auto=auto, limits_share=limits_share,
                         units_share=units_share, bounds_share=_bounds_share(raw.get("bounds_share")))


def _one_group(raw: dict[str, Any]) -> GroupsSection:
    """``by = []``: one public group over a private join's rows (data-free checks; see the module docstring)."""
    join = raw.get("join")
    if not isinstance(join, dict) or join.get("private", False) is not True:
        raise GroupsError("groups.by is empty: one public group (global answers) reads a private join "
                          "(join = {table = ..., on = \"<unit>\", private = true}); otherwise name the key column(s)")
    if raw.get("keys", [[]]) not in ([[]], [()], ((),), ([],)) or "keys_file" in raw:
        raise GroupsError("groups.by is empty: its one public group is the empty key; give keys = [[]] or no keys")
    if raw.get("max_groups_per_unit", 1) != 1:
        raise GroupsError("groups.by is empty: one public group, so max_groups_per_unit is 1 (a unit's rows after "
                          "the join are bounded by max_rows_per_group)")
    if raw.get("selection", "auto") != "auto":
        raise GroupsError("groups.selection applies to keys selected privately; one public group has none")
    rest = {k: v for k, v in raw.items() if k not in ("by", "keys")}
    section = parse_groups_section({**rest, "by": [GLOBAL_KEY], "keys": [0]})
    return replace(section, one_group=True)


def _bounds_share(raw: Any) -> Fraction | None:
    """``groups.bounds_share``: an exact fraction in (0, 1) of the budget for privately chosen bounds."""
    if raw is None:
        return None
    if isinstance(raw, float):
        raise GroupsTypeError(f"groups.bounds_share was given as a float ({raw!r}); floats are not exact. Write it "
                              f"as a string such as \"{raw}\"")
    share = parse_rational(raw, "groups.bounds_share")
    if not 0 < share < 1:
        raise GroupsError("groups.bounds_share must lie in (0, 1)")
    return share


def _filter(raw: Any) -> Predicate | None:
    """``groups.filter`` parsed by the filter grammar (None when absent); errors name the field."""
    if raw is None:
        return None
    try:
        return parse_predicate(raw)
    except PredicateError as err:
        raise GroupsError(f"groups.filter {raw!r}: {err}") from None


def parse_aggregates_section(raw: Any) -> AggregatesSection:
    """Validate ``[[aggregates]]``: the aggregate tables plus each value column's null rule."""
    if isinstance(raw, AggregatesSection):
        return raw
    if isinstance(raw, dict):  # one [aggregates] table instead of an array of tables
        raw = [raw]
    if not isinstance(raw, (list, tuple)) or not raw:
        raise GroupsError("needs at least one aggregate: write [[aggregates]] tables")
    plain, rules = [], {}
    for i, spec in enumerate(raw):
        if not isinstance(spec, dict):
            raise GroupsError(f"aggregates[{i}] must be a table")
        spec = dict(spec)
        nulls = spec.pop("nulls", None)
        plain.append(spec)
        where = f"aggregate {spec.get('name')!r}"
        if nulls is not None and spec.get("kind") == "count":
            raise GroupsError(f"{where}: a count takes no 'nulls' (it counts rows)")
        column = spec.get("column")
        if spec.get("kind") == "count" or not isinstance(column, str):
            continue
        try:
            rule = parse_null_rule(nulls, where)
        except NullRuleError as err:
            raise GroupsError(str(err)) from None
        if rules.setdefault(column, rule) != rule:  # the engine reads each column once, with one rule
            raise GroupsError(f"{where}.nulls: every aggregate of column {column!r} must declare the same null "
                              "rule (default \"drop\")")
    aggregates = parse_aggregates(plain)
    return AggregatesSection(aggregates, tuple(sorted(rules.items())))


def parse_universe_section(raw: Any) -> dict[str, Any]:
    """``[universe]`` of a private selection: kept as given; the mechanism builds it (relative files resolve
    against the config's folder)."""
    if not isinstance(raw, dict):
        raise GroupsError("[universe] must be a table")
    return dict(raw)
