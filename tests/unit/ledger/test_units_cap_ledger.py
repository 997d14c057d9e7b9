"""A release without max_units in the ledger: stated under AddRemove(2^40), it pins no n and composes with any n
up to the cap (AddRemove(2^40) covers AddRemove(m) for m <= 2^40); the pairs that would not compose are refused
before anything is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from dpspark.ledger import Ledger
from dpspark.ledger.errors import UnitMismatch
from dpspark.privacy import AddRemove, steps
from dpspark.privacy.relations import UNITS_CAP

ABOVE = UNITS_CAP << 5  # a declared n above the cap (max_units takes up to 2^48)


def _spend(ledger: Ledger, n: int | None, ds: str = "d") -> None:
    ledger.spend(ds, "1/10", 0, "groups", "out", config_total_epsilon="10", max_units=n)


def test_the_cap_statement_covers_every_declared_n_up_to_it() -> None:
    assert steps(AddRemove(UNITS_CAP), AddRemove(10**6)) == 1
    assert steps(AddRemove(UNITS_CAP), AddRemove(UNITS_CAP)) == 1
    assert "no limit on the number of units" in AddRemove(UNITS_CAP).text()
    assert "at most n = 1000000" in AddRemove(10**6).text()  # a declared n keeps its words


def test_a_cap_release_composes_with_a_pinned_n_and_pins_none(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "l.db")
    _spend(ledger, UNITS_CAP)
    assert ledger.pinned_max_units("d") is None  # the cap pins nothing
    _spend(ledger, 10**6)  # a later declared n pins (the cap statement covers it)
    assert ledger.pinned_max_units("d") == 10**6
    _spend(ledger, UNITS_CAP)  # and a cap release still composes with it
    assert ledger.pinned_max_units("d") == 10**6 and len(ledger.releases("d")) == 3
    with pytest.raises(UnitMismatch, match="pinned to n = 1000000"):
        _spend(ledger, 2 * 10**6)  # two declared n still must agree (as before)


def test_the_pairs_that_would_not_compose_are_refused_and_nothing_is_written(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "l.db")
    _spend(ledger, UNITS_CAP)
    with pytest.raises(UnitMismatch, match="without a declared max_units"):
        _spend(ledger, ABOVE)  # the earlier cap spend holds only up to 2^40
    assert len(ledger.releases("d")) == 1 and ledger.pinned_max_units("d") is None
    _spend(ledger, ABOVE, ds="e")
    with pytest.raises(UnitMismatch, match="above the fixed cap"):
        _spend(ledger, UNITS_CAP, ds="e")
    with pytest.raises(UnitMismatch, match="above the fixed cap"):
        ledger.check_spend("e", "1/10", 0, config_total_epsilon="10", max_units=UNITS_CAP)  # the preflight too
    assert len(ledger.releases("e")) == 1 and ledger.pinned_max_units("e") == ABOVE
