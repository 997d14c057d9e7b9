"""Before any spend: would the release's own reader take what this plan will write?

A release's manifest states exact numbers (e^eps = p/q, deltas, n, the counting range d of a compact
release) and its reader bounds their sizes, because a hostile file must not make it compute much
(:mod:`dpspark.release.exactjson`). A plan whose numbers exceed those bounds would spend the budget,
run, and write a release nobody can open. :func:`check_plan_readable` serialises the parts of the
manifest known before any data is read - the config section, n, and the privacy statements - with the
writer's own encoders and parses them back with the reader's own checks and limits; anything the reader
would refuse is refused here, as a :class:`UnreadablePlanError` (a :class:`~dpspark.api.config.ConfigError`).

:func:`dpspark.api.config.parse_config` calls it on every spec, so the job, the session and ``--dry-run``
all refuse such a plan before any engine starts and before any budget is spent.
"""

from __future__ import annotations

import json
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from dpspark.engine.spec import ConfigError
from dpspark.release.errors import ReleaseFormatError

if TYPE_CHECKING:
    from dpspark.engine.spec import ReleaseSpec
    from dpspark.privacy import PrivacyStatement

#: the histogram release kinds (the histogram manifest); every other kind uses the statement envelope
HISTOGRAM_KINDS = ("sparse", "compact")


class UnreadablePlanError(ConfigError):
    """The plan would write a release its own reader refuses (checked before any spend)."""


def check_plan_readable(spec: "ReleaseSpec", mech: Any = None) -> None:
    """Refuse, before any spend, a plan whose manifest the release reader would reject.

    ``mech``: the spec's mechanism object when the caller already built it (else it is built here).
    Checks, with the reader's own parsers and default limits: the config section and n; for histogram
    kinds the add/remove and replacement statements (e^eps, bias, delta) and, for compact, the counting
    mechanism's exact e^eps~ and range d; for the other kinds every privacy statement the mechanism can
    state before the data (its ``planned_statements()``, or its ``statement()`` with the replacement one)
    and its accuracy statement (``accuracy_statement()`` or ``accuracy()``) when it has one; for compact, the
    number of coefficient rows.
    """
    if mech is None:
        from dpspark.mechanisms.registry import construct

        mech = construct(spec)
    try:
        _check_config(spec, mech)
        if mech.release_kind in HISTOGRAM_KINDS:
            _check_histogram(spec, mech)
        else:
            _check_statements(spec, mech)
    except (ReleaseFormatError, ValueError) as err:
        if isinstance(err, ConfigError):
            raise
        raise UnreadablePlanError(
            f"{spec.source}: the release this plan would write could not be read back ({err}); refused before "
            "any budget is spent - lower max_keys_per_unit, max_rows_per_key, max_units or epsilon") from None


def _check_config(spec: "ReleaseSpec", mech: Any) -> None:
    from dpspark.release.exactjson import int_to_str, str_to_int
    from dpspark.release.manifest import json_safe

    section = json.loads(json.dumps(json_safe(spec.exact_parameters(mech), "config"), allow_nan=False))
    if len(section) > 256:
        raise ValueError("config: more than 256 entries")
    str_to_int(int_to_str(spec.max_units), 256)  # both envelopes read n with this bound


def _check_histogram(spec: "ReleaseSpec", mech: Any) -> None:
    from dpspark.release.exactjson import frac_to_str, str_to_frac
    from dpspark.release.manifest import DEFAULT_LIMITS, REPLACEMENT_DELTA_EQUALS_DELTA, _relation, relation_statements
    from dpspark.privacy import AddRemove, Substitute

    limits = DEFAULT_LIMITS
    compact = mech.release_kind == "compact"
    if compact:
        plan = mech.compact_plan
        counting = plan.mechanism
        if mech.n_range + 1 > limits.max_rows:  # l = k n + 1 coefficients, one row each
            raise ValueError(f"the coefficient file would have l = k n + 1 = {mech.n_range + 1} rows, above the "
                             f"reader's limit of {limits.max_rows}")
        if counting.d.bit_length() > limits.max_sampler_d_bits:
            raise ValueError(f"compact.counting_mechanism.d has {counting.d.bit_length()} bits, above the reader's "
                             f"limit of {limits.max_sampler_d_bits}")
        step = counting.exp_eps
        if max(step.numerator.bit_length(), step.denominator.bit_length()) > 4096:
            raise ValueError("compact.counting_mechanism.exp_eps has a part above 4096 bits")
        exp_eps, bias, delta = step ** mech.k, Fraction(0), Fraction(0)  # the compact bias has its own, far larger bound
        algorithm = "CompactHistogram"
    else:
        planned = getattr(mech, "planned_statement", None)
        if not callable(planned):  # a plugin's histogram: its statement is only known from its run
            return
        st: "PrivacyStatement" = planned()
        exp_eps, bias, delta = st.exp_eps, st.bias_epsilon, st.delta
        # stability proves replacement delta = delta for one step; with k > 1 the generic, larger one is stated
        algorithm = "StabilityHistogram" if mech.name == "stability" and mech.k == 1 and mech.c == 1 else ""
    str_to_frac(frac_to_str(exp_eps), 4096)  # mechanism.epsilon_tilde.exp
    add_remove, replacement = relation_statements(
        exp_eps, bias, delta, AddRemove(spec.max_units).text(), mech.name,
        replacement_delta=delta if algorithm in REPLACEMENT_DELTA_EQUALS_DELTA else None)
    bias_bits = 4 * limits.max_sampler_d_bits if compact else 4096
    name = "the planned manifest"
    _relation(add_remove, name, "privacy.add_remove", limits.max_delta_bits, AddRemove(spec.max_units), bias_bits)
    _relation(replacement, name, "privacy.replacement", limits.max_delta_bits + 4200, Substitute(spec.max_units),
              bias_bits + 8)


def _check_statements(spec: "ReleaseSpec", mech: Any) -> None:
    from dpspark.privacy import PrivacyStatement
    from dpspark.release.statement_envelope import standard_statements

    planned = getattr(mech, "planned_statements", None)
    if callable(planned):
        statements = list(planned())
    elif callable(getattr(mech, "statement", None)):
        primary = mech.statement()
        rep = getattr(mech, "replacement_statement", None)
        statements = list(standard_statements(primary, delta=spec.delta if spec.delta else None,
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
