"""The Arrow engine: the count stage on one machine with pyarrow (Acero streaming group-by), no JVM.

:class:`ArrowContext` answers the same ``counts_stage`` / ``counts`` calls as
:class:`~dpspark.engine.backend.SparkContext` and returns exactly the same (indexes, counts) for the
same input and the same seeded generator, so a mechanism cannot tell the backends apart:

* the generator is read at the same points (one 128-bit contribution-bounding secret when a unit column
  is set, drawn before any data is read; the row-level truncation key in ``finish_counts``);
* the keyed pick is the same function: Spark's ``xxhash64(unit, index)`` (reimplemented in
  :mod:`dpspark.engine.xxhash64`, checked against Spark by the tests), then the same keyed splitmix;
* truncation keeps the n units with the smallest (keyed hash, unit hash) in signed 64-bit order, the
  k-keys pick orders by (keyed hash, index word), a unit adds min(rows, c) to a key's count;
* rows with a NULL key or unit are dropped; out-of-universe keys are dropped or fail the stage after
  truncation, as on Spark.

Memory: the input is scanned in record batches by an Acero plan (scan -> filter -> hash aggregate), so
only the distinct groups ((key) rows, or (key, unit) pairs with a unit column) are held, never the rows.
Each call re-scans the input (a multi-pass mechanism needs no cache).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dpspark.engine.backend import CuratorError, finish_counts
from dpspark.engine.stages import CountsStage
from dpspark.engine.xxhash64 import SPARK_SEED, hash_bytes, hash_fixed, hash_int, hash_long
from dpspark.engine.spark.counts import InputError, _mix64, distinct_keys_keep_indexes

if TYPE_CHECKING:
    import pyarrow.dataset as ds

    from dpspark.engine.spec import ReleaseSpec
    from dpspark.rng import RandomSource
    from dpspark.universe import Universe

ROWS = "__dp_rows"
UNIT_ID = "__dp_unit_id"
INDEX = "__dp_index"

#: Spark CSV reader options the Arrow reader reproduces; anything else needs the Spark engine.
CSV_OPTIONS = {"header", "inferschema", "sep", "delimiter", "quote", "nullvalue", "encoding", "charset"}


class ArrowContext:
    """Stages on a local file, directory (Parquet, CSV, ORC, JSON lines) or an in-memory pyarrow Table."""

    def __init__(self, source: "str | Path | pa.Table | ds.Dataset", rng: "RandomSource", progress=None,  # type: ignore[no-untyped-def]
                 *, format: str | None = None, options: dict[str, str] | None = None) -> None:
        self.source = source
        self.format = format
        self.dataset, self.csv_infer = open_dataset(source, format, options)
        self.rng = rng
        self.progress = progress or (lambda _m: None)
        self.passes_run = 0
        self.last_pass_end: float | None = None  # time.monotonic() when the latest data pass ended

    def counts_stage(self, spec: "ReleaseSpec") -> CountsStage:
        """The count stage for ``spec`` (explicit parameters)."""
        return CountsStage.from_spec(spec)

    def counts(self, stage: CountsStage, spec: "ReleaseSpec | None" = None) -> tuple[list[int], list[int]]:
        """(0-based indexes ascending, exact counts) of the non-zero bins, as the Spark backend computes them."""
        if not isinstance(stage, CountsStage):
            stage = CountsStage.from_spec(stage)
        self.progress("reading input and counting keys on Arrow")
        indices, counts = arrow_counts(self.dataset, stage, self.rng, csv_infer=self.csv_infer)
        self.passes_run += 1
        self.last_pass_end = time.monotonic()
        self.progress("counts collected on the driver")
        return finish_counts(indices, counts, stage, self.rng)


# ---------------------------------------------------------------------------------------------- input
def is_local_path(path: str | None) -> bool:
    """True for a path the Arrow engine reads directly (no URI scheme other than file://)."""
    if path is None:
        return False
    if path.startswith("file://"):
        return True
    return "://" not in path and not path.startswith(("s3a:", "hdfs:", "abfs:", "gs:", "dbfs:"))


def open_dataset(source: Any, format: str | None = None,
                 options: dict[str, str] | None = None) -> tuple["ds.Dataset", bool]:
    """A pyarrow dataset over ``source`` read as Spark reads it, and whether CSV types are inferred.

    CSV follows the Spark job's reader: a header line, every column a string unless ``inferSchema`` is
    "true", an empty field is NULL. Directories use Hive-style partition discovery, as Spark does.
    """
    import pyarrow.dataset as ds

    opts = {str(k).lower(): str(v) for k, v in (options or {}).items()}
    if isinstance(source, pa.Table):
        return ds.dataset(source), False
    if isinstance(source, ds.Dataset):
        return source, False
    path = str(source)
    if path.startswith("file://"):
        path = path[len("file://"):]
    if not is_local_path(path):
        raise InputError(f"the Arrow engine reads local files only, not {path!r}; use engine 'spark'")
    if not Path(path).exists():
        raise InputError(f"cannot read input {path!r}: no such file or directory")
    fmt = (format or _format_from_suffix(path)).lower()
    infer = False
    if fmt == "csv":
        file_format, infer = _csv_format(path, opts)
    else:
        if opts:
            raise InputError(f"input.options {sorted(opts)} are Spark reader options the Arrow engine does not "
                             "reproduce; use engine 'spark'")
        if fmt == "json":
            file_format = ds.JsonFileFormat()
        elif fmt == "parquet":  # no pre-buffering: it reads whole column chunks ahead (836 MB at 10^8 rows)
            file_format = ds.ParquetFileFormat(
                default_fragment_scan_options=ds.ParquetFragmentScanOptions(pre_buffer=False))
        elif fmt == "orc":
            file_format = fmt
        else:
            raise InputError(f"the Arrow engine reads parquet, csv, orc and json, not {fmt!r}")
    failed = False
    try:
        partitioning = "hive" if Path(path).is_dir() else None
        return ds.dataset(path, format=file_format, partitioning=partitioning), infer
    except OSError as err:  # the file system's words name the path, never a row
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise InputError(f"cannot read input {path!r}: {first[:300]}") from None
    except pa.ArrowInvalid:  # a parser's words can quote a row: say only what failed
        failed = True
    if failed:
        raise InputError(f"cannot read input {path!r}: its first block does not parse as {fmt} "
                         "(details withheld: they could quote the data)")
    raise AssertionError("unreachable")


def csv_header(path: str, parse: Any) -> list[str]:
    """The column names of a CSV file (or of the first CSV file of a directory) from its header line alone.

    Only the header is parsed, so no row's value can reach an error here; a CSV whose rows are malformed
    fails later, inside the charged data pass (:mod:`dpspark.engine.data_pass`).
    """
    import io

    import pyarrow.csv as pcsv

    p = Path(path)
    if p.is_dir():
        files = sorted(f for f in p.rglob("*") if f.is_file() and not f.name.startswith(("_", ".")))
        if not files:
            raise InputError(f"cannot read input {path!r}: the directory holds no CSV file")
        p = files[0]
    try:
        with open(p, "rb") as fh:
            line = fh.readline(1 << 20)
    except OSError as err:
        raise InputError(f"cannot read input {path!r}: {err.strerror}") from None
    try:
        header = pcsv.read_csv(io.BytesIO(line), parse_options=parse,
                               read_options=pcsv.ReadOptions(autogenerate_column_names=False))
    except pa.ArrowInvalid:
        header = None
    if header is None or not header.column_names:
        raise InputError(f"cannot read input {path!r}: its first line is not a CSV header of column names "
                         "(the Arrow engine reads CSV files with a header line)")
    return list(header.column_names)


def input_schema(source: Any, format: str | None = None,
                 options: dict[str, str] | None = None) -> tuple[pa.Schema, bool]:
    """An input's schema before any spend, and whether its types come from the data (CSV, JSON lines).

    Metadata only: a Parquet/ORC footer, a table's schema, or a CSV header line (every column a string, as
    the data pass reads it without inferSchema; with inferSchema the types are the data's, so they are not
    known before the pass and each column is taken as text here).
    """
    if isinstance(source, pa.Table):
        return source.schema, False
    path = str(source)
    fmt = (format or _format_from_suffix(path)).lower()
    if fmt == "csv" and is_local_path(path) and Path(path.removeprefix("file://")).exists():
        import pyarrow.csv as pcsv

        opts = {str(k).lower(): str(v) for k, v in (options or {}).items()}
        _csv_format(path.removeprefix("file://"), {**opts, "inferschema": "false"})  # the same option checks
        parse = pcsv.ParseOptions(delimiter=opts.get("sep", opts.get("delimiter", ",")),
                                  quote_char=opts.get("quote", '"'))
        names = csv_header(path.removeprefix("file://"), parse)
        return pa.schema([pa.field(n, pa.string()) for n in names]), True
    dataset, _ = open_dataset(source, format, options)
    return dataset.schema, fmt == "json"


def _format_from_suffix(path: str) -> str:
    p = Path(path)
    if p.is_dir():
        names = [f.suffix.lstrip(".").lower() for f in p.rglob("*") if f.is_file() and not f.name.startswith(("_", "."))]
        suffix = names[0] if names else "parquet"
    else:
        suffix = p.suffix.lstrip(".").lower()
    return {"pq": "parquet", "jsonl": "json"}.get(suffix, suffix or "parquet")


def _csv_format(path: str, opts: dict[str, str]) -> tuple[Any, bool]:
    import pyarrow.csv as pcsv
    import pyarrow.dataset as ds

    unknown = sorted(set(opts) - CSV_OPTIONS)
    if unknown:
        raise InputError(f"CSV option(s) {unknown} are not reproduced by the Arrow engine; use engine 'spark'")
    if opts.get("header", "true").lower() != "true":
        raise InputError("the Arrow engine reads CSV files with a header line only; use engine 'spark'")
    if opts.get("encoding", opts.get("charset", "utf-8")).lower().replace("-", "") != "utf8":
        raise InputError("the Arrow engine reads UTF-8 CSV files only; use engine 'spark'")
    infer = opts.get("inferschema", "false").lower() == "true"
    sep = opts.get("sep", opts.get("delimiter", ","))
    parse = pcsv.ParseOptions(delimiter=sep, quote_char=opts.get("quote", '"'))
    null_value = opts.get("nullvalue", "")
    convert = pcsv.ConvertOptions(null_values=[null_value], strings_can_be_null=True, quoted_strings_can_be_null=False)
    if not infer:  # Spark reads every column as a string unless inferSchema is set: so does this reader
        names = csv_header(path, parse)
        convert = pcsv.ConvertOptions(column_types={n: pa.string() for n in names}, null_values=[null_value],
                                      strings_can_be_null=True, quoted_strings_can_be_null=False)
    return ds.CsvFileFormat(parse_options=parse, convert_options=convert), infer


# ---------------------------------------------------------------------------------------------- stage
def arrow_counts(dataset: "ds.Dataset", stage: CountsStage, rng: "RandomSource", *,
                 csv_infer: bool = False) -> tuple[list[int], list[int]]:
    """(0-based indexes, counts) of the count stage, in no particular order, before ``finish_counts``."""
    names = set(dataset.schema.names)
    missing = [c for c in stage.columns if c not in names]
    if missing:
        raise InputError(f"input has no column(s) {', '.join(map(repr, missing))}; "
                         f"it has {', '.join(map(repr, sorted(names)))}")
    cols = list(stage.key_columns)
    unit = stage.unit_column
    secret = rng.bits(128).to_bytes(16, "big") if unit is not None else b""  # same draw, same point as Spark
    grouped = _group_count(dataset, cols + ([unit] if unit else []))
    if unit is None:
        index, member, keep = _encode(grouped, stage.universe, cols, stage.out_of_universe)
        counts = grouped.column(ROWS).filter(keep)
        per_index = pa.table({INDEX: index.filter(keep), ROWS: counts}).group_by(INDEX).aggregate([(ROWS, "sum")])
        return _to_python(per_index.column(INDEX), per_index.column(ROWS + "_sum"))
    int32_units = csv_infer and _csv_ints_fit_int32(dataset, unit)
    # Each distinct unit once: its id (a dictionary index) and Spark's xxhash64(unit), which is both the
    # truncation's UNIT_HASH and the seed of the chained xxhash64(unit, index) of the pick.
    encoded_units = pc.dictionary_encode(_one_chunk(grouped.column(unit)))
    ids = encoded_units.indices
    unit_hash = spark_hash(encoded_units.dictionary, unit, int32_units=int32_units)
    grouped = grouped.select(cols + [ROWS]).append_column(UNIT_ID, ids)
    kept_units = _bound_units(unit_hash, stage, secret)
    if kept_units is not None:
        grouped = grouped.filter(pa.array(kept_units[ids.to_numpy(zero_copy_only=False)]))
    keys = grouped.select(cols).group_by(cols).aggregate([])
    index, _member, keep = _encode(keys, stage.universe, cols, stage.out_of_universe)
    index_of = keys.filter(keep).append_column(INDEX, index.filter(keep))
    pairs = grouped.join(index_of, keys=cols, join_type="inner")
    bounded = stage.max_keys_per_unit > 1 or stage.max_rows_per_key > 1
    from dpspark.universe.keytypes import int_kind_columns

    text_ints = any(pa.types.is_string(dataset.schema.field(c).type) or pa.types.is_large_string(dataset.schema.field(c).type)
                    for c in int_kind_columns(stage.universe, cols))  # "5" and "05": one index
    if not distinct_keys_keep_indexes(stage.universe, text_ints):  # distinct keys may share an index: one row per (unit, index)
        pairs = pairs.group_by([UNIT_ID, INDEX]).aggregate([(ROWS, "sum")] if bounded else [])
        pairs = pairs.rename_columns([ROWS if c == ROWS + "_sum" else c for c in pairs.column_names])
    if bounded:
        rows = np.minimum(pairs.column(ROWS).to_numpy(), stage.max_rows_per_key)
    else:
        rows = np.ones(pairs.num_rows, dtype=np.int64)
    words = _index_matrix(pairs.column(INDEX))
    unit_ids = _one_chunk(pairs.column(UNIT_ID)).to_numpy(zero_copy_only=False)
    pick = keyed_mix(hash_fixed(words, seed=unit_hash[unit_ids]), secret).view(np.int64)
    del secret
    chosen = _first_k_per_unit(unit_ids, pick, words, stage.max_keys_per_unit)
    kept = pa.table({INDEX: pairs.column(INDEX).take(pa.array(chosen)), ROWS: pa.array(rows[chosen], pa.int64())})
    per_index = kept.group_by(INDEX).aggregate([(ROWS, "sum")])
    return _to_python(per_index.column(INDEX), per_index.column(ROWS + "_sum"))


def _first_k_per_unit(unit_ids: np.ndarray, pick: np.ndarray, words: np.ndarray, k: int) -> np.ndarray:
    """Row numbers of each unit's k first pairs in (keyed hash signed, index word) order (Spark's row_number).

    Units with at most k pairs keep them all without sorting. The others are sorted by (unit, hash); the
    index word only breaks ties of the 64-bit hash within a unit, so it joins the sort only if one occurs.
    """
    per_unit = np.bincount(unit_ids)
    crowded = np.flatnonzero(per_unit[unit_ids] > k)
    if len(crowded) == 0:
        return np.arange(len(unit_ids))
    u, h = unit_ids[crowded], pick[crowded]
    order = np.lexsort((h, u))
    su, sh = u[order], h[order]
    if np.any((su[1:] == su[:-1]) & (sh[1:] == sh[:-1])):  # a hash tie inside a unit: order by index word too
        limbs = words[crowded].view(">u8").astype(np.uint64)  # big-endian limbs: lexicographic = unsigned bytes
        order = np.lexsort(tuple(limbs[:, j] for j in reversed(range(limbs.shape[1]))) + (h, u))
        su = u[order]
    starts = np.flatnonzero(np.r_[True, su[1:] != su[:-1]])
    rank = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    keep = np.ones(len(unit_ids), dtype=bool)
    keep[crowded[order[rank >= k]]] = False
    return np.flatnonzero(keep)


def read_error_text(err: BaseException) -> str:
    """What a failed Arrow scan may say: never Arrow's own message for a conversion error, which quotes the
    row's value (a CSV read with ``inferSchema``: a later value that does not fit the inferred type)."""
    if isinstance(err, pa.ArrowInvalid):
        return ("a value does not fit its column's type, or the file is malformed (Arrow's message is withheld: "
                "it may quote data; with CSV inferSchema the Arrow reader infers types from the first block only)")
    first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return first[:300]


def scan_table(dataset: "ds.Dataset", columns: list[str]) -> pa.Table:
    """``dataset.to_table(columns)`` whose failure is an :class:`InputError` that quotes no data."""
    try:
        return dataset.to_table(columns=columns)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as err:
        raise InputError(f"cannot read input: {read_error_text(err)}") from None


def _group_count(dataset: "ds.Dataset", columns: list[str]) -> pa.Table:
    """Rows per distinct non-NULL value of ``columns``, by a streaming Acero plan (the rows are never held).

    NULLs form their own groups in the hash aggregate and are dropped from its (small) output, which is
    cheaper than a filter over every row.
    """
    import pyarrow.acero as ac

    plan = ac.Declaration.from_sequence([
        ac.Declaration("scan", ac.ScanNodeOptions(dataset, columns=columns)),
        ac.Declaration("aggregate", ac.AggregateNodeOptions([([], "hash_count_all", None, ROWS)], keys=columns)),
    ])
    try:
        grouped = plan.to_table(use_threads=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as err:
        raise InputError(f"cannot read input: {read_error_text(err)}") from None
    if any(grouped.column(c).null_count for c in columns):
        valid = pc.is_valid(grouped.column(columns[0]))
        for c in columns[1:]:
            valid = pc.and_(valid, pc.is_valid(grouped.column(c)))
        grouped = grouped.filter(valid)
    return grouped


def _encode(keys: pa.Table, universe: "Universe", cols: list[str],
            out_of_universe: str) -> tuple[pa.Array, pa.Array, pa.Array]:
    """(index words, membership, keep mask) of the distinct keys; fails on a non-member in "error" mode."""
    from dpspark.universe.keytypes import engine_key_arrays

    # a dictionary column is its values, a text input's integer key is parsed (unparseable -> NULL)
    arrays = engine_key_arrays(universe, [_one_chunk(keys.column(c)) for c in cols])
    encoded = universe.encode_arrays(arrays)
    if out_of_universe == "error" and encoded.has_out_of_universe():
        raise CuratorError(
            "the input holds keys outside the declared universe and privacy.out_of_universe = 'error' "
            "(curator-side check; the offending values are not shown)"
        )
    keep = encoded.in_universe.fill_null(False)
    return encoded.index, encoded.in_universe, keep


def _bound_units(unit_hash: np.ndarray, stage: CountsStage, secret: bytes) -> np.ndarray | None:
    """The excess-units rule of the Spark stage over the distinct units (given by their xxhash64).

    Returns None to keep every unit, or a mask keeping the n units with the smallest (keyed hash, unit
    hash) in signed 64-bit order; raises :class:`CuratorError` for "refuse" with more than n units.
    """
    if len(unit_hash) <= stage.max_units:
        return None
    if stage.on_excess_units == "refuse":
        raise CuratorError(
            f"the input holds more units than privacy.max_units = {stage.max_units} and on_excess_units = "
            "'refuse' (curator-side check, before any noise was drawn); raise max_units or use 'truncate'")
    truncation_key = bytes(b ^ 0x5C for b in secret)  # the Spark stage's derived key
    ranked = keyed_mix(unit_hash, truncation_key).view(np.int64)
    mask = np.zeros(len(unit_hash), dtype=bool)
    mask[np.lexsort((unit_hash.view(np.int64), ranked))[: stage.max_units]] = True
    return mask


def _csv_ints_fit_int32(dataset: "ds.Dataset", unit: str) -> bool:
    """Spark's CSV schema inference types an integral column IntegerType when every value fits 32 bits."""
    field = dataset.schema.field(unit)
    if not pa.types.is_integer(field.type):
        return False
    col = scan_table(dataset, [unit]).column(unit)  # one column of a CSV file (CSV inputs are small)
    lo, hi = pc.min(col).as_py(), pc.max(col).as_py()
    return lo is None or (-(1 << 31) <= lo and hi < (1 << 31))


# ---------------------------------------------------------------------------------------------- hashing
def spark_hash(values: "pa.Array | pa.ChunkedArray", name: str = "unit", seed: "int | np.ndarray" = SPARK_SEED,
               *, int32_units: bool = False) -> np.ndarray:
    """Spark's ``xxhash64`` of one non-NULL column (uint64), for the types the Spark stage sees alike.

    int8/16/32 are Spark Byte/Short/IntegerType (hashInt), int64 is LongType (hashLong), string and
    binary hash their bytes. Other types are refused: their Spark type and hash depend on the reader.
    """
    arr = _one_chunk(values)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    t = arr.type
    if arr.null_count:
        raise ValueError("spark_hash: NULL values must be dropped first")
    if t in (pa.int8(), pa.int16(), pa.int32()) or (int32_units and t == pa.int64()):
        return hash_int(arr.to_numpy(zero_copy_only=False), seed)
    if t == pa.int64():
        return hash_long(arr.to_numpy(zero_copy_only=False), seed)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
        offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64 if large else np.int32)[arr.offset: arr.offset + len(arr) + 1]
        data = arr.buffers()[2]
        return hash_bytes(offsets, np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8), seed)
    raise InputError(f"the Arrow engine hashes unit columns of integer, string or binary type; column {name!r} "
                     f"has type {t} (use engine 'spark', or cast the column)")


