"""What a ledger's entries have spent, and whether one more fits: each total is a *privacy filter*.

An analyst picks each release's parameters after seeing the earlier outputs, so a budget check is a
privacy filter (Rogers-Roth-Ullman-Vadhan 2016): the guarantee must hold for the whole adaptive
interaction, stopped by the check. The rule is fixed per dataset when the total is declared:

* ``basic`` (an (epsilon, delta) total; the default, and every total stored before filters existed):
  a release fits iff the charged epsilons and deltas, summed with it, stay within the total. Valid filter:
  Rogers-Roth-Ullman-Vadhan 2016 (basic composition holds for adaptively chosen parameters).
* ``zcdp`` with a rho total: a release fits iff the rho of the zCDP and pure (eps^2/2) releases, summed with
  it, stays <= rho_B; an (epsilon, delta > 0) release cannot be charged. Valid filter: for every order alpha
  the condition implies sum alpha rho_i <= alpha rho_B, so the Renyi filter (Feldman-Zrnic 2021;
  Whitehouse-Ramdas-Rogers-Wu 2023, fully adaptive composition) gives D_alpha <= alpha rho_B at every alpha
  for the same stopped interaction: rho_B-zCDP.
* ``zcdp`` with an (epsilon, delta) total: the declaration fixes a corner, once: a share (eps_A, delta_A) of
  the total (default (0, 0)) for releases composed basically, and rho_B = the largest rho on a 2^-64 grid
  with CKS20(rho_B, delta - delta_A) <= epsilon - eps_A (certified upward,
  :func:`dpspark.privacy.mixed_composition.converted_upper`). Each release is charged, in ledger order, to
  the rho part when it states rho or is pure (eps^2/2) and fits there, else to the share at its charged
  (epsilon, delta) when that fits, else refused. Valid: the rho part is a rho_B-zCDP filter (above), so its
  whole interaction is (CKS20(rho_B, delta - delta_A), delta - delta_A)-DP; the share is a basic filter,
  (eps_A, delta_A)-DP. The analyst's adaptive interleaving of the two is their concurrent composition, and
  concurrent composition of interactive (eps_i, delta_i)-DP mechanisms is (sum eps_i, sum delta_i)-DP
  (Vadhan-Wang 2021 for pure DP; Lyu 2022 and Vadhan-Zhang 2023 for approximate DP). Which part a release
  is charged to is the ledger's deterministic choice from public state: an analyst could make it too.
  So the whole is (eps_A + CKS20(rho_B, delta - delta_A), delta)-DP, within the total.

Why not the least of several rules: the previous ledger admitted a release when *some* rule (basic, or the
mixed rule of :mod:`dpspark.privacy.mixed_composition` with pure releases in rho or summed) kept the
composition within an (epsilon, delta) total. Each rule alone is a valid filter only for its own fixed
corner; letting outputs steer which corner is used (an analyst who spends pure epsilon summed after one
output and in rho after another) is a union of filters, which no theorem we know covers without a
penalty (for Renyi orders, Lecuyer 2021 pays a union bound). So the least-of-rules composition stays a
*statement* of a sequence whose parameters were fixed in advance (reports, ``dpspark budget``), never the
admission check.

A principal's limit is a filter of its own kind: a rho limit is a zCDP filter, an (epsilon, delta) limit a
basic filter. It only stops a principal earlier; the dataset's guarantee is the dataset's filter.
Entries written before zCDP entries existed (no rho) are (epsilon, delta) entries: pure when delta = 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from fractions import Fraction
from functools import lru_cache
from typing import Iterable, Optional

from dpspark.privacy.mixed_composition import CONVERSION_BITS, Composed, Entry, converted_upper

#: the refresh windows a dataset may have (None: never refreshed, the default)
REFRESH_WINDOWS = ("monthly",)
#: the filter rules a total may declare (a rho total is always ``zcdp``)
FILTER_RULES = ("basic", "zcdp")
_ZERO = Fraction(0)


@lru_cache(maxsize=1024)
def corner_rho(epsilon: Fraction, delta: Fraction) -> Fraction:
    """The largest rho on the 2^-CONVERSION_BITS grid whose certified CKS20 epsilon at ``delta`` is <= ``epsilon``.

    Bisection on the grid (a public number of steps); the result is checked, so only the check matters.
    """
    if epsilon <= 0 or not 0 < delta < 1:
        return _ZERO
    scale = 1 << CONVERSION_BITS
    lo, hi = 0, int(epsilon * scale) + 1  # rho <= its epsilon at any delta < 1
    for _ in range(CONVERSION_BITS + epsilon.numerator.bit_length() + 2):
        if hi - lo <= 1:
            break
        mid = (lo + hi) // 2
        if converted_upper(Fraction(mid, scale), delta) <= epsilon:
            lo = mid
        else:
            hi = mid
    rho = Fraction(lo, scale)
    assert rho == 0 or converted_upper(rho, delta) <= epsilon
    return rho


@dataclass(frozen=True)
class Budget:
    """An exact (epsilon, delta) pair, with rho for a total declared in rho or a spend's zCDP part.

    For a total declared in rho, (epsilon, delta) is rho's certified CKS20 conversion at the declared
    display delta (epsilon 0 when that delta is 0: not shown). ``rule`` is an (epsilon, delta) total's
    filter (``basic`` or ``zcdp``) and ``share`` the part of a ``zcdp`` total kept for releases composed
    basically (see the module docstring).
    """

    epsilon: Fraction
    delta: Fraction
    rho: Optional[Fraction] = None
    rule: str = "basic"
    share: tuple[Fraction, Fraction] = field(default=(_ZERO, _ZERO))

    @property
    def in_rho(self) -> bool:
        """True for a total declared in rho."""
        return self.rho is not None

    @property
    def filter_rule(self) -> str:
        """The admission filter: ``zcdp`` for a rho total, else the declared rule."""
        return "zcdp" if self.rho is not None else self.rule

    @property
    def rho_cap(self) -> Optional[Fraction]:
        """The filter's rho budget rho_B (None for a basic filter)."""
        if self.rho is not None:
            return self.rho
        if self.rule != "zcdp":
            return None
        return corner_rho(self.epsilon - self.share[0], self.delta - self.share[1])

    @property
    def basic_cap(self) -> tuple[Fraction, Fraction]:
        """The (epsilon, delta) the filter composes basically: the whole total, the share, or (0, 0)."""
        if self.rho is not None:
            return _ZERO, _ZERO
        return (self.epsilon, self.delta) if self.rule == "basic" else self.share

    def __str__(self) -> str:
        if self.rho is not None:
            return f"rho = {self.rho}"
        text = f"epsilon = {self.epsilon}, delta = {self.delta}"
        if self.rule == "zcdp":
            text += f" (zcdp filter, share epsilon = {self.share[0]}, delta = {self.share[1]})"
        return text


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


