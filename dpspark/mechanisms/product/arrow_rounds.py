"""Arrow side of the product rounds (:mod:`dpspark.mechanisms.product.rounds`): the twin of
:mod:`dpspark.mechanisms.product.spark_rounds`, with the same exact sums for the same seed.

* A unit's record is the OR over its rows of each binary column, read by
  :func:`dpspark.mechanisms.samplers.binary_input.binary_bits` (the rule Spark's SQL bits follow: non-zero / true
  is 1, +-inf included; NULL, NaN and unparseable text count as the public ``nulls`` value), packed into
  ceil(d/64) words (bit j of word j // 64). The array form packs its elements with
  :func:`dpspark.mechanisms.samplers.spark_arrays.array_words`, the numpy packer Spark's ``mapInArrow`` runs.
  Rows with a NULL unit id are dropped, as on Spark.
* Unit u sits in batch H_key(u) mod B (:func:`dpspark.engine.arrow.units.unit_batches`: Spark's xxhash64 of
  the id, the release's batch key, the keyed splitmix).
* A round keeps its batch slice, applies the public truncation (x[S] xor flip, each group zeroed when its
  popcount exceeds the group's C) and sums in int64 (each term is 0 or 1, at most 2^63 units), as Python
  ints; with the query's ``count`` it appends the number of units read.

The input is read once, into one packed record per unit (d/8 bytes a unit); each round reads those records.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from dpspark.engine.arrow.inputs import require_columns, scan_table
from dpspark.engine.arrow.units import encode_units, unit_batches, valid_units
from dpspark.engine.errors import InputError
from dpspark.mechanisms.product.rounds import RoundQuery

if TYPE_CHECKING:
    from dpspark.engine.arrow.backend import ArrowBackend
    from dpspark.mechanisms.product.stage import ProductRoundsStage


def row_words(table: pa.Table, columns: tuple[str, ...], array: str | None, nulls: int) -> np.ndarray:
    """(rows, ceil(d/64)) uint64 words of each row's d bits (bit j of word j // 64), as Spark packs them."""
    d = len(columns)
    if array is not None:
        from dpspark.mechanisms.samplers.binary_input import array_type_problem
        from dpspark.mechanisms.samplers.spark_arrays import array_words

        problem = array_type_problem(table.column(array).type, array)
        if problem:
            raise InputError(problem)
        return array_words(table.column(array), d, nulls).view(np.uint64)
    from dpspark.mechanisms.samplers.binary_input import binary_bits

    words = np.zeros((table.num_rows, (d + 63) // 64), dtype=np.uint64)
    for j, c in enumerate(columns):
        words[:, j // 64] |= binary_bits(table.column(c), nulls).astype(np.uint64) << np.uint64(j % 64)
    return words


def unit_records(codes: np.ndarray, words: np.ndarray, units: int) -> np.ndarray:
    """(units, words) uint64: the OR of each unit's rows (``codes``: the unit code of each row)."""
    if units == len(codes):  # every unit has one row: the OR is the row itself
        out = np.empty_like(words)
        out[codes] = words
        return out
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    out = np.zeros((units, words.shape[1]), dtype=np.uint64)
    out[sorted_codes[starts]] = np.bitwise_or.reduceat(words[order], starts, axis=0)
    return out


def truncated_sums(records: np.ndarray, query: RoundQuery) -> list[int]:
    """The exact sums of y = x[S] xor flip over ``records`` (packed words), each group of y zeroed when its
    popcount exceeds the group's ceiling; then the number of records when the query asks for the count."""
    active = list(query.active)
    tail = [records.shape[0]] if query.count else []
    if records.shape[0] == 0:
        return [0] * len(active) + tail
    x = np.column_stack([(records[:, j // 64] >> np.uint64(j % 64)) & np.uint64(1) for j in active]).astype(np.int64)
    y = x ^ np.asarray(query.flip, dtype=np.int64)
    start = 0
    for size, cap in query.parts:
        part = y[:, start:start + size]
        part *= (part.sum(axis=1) <= cap)[:, None]
        start += size
    return [int(v) for v in y.sum(axis=0)] + tail


class ArrowRounds:
    """The aggregate oracle of a release on Arrow: one record per unit read once, then one pass per round."""

    def __init__(self, backend: "ArrowBackend", stage: "ProductRoundsStage") -> None:
        self.backend = backend
        self.batches = stage.batches
        wanted = ([stage.array] if stage.array is not None else list(stage.columns)) + [stage.unit_column]
        require_columns(backend.dataset, wanted)
        backend.progress("reading the input into one record per unit on Arrow")
        table = valid_units(scan_table(backend.dataset, wanted), stage.unit_column)
        codes, units = encode_units(table.column(stage.unit_column))
        words = row_words(table, stage.columns, stage.array, stage.nulls)
        del table
        self.records = unit_records(codes, words, len(units))
        self.batch = unit_batches(backend, units, stage.unit_column, stage.batches)
        self.timings: list[float] = []

    def __call__(self, query: RoundQuery) -> list[int]:
        if query.batches != self.batches:
            raise ValueError("the query and the prepared units disagree on B")
        self.backend.progress(f"pass {self.backend.passes_run + 1}: {query.name} ({len(query.active)} columns) on Arrow")
        start = time.perf_counter()  # report: timing for the progress line only
        sel = (self.batch >= query.batch_lo) & (self.batch < query.batch_hi)
        out = truncated_sums(self.records[sel], query)
        self.timings.append(time.perf_counter() - start)  # report
        self.backend.pass_done()
        return out

    def close(self) -> None:
        """Drop the records."""
        self.records = self.records[:0]


def open_rounds(backend: "ArrowBackend", stage: "ProductRoundsStage") -> ArrowRounds:
    """The Arrow kernel of :class:`~dpspark.mechanisms.product.stage.ProductRoundsStage`: the prepared oracle."""
    return ArrowRounds(backend, stage)
