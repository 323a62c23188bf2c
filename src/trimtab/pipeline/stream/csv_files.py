"""A table's CSV files as a stream, each file's columns matched by its own header.

Why a module of its own
    Spark's file stream reads CSV with one schema for every file, where ingest matches each
    file's columns by its header. So each file is read whole, its header split as ingest
    splits it, and each line parsed by Spark's CSV parser into positional cells mapped by
    that header: the one tricky source of the stream, kept apart from the simple ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trimtab.pipeline.stream.wide import GLOBS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from trimtab.pipeline.schemas import InputTable

__all__ = ["csv_stream"]

#: The cells a CSV line of the stream may have (``from_csv`` needs a fixed schema: a line is
#: parsed into this many positional cells, then each file's header maps names to positions).
_CSV_WIDTH = 128
#: Appended to each CSV line as one more cell: where it lands counts the line's cells.
_END = "\ue000"


def csv_stream(spark: SparkSession, path: str, table: InputTable) -> DataFrame:
    """One table's CSV files, their columns matched by each file's own header as ingest's
    ``_read_group`` matches them: a file is read whole, its first line names the columns
    (split as ingest splits it), and each later non-blank line is parsed by Spark's CSV
    parser (quotes and all) into positional cells. A line with more or fewer cells than the
    header is ``malformed`` where Spark's reader makes it so (when the header names only
    contract columns); a header lacking a required column refuses every row of its file, as
    ``missing_key`` or ``missing_value``, with the message the batch job stops with."""
    from pyspark.sql import functions as F

    files = (
        spark.readStream.format("text")
        .option("wholetext", True)
        .option("pathGlobFilter", GLOBS["csv"])
        .load(path)
    )
    lines = F.split(F.col("value"), r"\r\n|\r|\n")
    # Spark's CSV reader skips blank lines (Java's trim), its header the first non-blank one
    filled = F.filter(lines, lambda line: ~line.rlike(r"^[\x00-\x20]*$"))
    names = F.transform(
        F.split(F.element_at(lines, 1), ","),
        lambda c: F.regexp_replace(F.regexp_replace(c, r"^\s+|\s+$", ""), '^"+|"+$', ""),
    )
    frame = files.select(
        names.alias("_names"),
        F.explode(F.slice(filled, 2, F.greatest(F.size(filled) - 1, F.lit(0)))).alias("_line"),
        F.col("_metadata.file_path").alias("_source_file"),
        F.unix_micros(F.col("_metadata.file_modification_time")).alias("_landed_us"),
    )
    schema = ", ".join(f"_c{i} string" for i in range(_CSV_WIDTH + 1))
    parsed = F.from_csv(F.concat(F.col("_line"), F.lit("," + _END)), schema, {"mode": "PERMISSIVE"})
    # one SQL expression, parsed once (not a Py4J call per cell)
    cells = F.expr("array(" + ", ".join(f"_parsed._c{i}" for i in range(_CSV_WIDTH + 1)) + ")")
    # The mark is a cell of its own, or the end of the last cell when a quote left open runs
    # to the end of the line (Spark's reader then reads that cell to the end of the line)
    marked = F.array_position("_cells", _END)
    swallowed = F.array_position(F.transform("_cells", lambda c: c.endswith("," + _END)), True)
    frame = frame.select("*", parsed.alias("_parsed")).select("*", cells.alias("_cells"))
    frame = frame.select("*", F.when(marked > 0, marked - 1).otherwise(swallowed).alias("_count"))
    count = F.col("_count")
    values = []
    for column in table.columns:
        at = F.array_position("_names", column.name)
        cell = F.regexp_replace(F.try_element_at("_cells", at.cast("int")), f",{_END}$", "")
        values.append(F.when((at > 0) & (at <= count), cell).alias(f"_in_{column.name}"))
    # Spark's reader counts a line's cells only when it reads every column of the header: a
    # header naming a column outside the contract has it parse only the contract's columns
    contract = F.array(*(F.lit(c.name) for c in table.columns))
    outside = F.filter("_names", lambda name: ~F.array_contains(contract, name))
    checked = F.size(outside) == 0
    missing = [F.when(F.array_position("_names", c) == 0, F.lit(c)) for c in table.required]
    keys = [F.when(F.array_position("_names", c) == 0, F.lit(c)) for c in table.keys]
    has = F.concat_ws(", ", "_names")
    message = F.format_string(
        f"table {table.name}: %s lacks required column(s) %s; it has %s. "
        f"Required: {', '.join(table.required)}",
        F.col("_source_file"),
        F.concat_ws(", ", *missing),
        F.when(has == "", F.lit("none")).otherwise(has),
    )
    rule = F.when(F.concat_ws("", *keys) != "", F.lit("missing_key")).otherwise("missing_value")
    lacking = F.concat_ws("", *missing) != ""
    return frame.select(
        *values,
        F.when(checked & (count != F.size("_names")), F.col("_line")).alias("_corrupt"),
        F.when(lacking, F.struct(rule.alias("r"), message.alias("m"))).alias("_file_rule"),
        "_source_file",
        "_landed_us",
    )