def entry_rho(e: Entry) -> Optional[Fraction]:
    """An entry's rho: its stated rho, eps^2/2 for a pure entry, None for (epsilon, delta > 0)."""
    if e.rho is not None:
        return e.rho
    return e.epsilon * e.epsilon / 2 if e.delta == 0 else None


@dataclass(frozen=True)
class FilterState:
    """A filter's state after some entries: rho charged to the rho part, (xi, Delta) to the basic part."""

    rho: Fraction
    xi: Fraction
    delta: Fraction
    fits: bool  # every entry fit when charged in order (False only after a total was lowered)
    approx_in_rho_filter: bool = False  # an (epsilon, delta > 0) entry met a filter with nothing basic


def replay(entries: Iterable[Entry], total: Budget) -> FilterState:
    """Charge ``entries`` in order to ``total``'s filter (module docstring); an entry that fits nowhere is
    charged where it would go (rho part if it has rho and the filter has one, else basic) and ``fits`` is False."""
    cap = total.rho_cap
    be, bd = total.basic_cap
    rho = xi = delta = _ZERO
    fits, approx_bad = True, False
    for e in entries:
        r = entry_rho(e) if cap is not None else None
        if r is not None and rho + r <= cap:  # type: ignore[operator]
            rho += r
        elif xi + e.epsilon <= be and delta + e.delta <= bd:
            xi += e.epsilon
            delta += e.delta
        else:
            fits = False
            if r is not None:
                rho += r
            else:
                approx_bad = approx_bad or (cap is not None and be == 0 and bd == 0)
                xi += e.epsilon
                delta += e.delta
    return FilterState(rho, xi, delta, fits, approx_bad)


