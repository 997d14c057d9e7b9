"""Spark side of a release: read the input, encode keys, bound contributions, count per index.

DataFrame API only (no RDDs, no SparkContext), so the same code runs on a
classic session and on Spark Connect. No per-row Python: keys are encoded with
Spark SQL functions (:func:`dpspark.engine.spark.encode.with_universe_index`); the only
Python step is a vectorized numpy keyed mix in ``mapInArrow`` for contribution
bounding.

Contribution bounding (with a unit column): every unit keeps exactly one of
its distinct in-universe keys, the one minimising a keyed 64-bit hash of
(unit, key). The key is drawn fresh per release from the CSPRNG, lives only in
the Python closure shipped to the workers, and is never written, logged, or
embedded as a SQL literal (so it is absent from query plans and the Spark UI).
Choosing by a hash of the unit's own data keeps the map a stable
transformation: adding or removing one unit changes one count by one.
Retried tasks recompute the same hash, so a retry never changes the counts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

import numpy as np
import pyarrow as pa

from dpspark.engine.stages import CountsStage
from dpspark.engine.errors import CuratorError, InputError
from dpspark.engine.keyed import key_words, mix64
from dpspark.rng import RandomSource
from dpspark.engine.spark.encode import halves_to_words, index_half_names, with_universe_halves, with_universe_index

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from dpspark.engine.spec import InputSpec
    from dpspark.engine.spark.backend import SparkBackend

INDEX = "__dp_index"
MEMBER = "__dp_in_universe"
HASH = "__dp_pick"
UNIT_HASH = "__dp_unit_hash"


def read_input(spark: "SparkSession", spec: "InputSpec") -> "DataFrame":
    """A DataFrame over the configured file(s) or catalog table (schema only; nothing is counted yet)."""
    failed = False
    try:
        if spec.table is not None:
            return spark.read.table(spec.table)
        reader = spark.read.format(spec.format)
        if spec.format == "csv":
            reader = reader.option("header", "true").option("inferSchema", "false")
        for key, value in spec.options.items():
            reader = reader.option(key, value)
        return reader.load(spec.path)
    except Exception as err:
        from pyspark.errors import AnalysisException

        if isinstance(err, AnalysisException):  # analysis only (a path, a table, a format): keep its first line
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise InputError(f"cannot read input {spec.path or spec.table!r}: {first[:300]}") from None
        failed = True  # a job that read rows (schema inference): its words could quote one
    if failed:
        raise InputError(f"cannot read input {spec.path or spec.table!r}: reading its schema failed (details "
                         "withheld: inferring a schema reads rows, and the error could quote one)")
    raise AssertionError("unreachable")


def check_columns(df: "DataFrame", wanted: list[str]) -> None:
    """Fail early, naming every configured column the input lacks."""
    present = set(df.columns)
    missing = [c for c in wanted if c not in present]
    if missing:
        raise InputError(
            f"input has no column(s) {', '.join(map(repr, missing))}; it has {', '.join(map(repr, sorted(present)))}"
        )


def keyed_pick_hash(secret: bytes) -> Any:
    """A mapInArrow function adding column HASH = keyed mix of the SQL xxhash64 of (unit, index)."""
    k1, k2 = key_words(secret)

    def add_hash(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            raw = batch.column(UNIT_HASH).to_numpy(zero_copy_only=False).astype(np.int64).view(np.uint64)
            mixed = mix64(mix64(raw, k1), k2).view(np.int64)
            yield batch.append_column(HASH, pa.array(mixed, pa.int64()))

    return add_hash


def sparse_counts(df: "DataFrame", stage: CountsStage, rng: RandomSource) -> "DataFrame":
    """DataFrame of nonzero counts per universe index after contribution bounding, for :func:`collect_counts`.

    Rows with a NULL key (or NULL unit) are dropped; rows with a key outside the
    universe are dropped, or fail the job if ``out_of_universe = "error"``.
    Keys are encoded once per *distinct* key (then joined back), so the SQL
    index arithmetic costs O(#distinct keys), not O(#rows). Without a unit
    column (and a universe that hashes no key) there is a single aggregation
    (one shuffle): the frame is (the index word's int64 halves..., count long), one
    row per distinct key, and collect_counts sums the rare keys that share an index.
    Otherwise it is (INDEX binary, count long), one row per index. With a unit
    column, see :class:`~dpspark.engine.stages.CountsStage` for the bounds.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StructField, StructType

    if not isinstance(stage, CountsStage):
        raise TypeError("sparse_counts takes a CountsStage (explicit parameters), e.g. CountsStage.from_spec(spec)")
    check_columns(df, stage.columns)
    cols = list(stage.key_columns)
    unit = stage.unit_column
    rows = df.select(*cols, *([unit] if unit else []))
    not_null = F.lit(True)
    for c in cols + ([unit] if unit else []):
        not_null = not_null & F.col(c).isNotNull()
    rows = rows.filter(not_null)
    secret = rng.bits(128).to_bytes(16, "big") if unit is not None else b""
    if unit is not None:
        rows = _bound_units(rows, unit, stage, secret)
    bounded = unit is not None and (stage.max_keys_per_unit > 1 or stage.max_rows_per_key > 1)
    if unit is None:
        grouped = rows.groupBy(*cols).count()
    elif bounded:
        grouped = rows.groupBy(*cols, unit).count()
    else:
        grouped = rows.dropDuplicates(cols + [unit])
    keys = grouped.select(*cols).distinct() if unit else grouped  # no unit: (keys, count), one row per key
    if unit is None and not _hashed(stage):
        # the index leaves Spark as 64-bit halves, joined into words on the driver (collect_counts): the word's
        # hex/unhex string work per distinct key cost as much task CPU as scanning and counting every row
        encoded = with_universe_halves(keys, stage.universe, cols, index_col=INDEX, in_universe_col=MEMBER)
    else:
        encoded = with_universe_index(keys, stage.universe, cols, index_col=INDEX, in_universe_col=MEMBER)
    if stage.out_of_universe == "error":
        bad = encoded.filter(F.col(MEMBER) == F.lit(False)).limit(1).count()
        if bad:
            raise CuratorError(
                "the input holds keys outside the declared universe and privacy.out_of_universe = 'error' "
                "(curator-side check; the offending values are not shown)"
            )
    if unit is None and not _hashed(stage):
        # one row per distinct key: an index repeats only where two keys share it (a text integer's "5" and "05",
        # a malformed string), about as many rows as indexes; collect_counts sums repeats on the driver (a second
        # Spark shuffle cost more than the whole driver-side merge)
        return encoded.filter(F.col(MEMBER)).select(*index_half_names(INDEX, stage.universe), "count")
    if unit is None:  # hashed: any number of distinct keys may share a bin, so Spark sums them
        return encoded.filter(F.col(MEMBER)).groupBy(INDEX).agg(F.sum("count").alias("count"))
    index_of = encoded.filter(F.col(MEMBER)).select(*cols, INDEX)
    if bounded:
        per_pair = (grouped.join(index_of, on=cols, how="inner").groupBy(unit, INDEX)
                    .agg(F.least(F.sum("count"), F.lit(stage.max_rows_per_key)).alias("rows")))
        pairs = per_pair.withColumn(UNIT_HASH, F.xxhash64(F.col(unit), F.col(INDEX)))
    else:
        pairs = grouped.join(index_of, on=cols, how="inner").select(unit, INDEX).dropDuplicates([unit, INDEX])
        pairs = pairs.withColumn(UNIT_HASH, F.xxhash64(F.col(unit), F.col(INDEX)))
    schema = StructType(list(pairs.schema.fields) + [StructField(HASH, LongType(), False)])
    hashed = pairs.mapInArrow(keyed_pick_hash(secret), schema)
    del secret
    if not bounded:
        chosen = hashed.groupBy(unit).agg(F.min_by(F.col(INDEX), F.struct(F.col(HASH), F.col(INDEX))).alias(INDEX))
        return chosen.groupBy(INDEX).count()
    from pyspark.sql import Window

    rank = F.row_number().over(Window.partitionBy(unit).orderBy(F.col(HASH), F.col(INDEX)))
    kept = hashed.withColumn("__dp_rank", rank).filter(F.col("__dp_rank") <= F.lit(stage.max_keys_per_unit))
    return kept.groupBy(INDEX).agg(F.sum("rows").cast("long").alias("count"))


def _hashed(stage: CountsStage) -> bool:
    """Whether a component of the universe hashes its keys (bins shared by any number of distinct keys)."""
    return any(part.kind == "hashed" for part in stage.universe.parts)


#: the largest ``DataFrame.limit`` Spark takes (a Java int)
JAVA_INT_MAX = (1 << 31) - 1


def _bound_units(rows: "DataFrame", unit: str, stage: CountsStage, secret: bytes) -> "DataFrame":
    """Apply the excess-units rule: keep the n units with the smallest keyed hash, or refuse if there are more.

    The hash key is derived from the release's contribution-bounding secret (never written). Adding a
    unit changes the kept set by at most one replacement, so the rule is 2-stable.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StructField, StructType

    units = rows.select(unit).distinct()
    n = stage.max_units
    if stage.on_excess_units == "refuse":
        # Spark's limit takes a Java int: past it (a public n), count every unit (an n >= 2^31 - 1 once failed here
        # with a Py4J error after the spend)
        seen = units.count() if n >= JAVA_INT_MAX else units.limit(n + 1).count()
        if seen > n:
            raise CuratorError(
                f"the input holds more units than privacy.max_units = {stage.max_units} and on_excess_units = "
                "'refuse' (curator-side check, before any noise was drawn); raise max_units or use 'truncate'")
        return rows
    truncation_key = bytes(b ^ 0x5C for b in secret)  # a second key from the same secret: no extra rng draw
    with_hash = units.withColumn(UNIT_HASH, F.xxhash64(F.col(unit)))
    schema = StructType(list(with_hash.schema.fields) + [StructField(HASH, LongType(), False)])
    ranked = with_hash.mapInArrow(keyed_pick_hash(truncation_key), schema)
    order = [F.col(HASH), F.col(UNIT_HASH)]
    if n < JAVA_INT_MAX:
        kept = ranked.orderBy(*order).limit(n).select(unit)
    else:  # a public n past a Java int: rank every unit (one ordered window) and keep the first n
        from pyspark.sql import Window

        rank = F.row_number().over(Window.partitionBy(F.col(HASH).bitwiseAND(F.lit(0))).orderBy(*order))
        kept = ranked.withColumn("__dp_rank", rank).filter(F.col("__dp_rank") <= F.lit(n)).select(unit)
    return rows.join(kept, on=unit, how="left_semi")


def collect_counts(counts: "DataFrame") -> pa.Table:
    """Bring the sparse counts to the driver as an Arrow table (record batches, not Python rows), one row per index.

    ``counts`` is (index word, count) or (the word's int64 halves, most significant first..., count).

    Rows of one index are summed here (Arrow's hash aggregation, whatever the data: no branch on repeats), so
    :func:`sparse_counts` may hand over one row per distinct key. Exact: every count and every sum is at most the
    number of input rows, which Spark itself counts in a long, so no int64 sum wraps.
    """
    table = counts.toArrow()
    if table.num_columns > 2:  # (index halves..., count), most significant half first: join them into words
        table = pa.table({INDEX: halves_to_words(table.columns[:-1]), "count": table.column(table.num_columns - 1)})
    table = table.rename_columns([INDEX, "count"])
    merged = table.group_by(INDEX, use_threads=False).aggregate([("count", "sum")])
    return pa.table({INDEX: merged.column(INDEX), "count": merged.column("count_sum")}).combine_chunks()


def counts_to_python(table: pa.Table) -> tuple[list[int], list[int]]:
    """(0-based indexes, counts) as Python ints for the exact driver-side mechanisms."""
    words = table.column(INDEX).to_pylist()
    counts = table.column("count").to_numpy(zero_copy_only=False).tolist()
    return [int.from_bytes(w, "big") - 1 for w in words], counts


# ---------------------------------------------------------------------------------------------- kernel
def counts_on(backend: "SparkBackend", frame: "DataFrame", stage: CountsStage) -> tuple[list[int], list[int]]:
    """The count stage over ``frame`` (the input, or a frame a family kernel derived from it): one pass."""
    from dpspark.engine.driver_counts import finish_counts

    backend.progress("reading input and counting keys on Spark")
    table = collect_counts(sparse_counts(frame, stage, backend.rng))  # the module's name: tests may wrap it
    backend.pass_done()
    backend.progress("counts collected on the driver")
    indices, counts = counts_to_python(table)
    del table
    return finish_counts(indices, counts, stage, backend.rng)


def counts_kernel(backend: "SparkBackend", stage: CountsStage) -> tuple[list[int], list[int]]:
    """(0-based indexes ascending, exact counts) of the non-zero bins of the input."""
    return counts_on(backend, backend.frame, stage)
