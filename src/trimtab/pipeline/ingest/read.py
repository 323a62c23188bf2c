"""Read one table's files with explicit schemas, typed, with the row-local verdict.

Why a module of its own
    Reading is the part of the ingest the stream shares (its CSV and JSON text is typed by
    :func:`typed_columns` too): list a table's files through Hadoop's FileSystem, group them
    by format (and CSV by header, so columns are matched by name), read each group with an
    explicit schema (CSV and JSON as strings, Parquet with its own types), convert with
    ``try_cast`` and apply the row rules of :mod:`trimtab.pipeline.rules`, the first broken
    rule winning. The raw row is rendered only for refused rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import NamedTuple

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from trimtab.contract import Kind
from trimtab.errors import InputError
from trimtab.pipeline.fs import HadoopFS, local_directory
from trimtab.pipeline.rules import (
    Sql,
    parse_long,
    parse_timestamp,
    q,
    row_rules_sql,
    text,
    time_limit,
)
from trimtab.pipeline.schemas import SPARK_TYPES, InputTable

__all__ = ["TableRead", "footer_schema", "read_table", "table_fix", "typed_columns", "typed_sql"]


_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".json": "json"}
_FORMATS |= {".jsonl": "json", ".ndjson": "json"}
#: The "header" of a JSON file holding one array of row objects (read whole, not by line).
_ARRAY = "[array]"
_CORRUPT = "_corrupt_record"


class TableRead(NamedTuple):
    """One table's files read (see :func:`read_table`)."""

    frame: DataFrame
    rows: int  # how many rows the files hold; -1 when not counted
    size: int  # the files' bytes


def read_table(
    spark: SparkSession,
    fs: HadoopFS,
    input_dir: str,
    table: InputTable,
    *,
    now: datetime,
    future_tolerance_s: float,
    extra: Sequence[str] = (),
    count: bool = True,
) -> TableRead:
    """All files of one table as canonical typed columns plus ``_source_file``, ``_pos`` and
    the row-local verdict: ``_rule``/``_reason``, the first row-local rule broken and why
    (null if none), with ``_raw`` for those rows;
    how many rows the files hold (-1 without ``count``: the caller counts them with work it
    does anyway, and refuses an empty table itself) and their size."""
    path = f"{input_dir}/{table.name}"
    fix = table_fix(table)
    if not fs.exists(path) and not extra:
        raise InputError(f"table {table.name}: {path} does not exist; {fix} there")
    # ``extra``: files staged from other inputs (pipeline/load_reports.py)
    listed = fs.sized_files(path) if fs.exists(path) else []
    files = [*listed, *((file, fs.size(file)) for file in extra)]
    groups: dict[tuple[str, str], list[str]] = {}
    size = 0
    for file, length in files:
        suffix = "." + file.rsplit(".", 1)[-1].lower() if "." in file.rsplit("/", 1)[-1] else ""
        fmt = _FORMATS.get(suffix)
        if fmt is None:
            continue
        header = fs.first_line(file) if fmt == "csv" else ""
        if fmt == "json" and fs.first_line(file).lstrip("\ufeff").lstrip().startswith("["):
            header = _ARRAY  # an array of row objects, as most tools export a table

        groups.setdefault((fmt, header), []).append(file)
        size += length
    if not groups:
        raise InputError(f"table {table.name}: {path} holds no data files; {fix}")
    frames = [
        _read_group(spark, fmt, header, group, table, now, future_tolerance_s)
        for (fmt, header), group in groups.items()
    ]
    frame = frames[0]
    for other in frames[1:]:
        frame = frame.unionByName(other)
    rows = -1
    if count:
        rows = frame.count()  # no rule runs for this: Parquet answers from its footers
        if rows == 0:
            raise InputError(f"table {table.name}: {path} has no rows; {fix}")
    return TableRead(frame.withColumn("_pos", F.monotonically_increasing_id()), rows, size)


