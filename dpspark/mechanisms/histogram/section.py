"""The ``bins`` section of a sparse release's manifest: the bins file and its columns.

Declared for the ``sparse`` kind in ``kind.py``; the envelope (:mod:`dpspark.release.manifest`) has
checked the common parts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dpspark.release.counts_form import SectionContext
    from dpspark.release.header import FileEntry, ReadLimits

SECTION_KEY = "bins"


def parse_bins_section(
    obj: dict[str, Any], files: "dict[str, FileEntry]", name: str, limits: "ReadLimits", ctx: "SectionContext"
) -> dict[str, Any]:
    """The ``bins`` section, after checking that its file is listed under ``files``."""
    from dpspark.release.header import fail as _fail

    bins = obj.get("bins")
    if bins is None:
        raise _fail(name, "a sparse release needs a bins section")
    if bins["file"] not in files:
        raise _fail(name, f"the bins file {bins['file']!r} is not listed under files")
    return {"bins": bins}


def check_sparse_plan(plan: Any, mech: Any, limits: "ReadLimits") -> None:
    """Before any spend: the statements this plan's sparse manifest will state, read back with the reader's limits."""
    from dpspark.release.plan_check import check_count_statements

    planned = getattr(mech, "planned_statement", None)
    if not callable(planned):  # a plugin's histogram: its statement is only known from its run
        return
    st = planned()
    # stability proves replacement delta = delta for one step; with k > 1 the generic, larger one is stated
    algorithm = "StabilityHistogram" if mech.name == "stability" and mech.k == 1 and mech.c == 1 else ""
    check_count_statements(plan, mech.name, st.exp_eps, st.bias_epsilon, st.delta, algorithm, False, limits)
