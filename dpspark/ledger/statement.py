"""The exact statement a ledger entry records for a release: its rho when the release states rho-zCDP.

The ledger knows no family: it reads the statement a built mechanism makes before any data (the same
``planned_statements()`` / ``statements()`` / ``statement()`` / ``planned_statement()`` that the plan's
readability check serialises), takes the one under AddRemove(max_units) - the relation the ledger composes
under - and records its rho when it is zCDP. A release without such a statement is charged its configured
(epsilon, delta), as before. The rho is recorded only when its certified CKS20 conversion lies within the
configured (epsilon, delta), so the entry is never worse than the charge it replaces; ``dpspark verify
--ledger`` checks the written release against it.

A mechanism whose implemented noise law is known exactly states it with ``noise_law()`` (a JSON-ready mapping,
:func:`dpspark.privacy.pld.parse_law`; None or absent: no law), and the spend records it for the PLD
statement (:func:`spend_law`); the ledger checks it is no worse than the charge (``check_law``).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Optional


def _add_remove(mech: Any, n: int) -> Any:
    from dpspark.privacy import AddRemove

    for attr in ("planned_statements", "statements"):
        make = getattr(mech, attr, None)
        if callable(make):
            named = dict(make())
            return named.get("add_remove")
    for attr in ("statement", "planned_statement"):
        make = getattr(mech, attr, None)
        if callable(make):
            st = make()
            return st if getattr(st, "relation", None) == AddRemove(n) else None
    return None


def spend_rho(spec: Any, mech: Any) -> Optional[Fraction]:
    """The rho a spend of ``spec`` records (None: charged as its configured (epsilon, delta))."""
    from dpspark.privacy import AddRemove, ZCDP
    from dpspark.privacy.mixed_composition import converted_upper

    if mech is None or not spec.delta:
        return None  # no delta: a pure release, charged as epsilon-DP
    st = _add_remove(mech, spec.max_units)
    if st is None or st.relation != AddRemove(spec.max_units) or not isinstance(st.measure, ZCDP):
        return None
    rho = st.measure.rho
    if rho <= 0 or converted_upper(rho, Fraction(spec.delta)) > Fraction(spec.epsilon):
        return None
    return rho


def spend_law(mech: Any) -> Optional[str]:
    """The noise law a spend of ``mech`` records (its ``noise_law()``, as stored text), or None."""
    from dpspark.privacy.pld import parse_law

    make = getattr(mech, "noise_law", None)
    law = make() if callable(make) else None
    return None if law is None else parse_law(law).text()
