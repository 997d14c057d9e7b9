"""The ``--dry-run`` plan in words: every number readable (no run of more than 20 digits), exact ones kept short.

:func:`plan_words` formats the plan summary (:func:`dpspark.engine.plan.plan_summary`: public inputs only) that
``dpspark release --dry-run`` prints. Short exact values (``1/20``, ``45``) are printed as they are; long
rationals as readable decimals (``0.0244…``), long integers as ``2^k`` or ``1.32e16…``; the words a mechanism
wrote (its statements' texts) with their long numbers shortened (:func:`dpspark.text.readable_text`). The exact
values stay in the plan's JSON form and, after the release, in its manifest. Display only.
"""

from __future__ import annotations

import json
import re
from fractions import Fraction
from typing import Any

from dpspark.text import MAX_DIGITS, readable, readable_text, rounded

__all__ = ["plan_words", "value_words"]

#: a nested value (a list of query dicts, say) is cut to this many characters
_LIMIT = 240
_RATIONAL = re.compile(r"-?\d+(/\d+)?")


def _cut(text: str, limit: int = _LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _rational_words(v: Fraction) -> str:
    """An exact decimal when one of at most 6 significant digits is exact (``1/100000000`` -> ``1e-8``, ``1/20`` ->
    ``0.05``), else :func:`readable` (``0.0244…``, ``21/8``)."""
    text, exact = rounded(v, 6, up=True)
    if exact:
        return text
    return readable(v)


def value_words(value: Any) -> str:
    """One plan value in words (see the module docstring)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value) if len(str(abs(value))) <= MAX_DIGITS else readable(value)
    if isinstance(value, Fraction):
        return _rational_words(value)
    if isinstance(value, str):
        if _RATIONAL.fullmatch(value) and ("/" in value or len(value) > MAX_DIGITS):
            try:
                return _rational_words(Fraction(value))
            except (ValueError, ZeroDivisionError):
                return readable_text(value)
        return readable_text(value)
    if isinstance(value, dict):
        if set(value) == {"num", "den"}:  # an exact rational in the manifest's JSON form
            return value_words(Fraction(int(value["num"]), int(value["den"])))
        return _cut(", ".join(f"{k} = {value_words(v)}" for k, v in value.items() if v is not None))
    if isinstance(value, (list, tuple)):
        if all(not isinstance(v, (dict, list, tuple)) for v in value):
            return _cut(", ".join(value_words(v) for v in value))
        return _cut(readable_text(json.dumps(value, default=str)))
    return readable_text(str(value))


def _lines(label: str, values: dict[str, Any]) -> list[str]:
    """``label  key: value`` lines; a dict of dicts (per-query bounds) gets one line per inner key."""
    from dpspark.privacy.relations import UNITS_CAP, units_limit_words

    out = []
    for key, value in values.items():
        if isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values()):
            out += [f"{label:<16} {key} {k}: {value_words(v)}" for k, v in value.items()]
        elif key == "max_units" and value == UNITS_CAP:  # the fixed cap: no user chose it
            out.append(f"{label:<16} {key}: {units_limit_words(value)}")
        else:
            out.append(f"{label:<16} {key}: {value_words(value)}")
    return out


def plan_words(plan: dict[str, Any]) -> str:
    """The plan summary in plain words, one fact per line (``dpspark release --dry-run``)."""
    from dpspark.privacy.relations import units_limit_words

    lines = [f"mechanism        {plan['mechanism']}"]
    lines.append(f"passes           {len(plan['passes'])}: " + "; ".join(plan["passes"]))
    c = plan["contribution"]
    # the per-key bounds where keys are counted, or where configured (the words ``dpspark inspect`` prints too)
    keyed = c.get("keyed", True) or c["max_keys_per_unit"] != 1 or c["max_rows_per_key"] != 1
    per_key = f"; <= {c['max_keys_per_unit']} key(s) per unit, <= {c['max_rows_per_key']} row(s) per key" if keyed else ""
    lines.append(f"privacy unit     {c['unit']} ({units_limit_words(c['max_units'])}; "
                 f"excess units: {c['on_excess_units']}"
                 f"{per_key})")
    lines += _lines("privacy", plan["privacy"])
    lines += _lines("error bar", plan["accuracy"])
    lines += _lines("parameter", {k: v for k, v in plan["plan"].items() if k != "mechanism"})
    lines.append(f"output           {plan['output']}")
    return "\n".join(lines)
