"""What a ledger's entries have spent, against a total declared in (epsilon, delta) or in rho.

* A total in (epsilon, delta): the entries' composition at the total's delta is the tightest rule of
  :func:`dpspark.privacy.mixed_composition.compose_entries` (zCDP entries summed in rho and converted once by
  CKS20, certified upward; pure entries in rho or summed; (epsilon, delta) entries summed). A spend fits when
  that composition, with the spend, has epsilon <= the total's (and its delta <= the total's).
* A total in rho: the entries' rho summed exactly (pure entries as eps^2/2); an (epsilon, delta > 0) entry
  cannot be charged to it.

Entries written before zCDP entries existed (no rho) are (epsilon, delta) entries: pure when delta = 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from fractions import Fraction
from typing import Iterable, Optional

from dpspark.privacy.mixed_composition import Composed, Entry, compose_entries, converted_upper, parts, rho_of

#: the refresh windows a dataset may have (None: never refreshed, the default)
REFRESH_WINDOWS = ("monthly",)


@dataclass(frozen=True)
class Budget:
    """An exact (epsilon, delta) pair, with rho for a total declared in rho or a spend's zCDP part.

    For a total declared in rho, (epsilon, delta) is rho's certified CKS20 conversion at the declared
    display delta (epsilon 0 when that delta is 0: not shown).
    """

    epsilon: Fraction
    delta: Fraction
    rho: Optional[Fraction] = None

    @property
    def in_rho(self) -> bool:
        """True for a total declared in rho."""
        return self.rho is not None

    def __str__(self) -> str:
        if self.rho is not None:
            return f"rho = {self.rho}"
        return f"epsilon = {self.epsilon}, delta = {self.delta}"


def rho_total(rho: Fraction, delta: Fraction) -> Budget:
    """A total declared in rho, with its (epsilon, delta) at the display ``delta`` (certified upward)."""
    eps = converted_upper(rho, delta) if 0 < delta < 1 else Fraction(0)
    return Budget(eps, delta, rho)


def window_start(refresh: Optional[str], now: Optional[datetime] = None) -> Optional[str]:
    """The first instant (ISO, UTC) of the current refresh window; None when the dataset never refreshes."""
    if refresh is None:
        return None
    if refresh != "monthly":
        raise ValueError(f"unknown refresh window {refresh!r}")
    now = now or datetime.now(timezone.utc)
    return datetime(now.year, now.month, 1, tzinfo=timezone.utc).isoformat(timespec="microseconds")


@dataclass(frozen=True)
class Spent:
    """The composition of some entries against a total: (epsilon, delta) and its parts, or the rho."""

    budget: Budget  # epsilon at the total's delta (basic composition without a total); rho: the zCDP part
    composed: Optional[Composed]  # None: rho total, no total, or beyond the total's delta
    rule: str


def spent(entries: Iterable[Entry], total: Optional[Budget]) -> Spent:
    """What ``entries`` spent, stated against ``total`` (see the module docstring)."""
    es = list(entries)
    if total is not None and total.rho is not None:
        rho = rho_of(es)
        basic = parts(es, "basic")
        if rho is None:  # an (eps, delta > 0) entry: no rho; shown by basic composition
            return Spent(Budget(basic.xi, basic.delta), None, "basic")
        return Spent(Budget(rho_total(rho, total.delta).epsilon if rho else Fraction(0),
                            total.delta if rho else Fraction(0), rho), None, "zcdp")
    if total is not None:
        got = compose_entries(es, total.delta)
        if got is not None:
            return Spent(Budget(got.epsilon, got.delta, got.parts.rho or None), got, got.rule)
    basic = parts(es, "basic")
    rho = sum((e.rho for e in es if e.rho is not None), Fraction(0))
    return Spent(Budget(basic.xi, basic.delta, rho or None), None, "basic")


def refusal(entries: list[Entry], new: Entry, total: Budget) -> Optional[str]:
    """Why ``new`` does not fit ``total`` after ``entries`` (None: it fits). Value-free: budget amounts only."""
    after = entries + [new]
    if total.rho is not None:
        rho = rho_of(after)
        if rho is None:
            return ("the total is declared in rho (zCDP) and this or an earlier release states only (epsilon, "
                    "delta > 0), which no rho bounds")
        if rho > total.rho:
            now = rho_of(entries) or Fraction(0)
            return (f"it needs rho = {rho - now} but only rho = {max(total.rho - now, Fraction(0))} is left of the "
                    f"total rho = {total.rho}")
        return None
    got = compose_entries(after, total.delta)
    if got is not None and got.epsilon <= total.epsilon:
        return None
    now = spent(entries, total)
    left_delta = total.delta - (now.composed.parts.delta if now.composed is not None else now.budget.delta)
    left = (f"only epsilon = {max(total.epsilon - now.budget.epsilon, Fraction(0))} is left at delta = {total.delta} "
            f"(delta = {max(left_delta, Fraction(0))} not yet spent by (epsilon, delta) releases) of the total "
            f"epsilon = {total.epsilon}, delta = {total.delta}")
    if got is None:
        return f"the (epsilon, delta) releases would spend more than the total delta; {left}"
    return (f"the composition would reach epsilon = {got.epsilon} (~{float(got.epsilon):.6g}) at delta = "  # report
            f"{total.delta} ({got.rule} rule); {left}")
