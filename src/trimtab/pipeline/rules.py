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
from functools import reduce

from pyspark.sql import Column as SparkColumn
from pyspark.sql import functions as F

from trimtab.cluster import NodeState, Role
from trimtab.contract import (
    BUNDLE_PATTERN,
    LONG_MAX,
    NODE_ID_PATTERN,
    ROW_RULES,
    TOPIC_PATTERN,
    Column,
    Kind,
    Table,
)

__all__ = [
    "KEY_CHECKS",
    "SPARK_CHECKS",
    "key_verdict",
    "parse_long",
    "parse_timestamp",
    "row_rules",
]

_NUMBERS = (Kind.FRACTION, Kind.RATE)
# Epoch seconds beyond this are not a time any sample has (year 5138): refused, not overflowed.
_EPOCH_MAX = 1e11


@dataclass(frozen=True, slots=True)
class _Ctx:
    """What a rule needs: the table, each column's input as text (reasons only), and the
    latest time a sample may have."""

    table: Table
    texts: dict[str, SparkColumn]
    limit: SparkColumn


Found = list[tuple[SparkColumn, SparkColumn]]


#: The Spark check of each row rule of scope "row" (Python's are in trimtab.contract).
SPARK_CHECKS: dict[str, Callable[[_Ctx], Found]] = {}
_ORDER = {rule.name: i for i, rule in enumerate(ROW_RULES)}


def _spark(rule: str) -> Callable[[Callable[[_Ctx], Found]], Callable[[_Ctx], Found]]:
    """Register the decorated function as the Spark check of ``rule``."""

    def register(check: Callable[[_Ctx], Found]) -> Callable[[_Ctx], Found]:
        SPARK_CHECKS[rule] = check
        return check

    return register


def _blank(column: SparkColumn) -> SparkColumn:
    return column.isNull() | (F.trim(column) == "")


def _any(conditions: Sequence[SparkColumn]) -> SparkColumn | None:
    return reduce(lambda a, b: a | b, conditions) if conditions else None


def _first_of(columns: Sequence[Column], hit: Callable[[SparkColumn], SparkColumn]) -> Found:
    """One condition for all ``columns``; the reason names the first one hit, built lazily."""
    cond = _any([hit(F.col(c.name)) for c in columns])
    if cond is None:
        return []
    which = F.coalesce(*[F.when(hit(F.col(c.name)), F.lit(c.name)) for c in columns])
    return [(cond, which)]


def parse_long(source: SparkColumn) -> SparkColumn:
    """A text cell as a long: ``8`` and also whole floats (``8.0``, ``1e3``), as the Python
    readers take them; null if not whole or beyond a long."""
    as_double = source.try_cast("double")
    # ``% 1`` rather than floor(), which is a long and would overflow on 1e20.
    whole = (as_double % 1 == 0) & (F.abs(as_double) < float(LONG_MAX))
    return F.coalesce(source.try_cast("long"), F.when(whole, as_double.cast("long")))


def parse_timestamp(source: SparkColumn) -> SparkColumn:
    """A text cell as a timestamp: ISO 8601, or epoch seconds as the Python readers take."""
    seconds = source.try_cast("double")
    epoch = F.when(F.abs(seconds) < _EPOCH_MAX, F.timestamp_seconds(seconds))
    return F.coalesce(F.try_to_timestamp(source), epoch)


@_spark("malformed")
def _malformed(ctx: _Ctx) -> Found:
    return [
        (F.col("_corrupt").isNotNull(), F.lit("the line does not parse as a row of this table"))
    ]


@_spark("missing_key")
def _missing_key(ctx: _Ctx) -> Found:
    found: Found = []
    for column in ctx.table.columns:
        if not (column.key and column.required):
            continue
        if column.kind is Kind.TIMESTAMP:
            missing = F.col(column.name).isNull() & _blank(ctx.texts[column.name])
        else:
            missing = _blank(F.col(column.name))
        found.append((missing, F.lit(f"missing {column.name}")))
    return found