def keyed_mix(raw: np.ndarray, secret: bytes) -> np.ndarray:
    """The Spark stage's keyed splitmix of a uint64 hash (``keyed_pick_hash``), as uint64."""
    if len(secret) != 16:
        raise ValueError("the contribution-bounding key must be 16 bytes")
    k1 = np.uint64(int.from_bytes(secret[:8], "big"))
    k2 = np.uint64(int.from_bytes(secret[8:], "big"))
    return _mix64(_mix64(raw.astype(np.uint64, copy=False), k1), k2)


# ---------------------------------------------------------------------------------------------- helpers
def _one_chunk(values: "pa.Array | pa.ChunkedArray") -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    return values


def _index_matrix(words: "pa.Array | pa.ChunkedArray") -> np.ndarray:
    """(n, width) uint8 matrix of FixedSizeBinary index words."""
    arr = _one_chunk(words)
    width = arr.type.byte_width
    buf = np.frombuffer(arr.buffers()[1], dtype=np.uint8)
    return buf[arr.offset * width: (arr.offset + len(arr)) * width].reshape(len(arr), width)


def _to_python(words: "pa.Array | pa.ChunkedArray", counts: "pa.Array | pa.ChunkedArray") -> tuple[list[int], list[int]]:
    """0-based indexes and counts as Python ints (a fast path when every index fits 64 bits)."""
    matrix = _index_matrix(words)
    limbs = matrix.view(">u8").astype(np.uint64)
    order = np.lexsort(tuple(limbs[:, j] for j in reversed(range(limbs.shape[1]))))  # ascending: finish_counts'
    matrix, limbs = matrix[order], limbs[order]  # sort is then a linear pass
    cnt = _one_chunk(counts).to_numpy(zero_copy_only=False).astype(np.int64)[order].tolist()
    if limbs.shape[0] == 0:
        return [], cnt
    if not limbs[:, :-1].any():
        return (limbs[:, -1] - np.uint64(1)).tolist(), cnt
    return [int.from_bytes(row.tobytes(), "big") - 1 for row in matrix], cnt
