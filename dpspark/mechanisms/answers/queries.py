"""The ``[[queries]]`` section of an ``answers`` release: counts, clipped fixed-point sums and means.

Each query is a table with

* ``name`` - unique, the key the reader answers by;
* ``kind`` - "count", "sum" or "mean";
* ``column`` - the summed column (sum and mean);
* ``lo``, ``hi`` - public clip bounds, exact rationals (str or int; a TOML float is refused with a
  TypeError). Sums and means clip each unit's total of ``column`` to [lo, hi]. A count may give ``hi``
  (an int >= 1: the most rows of one unit it counts; default 1) and no ``lo``. A sum or mean given neither
  (nor ``scale_bits``) has its bounds and scale **chosen privately** (:mod:`dpspark.mechanisms.answers.autobounds`);
* ``filter`` - optional predicate in the small grammar of :mod:`dpspark.engine.predicate` (comparisons of a
  column with a literal, IN, BETWEEN, IS NULL, AND, OR, NOT; no functions, no arithmetic): a row counts /
  adds only where it is TRUE (SQL three-valued logic: NULL is not true). Parsed here, before any data, and
  compiled to the same exact test on both engines;
* ``nulls`` - sums and means: what a NULL, NaN or unparseable value of ``column`` means
  (:func:`dpspark.engine.numeric.parse_null_rule`): "drop" (default; the row adds nothing and a noisy-count
  mean does not count it) or a public value it counts as. +-inf are clipped like any value;
* ``scale_bits`` - sums and means: the public fixed-point scale S = 2^scale_bits, default 8. A value x
  becomes the integer round(x * S) (half away from zero) and the clip bounds become floor(lo * S) and
  ceil(hi * S) (rounded outward, so [lo, hi] is kept whole);
* ``mean`` - means only: "noisy_count" (the noisy sum over a noisy count of the same rows; two answers) or
  "public_n" (the noisy sum over the public ``n``, which must be given). Default: "public_n" when ``n`` is
  given, else "noisy_count" - the one that needs no other input (:func:`default_mean`); the manifest and the
  dry run state the mode each mean used.

Every query becomes one or two *scalar answers* (:class:`Scalar`): an exact integer statistic with an
integer sensitivity ``delta`` in its own fixed-point units (the most one unit moves it under add/remove).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from fractions import Fraction
from typing import Any

from dpspark.engine.numeric import NullRule, NullRuleError, parse_null_rule
from dpspark.engine.predicate import Predicate, PredicateError, parse_predicate
from dpspark.errors import DPSparkError
from dpspark.exact import parse_rational


class QueryKind(str, Enum):
    """What a query (or a scalar answer) computes; members compare by identity, never by spelling."""

    COUNT = "count"
    SUM = "sum"
    MEAN = "mean"


KINDS = tuple(k.value for k in QueryKind)
MEAN_MODES = ("public_n", "noisy_count")
#: default fixed-point scale of sums and means: 2^8 (values are rounded to 1/256 before clipping)
DEFAULT_SCALE_BITS = 8
MAX_SCALE_BITS = 64
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,127}$")
_FIELDS = {"name", "kind", "column", "lo", "hi", "filter", "scale_bits", "mean", "n", "nulls"}
#: the Arrow kernel computes per-row values in float64, which must stay exactly representable: a batch with a
#: clip bound x 2^scale_bits at or past it is Spark's (stage.WideScalarTotalsStage). Here, not in the kernel, so
#: choosing a stage while planning imports no pyarrow.compute (0.2-0.45 s of a cold CLI's checking, issue 35 §1)
MAX_ARROW_DELTA = 1 << 52
#: every scalar's sensitivity (fixed point) stays below 2^63: a decimal(38,0) then holds any sum of fewer
#: than 2^63 such values (< 2^126 < 10^38), so no exact aggregate on either engine can overflow
MAX_DELTA = 1 << 63


class QueryError(DPSparkError, ValueError):
    """A malformed query (the message names the query and the field, never data)."""


class QueryTypeError(QueryError, TypeError):
    """A query field of the wrong type (a float clip bound, most often)."""


@dataclass(frozen=True)
class Query:
    """One validated query (public parameters only)."""

    name: str
    kind: QueryKind
    column: str | None
    lo: Fraction
    hi: Fraction
    filter: Predicate | None
    scale_bits: int
    mean: str | None = None
    n: int | None = None
    nulls: NullRule = NullRule()
    #: bounds (and scale_bits) chosen privately: lo, hi and scale_bits are placeholders (-1, 1, 0) until then
    auto: bool = False

    @property
    def scale(self) -> int:
        """S = 2^scale_bits (1 for counts)."""
        return 1 << self.scale_bits

    @property
    def lo_int(self) -> int:
        """The clip's lower end in fixed-point units, rounded outward."""
        return (self.lo * self.scale).__floor__()

    @property
    def hi_int(self) -> int:
        """The clip's upper end in fixed-point units, rounded outward."""
        return (self.hi * self.scale).__ceil__()

    def scalars(self) -> list["Scalar"]:
        """The scalar answers this query needs (a mean over a noisy count needs two)."""
        if self.kind is QueryKind.COUNT:
            return [Scalar(self.name, QueryKind.COUNT, None, 0, int(self.hi), 0, self.filter)]
        total = Scalar(self.name if self.kind is QueryKind.SUM else f"{self.name}#sum", QueryKind.SUM, self.column,
                       self.lo_int, self.hi_int, self.scale_bits, self.filter, self.nulls)
        if self.kind is QueryKind.MEAN and self.mean == "noisy_count":  # counts the rows the sum reads
            present = self.column if self.nulls.drop else None
            return [total, Scalar(f"{self.name}#count", QueryKind.COUNT, None, 0, 1, 0, self.filter, present=present)]
        return [total]

    def describe(self) -> dict[str, Any]:
        """Exact, JSON-ready fields for the manifest."""
        out: dict[str, Any] = {"name": self.name, "kind": self.kind.value}
        if self.column is not None:
            out["column"] = self.column
        out["lo"], out["hi"] = str(self.lo), str(self.hi)
        if self.kind is not QueryKind.COUNT:
            out["scale_bits"] = self.scale_bits
        if self.auto:
            out["lo"] = out["hi"] = out["scale_bits"] = "chosen privately"
        if self.filter is not None:
            out["filter"] = self.filter.text
        if self.kind is not QueryKind.COUNT:
            out["nulls"] = self.nulls.describe()
            out["nulls_rule"] = self.nulls.text() + "; +-inf are clipped to the bounds"
        if self.kind is QueryKind.MEAN:
            out["mean"] = self.mean
            if self.n is not None:
                out["n"] = self.n
        return out