def table_fix(table: InputTable) -> str:
    """What to do about a table that is missing or empty."""
    return f"put {table.name} files (.parquet, .csv or .jsonl) with columns " + ", ".join(
        table.required
    )


def typed_columns(
    table: InputTable, fmt: str, present: Sequence[str], stored: Mapping[str, str]
) -> tuple[list[SparkColumn], SparkColumn, dict[str, Sql]]:
    """:func:`typed_sql` as columns (each parsed once), with the texts left as SQL for
    :func:`~trimtab.pipeline.rules.row_rules`."""
    typed, errors, texts = typed_sql(table, fmt, present, stored)
    return [F.expr(c) for c in typed], F.expr(errors), texts


def typed_sql(
    table: InputTable, fmt: str, present: Sequence[str], stored: Mapping[str, str]
) -> tuple[list[Sql], Sql, dict[str, Sql]]:
    """From the input columns set aside as ``_in_<name>``: each contract column typed (null
    when absent) and named, ``_type_errors`` (the names of the cells that did not parse), and
    each column's input as text for the reasons, as SQL. ``stored`` gives a Parquet file's
    column types."""
    typed: list[Sql] = []
    type_errors: list[Sql] = []
    texts: dict[str, Sql] = {}
    for column in table.columns:
        sql_type = SPARK_TYPES[column.type].simpleString()
        if column.name not in present:
            typed.append(f"CAST(NULL AS {sql_type}) AS {q(column.name)}")
            texts[column.name] = "CAST(NULL AS STRING)"
            continue
        source = q(f"_in_{column.name}")
        # A Parquet column stored as text is read as a CSV cell is (epoch seconds, ISO 8601).
        as_text = fmt != "parquet" or stored.get(column.name) == "string"
        texts[column.name] = source if as_text else f"CAST({source} AS STRING)"
        value = _typed(source, column.type, "csv" if as_text else fmt)
        if column.kind in (Kind.NODE_ID, Kind.NODE_REF):  # hosts compare as DNS does (NodeId)
            value = f"lower(trim({value}))"
        typed.append(f"{value} AS {q(column.name)}")
        if as_text and column.type != "string":
            failed = f"{source} IS NOT NULL AND trim({source}) != '' AND {value} IS NULL"
            type_errors.append(f"CASE WHEN {failed} THEN {text(column.name)} END")
    errors = f"concat_ws(',', {', '.join(type_errors)})" if type_errors else "''"
    return typed, f"{errors} AS `_type_errors`", texts


