"""Issue 31 ("Trust, turn 4") sections 2 and 4 on the groups core, engine-free.

§2: the range checks on the engine's statistics are exact at any size. On main, ``check_columns`` formed
N H and N max(L^2, H^2) in int64: past 2^63 the product wrapped, a correct statistic looked out of range and
the release failed after the spend at a data-dependent group size (one more row flipped the outcome).
§4: the per-row arithmetic emits no warning whatever the values, and ``statistics`` runs one Python code
path whatever the data (no "no NULL" or "every row kept" shortcut).
"""

from __future__ import annotations

import sys
import warnings
from fractions import Fraction
from typing import Any, Callable

import numpy as np
import pytest

from dpspark.engine.numeric import NullRule
from dpspark.mechanisms.groups import core
from dpspark.mechanisms.groups.aggregates import GroupsError, parse_aggregates
from dpspark.mechanisms.groups.algorithm import GroupStats, release_groups
from dpspark.mechanisms.groups.basis import check_columns
from dpspark.mechanisms.groups.columns import gather
from dpspark.mechanisms.groups.stage import GroupsStage
from dpspark.rng import SeededRandom
from dpspark.universe import CategoricalUniverse

BUDGET = {"epsilon": "1", "delta": "1/1000000"}
#: 2 H >= 2^63 > H: two rows at hi make a sum past 2^63 (H^2 > 2^123 for the variance's N top)
EDGE_HI = 2**62 + 1


def _aggs(kind: str, hi: int | str = EDGE_HI, lo: int | str = 0, bits: int = 0) -> Any:
    return parse_aggregates([{"name": "n", "kind": "count"},
                             {"name": "a", "kind": kind, "column": "x", "lo": str(lo), "hi": str(hi),
                              "scale_bits": bits}])


def _stats(kind: str, N: int, v: int, extra: int = 0) -> list[GroupStats]:
    raw = (N, N * v + extra) if kind != "variance" else (N, N * v, N * v * v)
    return [GroupStats("k", {"n": (N,), "a": raw})]


def _release(aggs: Any, stats: list[GroupStats], max_units: int) -> Any:
    return release_groups(stats, aggs, BUDGET, SeededRandom(b"trust-numeric"), max_units=max_units, keys=["k"])


@pytest.mark.parametrize("kind", ["sum", "mean", "variance"])
@pytest.mark.parametrize("N", [1, 2, 3, 4])
def test_statistics_at_the_int64_edge_are_in_range(kind: str, N: int) -> None:
    """Groups of 1..4 rows at hi (N H crosses 2^63 at N = 2): every size releases (main: N >= 2 failed)."""
    aggs = _aggs(kind)
    H = aggs[1].H
    rel = _release(aggs, _stats(kind, N, H), max_units=4)
    assert rel.keys == ["k"] and len(rel.values) == 1


@pytest.mark.parametrize("kind", ["sum", "mean", "variance"])
def test_out_of_range_statistics_are_still_refused_at_the_edge(kind: str) -> None:
    """The exact checks keep their teeth: a sum one above N H, or N above max_rows, is an engine bug."""
    aggs = _aggs(kind)
    H = aggs[1].H
    if kind == "variance":
        bad = [GroupStats("k", {"n": (2,), "a": (2, 2 * H, 2 * H * H + 1)})]  # Q > N top
    else:
        bad = _stats(kind, 2, H, extra=1)  # T > N H
    with pytest.raises(GroupsError, match="outside their public range"):
        _release(aggs, bad, max_units=4)
    with pytest.raises(GroupsError, match="outside their public range"):
        _release(aggs, _stats(kind, 5, H), max_units=4)  # N > max_rows


def test_the_reported_sum_in_cents_releases_past_36030_rows() -> None:
    """The review's case: hi = 10^12 at scale_bits 8 failed for any group of >= 36,030 rows."""
    aggs = _aggs("sum", hi=10**12, bits=8)
    H = aggs[1].H
    for N in (36_029, 36_030, 10**6):
        assert N * H >= 2**63 or N == 36_029
        _release(aggs, _stats("sum", N, H), max_units=10**6)


@pytest.mark.parametrize("N", [7, 8])
def test_a_variance_whose_n_top_wraps_at_eight_rows_releases_at_both_sizes(N: int) -> None:
    """7 top < 2^63 <= 8 top: on main the release flipped from success (7 rows) to failure (8 rows)."""
    hi = 1_100_000_000
    assert 7 * hi * hi < 2**63 <= 8 * hi * hi
    aggs = _aggs("variance", hi=hi)
    _release(aggs, _stats("variance", N, hi), max_units=10**6)


