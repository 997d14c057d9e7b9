"""A checked query (:class:`~dpspark.sql.query.DPQuery`) as the call that runs it: ``Session.groups`` or answers.

* With ``GROUP BY``: the ``groups`` family, exactly the keywords a ``Session.groups`` call takes (so the
  same query and that call build the same spec and, under one seed, the same release). Each aggregate's
  ``contribution_bounds_per_group => (lo, hi)`` clips every value to [lo, hi] (without it the bounds are
  chosen privately on 1/10 of epsilon: :mod:`dpspark.mechanisms.groups.autobounds`); a unit adds at most
  ``max_rows_per_group`` rows (default 1) to each of at most ``max_groups_contributed`` groups (default 1).
  A ``JOIN`` (inner or left, on columns of the same name) becomes the call's ``join``: a public table's,
  or another private table's on the unit only (``private_join``; any other private join is refused). Keys: a
  public table (``OPTIONS (keys = t)``) lists them; without it they are selected privately from
  the universe of the key columns' type (:func:`key_universe`, from the schema: metadata only).
* Without ``GROUP BY`` but with a private join on the unit: ``Session.groups(by=[], keys=[[]], join=...)``, one
  public group over the joined rows (:func:`_one_group`), read as global answers (one row, no key column).
* Without ``GROUP BY`` otherwise: global answers (the ``answers`` family: ``bounded_noise``, or ``gaussian`` with
  ``noise = 'zcdp'``), one query per aggregate, each with the WHERE as its filter. There the bounds clip
  each unit's total (BigQuery's per-group contribution, the one group being the whole table; without them the
  bounds of the units' totals are chosen privately: :mod:`dpspark.mechanisms.answers.autobounds`); ``COUNT``
  counts at most ``max_rows_per_group`` rows of a unit; ``AVG`` is a noisy sum over a noisy count.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Collection

from dpspark.sql.errors import SqlError
from dpspark.sql.query import DPQuery, check_query
from dpspark.sql.where import quote_name

#: the longest string key a private selection reads (the string universe's limit; longer keys are dropped)
MAX_KEY_BYTES = 31
_GLOBAL = {"count", "sum", "mean"}


@dataclass(frozen=True)
class SqlCall:
    """What runs a query: ``family`` "groups" (``kwargs`` of ``Session.groups``) or "answers" (of ``release``).

    ``keys_table``: the public table whose ``by`` columns are the keys (None: private selection, whose
    universe the session derives from the schema with :func:`key_universe`).
    """

    query: DPQuery
    family: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    keys_table: str | None = None

    @property
    def join(self) -> tuple[str, tuple[str, ...], str] | None:
        """The join: (the other table, join columns, "inner" or "left"), or None (:attr:`private_join`: private)."""
        return self.query.join

    @property
    def private_join(self) -> bool:
        """True when the join is with another private table, on the unit."""
        return self.query.private_join

    @property
    def join_options(self) -> dict[str, Any]:
        """A private join's options from OPTIONS: ``max_rows_per_unit`` (L, each table's rows kept per unit)."""
        lim = self.query.options.max_rows_per_unit
        return {} if lim is None else {"max_rows_per_unit": lim}

    @property
    def private_keys(self) -> bool:
        """True when the keys are selected privately (GROUP BY without a public key table)."""
        return self.family == "groups" and self.keys_table is None and bool(self.query.by)


def compile_query(text: Any, *, private: Collection[str], public: Collection[str] = (),
                  unit_column: str | None = None) -> SqlCall:
    """Check ``text`` (:func:`~dpspark.sql.query.check_query`) and compile it; ``unit_column``: the session's."""
    q = check_query(text, private=private, public=public)
    o = q.options
    if o.unit_column is not None and o.unit_column != unit_column:
        raise SqlError(f"OPTIONS privacy_unit_column = {o.unit_column}: the session's privacy unit is "
                       f"{unit_column if unit_column else 'one row'}; the query must use the session's unit "
                       "(open the session with unit_column=..., or drop the option)")
    if q.private_join:
        _check_private_join(q, unit_column)
    elif o.max_rows_per_unit is not None:
        raise SqlError("OPTIONS max_rows_per_unit bounds a private join's rows per unit (JOIN <private table> USING "
                       "(<unit>)); this query has none: drop the option")
    common: dict[str, Any] = {"epsilon": o.epsilon, "delta": o.delta}
    if o.beta is not None:
        common["beta"] = o.beta
    if o.bounds_share is not None:
        common["bounds_share"] = _bounds_share(q)
    if q.by:
        return _groups(q, public, common)
    return _answers(q, common)