def _read_group(
    spark: SparkSession,
    fmt: str,
    header: str,
    files: list[str],
    table: InputTable,
    now: datetime,
    future_tolerance_s: float,
) -> DataFrame:
    reader = spark.read
    stored: dict[str, str] = {}
    if fmt == "parquet":
        footer = footer_schema(files[0])
        frame = (reader if footer is None else reader.schema(footer)).parquet(*files)
        present = frame.columns
        stored = dict(frame.dtypes)
    else:
        if fmt == "csv":
            present = [c.strip().strip('"') for c in header.split(",")] if header else []
            strings = T.StructType([T.StructField(c, T.StringType()) for c in present])
            schema = strings.add(_CORRUPT, T.StringType())
            frame = reader.csv(
                files,
                header=True,
                schema=schema,
                mode="PERMISSIVE",
                columnNameOfCorruptRecord=_CORRUPT,
                enforceSchema=True,
            )
        else:
            present = [c.name for c in table.columns]
            schema = T.StructType([T.StructField(c, T.StringType()) for c in present])
            schema = schema.add(_CORRUPT, T.StringType())
            frame = reader.json(
                files,
                schema=schema,
                mode="PERMISSIVE",
                columnNameOfCorruptRecord=_CORRUPT,
                multiLine=header == _ARRAY,  # each element of the array is a row
            )
    missing = [c for c in table.required if c not in present]
    if missing and fmt != "json":
        raise InputError(
            f"table {table.name}: {files[0]} lacks required column(s) {', '.join(missing)}; "
            f"it has {', '.join(present) or 'none'}. Required: {', '.join(table.required)}"
        )
    known = [c.name for c in table.columns if c.name in present]
    # The input columns step aside (``_in_<name>``) so the typed columns can take their names;
    # the raw row and the text of a timestamp are built only inside the rules' lazy branches.
    # Everything is SQL text, parsed once per expression (see trimtab.pipeline.rules.Sql).
    corrupt = q(_CORRUPT) if fmt != "parquet" else "CAST(NULL AS STRING)"
    frame = frame.selectExpr(
        *(f"{q(c)} AS {q(f'_in_{c}')}" for c in known),
        f"{corrupt} AS `_corrupt`",
        "`_metadata`.`file_path` AS `_source_file`",
    )
    typed, errors, texts = typed_sql(table, fmt, present, stored)
    typed_frame = frame.selectExpr("*", *typed, errors)
    limit = time_limit(str(_micros(now) + int(future_tolerance_s) * 1_000_000))
    first = row_rules_sql(table, texts, limit)
    original = ", ".join(f"{text(c)}, {q(f'_in_{c}')}" for c in known)
    ruled = typed_frame.selectExpr("*", f"{first} AS `_first`")
    return ruled.selectExpr(
        *(q(c.name) for c in table.columns),
        "`_source_file`",
        "`_first`.`r` AS `_rule`",
        "`_first`.`m` AS `_reason`",
        # The raw row is rendered only for rows already refused: good rows never pay for JSON.
        f"CASE WHEN `_first` IS NOT NULL THEN to_json(named_struct({original})) END AS `_raw`",
    )


# Arrow types whose Spark type is certain, as Spark reads them from Parquet.
_PLAIN_TYPES: dict[pa.DataType, T.DataType] = {
    pa.string(): T.StringType(),
    pa.large_string(): T.StringType(),
    pa.bool_(): T.BooleanType(),
    pa.int8(): T.ByteType(),
    pa.int16(): T.ShortType(),
    pa.int32(): T.IntegerType(),
    pa.int64(): T.LongType(),
    pa.float32(): T.FloatType(),
    pa.float64(): T.DoubleType(),
    pa.date32(): T.DateType(),
}


def footer_schema(file: str) -> T.StructType | None:
    """The schema Spark would take from a local Parquet file's footer, read by pyarrow:
    Spark's own inference is a Spark job for every read. None when the file is not local or
    any column is of a type whose reading Spark decides itself (nanosecond or INT96 times,
    unsigned, nested, dictionary...): then Spark infers it, and reports what it cannot read."""
    path = local_directory(file)
    if path is None:
        return None
    try:
        footer = pq.read_schema(path)
    except (OSError, pa.ArrowException):
        return None
    fields = []
    for field in footer:
        kind = field.type
        if pa.types.is_timestamp(kind) and kind.tz is not None and kind.unit in ("ms", "us"):
            fields.append(T.StructField(field.name, T.TimestampType()))
        elif kind in _PLAIN_TYPES:
            fields.append(T.StructField(field.name, _PLAIN_TYPES[kind]))
        else:
            return None
    return T.StructType(fields)


def _micros(moment: datetime) -> int:
    """A time as microseconds since the epoch (a naive one is taken as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return round(moment.timestamp() * 1_000_000)


def _typed(source: Sql, type_: str, fmt: str) -> Sql:
    """An input column as its canonical type; text is read as the Python readers read it."""
    if fmt == "parquet":
        if type_ == "timestamp":
            return source
        return f"TRY_CAST({source} AS {SPARK_TYPES[type_].simpleString()})"
    if type_ == "timestamp":
        return parse_timestamp(source)
    if type_ == "long":
        return parse_long(source)
    return f"TRY_CAST({source} AS {SPARK_TYPES[type_].simpleString()})"
