"""Aggregate specs of a ``groups`` release and their per-unit sensitivities (docs/groups.md §B).

An aggregate is one of ``count``, ``sum``, ``mean``, ``variance``, ``quantile``, with exact public
parameters: clip bounds ``lo``/``hi`` (Fractions), the fixed-point scale S = 2^scale_bits, the quantile's
``q`` and its grid size (the spec's ``bins`` = B: the B + 1 candidate points lo + (hi - lo) j / B, each the
centre of one engine cell, :attr:`Aggregate.bins` = B + 1 cells). Contribution bounds (:class:`Bounds`): each unit keeps at most
k = ``max_groups_per_unit`` groups and at most c = ``max_rows_per_group`` rows in each.

Additive aggregates are released from integer *statistics* (:class:`Statistic`) that the engine sums
over the kept rows of a group. A row's value x (after the null rule) becomes the integer
v = clip(round(x S), L, H) with L = floor(lo S), H = ceil(hi S) (outward, so [lo, hi] is kept whole),
D = H - L and C = L + H. Per row the statistics add:

========  =================  ========================  ==========================
name      per row            row range                 used by
========  =================  ========================  ==========================
count     1                  [1, 1]                    count, mean, variance
sum       v                  [L, H]                    sum
csum      2v - C             [-D, D]                   mean, variance, sum
csq       2(2v - C)^2 - D^2  [-D^2, D^2]               variance
zsum      2v' - C'           [-D', D']                 sum (centred on the count of all rows)
========  =================  ========================  ==========================

``zsum`` is a sum's centred statistic over *every* kept row, a row without a value (NULL dropped) counting
as v' = 0: with L' = min(L, 0), H' = max(H, 0), C' = L' + H', D' = H' - L', every row adds 2v' - C' in
[-D', D'], and T = (zsum + C' N_all) / 2 with N_all the count aggregate's rows (docs/groups.md §D).

Bounds chosen privately: an aggregate given without ``lo`` and ``hi`` (and without ``scale_bits``) has
``auto`` set and placeholder bounds [0, 1]; :mod:`dpspark.mechanisms.groups.autobounds` replaces them before the
release's data pass (docs/groups.md §I).

Sensitivity (add/remove one unit): the unit adds at most c rows to at most k groups, so at most k
coordinates of each statistic's group vector move, each by at most c * max(|row lo|, |row hi|)
(:meth:`Statistic.sensitivity`). Centring (csum, csq) halves the sensitivity of a mean's and a
variance's numerators against plain sums (PipelineDP does the same).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from functools import cached_property
from fractions import Fraction
from typing import Any

from dpspark.errors import DPSparkError
from dpspark.exact import parse_rational
from dpspark.lookup.stddev import POSTS

#: default fixed-point scale: 2^8
DEFAULT_SCALE_BITS = 8
MAX_SCALE_BITS = 64
#: default and largest quantile grid (number of cells between lo and hi)
DEFAULT_BINS = 256
MAX_BINS = 1 << 16
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,127}$")
#: ``post``: the post-processing readers show instead of the released value (the file keeps the exact value):
#: "sqrt" on a variance is its standard deviation (SQL's STDDEV_POP; :data:`dpspark.lookup.stddev.POSTS`)
_FIELDS = {"name", "kind", "column", "lo", "hi", "scale_bits", "q", "bins", "quantiles", "post"}
#: how a quantile shares its column with other quantiles: "auto" (joint when the public rule allows, joint_family.py),
#: "joint" (required) or "independent" (its own exponential mechanism)
QUANTILE_MODES = ("auto", "joint", "independent")


class GroupsError(DPSparkError, ValueError):
    """A malformed groups parameter (the message names the aggregate and the field, never data)."""


class GroupsTypeError(GroupsError, TypeError):
    """A parameter of the wrong type (a float where an exact value is required)."""


class Kind(str, Enum):
    """What an aggregate computes."""

    COUNT = "count"
    SUM = "sum"
    MEAN = "mean"
    VARIANCE = "variance"
    QUANTILE = "quantile"


KINDS = tuple(k.value for k in Kind)


@dataclass(frozen=True)
class Bounds:
    """Contribution bounds: k = ``max_groups_per_unit`` groups per unit, c = ``max_rows_per_group`` rows each."""

    max_groups_per_unit: int = 1
    max_rows_per_group: int = 1

    def __post_init__(self) -> None:
        for name in ("max_groups_per_unit", "max_rows_per_group"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 1 << 20:
                raise GroupsError(f"{name} must be an int in [1, 2^20], got {v!r}")

    @property
    def k(self) -> int:
        """Groups one unit may change."""
        return self.max_groups_per_unit

    @property
    def c(self) -> int:
        """Rows one unit may add to one group."""
        return self.max_rows_per_group


@dataclass(frozen=True)
class Statistic:
    """One integer statistic summed over a group's kept rows; each row adds a value in [row_lo, row_hi]."""

    label: str
    row_lo: int
    row_hi: int

    def sensitivity(self, bounds: Bounds) -> int:
        """The most one unit moves one group's statistic: c * max(|row_lo|, |row_hi|)."""
        return bounds.c * max(abs(self.row_lo), abs(self.row_hi))

    def range(self, max_rows: int) -> tuple[int, int]:
        """Public range of the statistic over groups of at most ``max_rows`` kept rows."""
        return min(0, max_rows * self.row_lo), max(0, max_rows * self.row_hi)