def _bounds_share(q: DPQuery) -> str:
    """``OPTIONS (bounds_share = s)``, checked before the spend: some aggregate has its bounds chosen privately, and
    s lies in (0, 1) with ``GROUP BY`` or a private join (``groups.bounds_share``) or in (0, 1/2] without
    (``privacy.bounds_share``)."""
    from dpspark.exact import parse_rational

    text = q.options.bounds_share
    assert text is not None
    try:
        share = parse_rational(text, "OPTIONS bounds_share")
    except (TypeError, ValueError):
        share = None
    if share is None:
        raise SqlError(f"OPTIONS bounds_share = {text}: expected an exact fraction such as 0.2 or '1/5'")
    if not any(a.column is not None and a.lo is None for a in q.aggregates if a.kind != "count"):
        raise SqlError("OPTIONS bounds_share is the share of epsilon for bounds chosen privately; every aggregate "
                       "has contribution_bounds_per_group: drop the option")
    groups = bool(q.by) or q.private_join  # a private join without GROUP BY is groups' one public group
    top, words = (Fraction(1), "(0, 1)") if groups else (Fraction(1, 2), "(0, 1/2]")
    if not (0 < share < top or (share == top and not groups)):
        raise SqlError(f"OPTIONS bounds_share = {text}: the share of epsilon for the bounds must lie in {words}"
                       + ("" if groups else " without GROUP BY (the answers' privacy.bounds_share)"))
    return text


def _check_private_join(q: DPQuery, unit_column: str | None) -> None:
    """A join of two private tables is on the privacy unit column only (else units' rows would mix)."""
    assert q.join is not None
    name, on, _how = q.join
    if unit_column is None:
        raise SqlError(f"JOIN {name}: {name!r} is a private table; a join of two private tables is on their shared "
                       "privacy unit, so the session needs one (unit_column=...)")
    if on != (unit_column,):
        raise SqlError(f"JOIN {name} on {', '.join(on)}: a join of two private tables is on the privacy unit column "
                       f"only: write JOIN {name} USING ({unit_column}) (a join on any other column would mix "
                       "different units' rows)")


def _group_aggregates(q: DPQuery) -> list[dict[str, Any]]:
    """The ``aggregates`` of a ``Session.groups`` call (GROUP BY, or one public group: a private join without)."""
    aggs = []
    for a in q.aggregates:
        if a.kind == "count" and a.column is not None:
            raise SqlError(f"COUNT({a.column}) AS {a.name} in a GROUP BY query is not supported: write COUNT(*) and "
                           f"add {a.column} IS NOT NULL to WHERE")
        row: dict[str, Any] = {"name": a.name, "kind": a.kind}
        if a.column is not None:
            row["column"] = a.column
            if a.lo is not None:  # else the bounds are chosen privately (groups.bounds_share of epsilon)
                row.update(lo=a.lo, hi=a.hi)
        if a.q is not None:
            row["q"] = a.q
        if a.post is not None:  # STDDEV_POP: the variance, stated post = "sqrt" (readers show its root)
            row["post"] = a.post
        aggs.append(row)
    return aggs


def _groups(q: DPQuery, public: Collection[str], common: dict[str, Any]) -> SqlCall:
    o = q.options
    kwargs: dict[str, Any] = {"by": list(q.by), "aggregates": _group_aggregates(q), **common}
    for name in ("max_groups_per_unit", "max_rows_per_group", "noise"):
        if getattr(o, name) is not None:
            kwargs[name] = getattr(o, name)
    if q.where is not None:
        kwargs["where"] = q.where.text
    if o.keys is not None and o.keys not in public:
        raise SqlError(f"OPTIONS keys = {o.keys}: {o.keys!r} is not a public table of the session "
                       f"(public: {', '.join(map(repr, sorted(public))) or 'none'})")
    if o.keys is None and o.delta is None:
        raise SqlError("GROUP BY without public keys selects the keys privately, which needs delta: add "
                       "OPTIONS (delta = 1e-9), or list the keys in a public table: OPTIONS (keys = <table>)")
    return SqlCall(q, "groups", kwargs, o.keys)


