"""The ledger's composed *statement* by PLD: what ``dpspark budget`` reports, never what admits a release.

Each counted entry is composed by the tightest description it has:

* an entry with a recorded noise law (:mod:`dpspark.privacy.pld`): that law's PLD;
* a pure entry (delta = 0, no rho): randomized response at its epsilon, the worst eps-DP pair;
* an (epsilon, delta > 0) entry without rho: the worst (epsilon, delta)-DP pair;
* a zCDP entry without a law: its rho, summed and converted once (CKS20, certified).

The PLD part is composed at delta_1 and the rho part at delta_2 = delta - delta_1 (delta_1 = delta when there is
no rho part, else delta / 2), and the two are added (basic composition of the two statements). This is a
statement for releases whose parameters were fixed in advance (dominating pairs compose then); with adaptively
chosen parameters only the ledger's filter holds (:mod:`dpspark.ledger.compose`, docs/accounting.md). The
least-of-rules statement (:func:`dpspark.privacy.mixed_composition.compose_entries`) is reported beside it, and
the smaller of the two is the statement: both hold for the same fixed-parameter sequence.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Iterable, Optional

from dpspark.privacy.mixed_composition import Composed, Entry, compose_entries, converted_upper
from dpspark.privacy.pld import MAX_BINS, Law, PLDStatement, expand, parse_law, pld_epsilon

#: at most this many distinct laws are composed by PLD (each is one powered factor); beyond, the rules state it
MAX_LAWS = 64
#: the CLI's grid cap (bins): a coarser grid rounds losses up (still certified), quicker on large ledgers
DISPLAY_BINS = 1 << 14


@dataclass(frozen=True)
class LedgerStatement:
    """epsilon at delta for the counted entries, and how each part was composed."""

    epsilon: Fraction
    delta: Fraction
    method: str  # "pld" or the least-of-rules rule name
    pld: Optional[PLDStatement]
    pld_epsilon: Optional[Fraction]  # the PLD route's epsilon (None: not computed or no bound)
    rules: Optional[Composed]  # the least-of-rules statement
    with_law: int  # entries composed by their recorded law
    pure: int
    approx: int
    rho_without_law: int
    rho: Fraction  # the summed rho of zCDP entries without a law


def _laws(entries: list[Entry]) -> tuple[list[Law], Fraction, tuple[int, int, int, int]]:
    laws: list[Law] = []
    rho = Fraction(0)
    counts = [0, 0, 0, 0]
    for e in entries:
        if e.law is not None:
            laws.extend(expand([parse_law(e.law)]))  # a release of k copies composes as k pairs
            counts[0] += 1
        elif e.rho is not None:
            rho += e.rho
            counts[3] += 1
        elif e.delta == 0:
            laws.append(Law("pure", (e.epsilon,)))
            counts[1] += 1
        else:
            laws.append(Law("approx", (e.epsilon, e.delta)))
            counts[2] += 1
    return laws, rho, (counts[0], counts[1], counts[2], counts[3])


def statement(entries: Iterable[Entry], delta: Fraction, *, max_bins: int = MAX_BINS) -> Optional[LedgerStatement]:
    """The entries' statement at ``delta`` (0 < delta < 1): the smaller of the PLD route and the least of rules.

    With recorded laws, also the same without them (each entry by its charge) when that is smaller: a law's
    irrational losses are rounded up to the grid, which over many releases can cost more than the law saves
    (both routes state the same fixed-parameter sequence, so the smaller holds)."""
    es = list(entries)
    with_laws = _statement(es, delta, max_bins)
    if not any(e.law is not None for e in es):
        return with_laws
    charged = _statement([Entry(e.epsilon, e.delta, e.rho, None) for e in es], delta, max_bins)
    if with_laws is None or (charged is not None and charged.epsilon < with_laws.epsilon):
        return charged
    return with_laws


def _statement(es: list[Entry], delta: Fraction, max_bins: int) -> Optional[LedgerStatement]:
    laws, rho, counts = _laws(es)
    rules = compose_entries(es, delta)
    pld: Optional[PLDStatement] = None
    pld_eps: Optional[Fraction] = None
    if laws and len(set(laws)) <= MAX_LAWS:
        d1 = delta if rho == 0 else delta / 2
        basic = sum((e.epsilon for e in es if e.rho is None or e.law is not None), Fraction(0)) + 1
        # a tight upper end first (the grid is sized to it), the basic one when it does not reach delta_1
        for eps_hi in ([rules.epsilon + 1] if rules is not None and rules.epsilon + 1 < basic else []) + [basic]:
            pld = pld_epsilon(laws, d1, eps_hi, max_bins=max_bins)
            if pld is not None:
                break
        if pld is not None:
            pld_eps = pld.epsilon + (converted_upper(rho, delta - d1) if rho else Fraction(0))
    elif rho:
        pld_eps = None  # nothing for PLD: the rules' zCDP conversion is the statement
    best_rules = None if rules is None else rules.epsilon
    if pld_eps is None and best_rules is None:
        return None
    if pld_eps is not None and (best_rules is None or pld_eps <= best_rules):
        eps, method = pld_eps, "pld"
    else:
        eps, method = best_rules, rules.rule  # type: ignore[union-attr,assignment]
    return LedgerStatement(eps, delta, method, pld, pld_eps, rules, *counts, rho)  # type: ignore[arg-type]


def words(st: LedgerStatement) -> str:
    """What was composed how, in words (``dpspark budget``)."""
    parts = []
    if st.with_law:
        parts.append(f"{st.with_law} by their recorded noise law")
    if st.pure:
        parts.append(f"{st.pure} pure as randomized response")
    if st.approx:
        parts.append(f"{st.approx} (epsilon, delta) as their worst-case pair")
    text = "PLD over " + ", ".join(parts) if parts else ""
    if st.rho_without_law:
        text += ("; " if text else "") + f"{st.rho_without_law} zCDP without a law in rho = {st.rho} (CKS20)"
    if st.pld is not None:
        text += f"; grid eta = {st.pld.eta}" + (" (exact)" if st.pld.exact_grid else " (losses rounded up)")
    return text
