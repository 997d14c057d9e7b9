"""Query filters: a small predicate grammar that compiles to Arrow masks and Spark Columns and cannot fail on data.

A filter is parsed (hand-written recursive descent, never ``eval`` or ``F.expr``) from::

    expr    := term (OR term)*
    term    := factor (AND factor)*
    factor  := NOT factor | '(' expr ')' | test
    test    := column cmp literal | literal cmp column
             | column [NOT] IN '(' literal (',' literal)* ')'
             | column [NOT] BETWEEN literal AND literal
             | column IS [NOT] NULL
    cmp     := = | == | != | <> | < | <= | > | >=
    literal := [+|-] number | 'string' ('' is a quote) | true | false
    column  := name | `any name` (`` is a backquote)

Function calls (``raise_error(...)``), CASE, casts, arithmetic and anything else are refused when the
config is parsed (:class:`PredicateError`, which the query layer re-raises naming the query). The text,
the IN list and the nesting depth are bounded by public limits.

Semantics (identical on both engines, SQL three-valued logic): a comparison with a NULL is NULL, and a
row passes only where the whole predicate is TRUE. A number literal compares with a numeric column read by
:mod:`dpspark.engine.numeric` (float64; NaN and unparseable text are NULL; +-inf are ordinary values),
a string literal with a string column (byte-wise UTF-8 order on both engines), a boolean with a boolean
column (= and != only). ``IS NULL`` on a numeric column is true for NULL and NaN; on a string column (a
CSV column, say) for NULL only: the text is not read as a number there.

**Number comparisons.** A number literal is an exact rational r (50, -1.5, 2e3). It stands for its
nearest double d(r) (round to nearest, ties to even; +-inf past the largest double), exactly as the text
"0.1" in a CSV cell stands for the double 0.1, so ``x = 0.1`` matches that cell. d(r) is computed once, in
Python, from the exact rational (correctly rounded), and both engines compare the float64 value with the
same double, so they agree on every row; the comparison of two doubles is exact.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Union

from dpspark.errors import DPSparkError

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column

#: public limits on a filter's text, IN list, nesting depth and number of tests
MAX_FILTER_CHARS = 4096
MAX_IN_ITEMS = 1024
MAX_DEPTH = 32
MAX_TESTS = 256
MAX_LITERAL_CHARS = 128
MAX_EXPONENT = 400

_DBL_MAX = 1.7976931348623157e308
_OPS = {"=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_KEYWORDS = {"and", "or", "not", "in", "between", "is", "null", "true", "false"}
#: SQL words outside the grammar, refused with a clear message where a column is expected
_FOREIGN = {"case", "when", "then", "else", "end", "cast", "select", "from", "where", "like", "rlike", "ilike",
            "regexp", "exists", "div", "mod", "interval", "distinct", "any", "all", "some", "try_cast", "current_date"}
_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<num>(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)
  | (?P<str>'(?:[^']|'')*')
  | (?P<bq>`(?:[^`]|``)+`)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op><=|>=|<>|!=|==|=|<|>)
  | (?P<punct>[(),+-])
""", re.VERBOSE)


class PredicateError(DPSparkError, ValueError):
    """A filter outside the grammar, or that does not fit the input's schema (names the problem, never data)."""


# ----------------------------------------------------------------------------------------- the tree
@dataclass(frozen=True)
class Cmp:
    """column op literal (literal: Fraction, str or bool)."""

    column: str
    op: str
    value: Any


@dataclass(frozen=True)
class InList:
    """column IN (literals) (three-valued: NULL for a NULL column)."""

    column: str
    values: tuple[Any, ...]


@dataclass(frozen=True)
class IsNull:
    """column IS NULL (numeric columns: NULL or NaN)."""

    column: str


@dataclass(frozen=True)
class Not:
    item: "Node"


@dataclass(frozen=True)
class And:
    items: tuple["Node", ...]


@dataclass(frozen=True)
class Or:
    items: tuple["Node", ...]


Node = Union[Cmp, InList, IsNull, Not, And, Or]


def _kind_of_literal(v: Any) -> str:
    return "boolean" if isinstance(v, bool) else "number" if isinstance(v, Fraction) else "string"


def literal_double(r: Fraction) -> float:
    """The nearest double to r (ties to even; +-inf past the largest double), computed exactly."""
    try:
        return float(r)  # report: a filter literal as its nearest double (int / int true division rounds correctly); a per-row map, so no sensitivity rests on it
    except OverflowError:
        return math.inf if r > 0 else -math.inf