@dataclass(frozen=True)
class Scalar:
    """One integer statistic: the sum over units of clip(unit's total, lo, hi) of a (filtered) column.

    ``column`` None is a column of ones (a count); ``present`` (counts only) is a column whose NULL (or NaN,
    or unparseable text) drops the row from the count, as the matching sum drops it. ``nulls`` is the sum's
    null rule. ``delta`` = max(|lo|, |hi|) is its add/remove sensitivity in fixed-point units.
    """

    label: str
    kind: QueryKind
    column: str | None
    lo: int
    hi: int
    scale_bits: int
    filter: Predicate | None
    nulls: NullRule = NullRule()
    present: str | None = None

    @property
    def query_name(self) -> str:
        """The name of the query this scalar answers."""
        return self.label.split("#")[0]

    def columns(self) -> tuple[str, ...]:
        """Every input column this scalar reads (value, presence, filter)."""
        cols = [c for c in (self.column, self.present) if c is not None]
        if self.filter is not None:
            cols.extend(self.filter.columns())
        return tuple(dict.fromkeys(cols))

    def imputed(self, bound: int | None = None) -> int | None:
        """The fixed-point value a NULL stands for (exact round half away from zero, clipped to [-bound, bound];
        default bound: delta), or None: the rule is "drop"."""
        if self.nulls.drop:
            return None
        bound = self.delta if bound is None else bound
        v = self.nulls.value * (1 << self.scale_bits)
        r = (abs(v) + Fraction(1, 2)).__floor__()
        r = r if v >= 0 else -r
        return max(-bound, min(bound, r))

    @property
    def delta(self) -> int:
        """The most one unit moves the statistic (add/remove), in fixed-point units."""
        return max(abs(self.lo), abs(self.hi))


def _rational(q: dict[str, Any], key: str, where: str) -> Fraction:
    value = q[key]
    if isinstance(value, float):
        raise QueryTypeError(
            f"{where}.{key} was given as a float ({value!r}); floats are not exact. "
            f"Write it as a string such as \"{value}\" or as an int")
    try:
        return parse_rational(value, f"{where}.{key}")
    except TypeError as err:
        raise QueryTypeError(str(err)) from None
    except ValueError as err:
        raise QueryError(str(err)) from None


def default_mean(query: dict[str, Any]) -> str:
    """A mean's mode when the query names none: "public_n" with a public ``n``, else "noisy_count" (it needs no
    other input; a mean over the public n needs n, and once failed without it)."""
    return "public_n" if "n" in query else "noisy_count"


