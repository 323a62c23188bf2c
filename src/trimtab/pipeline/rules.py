"""The contract's row rules as Spark columns: one expression per rule of :data:`ROW_RULES`.

Each rule of :mod:`trimtab.contract` has a Python check there and a Spark check here, under
the same name and in the same order, so the pipeline and the plain commands refuse the same
rows. Rules are evaluated lazily: ``coalesce(when(rule1, ...), when(rule2, ...))`` stops at
the first broken rule, and a reason's text is built only for a row that broke its rule. Each
rule is one condition per table (columns OR-ed), so a good row pays a few comparisons.

Rules of ``scope="key"`` read only key columns; :func:`key_verdict` decides them once per
key on ingest's summary (a few thousand rows), together with the membership rules.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pyspark.sql import Column as SparkColumn
from pyspark.sql import functions as F

from trimtab.cluster import NodeState, Role
from trimtab.contract import (
    BUNDLE_PATTERN,
    EPOCH_MS_MAX,
    EPOCH_S_MAX,
    LONG_MAX,
    MS_HINT,
    NODE_ID_PATTERN,
    PERCENT_HINT,
    REPLACEMENT,
    ROW_RULES,
    TOPIC_PATTERN,
    Column,
    Kind,
    Table,
    not_utf8,
)

__all__ = [
    "KEY_CHECKS",
    "SPARK_CHECKS",
    "Sql",
    "blank",
    "key_verdict",
    "key_verdict_sql",
    "parse_long",
    "parse_timestamp",
    "q",
    "row_rules",
    "row_rules_sql",
    "text",
    "time_limit",
]

_NUMBERS = (Kind.FRACTION, Kind.RATE)
# Epoch seconds beyond this are not a time any sample has (year 5138): refused, not overflowed.
_EPOCH_MAX = EPOCH_S_MAX


@dataclass(frozen=True, slots=True)
class _Ctx:
    """What a rule needs: the table, each column's input as text (reasons only), and the
    latest time a sample may have (all as Spark SQL)."""

    table: Table
    texts: dict[str, Sql]
    limit: Sql


#: A Spark SQL expression. The rules are written as SQL text and parsed once per table by
#: ``F.expr``: building them as Column objects cost one Py4J round trip per operator, some
#: 25,000 calls (seconds) per run on the driver however few rows there are.
Sql = str
Found = list[tuple[Sql, Sql]]


def q(name: str) -> Sql:
    """A column name as SQL."""
    return "`" + name.replace("`", "``") + "`"


def text(value: str) -> Sql:
    """A string literal as SQL (Spark's parser unescapes backslashes, so they are doubled)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


#: The Spark check of each row rule of scope "row" (Python's are in trimtab.contract).
SPARK_CHECKS: dict[str, Callable[[_Ctx], Found]] = {}
_ORDER = {rule.name: i for i, rule in enumerate(ROW_RULES)}


def _spark(rule: str) -> Callable[[Callable[[_Ctx], Found]], Callable[[_Ctx], Found]]:
    """Register the decorated function as the Spark check of ``rule``."""

    def register(check: Callable[[_Ctx], Found]) -> Callable[[_Ctx], Found]:
        SPARK_CHECKS[rule] = check
        return check

    return register


def blank(column: Sql) -> Sql:
    """True where the text of ``column`` is missing or only spaces."""
    return f"({column} IS NULL OR trim({column}) = '')"


def _any(conditions: Sequence[Sql]) -> Sql | None:
    return "(" + " OR ".join(conditions) + ")" if conditions else None


def _first_non_null(parts: Sequence[Sql]) -> Sql:
    return f"coalesce({', '.join(parts)})"


def _first_of(columns: Sequence[Column], hit: Callable[[Sql], Sql]) -> Found:
    """One condition for all ``columns``; the reason names the first one hit, built lazily."""
    cond = _any([hit(q(c.name)) for c in columns])
    if cond is None:
        return []
    which = _first_non_null(
        [f"CASE WHEN {hit(q(c.name))} THEN {text(c.name)} END" for c in columns]
    )
    return [(cond, which)]


def _format(template: str, *args: Sql) -> Sql:
    return f"format_string({', '.join([text(template), *args])})"


def parse_long(source: Sql) -> Sql:
    """A text cell as a long: ``8`` and also whole floats (``8.0``, ``1e3``), as the Python
    readers take them; null if not whole or beyond a long."""
    as_double = f"TRY_CAST({source} AS DOUBLE)"
    # ``% 1`` rather than floor(), which is a long and would overflow on 1e20.
    whole = f"({as_double} % 1 = 0 AND abs({as_double}) < {float(LONG_MAX)!r})"
    fallback = f"CASE WHEN {whole} THEN CAST({as_double} AS BIGINT) END"
    return f"coalesce(TRY_CAST({source} AS BIGINT), {fallback})"


def parse_timestamp(source: Sql) -> Sql:
    """A text cell as a timestamp: ISO 8601, or epoch seconds as the Python readers take."""
    seconds = f"TRY_CAST({source} AS DOUBLE)"
    epoch = f"CASE WHEN abs({seconds}) < {_EPOCH_MAX!r} THEN timestamp_seconds({seconds}) END"
    return f"coalesce(try_to_timestamp({source}), {epoch})"


@_spark("malformed")
def _malformed(ctx: _Ctx) -> Found:
    found: Found = [
        ("`_corrupt` IS NOT NULL", text("the line does not parse as a row of this table"))
    ]
    # Spark decodes bytes that are not UTF-8 as U+FFFD: the text columns show it (a number
    # column with such bytes is wrong_type anyway)
    for column in ctx.table.columns:
        if column.type == "string":
            found.append(
                (f"instr({q(column.name)}, {text(REPLACEMENT)}) > 0", text(not_utf8(column.name)))
            )
    return found


@_spark("missing_key")
def _missing_key(ctx: _Ctx) -> Found:
    found: Found = []
    for column in ctx.table.columns:
        if not (column.key and column.required):
            continue
        if column.kind is Kind.TIMESTAMP:
            # The text once: a repeated subexpression under AND/OR is computed for every row
            # (Spark's codegen hoists it), and a timestamp as text is costly to make.
            no_text = f"coalesce(trim({ctx.texts[column.name]}), '') = ''"
            missing = f"({q(column.name)} IS NULL AND {no_text})"
        else:
            missing = blank(q(column.name))
        found.append((missing, text(f"missing {column.name}")))
    return found


@_spark("bad_timestamp")
def _bad_timestamp(ctx: _Ctx) -> Found:
    found: Found = []
    for c in ctx.table.of(Kind.TIMESTAMP):
        given = ctx.texts[c.name]
        number = f"TRY_CAST({given} AS DOUBLE)"
        millis = f"(abs({number}) >= {EPOCH_S_MAX!r} AND abs({number}) < {EPOCH_MS_MAX!r})"
        seconds = f"CAST(CAST({number} / 1000 AS DECIMAL(20, 3)) AS STRING)"
        instead = f"regexp_replace(regexp_replace({seconds}, '0+$', ''), '\\\\.$', '')"
        hint = MS_HINT.replace("{name}", c.name).replace("{v}", "%1$s").replace("{x}", "%2$s")
        ms_reason = _format(hint, f"trim({given})", instead)
        other = _format(f"{c.name} %s is not a timestamp", given)
        found.append(
            (f"{q(c.name)} IS NULL", f"CASE WHEN {millis} THEN {ms_reason} ELSE {other} END")
        )
    return found


@_spark("wrong_type")
def _wrong_type(ctx: _Ctx) -> Found:
    return [("`_type_errors` != ''", _format("not a number: %s", "`_type_errors`"))]


@_spark("missing_value")
def _missing_value(ctx: _Ctx) -> Found:
    columns = [c for c in ctx.table.columns if c.required and not c.key]
    found = _first_of([c for c in columns if c.type == "string"], blank)
    numbers = [c for c in columns if c.type != "string"]
    if numbers:
        # One null test for all: a sum of zeros is null when any term is (``* 0``: no overflow).
        cond = f"{_zeros(numbers)} IS NULL"
        which = _first_non_null(
            [f"CASE WHEN {q(c.name)} IS NULL THEN {text(c.name)} END" for c in numbers]
        )
        found.append((cond, which))
    return [(cond, _format("missing %s", which)) for cond, which in found]


@_spark("not_finite")
def _not_finite(ctx: _Ctx) -> Found:
    columns = ctx.table.of(*_NUMBERS)
    if not columns:
        return []
    # x * 0 is 0 for a finite x and NaN for NaN or an infinity: one comparison per row.
    which = _first_non_null(
        [f"CASE WHEN {_infinite(q(c.name))} THEN {text(c.name)} END" for c in columns]
    )
    return [(f"{_zeros(columns)} != 0", _format("%s is not a finite number", which))]


def _infinite(col: Sql) -> Sql:
    return f"(isnan({col}) OR abs({col}) = CAST('Infinity' AS DOUBLE))"


def _zeros(columns: Sequence[Column]) -> Sql:
    return "(" + " + ".join(f"{q(c.name)} * 0" for c in columns) + ")"


@_spark("out_of_range")
def _out_of_range(ctx: _Ctx) -> Found:
    found: Found = []
    for c in ctx.table.of(Kind.FRACTION):
        col = q(c.name)
        instead = f"round({col} * {PERCENT_HINT.factor!r}, 12)"
        percent = _format(PERCENT_HINT.spark(c.name), _shown(col), _shown(instead))
        below = _format(f"{c.name} %s is outside 0..1", col)
        found.append(
            (f"({col} < 0 OR {col} > 1)", f"CASE WHEN {col} > 1 THEN {percent} ELSE {below} END")
        )
    return found


def _shown(value: Sql) -> Sql:
    """A number as a reason shows it, as the Python side does: ``85``, not ``85.0``."""
    return f"regexp_replace(CAST({value} AS STRING), '\\\\.0$', '')"


@_spark("negative")
def _negative(ctx: _Ctx) -> Found:
    return [
        (
            f"{q(c.name)} < 0",
            _format(f"{c.name} %s is negative", f"CAST({q(c.name)} AS STRING)"),
        )
        for c in ctx.table.of(Kind.COUNT, Kind.RATE)
    ]


@_spark("not_positive")
def _not_positive(ctx: _Ctx) -> Found:
    return [
        (f"{q(c.name)} = 0", text(f"{c.name} must be above 0, got 0"))
        for c in ctx.table.columns
        if c.positive
    ]


@_spark("implausible")
def _implausible(ctx: _Ctx) -> Found:
    found: Found = [
        (
            f"{q(c.name)} > {c.most!r}",
            _format(
                f"{c.name} %s is above {c.most:,}, the plausible most: check the unit",
                f"CAST({q(c.name)} AS STRING)",
            ),
        )
        for c in ctx.table.columns
        if c.most is not None
    ]
    for c in ctx.table.columns:
        if c.least is None or c.hint is None:
            continue
        col = q(c.name)
        instead = f"CAST(CAST({col} * {c.hint.factor!r} AS BIGINT) AS STRING)"
        found.append(
            (
                f"({col} > 0 AND {col} < {c.least!r})",
                _format(c.hint.spark(c.name), _shown(col), instead),
            )
        )
    return found


@_spark("free_above_total")
def _free_above_total(ctx: _Ctx) -> Found:
    if not {"disk_free_bytes", "disk_total_bytes"} <= set(ctx.table.names):
        return []
    free, total = q("disk_free_bytes"), q("disk_total_bytes")
    reason = _format("disk_free_bytes %d is above disk_total_bytes %d", free, total)
    return [(f"{free} > {total}", reason)]


def _one_of(value: Sql, allowed: Sequence[str]) -> Sql:
    return f"{value} IN ({', '.join(text(a) for a in allowed)})"


@_spark("bad_state")
def _bad_state(ctx: _Ctx) -> Found:
    # NodeState.parse: case, '-' and '_' do not matter ("read-only" is readonly).
    states = [s.value for s in NodeState]
    plain = "regexp_replace(lower(trim({})), '[-_]', '')"
    return [
        (
            f"NOT ({_one_of(plain.format(q(c.name)), states)})",
            _format("state %s is not writable, readonly or down", q(c.name)),
        )
        for c in ctx.table.of(Kind.STATE)
    ]


@_spark("bad_role")
def _bad_role(ctx: _Ctx) -> Found:
    roles = [r.value for r in Role]
    plain = "lower(trim(coalesce({}, '')))"
    return [
        (
            f"NOT ({_one_of(plain.format(q(c.name)), roles)})",
            _format("role %s is not bookie, broker or empty (both)", q(c.name)),
        )
        for c in ctx.table.of(Kind.ROLE)
    ]


@_spark("bad_node_id")
def _bad_node_id(ctx: _Ctx) -> Found:
    return [
        (
            f"NOT (trim({q(c.name)}) RLIKE {text(NODE_ID_PATTERN)})",
            _format(f"{c.name} %s is not host:port", q(c.name)),
        )
        for c in ctx.table.of(Kind.NODE_ID)
    ]


@_spark("bad_location")
def _bad_location(ctx: _Ctx) -> Found:
    return [
        (
            f"contains({q(c.name)}, '/')",
            _format(f"{c.name} %s must not contain '/'", q(c.name)),
        )
        for c in ctx.table.of(Kind.LOCATION)
    ]


@_spark("bad_topic")
def _bad_topic(ctx: _Ctx) -> Found:
    found: Found = []
    for c in ctx.table.of(Kind.TOPIC):
        topic = f"trim({q(c.name)})"
        bad = f"(NOT ({topic} RLIKE {text(TOPIC_PATTERN)}) OR {_one_of(topic, ['.', '..'])})"
        found.append((bad, _format("bad topic name %s", topic)))
    return found


@_spark("future_timestamp")
def _future_timestamp(ctx: _Ctx) -> Found:
    return [
        (
            _after(q(c.name), ctx.limit),
            _format(f"{c.name} %s is in the future", f"CAST({q(c.name)} AS STRING)"),
        )
        for c in ctx.table.of(Kind.TIMESTAMP)
    ]


def time_limit(micros: Sql) -> Sql:
    """The latest time a sample may have, ``micros`` (SQL: epoch microseconds), as a DECIMAL.

    Spark writes a timestamp or long constant into the class it generates, so a run with
    another ``now`` (and every micro-batch of a stream) compiled the row rules of every
    table again: on the demo fleet, a dozen large classes and about 2 s a run. A decimal
    constant is handed to the generated class as an object, so its code stays the same.
    """
    return f"CAST({micros} AS DECIMAL(18, 0))"


def _after(column: Sql, limit: Sql) -> Sql:
    """``column`` (a timestamp) is later than ``limit`` (:func:`time_limit`). Past 18 digits
    of microseconds (year 33658) the cast fails, and such a time is in the future anyway."""
    micros = f"unix_micros({column})"
    return f"coalesce(try_cast({micros} AS DECIMAL(18, 0)) > {limit}, {micros} > 0)"


def _bad_bundle(table: Table) -> Found:
    return [
        (
            f"NOT (trim({q(c.name)}) RLIKE {text('(?U)' + BUNDLE_PATTERN)})",
            _format("bad bundle name %s: expected tenant/namespace/0xLOWER_0xUPPER", q(c.name)),
        )
        for c in table.of(Kind.BUNDLE)
    ]


#: The Spark check of each rule of scope "key", decided per key by :func:`key_verdict`.
KEY_CHECKS: dict[str, Callable[[Table], Found]] = {"bad_bundle": _bad_bundle}
# In the order of ROW_RULES (tested), as the registrations above ran.
SPARK_CHECKS = dict(sorted(SPARK_CHECKS.items(), key=lambda item: _ORDER[item[0]]))


def row_rules_sql(table: Table, texts: dict[str, Sql], limit: Sql) -> Sql:
    """The first row rule a row breaks, as ``struct(r: rule, m: reason)``, else null.

    ``texts`` holds each column's input as text, used only in reasons and only evaluated for
    a row that breaks the rule (CASE branches are lazy); ``limit`` is the latest time a
    sample may have, from :func:`time_limit`.
    """
    ctx = _Ctx(table, texts, limit)
    found = [
        (rule.name, cond, why)
        for rule in ROW_RULES
        if rule.scope == "row"
        for cond, why in SPARK_CHECKS[rule.name](ctx)
    ]
    return _first_non_null(
        [f"CASE WHEN {c} THEN named_struct('r', {text(r)}, 'm', {why}) END" for r, c, why in found]
    )


def row_rules(table: Table, texts: dict[str, Sql], limit: Sql) -> SparkColumn:
    """:func:`row_rules_sql` as a column (parsed once)."""
    return F.expr(row_rules_sql(table, texts, limit))


def key_verdict_sql(table: Table) -> list[tuple[str, Sql, Sql]]:
    """``(rule, condition, reason)`` of each key-scope rule, in order, as SQL over a frame of
    keys (the first broken one wins)."""
    return [
        (rule.name, cond, why)
        for rule in ROW_RULES
        if rule.scope == "key"
        for cond, why in KEY_CHECKS[rule.name](table)
    ]


def key_verdict(table: Table) -> tuple[SparkColumn, SparkColumn] | None:
    """:func:`key_verdict_sql` as ``(rule, reason)`` columns; None when the table has none."""
    found = key_verdict_sql(table)
    if not found:
        return None
    rule = " ".join(f"WHEN {cond} THEN {text(name)}" for name, cond, _ in found)
    reason = " ".join(f"WHEN {cond} THEN {why}" for _, cond, why in found)
    return F.expr(f"CASE {rule} END"), F.expr(f"CASE {reason} END")
