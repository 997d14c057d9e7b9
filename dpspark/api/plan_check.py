"""The config face of the plan check: a plan whose release its own reader would refuse is a config error.

The plan (:func:`dpspark.engine.plan.build_mechanism`) runs :func:`check_plan_readable` when it builds the
mechanism, so the job, the session and ``--dry-run`` all refuse such a plan before any engine starts and
before any budget is spent. It lives with the plan (the engine does not import this face); the names stay
here for their callers. The check itself (:mod:`dpspark.release.plan_check`) knows no family.
"""

from __future__ import annotations

from dpspark.engine.plan import UnreadablePlanError, check_plan_readable

__all__ = ["UnreadablePlanError", "check_plan_readable"]