# ----------------------------------------------------------------------------------------- parsing
class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokenize(text)
        self.i = 0
        self.tests = 0

    def peek(self, k: int = 0) -> tuple[str, str] | None:
        j = self.i + k
        return self.tokens[j] if j < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        tok = self.peek()
        if tok is None:
            raise PredicateError("the filter ends too early")
        self.i += 1
        return tok

    def word(self, k: int = 0) -> str | None:
        tok = self.peek(k)
        return tok[1].lower() if tok is not None and tok[0] == "name" else None

    def expect_word(self, w: str) -> None:
        if self.word() != w:
            raise PredicateError(f"expected {w.upper()} {self.where()}")
        self.i += 1

    def where(self) -> str:
        tok = self.peek()
        return "at the end of the filter" if tok is None else f"at {tok[1]!r} (token {self.i + 1})"

    def parse(self) -> Node:
        node = self.expr(0)
        if self.peek() is not None:
            raise PredicateError(f"unexpected {self.where()}; a filter is comparisons joined by AND, OR, NOT")
        return node

    def expr(self, depth: int) -> Node:
        items = [self.term(depth)]
        while self.word() == "or":
            self.i += 1
            items.append(self.term(depth))
        return items[0] if len(items) == 1 else Or(tuple(items))

    def term(self, depth: int) -> Node:
        items = [self.factor(depth)]
        while self.word() == "and":
            self.i += 1
            items.append(self.factor(depth))
        return items[0] if len(items) == 1 else And(tuple(items))

    def factor(self, depth: int) -> Node:
        if depth > MAX_DEPTH:
            raise PredicateError(f"the filter nests deeper than {MAX_DEPTH} levels")
        if self.word() == "not":
            self.i += 1
            return Not(self.factor(depth + 1))
        tok = self.peek()
        if tok == ("punct", "("):
            self.i += 1
            node = self.expr(depth + 1)
            if self.peek() != ("punct", ")"):
                raise PredicateError(f"expected ')' {self.where()}")
            self.i += 1
            return node
        return self.test()

    def test(self) -> Node:
        self.tests += 1
        if self.tests > MAX_TESTS:
            raise PredicateError(f"the filter has more than {MAX_TESTS} comparisons")
        tok = self.peek()
        if tok is not None and (tok[0] in ("num", "str") or tok in (("punct", "-"), ("punct", "+"))
                                or self.word() in ("true", "false")):
            value = self.literal()  # literal op column: flipped
            op = self.op()
            return Cmp(self.column(), _FLIP[op], value)
        col = self.column()
        w = self.word()
        if w == "is":
            self.i += 1
            negated = self.word() == "not"
            if negated:
                self.i += 1
            self.expect_word("null")
            return Not(IsNull(col)) if negated else IsNull(col)
        negated = w == "not"
        if negated:
            self.i += 1
            w = self.word()
            if w not in ("in", "between"):
                raise PredicateError(f"expected IN or BETWEEN after NOT {self.where()}")
        if w == "in":
            self.i += 1
            node: Node = InList(col, self.in_list())
        elif w == "between":
            self.i += 1
            lo = self.literal()
            self.expect_word("and")
            hi = self.literal()
            node = And((Cmp(col, ">=", lo), Cmp(col, "<=", hi)))
        else:
            node = Cmp(col, self.op(), self.literal())
        return Not(node) if negated else node

    def in_list(self) -> tuple[Any, ...]:
        if self.peek() != ("punct", "("):
            raise PredicateError(f"expected '(' after IN {self.where()}")
        self.i += 1
        values = [self.literal()]
        while self.peek() == ("punct", ","):
            self.i += 1
            values.append(self.literal())
            if len(values) > MAX_IN_ITEMS:
                raise PredicateError(f"an IN list has more than {MAX_IN_ITEMS} values")
        if self.peek() != ("punct", ")"):
            raise PredicateError(f"expected ',' or ')' in the IN list {self.where()}")
        self.i += 1
        kinds = sorted({_kind_of_literal(v) for v in values})
        if len(kinds) > 1:  # data-free: no column type compares with both, whatever the schema (CSV included)
            raise PredicateError(f"an IN list mixes {' and '.join(kinds)} literals; no column type matches both "
                                 "(write one IN list per literal type, joined by OR)")
        return tuple(values)

    def op(self) -> str:
        tok = self.peek()
        if tok is None or tok[0] != "op":
            raise PredicateError(f"expected a comparison (=, !=, <>, <, <=, >, >=, IN, BETWEEN, IS NULL) "
                                 f"{self.where()}; arithmetic and function calls are not part of the filter grammar")
        self.i += 1
        return _OPS[tok[1]]

    def column(self) -> str:
        tok = self.peek()
        if tok is None:
            raise PredicateError("the filter ends where a column name is expected")
        tag, text = tok
        if tag == "bq":
            self.i += 1
            return text[1:-1].replace("``", "`")
        if tag != "name":
            raise PredicateError(f"expected a column name {self.where()}")
        low = text.lower()
        if self.peek(1) == ("punct", "("):
            raise PredicateError(f"function calls such as {text}(...) are not part of the filter grammar "
                                 "(comparisons of a column with a literal, IN, BETWEEN, IS NULL, AND, OR, NOT)")
        if low in _FOREIGN:
            raise PredicateError(f"{text.upper()} is not part of the filter grammar (comparisons of a column "
                                 "with a literal, IN, BETWEEN, IS NULL, AND, OR, NOT)")
        if low in _KEYWORDS:
            raise PredicateError(f"expected a column name {self.where()} (quote a column named like a keyword "
                                 "in backquotes)")
        self.i += 1
        return text

    def literal(self) -> Any:
        sign = 1
        tok = self.peek()
        if tok in (("punct", "-"), ("punct", "+")):
            sign = -1 if tok[1] == "-" else 1
            self.i += 1
            tok = self.peek()
            if tok is None or tok[0] != "num":
                raise PredicateError(f"expected a number after the sign {self.where()}; arithmetic is not part "
                                     "of the filter grammar")
        if tok is None:
            raise PredicateError("the filter ends where a literal is expected")
        tag, text = tok
        if tag == "num":
            self.i += 1
            return sign * _number(text)
        if tag == "str":
            self.i += 1
            return text[1:-1].replace("''", "'")
        w = self.word()
        if w in ("true", "false"):
            self.i += 1
            return w == "true"
        if tag == "name" and self.peek(1) == ("punct", "("):
            raise PredicateError(f"function calls such as {text}(...) are not part of the filter grammar")
        raise PredicateError(f"expected a literal (a number, a 'string', true or false) {self.where()}; "
                             "a column compares only with literals")