@dataclass(frozen=True)
class Aggregate:
    """One validated aggregate (public parameters only)."""

    name: str
    kind: Kind
    column: str | None = None
    lo: Fraction = Fraction(0)
    hi: Fraction = Fraction(1)
    scale_bits: int = DEFAULT_SCALE_BITS
    q: Fraction | None = None
    #: the quantile's grid size B (the spec's ``bins``): candidate points v_j = lo + (hi - lo) j / B, j = 0..B
    grid: int | None = None
    #: lo, hi (and scale_bits) are chosen privately before the release (docs/groups.md "Bounds chosen
    #: privately"); until then they are placeholders that no statistic is computed with
    auto: bool = False
    #: a quantile's mode among the quantiles of its column (:data:`QUANTILE_MODES`)
    joint: str = "auto"
    #: the readers' post-processing of the released value ("sqrt": a variance shown as its standard deviation)
    post: str | None = None

    @property
    def scale(self) -> int:
        """S = 2^scale_bits."""
        return 1 << self.scale_bits

    @cached_property
    def L(self) -> int:
        """floor(lo S): the clip's lower end in fixed point (outward rounding)."""
        return (self.lo * self.scale).__floor__()

    @cached_property
    def H(self) -> int:
        """ceil(hi S): the clip's upper end in fixed point (outward rounding)."""
        return (self.hi * self.scale).__ceil__()

    @cached_property
    def D(self) -> int:
        """H - L."""
        return self.H - self.L

    @property
    def zero_range(self) -> tuple[int, int]:
        """(L', H') = (min(L, 0), max(H, 0)): the range of v' (a row without a value counts as 0)."""
        return min(self.L, 0), max(self.H, 0)

    @property
    def bins(self) -> int | None:
        """Engine cells of a quantile: B + 1, one centred on each candidate point (None otherwise)."""
        return None if self.grid is None else self.grid + 1

    def statistics(self) -> tuple[Statistic, ...]:
        """The noisy statistics this aggregate needs, in release order (none for a quantile)."""
        L, H, D = self.L, self.H, self.D
        count = Statistic("count", 1, 1)
        if self.kind is Kind.COUNT:
            return (count,)
        if self.kind is Kind.SUM:
            return (Statistic("sum", L, H),)  # plain; the plan may centre it instead (zero_statistic, csum)
        if self.kind is Kind.MEAN:
            return (count, Statistic("csum", -D, D))
        if self.kind is Kind.VARIANCE:
            return (count, Statistic("csum", -D, D), Statistic("csq", -D * D, D * D))
        return ()

    def zero_statistic(self) -> Statistic:
        """zsum: 2v' - C' per kept row, v' = v or 0 for a row without a value (module docstring)."""
        lo, hi = self.zero_range
        return Statistic("zsum", lo - hi, hi - lo)

    def raw_arity(self) -> int:
        """Length of the raw per-group tuple the engine supplies (see :func:`derive`)."""
        return {Kind.COUNT: 1, Kind.SUM: 2, Kind.MEAN: 2, Kind.VARIANCE: 3}.get(self.kind, self.bins or 0)

    def point(self, j: int) -> Fraction:
        """Quantile candidate v_j = lo + (hi - lo) j / B, j in [0, B] (the released values)."""
        assert self.grid is not None
        return self.lo + (self.hi - self.lo) * j / self.grid

    def grid_point(self, j: int) -> Fraction:
        """Engine cell boundary b_j, j in [0, B + 1]: b_0 = lo, b_j = (v_(j-1) + v_j) / 2, b_(B+1) = hi.

        Cell j = [b_j, b_(j+1)) (the last one closed) holds the values nearest to v_j, so a value on a
        candidate point (integer data on an integer grid) falls in that point's own cell.
        """
        assert self.grid is not None
        if j <= 0:
            return self.lo
        if j > self.grid:
            return self.hi
        return self.lo + (self.hi - self.lo) * (2 * j - 1) / (2 * self.grid)

    def cell_of(self, x: Fraction) -> int:
        """Reference cell of a value: clip to [lo, hi], then the cell of :meth:`grid_point` holding it."""
        assert self.grid is not None
        x = min(max(x, self.lo), self.hi)
        i = ((x - self.lo) * self.grid / (self.hi - self.lo) + Fraction(1, 2)).__floor__()
        return min(i, self.grid)

    def fixed_point(self, x: Fraction) -> int:
        """Reference v = clip(round(x S), L, H), round half away from zero (the answers family's rule)."""
        v = x * self.scale
        r = (abs(v) + Fraction(1, 2)).__floor__()
        return max(self.L, min(self.H, r if v >= 0 else -r))

    def describe(self) -> dict[str, Any]:
        """Exact, JSON-ready fields for a manifest."""
        out: dict[str, Any] = {"name": self.name, "kind": self.kind.value}
        if self.kind is not Kind.COUNT:
            out.update(column=self.column, lo=str(self.lo), hi=str(self.hi))
            if self.auto:
                out.update(lo="chosen privately", hi="chosen privately")
        if self.kind in (Kind.SUM, Kind.MEAN, Kind.VARIANCE):
            out["scale_bits"] = "chosen with the bounds" if self.auto else self.scale_bits
        if self.kind is Kind.QUANTILE:
            out.update(q=str(self.q), bins=self.grid)
        if self.post is not None:
            out["post"] = self.post
        return out


