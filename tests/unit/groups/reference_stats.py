"""A plain-Python reference of the GroupsStage rules: loops, sorts and Fractions; only the hashes are shared.

Each rule of :mod:`dpspark.mechanisms.groups.stage` is written out again here, one row at a time, so a
kernel that skips or reorders a rule disagrees with it.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pyarrow as pa

from dpspark.engine.arrow.counts import spark_hash
from dpspark.engine.keyed import keyed_mix
from dpspark.engine.xxhash64 import SPARK_SEED, hash_fixed, hash_long
from dpspark.mechanisms.groups.aggregates import Kind
from dpspark.mechanisms.groups.algorithm import GroupStats
from dpspark.universe import OutOfUniverseError, index_to_bytes


def _signed(u: int) -> int:
    return u - (1 << 64) if u >= 1 << 63 else u


def _bits(x: float | None) -> int:
    if x is None or math.isnan(x):
        return 0x7FF8_0000_0000_0001
    return int(np.array([x + 0.0]).view(np.int64)[0])


def _row_hash(seed: int, word: bytes, bits: list[int], key: bytes) -> int:
    h = hash_fixed(np.frombuffer(word, np.uint8).reshape(1, -1), seed=np.array([seed], np.uint64))
    for b in bits:
        h = hash_long(np.array([b], np.int64), seed=h)
    return _signed(int(keyed_mix(h, key)[0]))


def reference(rows: list[dict[str, Any]], stage: Any, secret: bytes, unit_type: pa.DataType = pa.int64()) -> list[GroupStats]:
    cols, unit = list(stage.key_columns), stage.unit_column
    vcols = list(stage.value_columns)
    rows = [r for r in rows if all(r[c] is not None for c in cols) and (unit is None or r[unit] is not None)]
    uni = stage.universe
    width = uni.index_width

    def index(r: dict[str, Any]) -> int | None:
        key = r[cols[0]] if len(cols) == 1 else tuple(r[c] for c in cols)
        try:
            return uni.encode(key)
        except OutOfUniverseError:
            return None

    def bits(r: dict[str, Any]) -> list[int]:
        return [_bits(r[c]) for c in vcols]

    row_key = bytes(b ^ 0x36 for b in secret)
    if unit is not None:
        units = sorted({r[unit] for r in rows}, key=repr)
        uh = {u: int(spark_hash(pa.array([u], unit_type))[0]) for u in units}
        if len(units) > stage.max_units:
            tk = bytes(b ^ 0x5C for b in secret)
            rank = {u: (_signed(int(keyed_mix(np.array([uh[u]], np.uint64), tk)[0])), _signed(uh[u])) for u in units}
            kept = set(sorted(units, key=rank.__getitem__)[: stage.max_units])
            rows = [r for r in rows if r[unit] in kept]
    idx = [index(r) for r in rows]
    if stage.out_of_universe == "error" and any(i is None for i in idx):
        raise ValueError("out of universe")
    rows = [(r, i) for r, i in zip(rows, idx) if i is not None]
    kept_rows: list[tuple[dict[str, Any], int]] = []
    units_of: dict[int, int] = {}
    if unit is None:
        if len(rows) > stage.max_units:
            def order(ri: tuple[dict[str, Any], int]) -> tuple:
                r, i = ri
                w = index_to_bytes(i, width)
                return (_row_hash(SPARK_SEED, w, bits(r), row_key), w, *bits(r))
            rows = sorted(rows, key=order)[: stage.max_units]
        kept_rows = rows
        for _r, i in rows:
            units_of[i] = units_of.get(i, 0) + 1
    else:
        by_unit: dict[Any, dict[int, list[dict[str, Any]]]] = {}
        for r, i in rows:
            by_unit.setdefault(r[unit], {}).setdefault(i, []).append(r)
        for u, pairs in by_unit.items():
            def pick(i: int) -> tuple:
                w = index_to_bytes(i, width)
                h = hash_fixed(np.frombuffer(w, np.uint8).reshape(1, -1), seed=np.array([uh[u]], np.uint64))
                return (_signed(int(keyed_mix(h, secret)[0])), w)
            chosen = sorted(pairs, key=pick)[: stage.max_groups_per_unit] if len(pairs) > stage.max_groups_per_unit else list(pairs)
            for i in chosen:
                rs = pairs[i]
                if len(rs) > stage.max_rows_per_group:
                    w = index_to_bytes(i, width)
                    rs = sorted(rs, key=lambda r: (_row_hash(uh[u], w, bits(r), row_key), *bits(r)))[: stage.max_rows_per_group]
                kept_rows += [(r, i) for r in rs]
                units_of[i] = units_of.get(i, 0) + 1
    out: dict[int, dict[str, list[int]]] = {}
    for r, i in kept_rows:
        d = out.setdefault(i, {a.name: [0] * a.raw_arity() for a in stage.aggregates})
        for a in stage.aggregates:
            if a.kind is Kind.COUNT:
                d[a.name][0] += 1
                continue
            x = r[a.column]
            if x is None or math.isnan(x):
                rule = stage.null_rule(a.column)
                if rule.value is None:
                    continue
                xf = rule.value
            elif math.isinf(x):
                xf = Fraction(10) ** 400 * (1 if x > 0 else -1)
            else:
                xf = Fraction(x)
            if a.kind is Kind.QUANTILE:
                d[a.name][a.cell_of(xf)] += 1
                continue
            v = a.fixed_point(xf)
            d[a.name][0] += 1
            d[a.name][1] += v
            if a.kind is Kind.VARIANCE:
                d[a.name][2] += v * v
    return [GroupStats(i - 1, {k: tuple(v) for k, v in out[i].items()}, units_of[i] if stage.count_units else None)
            for i in sorted(out)]