def _number(text: str) -> Fraction:
    if len(text) > MAX_LITERAL_CHARS:
        raise PredicateError(f"a number literal is longer than {MAX_LITERAL_CHARS} characters")
    mant, _, exp = text.lower().partition("e")
    e = int(exp) if exp else 0
    if abs(e) > MAX_EXPONENT:
        raise PredicateError(f"a number literal's exponent is beyond +-{MAX_EXPONENT}")
    whole, _, frac = mant.partition(".")
    digits = int((whole or "0") + frac) if (whole or frac) else 0
    return Fraction(digits, 10 ** len(frac)) * (Fraction(10) ** e)


def _tokenize(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            ch = text[pos]
            what = {"/": "division", "*": "multiplication", "%": "modulo", "|": "concatenation or bitwise or",
                    "&": "bitwise and", ";": "a statement separator", '"': "a double-quoted name or string",
                    "[": "subscripts", ".": "a qualified or nested name"}.get(ch, "a character outside the grammar")
            raise PredicateError(f"{what} ({ch!r} at character {pos + 1}) is not part of the filter grammar; "
                                 "quote odd column names in backquotes")
        if m.lastgroup != "ws":
            out.append((m.lastgroup or "", m.group()))
        pos = m.end()
    return out


@dataclass(frozen=True)
class Predicate:
    """A parsed filter: its text (for the manifest) and its tree."""

    text: str
    tree: Node

    def columns(self) -> tuple[str, ...]:
        """The columns the filter reads, in order of first use."""
        out: dict[str, None] = {}
        for leaf in _leaves(self.tree):
            out.setdefault(leaf.column, None)
        return tuple(out)

    # --- types, before any data ----------------------------------------------------------------
    def type_problem(self, schema: "pa.Schema", *, text_input: bool = False) -> str | None:
        """Why this filter cannot be evaluated on an input of ``schema`` (None: it can). Metadata only."""
        from dpspark.engine.numeric import numeric_type_problem

        names = set(schema.names)
        for leaf in _leaves(self.tree):
            if leaf.column not in names:
                return f"filter names column {leaf.column!r}, which the input does not have"
            dtype = _plain(schema.field(leaf.column).type)
            ctype = _arrow_kind(dtype)
            for v in _values(leaf):
                lit = _kind_of_literal(v)
                if ctype == "null":
                    continue
                if lit == "number":
                    if ctype == "boolean":
                        return f"filter compares boolean column {leaf.column!r} with a number; use true or false"
                    problem = numeric_type_problem(dtype, leaf.column, text_input=text_input)
                    if problem:
                        return f"filter compares {problem}"
                elif lit != ctype:
                    return (f"filter compares column {leaf.column!r} of type {dtype} with a {lit} literal; "
                            f"{lit} literals compare only with {lit} columns")
                if lit == "boolean" and isinstance(leaf, Cmp) and leaf.op not in ("=", "!="):
                    return f"filter orders boolean column {leaf.column!r}; booleans take only = and !="
        return None

    # --- Arrow --------------------------------------------------------------------------------
    def arrow_mask(self, batch: "pa.RecordBatch | pa.Table", cache: dict | None = None) -> "pa.Array":
        """The Kleene (three-valued) boolean result on ``batch``; a row passes where it is TRUE. Never raises on data."""
        return _arrow(self.tree, batch, {} if cache is None else cache)

    # --- Spark --------------------------------------------------------------------------------
    def spark_column(self, dtypes: dict[str, Any]) -> "Column":
        """The Spark Column of this filter, given the input's Spark types by column name (no F.expr)."""
        return _spark(self.tree, dtypes)


def parse_predicate(text: Any) -> Predicate:
    """Parse a filter (module docstring); :class:`PredicateError` for anything outside the grammar."""
    if not isinstance(text, str) or not text.strip():
        raise PredicateError("a filter must be a non-empty string")
    if len(text) > MAX_FILTER_CHARS:
        raise PredicateError(f"a filter is longer than {MAX_FILTER_CHARS} characters")
    lone = next((i for i, ch in enumerate(text) if "\ud800" <= ch <= "\udfff"), None)
    if lone is not None:  # not UTF-8: no column value can equal it, and the engines cannot encode it
        raise PredicateError(f"the filter holds a lone surrogate (U+{ord(text[lone]):04X} at character {lone + 1}), "
                             "which is not valid UTF-8 text; filters and their string literals must be UTF-8")
    return Predicate(text, _Parser(text).parse())


def _leaves(node: Node):  # type: ignore[no-untyped-def]
    if isinstance(node, (Cmp, InList, IsNull)):
        yield node
    elif isinstance(node, Not):
        yield from _leaves(node.item)
    else:
        for item in node.items:
            yield from _leaves(item)


def _values(leaf: Node) -> tuple[Any, ...]:
    return (leaf.value,) if isinstance(leaf, Cmp) else leaf.values if isinstance(leaf, InList) else ()


def _plain(dtype: Any) -> Any:
    import pyarrow.types as t

    return dtype.value_type if t.is_dictionary(dtype) else dtype


def _arrow_kind(dtype: Any) -> str:
    import pyarrow.types as t

    if t.is_null(dtype):
        return "null"
    if t.is_boolean(dtype):
        return "boolean"
    if t.is_string(dtype) or t.is_large_string(dtype):
        return "string"
    if t.is_integer(dtype) or t.is_floating(dtype) or t.is_decimal(dtype):
        return "number"
    return "other"


# ----------------------------------------------------------------------------------------- Arrow
def _arrow_column(column: str, batch: Any, cache: dict, numeric: bool) -> Any:
    import pyarrow.compute as pc
    import pyarrow.types as t

    from dpspark.engine.numeric import arrow_numeric

    key = (column, numeric)
    if key not in cache:
        names = batch.schema.names
        if column not in names:
            raise PredicateError(f"filter names column {column!r}, which the input does not have")
        values = batch.column(names.index(column))
        if t.is_dictionary(values.type):
            values = pc.cast(values, values.type.value_type)
        cache[key] = arrow_numeric(values) if numeric else values
    return cache[key]


def _arrow_leaf_kind(leaf: Node, batch: Any) -> str:
    names = batch.schema.names
    if leaf.column not in names:
        raise PredicateError(f"filter names column {leaf.column!r}, which the input does not have")
    return _arrow_kind(_plain(batch.schema.field(leaf.column).type))


def _arrow_cmp(x: Any, op: str, v: Any) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(v, Fraction):
        s = pa.scalar(literal_double(v), pa.float64())
    else:
        s = pa.scalar(v, pa.bool_() if isinstance(v, bool) else x.type)
    fn = {"=": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater,
          ">=": pc.greater_equal}[op]
    return fn(x, s)


def _arrow(node: Node, batch: Any, cache: dict) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(node, Not):
        return pc.invert(_arrow(node.item, batch, cache))
    if isinstance(node, (And, Or)):
        fn = pc.and_kleene if isinstance(node, And) else pc.or_kleene
        out = _arrow(node.items[0], batch, cache)
        for item in node.items[1:]:
            out = fn(out, _arrow(item, batch, cache))
        return out
    ctype = _arrow_leaf_kind(node, batch)
    if ctype == "null":  # an all-NULL column: every test is NULL (IS NULL is TRUE)
        return pa.array([isinstance(node, IsNull) or None] * batch.num_rows, pa.bool_())
    if isinstance(node, IsNull):
        return pc.is_null(_arrow_column(node.column, batch, cache, ctype == "number"))
    values = _values(node)
    numeric = isinstance(values[0], Fraction)
    _check_kind(node, ctype, numeric)
    x = _arrow_column(node.column, batch, cache, numeric)
    if isinstance(node, Cmp):
        return _arrow_cmp(x, node.op, node.value)
    exact = [d for d in _in_values(values)] if numeric else list(values)
    if not exact:
        hit = pa.array([False] * batch.num_rows, pa.bool_())
    else:
        vtype = pa.float64() if numeric else (pa.bool_() if isinstance(values[0], bool) else x.type)
        # is_in hashes bits, so -0.0 would miss 0.0; + 0.0 turns -0.0 into 0.0 (IEEE), as = and both engines do
        hit = pc.is_in(pc.add(x, pa.scalar(0.0, pa.float64())) if numeric else x, value_set=pa.array(exact, vtype))
    return pc.if_else(pc.is_null(x), pa.scalar(None, pa.bool_()), hit)  # NULL IN (...) is NULL


def _in_values(values: tuple[Any, ...]) -> list[float]:
    """The IN list's numbers as their nearest doubles."""
    return [literal_double(v) for v in values]


def _check_kind(leaf: Node, ctype: str, numeric: bool) -> None:
    """The same rules as :meth:`Predicate.type_problem` for the engine's own types (schema only)."""
    lits = {_kind_of_literal(v) for v in _values(leaf)}
    if len(lits) > 1:
        raise PredicateError(f"the IN list on column {leaf.column!r} mixes literal types")
    lit = lits.pop()
    ok = (ctype in ("number", "string")) if lit == "number" else ctype == lit
    if not ok:
        raise PredicateError(f"filter compares column {leaf.column!r} ({ctype}) with a {lit} literal")
    if lit == "boolean" and isinstance(leaf, Cmp) and leaf.op not in ("=", "!="):
        raise PredicateError(f"filter orders boolean column {leaf.column!r}; booleans take only = and !=")


# ----------------------------------------------------------------------------------------- Spark
def _spark_kind(dtype: Any) -> str:
    from pyspark.sql.types import BooleanType, NullType, NumericType, StringType

    if isinstance(dtype, NullType):
        return "null"
    if isinstance(dtype, BooleanType):
        return "boolean"
    if isinstance(dtype, StringType):
        return "string"
    if isinstance(dtype, NumericType):
        return "number"
    return "other"


def spark_ref(column: str) -> "Column":
    """F.col of a column by its exact name (backquoted: a dot is part of the name, not a struct access)."""
    from pyspark.sql import functions as F

    return F.col("`" + column.replace("`", "``") + "`")


def _spark(node: Node, dtypes: dict[str, Any]) -> "Column":
    from pyspark.sql import functions as F

    from dpspark.engine.numeric import spark_numeric

    if isinstance(node, Not):
        return ~_spark(node.item, dtypes)
    if isinstance(node, (And, Or)):
        out = _spark(node.items[0], dtypes)
        for item in node.items[1:]:
            nxt = _spark(item, dtypes)
            out = (out & nxt) if isinstance(node, And) else (out | nxt)
        return out
    if node.column not in dtypes:
        raise PredicateError(f"filter names column {node.column!r}, which the input does not have")
    dtype = dtypes[node.column]
    ctype = _spark_kind(dtype)
    null = F.lit(None).cast("boolean")
    if ctype == "null":
        return F.lit(True) if isinstance(node, IsNull) else null
    raw = spark_ref(node.column)
    if isinstance(node, IsNull):
        return (spark_numeric(raw, dtype) if ctype == "number" else raw).isNull()
    values = _values(node)
    numeric = isinstance(values[0], Fraction)
    _check_kind(node, ctype, numeric)
    x = spark_numeric(raw, dtype) if numeric else raw
    if isinstance(node, Cmp):
        v = node.value
        lit = F.lit(literal_double(v)) if isinstance(v, Fraction) else F.lit(v)
        return {"=": x == lit, "!=": x != lit, "<": x < lit, "<=": x <= lit, ">": x > lit, ">=": x >= lit}[node.op]
    exact = _in_values(values) if numeric else list(values)
    hit = x.isin([F.lit(e) for e in exact]) if exact else F.lit(False)
    return F.when(x.isNull(), null).otherwise(hit)  # NULL IN (...) is NULL, as on Arrow