def derive(agg: Aggregate, raw: tuple[int, ...]) -> tuple[int, ...]:
    """The statistics of :meth:`Aggregate.statistics` from the engine's raw tuple (exact integers).

    Raw tuples: count (N,); sum (N, T); mean (N, T); variance (N, T, Q) with N the kept rows, T the sum of
    v and Q the sum of v^2. With y = 2v - C: sum y = 2T - N C and sum y^2 = 4Q - 4 C T + N C^2.
    """
    C, D = agg.L + agg.H, agg.D
    if agg.kind is Kind.COUNT:
        return (raw[0],)
    N, T = raw[0], raw[1]
    if agg.kind is Kind.SUM:
        return (T,)
    csum = 2 * T - N * C
    if agg.kind is Kind.MEAN:
        return (N, csum)
    Q = raw[2]
    return (N, csum, 2 * (4 * Q - 4 * C * T + N * C * C) - N * D * D)


def check_raw(agg: Aggregate, raw: Any, max_rows: int) -> tuple[int, ...]:
    """Validate one group's raw tuple against the public ranges; the error names the aggregate, never a value."""
    bad = GroupsError(f"aggregate {agg.name!r}: the engine's statistics for a group are outside their public "
                      "range (an engine bug; no value is shown)")
    if not isinstance(raw, (tuple, list)) or len(raw) != agg.raw_arity():
        raise GroupsError(f"aggregate {agg.name!r}: expected {agg.raw_arity()} integers per group")
    if any(isinstance(v, bool) or not isinstance(v, int) for v in raw):
        raise GroupsTypeError(f"aggregate {agg.name!r}: group statistics must be Python ints")
    if agg.kind is Kind.QUANTILE:
        if any(v < 0 for v in raw) or sum(raw) > max_rows:
            raise bad
        return tuple(raw)
    N = raw[0]
    if not 0 <= N <= max_rows:
        raise bad
    if agg.kind is not Kind.COUNT:
        T = raw[1]
        if not N * agg.L <= T <= N * agg.H:
            raise bad
        if agg.kind is Kind.VARIANCE:
            Q = raw[2]
            if not (0 <= Q <= N * max(agg.L ** 2, agg.H ** 2) and T * T <= N * Q):
                raise bad
    return tuple(raw)


def _rational(spec: dict[str, Any], key: str, where: str) -> Fraction:
    value = spec[key]
    if isinstance(value, float):
        raise GroupsTypeError(f"{where}.{key} was given as a float ({value!r}); floats are not exact. "
                              f"Write it as a string such as \"{value}\" or as an int")
    try:
        return parse_rational(value, f"{where}.{key}")
    except TypeError as err:
        raise GroupsTypeError(str(err)) from None
    except ValueError as err:
        raise GroupsError(str(err)) from None


