"""Which sections a release config has: the known ones, the mechanism's own, and their required fields."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from dpspark.api.config.common import fail

#: section -> (required fields, optional fields); None: checked by its own parser
SECTIONS: dict[str, tuple[set[str], set[str] | None]] = {
    "input": (set(), {"path", "table", "format", "options"}),
    "keys": ({"columns"}, set()),
    "universe": (set(), None),  # checked by dpspark.universe
    "privacy": (
        {"mechanism", "epsilon"},
        None,  # common fields, max_units (optional for some families) and the mechanism's own options
    ),
    "output": ({"path"}, set()),
    "budget": ({"ledger", "dataset"}, {"total_epsilon", "total_delta"}),
    "spark": (set(), None),  # free-form Spark settings for the embedded session
}


def mechanism_class_of(raw: Mapping[str, Any], source: Path) -> Any:
    """The registered class of ``privacy.mechanism`` (a ConfigError naming the choices when unknown)."""
    from dpspark.mechanisms.registry import UnknownMechanismError, mechanism_class

    priv = raw.get("privacy")
    if not isinstance(priv, dict) or "mechanism" not in priv:
        raise fail(source, "missing section [privacy] with a mechanism")
    try:
        return mechanism_class(priv["mechanism"])
    except UnknownMechanismError as err:
        raise fail(source, str(err)) from None


def check_layout(raw: Mapping[str, Any], source: Path, mech_cls: Any, *, input_given: bool) -> dict[str, Any]:
    """Refuse unknown, missing or malformed sections; returns the mechanism's own sections and their parsers."""
    needs_keys = getattr(mech_cls, "needs_keys", True)
    own_sections = dict(getattr(mech_cls, "sections", {}))
    may_omit = set(getattr(mech_cls, "optional_sections", ()))  # own sections a config may leave out
    unknown = sorted(set(raw) - set(SECTIONS) - set(own_sections))
    if unknown:
        expected = ", ".join([*SECTIONS, *own_sections])
        raise fail(source, f"unknown section(s) {', '.join(map(repr, unknown))}; expected {expected}")
    for name in own_sections:
        if name not in raw and name not in may_omit:
            raise fail(source, f"missing section [{name}] (mechanism {mech_cls.name!r} needs it)")
    if not needs_keys:
        extra = sorted(k for k in ("keys", "universe") if k in raw and k not in own_sections)
        if extra:
            raise fail(source, f"[{extra[0]}] does not apply to mechanism {mech_cls.name!r}; remove it")
    for name, (required, optional) in SECTIONS.items():
        sec = raw.get(name)
        needed = name in ("input", "privacy") or (needs_keys and name in ("keys", "universe"))
        if needed and sec is None and not (name == "input" and input_given):
            raise fail(source, f"missing section [{name}]")
        if sec is None:
            continue
        if not isinstance(sec, dict):
            raise fail(source, f"[{name}] must be a table")
        if optional is None:
            continue
        bad = sorted(set(sec) - required - optional)
        if bad:
            raise fail(source, f"[{name}] has unknown field(s) {', '.join(map(repr, bad))}")
        missing = sorted(required - set(sec))
        if missing:
            raise fail(source, f"[{name}] is missing {', '.join(map(repr, missing))}")
    return own_sections


def parse_own_sections(raw: Mapping[str, Any], source: Path, own_sections: Mapping[str, Any]) -> dict[str, Any]:
    """The mechanism's own sections (e.g. ``[queries]``), each parsed by the mechanism's parser."""
    from dpspark.api.config.common import ConfigFloatError

    sections: dict[str, Any] = {}
    for name, parse in own_sections.items():
        if name not in raw:  # an optional own section the config leaves out
            continue
        if not isinstance(raw[name], (dict, list)):
            raise fail(source, f"[{name}] must be a table or an array of tables")
        try:
            sections[name] = parse(raw[name])
        except TypeError as err:  # a float where an exact number belongs stays a TypeError
            raise ConfigFloatError(f"{source}: [{name}] {err}") from None
        except ValueError as err:
            raise fail(source, f"[{name}] {err}") from None
    return sections