@dataclass(frozen=True)
class Spent:
    """The filter's spend against a total: (epsilon, delta) and the rho part."""

    budget: Budget  # epsilon: xi + CKS20(rho part) at the rho part's delta; rho: the rho part (None if 0/no part)
    composed: Optional[Composed]  # kept for callers; None (the filter states no least-of-rules composition)
    rule: str
    state: Optional[FilterState] = None


def statement(state: FilterState, total: Budget) -> Budget:
    """The (epsilon, delta) that the filter's spend so far stands for: the basic part plus the rho part converted
    at the delta the corner gives it (for a rho total: its display delta)."""
    d_rho = total.delta if total.rho is not None else total.delta - total.share[1]
    if state.rho == 0:
        return Budget(state.xi, state.delta, None)
    eps = converted_upper(state.rho, d_rho) if 0 < d_rho < 1 else _ZERO
    return Budget(state.xi + eps, state.delta + (d_rho if eps else _ZERO), state.rho)


def spent(entries: Iterable[Entry], total: Optional[Budget]) -> Spent:
    """What ``entries`` spent, stated against ``total``'s filter (basic composition without a total)."""
    es = list(entries)
    if total is None:
        xi = sum((e.epsilon for e in es), _ZERO)
        d = sum((e.delta for e in es), _ZERO)
        r = sum((e.rho for e in es if e.rho is not None), _ZERO)
        return Spent(Budget(xi, d, r or None), None, "basic")
    state = replay(es, total)
    if total.rho is not None and state.xi == 0:
        got = statement(state, total)
        return Spent(Budget(got.epsilon, got.delta, state.rho), None, "zcdp", state)
    return Spent(statement(state, total), None, total.filter_rule, state)


def left(total: Budget, got: Spent) -> Budget:
    """What is left of ``total`` (negative parts: overspent). A rho total: rho left. An (epsilon, delta) total:
    epsilon at the total's delta, the basic part's delta left, and (zcdp filter) the rho part's rho left."""
    state = got.state if got.state is not None else replay([], total)
    cap = total.rho_cap
    if total.rho is not None:
        return Budget(_ZERO, _ZERO, total.rho - state.rho if state.xi == 0 else -total.rho)
    rho_left = None if cap is None else cap - state.rho
    return Budget(total.epsilon - got.budget.epsilon, total.basic_cap[1] - state.delta, rho_left)


def refusal(entries: list[Entry], new: Entry, total: Budget) -> Optional[str]:
    """Why ``new`` does not fit ``total``'s filter after ``entries`` (None: it fits). Value-free: budget amounts."""
    before = replay(entries, total)
    after = replay(entries + [new], total)
    if after.fits:
        return None
    if total.rho is not None:
        if after.approx_in_rho_filter or entry_rho(new) is None or any(entry_rho(e) is None for e in entries):
            return ("the total is declared in rho (zCDP) and this or an earlier release states only (epsilon, "
                    "delta > 0), which no rho bounds")
        return (f"it needs rho = {entry_rho(new)} but only rho = {max(total.rho - before.rho, _ZERO)} is left of the "
                f"total rho = {total.rho}")
    be, bd = total.basic_cap
    words = (f"only epsilon = {max(be - before.xi, _ZERO)}, delta = {max(bd - before.delta, _ZERO)} is left for "
             f"releases composed basically (the total's {total.filter_rule} filter)")
    cap = total.rho_cap
    if cap is not None:
        words += f" and rho = {max(cap - before.rho, _ZERO)} left of its rho part rho = {cap}"
        if entry_rho(new) is None and be == 0 and bd == 0:
            words += ("; an (epsilon, delta > 0) release needs a share of the total declared for it (--share-epsilon/"
                      "--share-delta) or a basic total")
    return f"{words}; total {total}"