def parse_aggregate(spec: Any, index: int = 0) -> Aggregate:
    """Validate one aggregate dict (data-free); errors name the aggregate and the field."""
    where = f"aggregates[{index}]"
    if not isinstance(spec, dict):
        raise GroupsError(f"{where} must be a table")
    bad = sorted(set(spec) - _FIELDS)
    if bad:
        raise GroupsError(f"{where} has unknown field(s) {', '.join(map(repr, bad))}; expected {sorted(_FIELDS)}")
    name = spec.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise GroupsError(f"{where}.name must be a name of letters, digits, '_', '.', '-' (got {name!r})")
    where = f"aggregate {name!r}"
    if spec.get("kind") not in KINDS:
        raise GroupsError(f"{where}.kind must be one of {KINDS}, got {spec.get('kind')!r}")
    kind = Kind(spec["kind"])
    post = spec.get("post")
    if post is not None and POSTS.get(post) != kind.value:
        raise GroupsError(f"{where}.post: \"sqrt\" (a standard deviation) applies to kind = \"variance\"")
    spec = {k: v for k, v in spec.items() if k != "post"}
    if kind is Kind.COUNT:
        extra = sorted(set(spec) - {"name", "kind"})
        if extra:
            raise GroupsError(f"{where}: a count takes no {', '.join(map(repr, extra))}")
        return Aggregate(name, kind)
    column = spec.get("column")
    if not isinstance(column, str) or not column:
        raise GroupsError(f"{where}.column: a {kind.value} needs a column name")
    auto = "lo" not in spec and "hi" not in spec
    if auto:  # chosen privately before the release (dpspark.mechanisms.groups.autobounds)
        if "scale_bits" in spec:
            raise GroupsError(f"{where}.scale_bits: the scale is chosen with privately chosen bounds; remove it "
                              "(or give lo and hi too)")
        spec = {**spec, "lo": 0, "hi": 1}
    for key in ("lo", "hi"):
        if key not in spec:
            raise GroupsError(f"{where}.{key}: give both lo and hi (public clip bounds), or neither to have "
                              "them chosen privately")
    lo, hi = _rational(spec, "lo", where), _rational(spec, "hi", where)
    if not lo < hi:
        raise GroupsError(f"{where}.lo must be < {where}.hi")
    if kind is Kind.QUANTILE:
        if "scale_bits" in spec:
            raise GroupsError(f"{where}.scale_bits: a quantile has a grid (bins), not a fixed-point scale")
        if "q" not in spec:
            raise GroupsError(f"{where}.q: a quantile needs q in (0, 1)")
        q = _rational(spec, "q", where)
        if not 0 < q < 1:
            raise GroupsError(f"{where}.q must lie in (0, 1), got {q}")
        if q.denominator > 1 << 20:
            raise GroupsError(f"{where}.q must have a denominator <= 2^20")
        bins = spec.get("bins", DEFAULT_BINS)
        if isinstance(bins, bool) or not isinstance(bins, int) or not 1 <= bins <= MAX_BINS:
            raise GroupsError(f"{where}.bins must be an int in [1, {MAX_BINS}]")
        mode = spec.get("quantiles", "auto")
        if mode not in QUANTILE_MODES:
            raise GroupsError(f"{where}.quantiles must be one of {QUANTILE_MODES}, got {mode!r}")
        return Aggregate(name, kind, column, lo, hi, 0, q, bins, auto, mode)
    for key in ("q", "bins", "quantiles"):
        if key in spec:
            raise GroupsError(f"{where}.{key} applies only to kind = \"quantile\"")
    bits = spec.get("scale_bits", DEFAULT_SCALE_BITS)
    if isinstance(bits, bool) or not isinstance(bits, int) or not 0 <= bits <= MAX_SCALE_BITS:
        raise GroupsError(f"{where}.scale_bits must be an int in [0, {MAX_SCALE_BITS}]")
    agg = Aggregate(name, kind, column, lo, hi, bits, auto=auto, post=post)
    if agg.D * agg.D >= 1 << 126:
        raise GroupsError(f"{where}: (hi - lo) x 2^scale_bits is too large (its square must be < 2^126); "
                          "lower scale_bits")
    return agg


def parse_aggregates(raw: Any) -> tuple[Aggregate, ...]:
    """A non-empty list of aggregate dicts with unique names."""
    if not isinstance(raw, (list, tuple)) or not raw:
        raise GroupsError("aggregates must be a non-empty list of tables")
    aggs = tuple(a if isinstance(a, Aggregate) else parse_aggregate(a, i) for i, a in enumerate(raw))
    names = [a.name for a in aggs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise GroupsError(f"aggregate names must be unique; repeated: {', '.join(map(repr, dup))}")
    for a in aggs:  # a standard deviation's table also shows its variance, <name>_variance: no other aggregate's
        taken = sorted(set(names) & {f"{a.name}{s}" for s in ("_variance", "_lo", "_hi")}) if a.post else []
        if taken:
            raise GroupsError(f"aggregate {a.name!r} is a standard deviation (post = \"sqrt\"): its table shows "
                              f"{a.name}_variance, {a.name}_lo and {a.name}_hi; rename {taken[0]!r}")
    return aggs
