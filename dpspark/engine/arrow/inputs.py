"""The Arrow engine's input: local files and directories (Parquet, CSV, ORC, JSON lines) or a pyarrow Table.

Opened as Spark's reader reads them (a header line for CSV, every column a string unless ``inferSchema``,
Hive-style partitions); only metadata is read here. Errors never quote a row.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from dpspark.engine.errors import InputError

if TYPE_CHECKING:
    import pyarrow.dataset as ds

#: Spark CSV reader options the Arrow reader reproduces; anything else needs the Spark engine.
CSV_OPTIONS = {"header", "inferschema", "sep", "delimiter", "quote", "nullvalue", "encoding", "charset"}


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
    local = path.removeprefix("file://")
    if fmt == "parquet" and not options and is_local_path(path) and Path(local).is_file():
        # one local Parquet file: its footer, read without importing pyarrow.dataset (which imports
        # pyarrow.compute: 0.2-0.45 s of a cold CLI's checking; the pass imports it when it reads)
        import pyarrow.parquet as pq

        try:
            return pq.read_schema(local), False
        except (OSError, pa.ArrowInvalid):
            pass  # open_dataset below names the failure in its own value-free words
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


def require_columns(dataset: "ds.Dataset", wanted: list[str]) -> None:
    """Fail early, naming every column a kernel reads that the input lacks (the Spark kernels' words)."""
    names = set(dataset.schema.names)
    missing = [c for c in wanted if c not in names]
    if missing:
        raise InputError(f"input has no column(s) {', '.join(map(repr, missing))}; "
                         f"it has {', '.join(map(repr, sorted(names)))}")