def test_check_columns_on_int64_and_object_columns_alike() -> None:
    """The vectorised check and the per-group reference agree whatever the columns' dtype."""
    aggs = _aggs("variance", hi=2**40, lo=-(2**40))
    H = aggs[1].H
    good = [GroupStats(i, {"n": (n,), "a": (n, n * H, n * H * H)}) for i, n in enumerate([1, 3, 2**20])]
    for max_rows in (2**20, 2**30):  # int64 and object columns (component bounds decide)
        table = gather(good, aggs, max_rows)
        check_columns(aggs, table.raw, max_rows, table.raw["n"][0])


# ------------------------------------------------------------------------------------------------ §4
def _stage(nulls: tuple = ()) -> GroupsStage:
    aggs = parse_aggregates([
        {"name": "n", "kind": "count"},
        {"name": "s", "kind": "sum", "column": "x", "lo": "-3", "hi": "5", "scale_bits": 40},
        {"name": "v", "kind": "variance", "column": "x", "lo": "-3", "hi": "5", "scale_bits": 40},
        {"name": "w", "kind": "sum", "column": "y", "lo": "-3", "hi": "5", "scale_bits": 58},  # slow path (past 2^52)
        {"name": "q", "kind": "quantile", "column": "x", "lo": "-3", "hi": "5", "q": "1/2", "bins": 8}])
    return GroupsStage(key_columns=("k",), universe=CategoricalUniverse(("a", "b"), "k"), unit_column=None,
                       max_units=100, max_groups_per_unit=1, max_rows_per_group=1, aggregates=aggs,
                       nulls=nulls)


def _part(x: list[float], y: list[float]) -> core.Part:
    words = np.array([[0, 0, 0, 1], [0, 0, 0, 2]], dtype=np.uint8)
    gid = np.array([i % 2 for i in range(len(x))], dtype=np.int64)
    return core.Part(gid=gid, words=words, x={"x": np.array(x), "y": np.array(y)})


BASE = [1.0, -2.5, 4.0, 0.25, 3.0, -1.0]


def _opcodes(fn: Callable[[], Any]) -> list[tuple[str, int]]:
    """Every bytecode (function, offset) ``fn`` executes inside the groups core, in order."""
    seen: list[tuple[str, int]] = []

    def local(frame: Any, event: str, arg: Any) -> Any:
        if event == "opcode":
            seen.append((frame.f_code.co_name, frame.f_lasti))
        return local

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename != core.__file__:
            return None
        frame.f_trace_opcodes = True
        return local

    old = sys.gettrace()
    sys.settrace(tracer)
    try:
        fn()
    finally:
        sys.settrace(old)
    return seen


@pytest.mark.parametrize("nulls", [(), (("x", NullRule(Fraction(1, 2))), ("y", NullRule(Fraction(-1))))])
@pytest.mark.parametrize("neighbour", ["null", "extreme", "unkept"])
def test_statistics_take_one_code_path_whatever_the_data(neighbour: str, nulls: tuple) -> None:
    """D and D' differ in one row (a NULL, a value past DBL_MAX / 2^b, a row the bounding drops): the core
    executes the same bytecodes in the same order (main took an unmasked path unless a NULL or a dropped row)."""
    stage = _stage(nulls)
    x, y, keep = list(BASE), list(BASE), np.ones(len(BASE), dtype=bool)
    x2, y2, keep2 = list(x), list(y), keep.copy()
    if neighbour == "null":
        x2[2] = y2[2] = float("nan")
    elif neighbour == "extreme":
        x2[2] = y2[2] = 1e308
    else:
        keep2[2] = False
    units = np.zeros(2, dtype=np.int64)
    runs = {}
    for name, (xs, ys, kp) in {"D": (x, y, keep), "D'": (x2, y2, keep2)}.items():
        part = _part(xs, ys)
        runs[name] = _opcodes(lambda: core.statistics(part, kp, units, stage))
    assert len(runs["D"]) > 100 and runs["D"] == runs["D'"]


def test_statistics_weighting_equals_filtering() -> None:
    """Weighting a dropped or NULL row 0 gives the statistics of the rows kept (reference: a smaller part)."""
    stage = _stage()
    x = [1.0, -2.5, float("nan"), 0.25, 3.0, -1.0, 1e308, -1e308]
    keep = np.array([1, 1, 1, 0, 1, 1, 1, 1], dtype=bool)
    part = _part(x, x)
    got = core.emit(core.statistics(part, keep, np.zeros(2, dtype=np.int64), stage))
    sel = np.flatnonzero(keep)
    small = core.Part(gid=part.gid[sel], words=part.words, x={c: a[sel] for c, a in part.x.items()})
    want = core.emit(core.statistics(small, np.ones(len(sel), dtype=bool), np.zeros(2, dtype=np.int64), stage))
    dec = [core.decode(g, [0, 1], st, sh, v, stage) for g, st, sh, v in (got, want)]
    assert list(dec[0]) == list(dec[1]) and len(dec[0]) == 2


