"""Options whose outcome is the data: the curator's to switch on, never an analyst's.

Two release options make a data pass *refuse* depending on the data, and the refusal passes the data pass
with its own text (a :class:`~dpspark.engine.errors.CuratorError`, see :mod:`dpspark.engine.data_pass`):

* ``out_of_universe = "error"`` fails iff some (kept) unit holds a key outside the declared universe;
* ``on_excess_units = "refuse"`` fails iff the input holds more than ``max_units`` units.

Each answer is exact: one bit at epsilon = infinity, bought for the call's nominal price. An analyst who can
set them learns, e.g., whether anybody's key is 'hiv' (one call with ``keys=['hiv']`` left out of the list)
for ten calls at epsilon = 1/10 each. So a :class:`~dpspark.Session` refuses them, before anything is read or
charged, unless the curator enabled them when the Session was built (``Session(..., curator_checks=True)``,
which warns with :data:`CURATOR_CHECKS_WARNING`). The CLI and spark-submit read a curator's config file and
keep them. The check runs on the parsed spec, so every way an analyst's call reaches a field (a keyword,
``**privacy``, or a ``sections={"privacy": ...}`` pass-through) is covered by the same test.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpspark.errors import DPSparkError

if TYPE_CHECKING:
    from dpspark.engine.spec import ReleaseSpec

__all__ = ["CURATOR_CHECKS_WARNING", "CURATOR_OPTIONS", "CuratorOptionError", "check_analyst_spec"]

#: field -> (the value that makes the outcome depend on the data, what its outcome discloses)
CURATOR_OPTIONS: dict[str, tuple[str, str]] = {
    "out_of_universe": ("error", "whether any unit holds a key outside the declared universe or key list"),
    "on_excess_units": ("refuse", "whether the input holds more units than max_units"),
}

#: the warning a Session with ``curator_checks=True`` gives when it is built
CURATOR_CHECKS_WARNING = (
    "curator_checks is on: releases of this Session may use privacy.out_of_universe = 'error' (its error "
    "discloses whether any unit holds a key outside the declared universe or key list) and "
    "privacy.on_excess_units = 'refuse' (its error discloses whether the input holds more units than "
    "max_units). Each such outcome is an exact answer about the data, outside the differential-privacy "
    "guarantee and not charged to any budget. Use it only as the curator of this data, never in a Session "
    "an analyst can call.")


class CuratorOptionError(DPSparkError, ValueError):
    """An analyst's call asked for an option whose outcome depends on the data (refused before any spend)."""


def check_analyst_spec(spec: "ReleaseSpec", *, curator_checks: bool) -> None:
    """Refuse ``spec`` when it switches on a data-dependent option and the curator did not enable them.

    Data-free (the spec only): it runs before the budget check, the plan check and any read.
    """
    if curator_checks:
        return
    for name, (value, what) in CURATOR_OPTIONS.items():
        if getattr(spec, name, None) == value:
            raise CuratorOptionError(
                f"privacy.{name} = {value!r} is a curator-side check: its outcome discloses {what}, exactly "
                "(no noise, no charge), so a Session call cannot switch it on. The curator may enable such "
                "checks when building the Session (Session(..., curator_checks=True)) or use them in a "
                "config file run by the CLI; nothing was read and nothing was spent")
