"""Before any spend: would the release's own reader take what this plan will write?

A release's manifest states exact numbers (e^eps = p/q, deltas, n, the counting range d of a compact
release) and its reader bounds their sizes, because a hostile file must not make it compute much
(:mod:`dpspark.release.exactjson`). A plan whose numbers exceed those bounds would spend the budget,
run, and write a release nobody can open. :func:`check_readable` serialises the parts of the manifest
known before any data is read - the config section, n, and the privacy statements - with the writer's
own encoders and parses them back with the reader's own checks and limits; anything the reader would
refuse raises ``ValueError`` or :class:`~dpspark.release.errors.ReleaseFormatError` here.

It takes the plan as plain data (:class:`PlannedRelease`) plus the built mechanism object, and knows no
family: a counts kind's own part is its ``plan_check`` in the kind registry (:mod:`dpspark.release.kinds`),
which calls :func:`check_count_statements`. The face that parses configs
(:mod:`dpspark.api.plan_check`) turns a refusal into a config error, before any engine starts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Mapping, Optional

from dpspark.release.header import DEFAULT_LIMITS, ReadLimits


@dataclass(frozen=True)
class PlannedRelease:
    """What a plan states before any data: its kind, n, the configured delta and the exact config section."""

    kind: str
    max_units: int
    delta: Optional[Fraction]
    config: Mapping[str, Any]


def check_readable(plan: PlannedRelease, mech: Any, limits: ReadLimits = DEFAULT_LIMITS) -> None:
    """Refuse (``ValueError`` / ``ReleaseFormatError``) a plan whose manifest the reader would reject.

    Checks, with the reader's own parsers and limits: the config section and n; then the kind's own
    ``plan_check`` (the counts kinds: the add/remove and replacement statements and the section's sizes);
    for the general-statement kinds every privacy statement the mechanism can state before the data (its
    ``planned_statements()``, or its ``statement()`` with the replacement one) and its accuracy statement
    (``accuracy_statement()`` or ``accuracy()``) when it has one.
    """
    from dpspark.release.kinds import get_kind, resolve

    _check_config(plan)
    kind = get_kind(plan.kind, "the planned manifest")
    if kind.plan_check is not None:
        resolve(kind.plan_check)(plan, mech, limits)
    elif kind.form == "statements":
        _check_statements(plan, mech)


def _check_config(plan: PlannedRelease) -> None:
    from dpspark.release.exactjson import int_to_str, str_to_int
    from dpspark.release.header import json_safe

    section = json.loads(json.dumps(json_safe(dict(plan.config), "config"), allow_nan=False))
    if len(section) > 256:
        raise ValueError("config: more than 256 entries")
    str_to_int(int_to_str(plan.max_units), 256)  # every kind's manifest reads n with this bound


def check_count_statements(plan: PlannedRelease, name: str, exp_eps: Fraction, bias: Fraction, delta: Fraction,
                           algorithm: str, wide_bias: bool, limits: ReadLimits = DEFAULT_LIMITS) -> None:
    """The histogram statements (add/remove and replacement) a counts kind's manifest will state, read back."""
    from dpspark.privacy import AddRemove, Substitute
    from dpspark.release.counts_form import REPLACEMENT_DELTA_EQUALS_DELTA, parse_relation, relation_statements
    from dpspark.release.exactjson import frac_to_str, str_to_frac

    str_to_frac(frac_to_str(exp_eps), 4096)  # mechanism.epsilon_tilde.exp
    add_remove, replacement = relation_statements(
        exp_eps, bias, delta, AddRemove(plan.max_units).text(), name,
        replacement_delta=delta if algorithm in REPLACEMENT_DELTA_EQUALS_DELTA else None)
    bias_bits = 4 * limits.max_sampler_d_bits if wide_bias else 4096
    where = "the planned manifest"
    parse_relation(add_remove, where, "privacy.add_remove", limits.max_delta_bits, AddRemove(plan.max_units),
                   bias_bits)
    parse_relation(replacement, where, "privacy.replacement", limits.max_delta_bits + 4200,
                   Substitute(plan.max_units), bias_bits + 8)


def _check_statements(plan: PlannedRelease, mech: Any) -> None:
    from dpspark.privacy import PrivacyStatement
    from dpspark.release.statements import standard_statements

    planned = getattr(mech, "planned_statements", None)
    if callable(planned):
        statements = list(planned())
    elif callable(getattr(mech, "statement", None)):
        primary = mech.statement()
        rep = getattr(mech, "replacement_statement", None)
        statements = list(standard_statements(primary, delta=plan.delta if plan.delta else None,
                                              replacement=rep() if callable(rep) else None))
    else:  # no statement before the data (zCDP mechanisms state rho on a 2^-30 grid: small by construction)
        statements = []
    for key, st in statements:
        text = json.dumps(st.describe(), allow_nan=False)
        PrivacyStatement.from_description(json.loads(text), f"privacy.statements.{key}")
    _check_accuracy(mech)


def _check_accuracy(mech: Any) -> None:
    """The accuracy statement, when the mechanism states it before the data (samplers, learners, answers)."""
    from dpspark.privacy import AccuracyStatement

    for attr in ("accuracy_statement", "accuracy"):
        make = getattr(mech, attr, None)
        if callable(make):
            acc = make()
            if isinstance(acc, AccuracyStatement):
                text = json.dumps(acc.describe(), allow_nan=False)
                AccuracyStatement.from_description(json.loads(text), "accuracy.statement")
            return
