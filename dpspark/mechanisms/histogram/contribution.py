"""Contribution bounds and what they do to a histogram mechanism's parameters and statement.

With ``max_keys_per_unit = k`` each unit keeps at most k distinct keys (chosen by a keyed hash of
(unit, key), so the choice is a stable function of the unit's own rows), and with
``max_rows_per_key = c`` it adds at most c to any one key's count. Adding or removing one unit then
moves at most k counts, each by at most c (l1 sensitivity k c), and every count lies in [0, c n],
their total in [0, k c n].

The histogram mechanisms run their counting mechanism M on the total range N = k c n with per-row
budget epsilon/(k c) (and delta/k per key), and the per-unit statement follows in one of three ways
(:func:`scale_statement`); with k = c = 1 nothing changes.

* Key-local, one draw per key (dense, BV Thm 5.2; compact, BV Thm 8.3): a key whose count moves by
  d <= c changes one factor of the output law by at most (p/q)^d (d steps of M's ratio bound, Lemma
  4.4), times its own rng bias once (and, for compact, the empty-bin sampler's factor once, when the
  key goes from 0 to d: m_d(v)/g(v) = (m_d(v)/m_0(v)) (m_0(v)/g(v))). Independent keys multiply:
  ``e^eps = (p/q)^(k c), extra = k * extra_key, delta = 0``.
* Key-local, statement per key (stability, BV Thm 5.5): the algorithm's own statement already covers
  one key's count moving by up to c: (p/q)^c, its draw's bias, and delta_c = Pr[M(c, U) > tau] (a key
  going from 0 to d <= c appears with probability Pr[M(d, U) > tau] <= delta_c, M being stochastically
  increasing in its count). Basic composition over the k independent keys:
  ``e^eps = (p/q)^(c k), extra = k * extra_key, delta = k * delta_c``.
* Whole algorithm, group privacy (pure sparse, BV Thm 6.10): its statement is for one row added or
  removed, on datasets of total count <= N; a unit is k c such rows, and every dataset on the path from
  D to D + unit has total <= N. So ``e^eps = (p/q)^(k c), extra = k c * extra_row, delta = 0``.
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


def scale_statement(statement: "PrivacyStatement", keys_per_unit: int, rows_per_key: int, n: int, *,
                    per_key: bool = False, group: bool = False) -> "PrivacyStatement":
    """The per-unit statement under AddRemove(n) from the algorithm's one (module docstring).

    Default: ``statement`` is for one row, each key's noise drawn once: e^eps^(k c), extra x k, delta x k.
    ``per_key``: ``statement`` already covers one key moving by up to c: e^eps^k, extra x k, delta x k.
    ``group``: ``statement`` is the whole algorithm's for one row: e^eps^(k c), extra x k c, delta x k c.
    Unchanged when it already is the per-unit statement (k = c = 1; k = 1 with ``per_key``). A tighter
    replacement delta proved for one step does not carry over (the generic rule applies).
    """
    k, c = keys_per_unit, rows_per_key
    if per_key and group:
        raise ValueError("a statement is per key or per row of the whole algorithm, not both")
    if k == 1 and (c == 1 or per_key):
        return statement
    from dpspark.mechanisms.histogram.result import add_remove_statement

    power = k if per_key else k * c
    copies = k * c if group else k
    if group:
        how, unit = "group privacy over the unit's k c rows", "per-row"
    else:
        how, unit = "group privacy, composition", "per-bin"
    return add_remove_statement(
        n,
        exp_eps=statement.exp_eps ** power,
        bias_epsilon=statement.bias_epsilon * copies,
        delta=statement.delta * copies,
        theorem=f"{statement.theorem}; per unit: {k} key(s) x {c} row(s) per key ({how})",
        notes=(statement.notes + "; " if statement.notes else "")
        + f"each unit keeps <= {k} keys and adds <= {c} per key: e^eps = (p/q)^{k * c}, "
        f"extra = {copies} x {unit} extra, delta = {copies} x {unit} delta",
    )