def _answers(q: DPQuery, common: dict[str, Any]) -> SqlCall:
    o = q.options
    for name, what in (("keys", "keys"), ("max_groups_per_unit", "max_groups_contributed")):
        if getattr(o, name) is not None:
            raise SqlError(f"OPTIONS {what} applies to GROUP BY queries; this query has no GROUP BY")
    if q.join is not None and q.private_join:
        return _one_group(q, common)
    if q.join is not None:  # the answers family has no join stage
        raise SqlError(f"JOIN {q.join[0]} (a public table) in a query without GROUP BY is not supported: global "
                       "answers read the FROM table alone. Write GROUP BY <column> with its keys listed, OPTIONS "
                       "(keys = <public table>), and add up the released groups after the release (post-processing); "
                       f"or query {q.table} without the join")
    if o.max_rows_per_group == "auto":
        raise SqlError("OPTIONS max_rows_per_group = auto applies to GROUP BY queries (limits chosen privately); "
                       "without GROUP BY give a whole number")
    if o.delta is None:
        raise SqlError("a query without GROUP BY is answered with bounded or Gaussian noise, which needs delta: "
                       "add OPTIONS (delta = 1e-9)")
    noise = o.noise or "bounded"
    mechanisms = {"auto": "bounded_noise", "bounded": "bounded_noise", "zcdp": "gaussian", "gaussian": "gaussian"}
    if noise not in mechanisms:
        raise SqlError(f"OPTIONS noise = {noise!r}: a query without GROUP BY takes 'bounded' or 'zcdp'")
    queries = []
    for a in q.aggregates:
        if a.kind not in _GLOBAL:
            raise SqlError(f"{a.function}(...) AS {a.name} without GROUP BY is not supported: add a GROUP BY "
                           "(COUNT, SUM and AVG answer globally)")
        row: dict[str, Any] = {"name": a.name, "kind": a.kind}
        conditions = [q.where.text] if q.where is not None else []
        if a.kind == "count":
            row["hi"] = o.max_rows_per_group or 1
            if a.column is not None:
                conditions.append(f"NOT {quote_name(a.column)} IS NULL")
        else:
            row["column"] = a.column
            if a.lo is not None:  # else the bounds of each unit's total are chosen privately (answers/autobounds.py)
                row.update(lo=a.lo, hi=a.hi)
            if a.kind == "mean":
                row["mean"] = "noisy_count"
        if o.max_rows_per_group is not None and a.kind != "count":
            raise SqlError("OPTIONS max_rows_per_group bounds COUNT without GROUP BY; SUM and AVG clip each "
                           "unit's total to contribution_bounds_per_group")
        if conditions:
            row["filter"] = " AND ".join(f"({c})" for c in conditions)
        queries.append(row)
    kwargs = {"mechanism": mechanisms[noise], **common, "sections": {"queries": queries}}
    return SqlCall(q, "answers", kwargs)


def _one_group(q: DPQuery, common: dict[str, Any]) -> SqlCall:
    """A private join without ``GROUP BY``: ``Session.groups(by=[], keys=[[]], join=...)``, one public group (k = 1,
    c = ``max_rows_per_group``, the rows a unit adds after the join, or "auto"): every guarantee is groups' own."""
    o = q.options
    kwargs: dict[str, Any] = {"by": [], "keys": [[]], "aggregates": _group_aggregates(q), **common}
    for name in ("max_rows_per_group", "noise"):
        if getattr(o, name) is not None:
            kwargs[name] = getattr(o, name)
    if q.where is not None:
        kwargs["where"] = q.where.text
    return SqlCall(q, "groups", kwargs)


def key_universe(by: tuple[str, ...], schema: Any) -> dict[str, Any]:
    """The ``[universe]`` of a private key selection, from the key columns' types (a pyarrow schema:
    metadata only): strings up to MAX_KEY_BYTES bytes, integers over their type's range."""
    import pyarrow as pa

    parts = []
    for c in by:
        if c not in schema.names:
            raise SqlError(f"GROUP BY {c}: the table has no column {c!r}")
        t = schema.field(c).type
        if pa.types.is_dictionary(t):
            t = t.value_type
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            parts.append({"kind": "string", "max_bytes": MAX_KEY_BYTES, "column": c})
        elif pa.types.is_integer(t):
            bits = t.bit_width
            signed = pa.types.is_signed_integer(t)
            lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
            parts.append({"kind": "int_range", "lo": str(lo), "hi": str(hi), "column": c})
        else:
            raise SqlError(f"GROUP BY {c}: a column of type {t} cannot have its keys selected privately; list the "
                           "keys in a public table: OPTIONS (keys = <table>)")
    return parts[0] if len(parts) == 1 else {"kind": "tuple", "components": parts}
