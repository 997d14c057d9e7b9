"""Contribution bounds and what they do to a histogram mechanism's parameters and statement.

With ``max_keys_per_unit = k`` each unit keeps at most k distinct keys (chosen by a keyed hash of
(unit, key), so the choice is a stable function of the unit's own rows), and with
``max_rows_per_key = c`` it adds at most c to any one key's count. Adding or removing one unit then
moves at most k counts, each by at most c, and every count lies in [0, c n], their total in [0, k c n].

The histogram mechanisms are run on the total range N = k c n with per-step budget epsilon/(k c)
(and delta/k): a unit's change is k c unit steps of one count by one (group privacy, BV Lemma 4.4
for one count; independent bins compose), so the per-unit statement is

    e^eps = (p/q)^(k c),  extra = k * extra_step,  delta = k * delta_step,

with extra_step the per-bin rational part (the rng bias of the changed bin's draws; for compact also
the certified sampler bound). For the pure sparse histogram and compact (which need c = 1) the k
steps are k add/remove steps of the whole algorithm on datasets of total count <= k n (group
privacy), which gives the same formula with delta = 0. With k = c = 1 nothing changes.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dpspark.mechanisms.histogram.result import PrivacyStatement


def per_step_epsilon(epsilon: Fraction, keys_per_unit: int, rows_per_key: int) -> Fraction:
    """The add/remove epsilon each unit step may use: epsilon / (k c)."""
    return epsilon / (keys_per_unit * rows_per_key)


def count_range(n: int, keys_per_unit: int, rows_per_key: int) -> int:
    """N = k c n: a bound on every count and on their total."""
    return n * keys_per_unit * rows_per_key


def scale_statement(statement: "PrivacyStatement", keys_per_unit: int, rows_per_key: int, n: int) -> "PrivacyStatement":
    """The per-unit statement under AddRemove(n) from the per-step one (module docstring); unchanged for k = c = 1.

    A tighter replacement delta proved for one step does not carry over (the generic rule applies).
    """
    k, c = keys_per_unit, rows_per_key
    if k == 1 and c == 1:
        return statement
    from dpspark.mechanisms.histogram.result import add_remove_statement

    return add_remove_statement(
        n,
        exp_eps=statement.exp_eps ** (k * c),
        bias_epsilon=statement.bias_epsilon * k,
        delta=statement.delta * k,
        theorem=f"{statement.theorem}; per unit: {k} key(s) x {c} row(s) per key (group privacy, composition)",
        notes=(statement.notes + "; " if statement.notes else "")
        + f"each unit keeps <= {k} keys and adds <= {c} per key: e^eps = (p/q)^{k * c}, "
        f"extra = {k} x per-bin extra, delta = {k} x per-bin delta",
    )