@_spark("bad_timestamp")
def _bad_timestamp(ctx: _Ctx) -> Found:
    return [
        (
            F.col(c.name).isNull(),
            F.format_string(f"{c.name} %s is not a timestamp", ctx.texts[c.name]),
        )
        for c in ctx.table.of(Kind.TIMESTAMP)
    ]


@_spark("wrong_type")
def _wrong_type(ctx: _Ctx) -> Found:
    return [
        (F.col("_type_errors") != "", F.format_string("not a number: %s", F.col("_type_errors")))
    ]


@_spark("missing_value")
def _missing_value(ctx: _Ctx) -> Found:
    columns = [c for c in ctx.table.columns if c.required and not c.key]
    found = _first_of([c for c in columns if c.type == "string"], _blank)
    numbers = [c for c in columns if c.type != "string"]
    if numbers:
        # One null test for all: a sum of zeros is null when any term is (``* 0``: no overflow).
        cond = _zeros(numbers).isNull()
        which = F.coalesce(*[F.when(F.col(c.name).isNull(), F.lit(c.name)) for c in numbers])
        found.append((cond, which))
    return [(cond, F.format_string("missing %s", which)) for cond, which in found]


@_spark("not_finite")
def _not_finite(ctx: _Ctx) -> Found:
    columns = ctx.table.of(*_NUMBERS)
    if not columns:
        return []
    # x * 0 is 0 for a finite x and NaN for NaN or an infinity: one comparison per row.
    which = F.coalesce(*[F.when(_infinite(F.col(c.name)), F.lit(c.name)) for c in columns])
    return [(_zeros(columns) != 0, F.format_string("%s is not a finite number", which))]


def _infinite(col: SparkColumn) -> SparkColumn:
    return F.isnan(col) | (F.abs(col) == float("inf"))


def _zeros(columns: Sequence[Column]) -> SparkColumn:
    return reduce(lambda a, b: a + b, [F.col(c.name) * 0 for c in columns])


@_spark("out_of_range")
def _out_of_range(ctx: _Ctx) -> Found:
    return [
        (
            (F.col(c.name) < 0) | (F.col(c.name) > 1),
            F.format_string(f"{c.name} %s is outside 0..1", F.col(c.name)),
        )
        for c in ctx.table.of(Kind.FRACTION)
    ]


@_spark("negative")
def _negative(ctx: _Ctx) -> Found:
    return [
        (
            F.col(c.name) < 0,
            F.format_string(f"{c.name} %s is negative", F.col(c.name).cast("string")),
        )
        for c in ctx.table.of(Kind.COUNT, Kind.RATE)
    ]


@_spark("not_positive")
def _not_positive(ctx: _Ctx) -> Found:
    return [
        (F.col(c.name) == 0, F.lit(f"{c.name} must be above 0, got 0"))
        for c in ctx.table.columns
        if c.positive
    ]


@_spark("implausible")
def _implausible(ctx: _Ctx) -> Found:
    return [
        (
            F.col(c.name) > F.lit(c.most),
            F.format_string(
                f"{c.name} %s is above {c.most:,}, the plausible most: check the unit",
                F.col(c.name).cast("string"),
            ),
        )
        for c in ctx.table.columns
        if c.most is not None
    ]


@_spark("free_above_total")
def _free_above_total(ctx: _Ctx) -> Found:
    if not {"disk_free_bytes", "disk_total_bytes"} <= set(ctx.table.names):
        return []
    free, total = F.col("disk_free_bytes"), F.col("disk_total_bytes")
    reason = F.format_string("disk_free_bytes %d is above disk_total_bytes %d", free, total)
    return [(free > total, reason)]


@_spark("bad_state")
def _bad_state(ctx: _Ctx) -> Found:
    # NodeState.parse: case, '-' and '_' do not matter ("read-only" is readonly).
    states = [s.value for s in NodeState]
    return [
        (
            ~F.regexp_replace(F.lower(F.trim(F.col(c.name))), "[-_]", "").isin(*states),
            F.format_string("state %s is not writable, readonly or down", F.col(c.name)),
        )
        for c in ctx.table.of(Kind.STATE)
    ]


