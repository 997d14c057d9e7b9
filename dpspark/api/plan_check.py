"""The config face of the plan check: a plan whose release its own reader would refuse is a config error.

:func:`dpspark.api.config.parse_config` calls :func:`check_plan_readable` on every spec, so the job, the
session and ``--dry-run`` all refuse such a plan before any engine starts and before any budget is spent.
The check itself (:mod:`dpspark.release.plan_check`) takes the plan as plain data and knows no family.
"""

from __future__ import annotations

from typing import Any

from dpspark.api.config import ConfigError
from dpspark.release.errors import ReleaseFormatError


class UnreadablePlanError(ConfigError):
    """The plan would write a release its own reader refuses (checked before any spend)."""


def check_plan_readable(spec: Any, mech: Any = None) -> None:
    """Refuse, before any spend, a plan whose manifest the release reader would reject.

    ``mech``: the spec's mechanism object when the caller already built it (else it is built here).
    """
    from dpspark.release.plan_check import PlannedRelease, check_readable

    mech = spec.mechanism_object() if mech is None else mech
    try:
        plan = PlannedRelease(kind=mech.release_kind, max_units=spec.max_units, delta=spec.delta,
                              config=spec.exact_parameters(mech))
        check_readable(plan, mech)
    except (ReleaseFormatError, ValueError) as err:
        if isinstance(err, ConfigError):
            raise
        raise UnreadablePlanError(
            f"{spec.source}: the release this plan would write could not be read back ({err}); refused before "
            "any budget is spent - lower max_keys_per_unit, max_rows_per_key, max_units or epsilon") from None
