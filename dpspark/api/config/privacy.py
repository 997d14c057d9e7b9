"""The ``[privacy]`` section: the mechanism, its budget and public bounds, the contribution rules and options."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from dpspark.api.config.common import (COMMON_PRIVACY_FIELDS, DEFAULT_BETA, EXCESS_RULES, MAX_EPSILON, MAX_UNITS,
                                       exact, fail)


def parse_privacy(priv: Mapping[str, Any], source: Path, mech_cls: Any, cols: list[str]) -> dict[str, Any]:
    """The ``[privacy]`` fields as :class:`~dpspark.engine.spec.ReleaseSpec` keywords (``cols``: the key columns)."""
    _refuse_unknown(priv, source, mech_cls)
    mechanism = priv["mechanism"]
    epsilon = exact(priv, "epsilon", source)
    if epsilon <= 0:
        raise fail(source, "privacy.epsilon must be > 0")
    if epsilon > MAX_EPSILON:
        raise fail(source, f"privacy.epsilon = {epsilon} is above the supported maximum of {MAX_EPSILON} "
                           f"(supported range: 0 < epsilon <= {MAX_EPSILON}; e^{MAX_EPSILON} > 6 * 10^27 already "
                           "protects nobody, and larger values make exact parameters the release's reader refuses)")
    beta = exact(priv, "beta", source) if "beta" in priv else DEFAULT_BETA
    if not 0 < beta < 1:
        raise fail(source, "privacy.beta must lie in (0, 1)")
    delta = exact(priv, "delta", source) if "delta" in priv else None
    if mech_cls.delta == "required" and delta is None:
        raise fail(source, f"privacy.delta is required by mechanism {mechanism!r} (approximate DP)")
    if mech_cls.delta == "forbidden" and delta is not None:
        raise fail(source, f"privacy.delta does not apply to the pure-DP mechanism {mechanism!r}; remove it")
    if delta is not None and not 0 < delta < 1:
        raise fail(source, "privacy.delta must lie in (0, 1)")
    options = _options(priv, source, mech_cls)
    if priv.get("max_units") is None:  # left out (a Session or SQL without one passes None)
        n = _units_cap(source, mech_cls)
    else:
        n = _declared_units(priv["max_units"], source)
    allow_large = priv.get("allow_large_delta", False)
    if not isinstance(allow_large, bool):
        raise fail(source, "privacy.allow_large_delta must be true or false")
    # without a declared n there is no n to hold delta against: the rule applies to a declared max_units only
    if delta is not None and priv.get("max_units") is not None and delta * n >= 1 and not allow_large:
        raise fail(source, f"privacy.delta = {delta} is >= 1/max_units = 1/{n}: a delta that large allows "
                           "releasing a random unit's data in the clear (each unit's record published with "
                           "probability delta, about delta * n >= 1 records in all) and still meets the "
                           "definition; use delta well below 1/max_units, or set privacy.allow_large_delta = true "
                           "if you mean it")
    return {"mechanism": mechanism, "epsilon": epsilon, "delta": delta, "beta": beta, "max_units": n,
            "options": options, "allow_large_delta": allow_large, **_contribution(priv, source, cols)}


def _units_cap(source: Path, mech_cls: Any) -> int:
    """n for a config without ``privacy.max_units``: the fixed cap for a family whose guarantee needs no n
    (groups, answers), else a ConfigError naming max_units and why the family needs it (before any spend)."""
    from dpspark.privacy.relations import UNITS_CAP

    if getattr(mech_cls, "units_optional", False):
        return UNITS_CAP
    raise fail(source, f"[privacy] is missing 'max_units': mechanism {mech_cls.name!r} needs it (n, the public "
                       "bound on the number of units, never computed from data) because its noise, ranges or "
                       "estimates are calibrated on n; only groups and the answers (bounded_noise, gaussian) "
                       "run without it")


def _declared_units(n: Any, source: Path) -> int:
    """A declared ``privacy.max_units``: an int in [1, 2^48]."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise fail(source, "privacy.max_units (n, the public bound on the number of units) must be an integer >= 1")
    if n > MAX_UNITS:
        raise fail(source, f"privacy.max_units = {n} is above the supported maximum of 2^48 = {MAX_UNITS} "
                           "(supported range: 1 <= max_units <= 2^48)")
    return n


def _refuse_unknown(priv: Mapping[str, Any], source: Path, mech_cls: Any) -> None:
    """A field no mechanism takes, or one only another mechanism takes (named in the message)."""
    from dpspark.mechanisms.registry import mechanism_class, names

    allowed = COMMON_PRIVACY_FIELDS | {"mechanism", "epsilon", "max_units"} | set(mech_cls.options)
    bad = sorted(set(priv) - allowed)
    if not bad:
        return
    for key in bad:
        takers = [m for m in names() if key in mechanism_class(m).options]
        if takers:
            who = " or ".join(f"'{m}'" for m in takers)
            raise fail(source, f"privacy.{key} applies only to mechanism = {who}; remove it")
    raise fail(source, f"[privacy] has unknown field(s) {', '.join(map(repr, bad))}")


def _options(priv: Mapping[str, Any], source: Path, mech_cls: Any) -> dict[str, Any]:
    """The mechanism's own ``[privacy]`` options, each parsed by the mechanism's parser."""
    options: dict[str, Any] = {}
    for key, parse in getattr(mech_cls, "option_parsers", {}).items():
        if key in priv:
            if isinstance(priv[key], float):
                exact(priv, key, source)  # the TOML-float refusal, with its hint
            try:
                options[key] = parse(priv[key])
            except (TypeError, ValueError) as err:
                raise fail(source, str(err)) from None
    return options


def _contribution(priv: Mapping[str, Any], source: Path, cols: list[str]) -> dict[str, Any]:
    """The privacy unit, its contribution bounds, the excess and out-of-universe rules, and the padding."""
    bounds = {}
    for key in ("max_keys_per_unit", "max_rows_per_key"):
        v = priv.get(key, 1)
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 1_000_000:
            raise fail(source, f"privacy.{key} must be an integer in [1, 1000000]")
        bounds[key] = v
    excess = priv.get("on_excess_units", "truncate")
    if excess not in EXCESS_RULES:
        raise fail(source, f"privacy.on_excess_units must be one of {EXCESS_RULES}, got {excess!r}")
    unit = priv.get("unit_column")
    if unit is not None and (not isinstance(unit, str) or not unit):
        raise fail(source, "privacy.unit_column must be a column name")
    if unit in cols:
        raise fail(source, "privacy.unit_column must not be one of the key columns")
    if unit is None and (bounds["max_keys_per_unit"] > 1 or bounds["max_rows_per_key"] > 1):
        raise fail(source, "privacy.max_keys_per_unit and max_rows_per_key need privacy.unit_column "
                           "(without it every row is its own unit, with one key and one row)")
    oou = priv.get("out_of_universe", "drop")
    if oou not in ("drop", "error"):
        raise fail(source, "privacy.out_of_universe must be 'drop' or 'error'")
    pad = exact(priv, "pad_seconds", source) if "pad_seconds" in priv else None
    if pad is not None and not 0 <= pad <= 86400:
        raise fail(source, "privacy.pad_seconds must lie in [0, 86400] seconds")
    return {**bounds, "on_excess_units": excess, "unit_column": unit, "out_of_universe": oou, "pad_seconds": pad}