@_spark("bad_role")
def _bad_role(ctx: _Ctx) -> Found:
    roles = [r.value for r in Role]
    return [
        (
            ~F.lower(F.trim(F.coalesce(F.col(c.name), F.lit("")))).isin(*roles),
            F.format_string("role %s is not bookie, broker or empty (both)", F.col(c.name)),
        )
        for c in ctx.table.of(Kind.ROLE)
    ]


@_spark("bad_node_id")
def _bad_node_id(ctx: _Ctx) -> Found:
    return [
        (
            ~F.trim(F.col(c.name)).rlike(NODE_ID_PATTERN),
            F.format_string(f"{c.name} %s is not host:port", F.col(c.name)),
        )
        for c in ctx.table.of(Kind.NODE_ID)
    ]


@_spark("bad_location")
def _bad_location(ctx: _Ctx) -> Found:
    return [
        (
            F.col(c.name).contains("/"),
            F.format_string(f"{c.name} %s must not contain '/'", F.col(c.name)),
        )
        for c in ctx.table.of(Kind.LOCATION)
    ]


@_spark("bad_topic")
def _bad_topic(ctx: _Ctx) -> Found:
    found: Found = []
    for c in ctx.table.of(Kind.TOPIC):
        topic = F.trim(F.col(c.name))
        bad = ~topic.rlike(TOPIC_PATTERN) | topic.isin(".", "..")
        found.append((bad, F.format_string("bad topic name %s", topic)))
    return found


@_spark("future_timestamp")
def _future_timestamp(ctx: _Ctx) -> Found:
    return [
        (
            F.col(c.name) > ctx.limit,
            F.format_string(f"{c.name} %s is in the future", F.col(c.name).cast("string")),
        )
        for c in ctx.table.of(Kind.TIMESTAMP)
    ]


def _bad_bundle(table: Table) -> Found:
    return [
        (
            ~F.trim(F.col(c.name)).rlike("(?U)" + BUNDLE_PATTERN),
            F.format_string(
                "bad bundle name %s: expected tenant/namespace/0xLOWER_0xUPPER", F.col(c.name)
            ),
        )
        for c in table.of(Kind.BUNDLE)
    ]


#: The Spark check of each rule of scope "key", decided per key by :func:`key_verdict`.
KEY_CHECKS: dict[str, Callable[[Table], Found]] = {"bad_bundle": _bad_bundle}
# In the order of ROW_RULES (tested), as the registrations above ran.
SPARK_CHECKS = dict(sorted(SPARK_CHECKS.items(), key=lambda item: _ORDER[item[0]]))


def row_rules(table: Table, texts: dict[str, SparkColumn], limit: SparkColumn) -> SparkColumn:
    """The first row rule a row breaks, as ``struct(r: rule, m: reason)``, else null.

    ``texts`` holds each column's input as text, used only in reasons and only evaluated for
    a row that breaks the rule (CASE branches are lazy).
    """
    ctx = _Ctx(table, texts, limit)
    found = [
        (rule.name, cond, why)
        for rule in ROW_RULES
        if rule.scope == "row"
        for cond, why in SPARK_CHECKS[rule.name](ctx)
    ]
    return F.coalesce(
        *[F.when(cond, F.struct(F.lit(r).alias("r"), why.alias("m"))) for r, cond, why in found]
    )


def key_verdict(table: Table) -> tuple[SparkColumn, SparkColumn] | None:
    """``(rule, reason)`` columns over a frame of keys for the key-scope rules, the first
    broken one winning; None when the table has none."""
    found = [
        (rule.name, cond, why)
        for rule in ROW_RULES
        if rule.scope == "key"
        for cond, why in KEY_CHECKS[rule.name](table)
    ]
    if not found:
        return None
    rule = F.when(found[0][1], F.lit(found[0][0]))
    reason = F.when(found[0][1], found[0][2])
    for name, cond, why in found[1:]:
        rule, reason = rule.when(cond, F.lit(name)), reason.when(cond, why)
    return rule, reason