def parse_query(q: Any, index: int) -> Query:
    """Validate one query table (see the module docstring)."""
    where = f"queries[{index}]"
    if not isinstance(q, dict):
        raise QueryError(f"{where} must be a table")
    bad = sorted(set(q) - _FIELDS)
    if bad:
        raise QueryError(f"{where} has unknown field(s) {', '.join(map(repr, bad))}; expected {sorted(_FIELDS)}")
    name = q.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise QueryError(f"{where}.name must be a name of letters, digits, '_', '.', '-' (got {name!r})")
    where = f"query {name!r}"
    raw_kind = q.get("kind")
    if raw_kind not in KINDS:
        raise QueryError(f"{where}: kind must be one of {KINDS}, got {raw_kind!r}")
    kind = QueryKind(raw_kind)
    filt = None
    if q.get("filter") is not None:
        raw = q["filter"]
        if not isinstance(raw, str) or not raw.strip():
            raise QueryError(f"{where}: filter must be a non-empty predicate string")
        try:
            filt = parse_predicate(raw)
        except PredicateError as err:
            raise QueryError(f"{where}: filter {raw!r}: {err}") from None
    if kind is QueryKind.COUNT:
        for key in ("column", "lo", "scale_bits", "mean", "n", "nulls"):
            if key in q:
                raise QueryError(f"{where}: a count takes no {key!r}")
        hi = q.get("hi", 1)
        if isinstance(hi, float):
            raise QueryTypeError(f"{where}.hi was given as a float; a count's hi is an int (rows per unit)")
        if isinstance(hi, bool) or not isinstance(hi, int) or not 1 <= hi <= 1 << 40:
            raise QueryError(f"{where}: a count's hi (most rows of one unit counted) must be an int >= 1")
        return Query(name, kind, None, Fraction(0), Fraction(hi), filt, 0)
    col = q.get("column")
    if not isinstance(col, str) or not col:
        raise QueryError(f"{where}: a {kind.value} needs a column name")
    auto = "lo" not in q and "hi" not in q
    if auto and "scale_bits" in q:
        raise QueryError(f"{where}: scale_bits is chosen with the bounds when lo and hi are left out (bounds "
                         "chosen privately); give lo and hi too, or leave scale_bits out")
    if not auto and ("lo" not in q or "hi" not in q):
        raise QueryError(f"{where}: a {kind.value} needs public clip bounds lo and hi (give both, or neither to "
                         "have them chosen privately)")
    lo, hi = (Fraction(-1), Fraction(1)) if auto else (_rational(q, "lo", where), _rational(q, "hi", where))
    if lo > hi:
        raise QueryError(f"{where}: lo must be <= hi")
    bits = 0 if auto else q.get("scale_bits", DEFAULT_SCALE_BITS)
    if isinstance(bits, bool) or not isinstance(bits, int) or not 0 <= bits <= MAX_SCALE_BITS:
        raise QueryError(f"{where}: scale_bits must be an int in [0, {MAX_SCALE_BITS}]")
    mode, n = None, None
    if kind is QueryKind.MEAN:
        mode = q.get("mean", default_mean(q))
        if mode not in MEAN_MODES:
            raise QueryError(f"{where}: mean must be one of {MEAN_MODES}, got {mode!r}")
        if mode == "public_n":
            n = q.get("n")
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise QueryError(f"{where}: mean = \"public_n\" needs the public number of units n (an int >= 1)")
        elif "n" in q:
            raise QueryError(f"{where}: n applies only to mean = \"public_n\"")
    elif "mean" in q or "n" in q:
        raise QueryError(f"{where}: mean and n apply only to kind = \"mean\"")
    try:
        nulls = parse_null_rule(q.get("nulls"), where)
    except NullRuleError as err:
        raise QueryError(str(err)) from None
    query = Query(name, kind, col, lo, hi, filt, bits, mode, n, nulls, auto)
    if query.scalars()[0].delta == 0:
        raise QueryError(f"{where}: the clip range [0, 0] sums nothing; widen lo/hi")
    if query.scalars()[0].delta >= MAX_DELTA:
        raise QueryError(f"{where}: max(|lo|, |hi|) x 2^scale_bits must be < 2^63 (exact sums stay inside "
                         "decimal(38,0)); lower scale_bits or the bounds")
    return query


def parse_queries(raw: Any) -> tuple[Query, ...]:
    """The ``[[queries]]`` section: a non-empty array of query tables with unique names."""
    if isinstance(raw, dict):
        raw = raw.get("query", [raw]) if set(raw) <= {"query"} else [raw]
    if not isinstance(raw, list) or not raw:
        raise QueryError("needs at least one query: write [[queries]] tables")
    queries = tuple(parse_query(q, i) for i, q in enumerate(raw))
    names = [q.name for q in queries]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise QueryError(f"query names must be unique; repeated: {', '.join(map(repr, dup))}")
    return queries


def scalars_of(queries: tuple[Query, ...] | list[Query]) -> list[Scalar]:
    """Every scalar answer of a batch, in query order (k = len of this)."""
    return [s for q in queries for s in q.scalars()]