@pytest.mark.parametrize("bits", [0, 8, 40, 49, 58])
def test_fixed_point_emits_no_warning_and_clips_exactly(bits: int) -> None:
    """x 2^b past DBL_MAX raised "overflow encountered in multiply" on main (the analyst picks b)."""
    stage = _stage()
    agg = parse_aggregates([{"name": "s", "kind": "sum", "column": "x", "lo": "-3", "hi": "5",
                             "scale_bits": bits}])[0]
    x = np.array([1e308, -1e308, np.finfo(np.float64).max, float("inf"), float("-inf"), 2.5, -0.0, 5e-324,
                  -3.0000001, 4.999999])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with np.errstate(all="warn"):
            v = core._fixed(agg, x)
    assert caught == []
    assert list(v) == [agg.fixed_point(Fraction(d)) if np.isfinite(d) else (agg.H if d > 0 else agg.L)
                       for d in x.tolist()]
    del stage


# ------------------------------------------------------------------------------------------------ answers
@pytest.mark.parametrize("bound", [1, 2**26 - 1, 2**26, 2**51, 2**52, 2**62, 2**63 - 1])
def test_answers_limb_chunks_cannot_wrap_at_any_public_bound(bound: int) -> None:
    """exact_sum's chunk of limbs: step x max |high limb| and step x 2^26 stay below 2^63 for every bound a
    query allows (|lo|, |hi| < 2^63): on main a fixed 2^36-value chunk of unit totals near 2^63 could wrap."""
    from dpspark.mechanisms.answers.arrow_totals import LIMB, exact_sum, limb_step

    step = limb_step(bound)
    assert step >= 1 and step * ((bound >> LIMB) + 1) < 2**63 and step * 2**LIMB < 2**63
    v = np.array([bound, -bound, bound, bound - 1, -(bound // 3)], dtype=np.int64)
    assert exact_sum(v, bound) == sum(int(t) for t in v.tolist())


def test_bounding_takes_one_code_path_when_a_unit_gains_a_row() -> None:
    """D: every unit has one row; D': one unit has a second row in another group (within k = 2 and c = 1,
    so nothing is dropped). main returned early for D (a timing signal: one-row units or not)."""
    import dataclasses

    stage = dataclasses.replace(_stage(), unit_column="u", max_groups_per_unit=2)
    x = np.array(BASE)
    words = np.array([[0, 0, 0, 1], [0, 0, 0, 2]], dtype=np.uint8)
    gid = np.array([i % 2 for i in range(len(BASE))], dtype=np.int64)
    runs = {}
    for name, uid in {"D": [0, 1, 2, 3, 4, 5], "D'": [0, 1, 2, 3, 4, 4]}.items():
        u = np.array(uid, dtype=np.int64)
        part = core.Part(gid=gid, words=words, x={"x": x, "y": x}, uid=u, units=int(u.max()) + 1,
                         unit_hash=np.arange(1, int(u.max()) + 2, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15))
        keep, units = core.bound(part, stage, bytes(16))
        assert keep.all()
        runs[name] = _opcodes(lambda: core.bound(part, stage, bytes(16)))
    assert len(runs["D"]) > 20 and runs["D"] == runs["D'"]


def test_arrow_floats_reads_like_to_numpy_with_and_without_nulls() -> None:
    """engine.numeric.arrow_floats (one read path) gives what to_numpy gave: NaN for NULL, NaN and bad text,
    sliced arrays at their offset, chunked columns, a NULL-typed column."""
    import pyarrow as pa

    from dpspark.engine.numeric import arrow_floats, arrow_numeric

    cases = [pa.array([1.5, None, float("nan"), float("inf"), -0.0]), pa.array([1, 2, None], pa.int64()),
             pa.array(list(range(10)), pa.int32()).slice(3, 4), pa.array([1.0, None, 3.0]).slice(1, 2),
             pa.array(["1e3", "x", None, "-2"]), pa.array([None, None], pa.null()), pa.array([True, None, False]),
             pa.chunked_array([pa.array([1.0, None]), pa.array([2.0])]), pa.array([], pa.float64())]
    for a in cases:
        want = np.asarray(arrow_numeric(a).to_numpy(zero_copy_only=False), dtype=np.float64)
        got = arrow_floats(a)
        assert got.dtype == np.float64 and got.shape == want.shape
        assert np.array_equal(got, want, equal_nan=True) and np.array_equal(np.signbit(got), np.signbit(want))
