"""The tables and their rules as data: columns, types, keys, required or optional, and the
row rules in the order they are checked (see :mod:`trimtab.contract`)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

__all__ = [
    "BITS_PER_S_MAX",
    "BUNDLE_PATTERN",
    "BYTES_MAX",
    "BYTES_PER_S_MAX",
    "CORES_MAX",
    "DISK_BYTES_LEAST",
    "EPOCH_MS_MAX",
    "EPOCH_S_MAX",
    "FUTURE_TOLERANCE_S",
    "LONG_MAX",
    "MEMBERSHIP_RULES",
    "MEMORY_BYTES_LEAST",
    "MESSAGES_PER_S_MAX",
    "MS_HINT",
    "NIC_BPS_LEAST",
    "NODE_ID_PATTERN",
    "PARTITIONS_MAX",
    "PERCENT_HINT",
    "REPLACEMENT",
    "REPLICAS_MAX",
    "ROW_RULES",
    "TABLES",
    "TOPIC_PATTERN",
    "Column",
    "ColumnType",
    "Kind",
    "Row",
    "RowError",
    "Rule",
    "Table",
    "UnitHint",
    "not_utf8",
]

ColumnType = Literal["string", "double", "long", "timestamp"]
Row = dict[str, Any]

#: How far in the future a sample's ``ts`` may lie before it is refused (clock skew).
FUTURE_TOLERANCE_S = 300.0
#: Epoch seconds at or beyond this are not a time any sample has (year 5138): such a ``ts``
#: is ``bad_timestamp``; up to :data:`EPOCH_MS_MAX` it reads as epoch milliseconds, and the
#: reason says what to write (the same bound in the readers and the pipeline).
EPOCH_S_MAX = 1e11
EPOCH_MS_MAX = 1e14
#: The reason for a ``ts`` in milliseconds: ``{name}``, ``{v}`` as given, ``{x}`` in seconds.
MS_HINT = "{name} {v} is epoch milliseconds; {name} is epoch seconds: write {x}"
#: The largest whole number a ``count`` column holds (Spark's ``long``).
LONG_MAX = 2**63 - 1
# The most a node (or one bundle, one request) can plausibly have or do. A cell above its bound
# is a unit mistake or garbage (cores 1e29, a 1e308 throughput), refused as ``implausible``
# with the bound in the reason, before it can overflow a sum or a percentage downstream.
#: Cores of one machine.
CORES_MAX = 65_536
#: Bytes of memory, disk or storage of one node or bundle (4 EiB).
BYTES_MAX = 2**62
#: A network rate in bits per second (10 Tb/s).
BITS_PER_S_MAX = 10**13
#: A throughput in bytes per second (1 TB/s).
BYTES_PER_S_MAX = 10**12
#: Messages per second of one node or bundle.
MESSAGES_PER_S_MAX = 10**10
#: Partitions of one allocation request.
PARTITIONS_MAX = 1_000_000
#: Replicas of one partition.
REPLICAS_MAX = 1_000
#: ``tenant/namespace/0xLOWER_0xUPPER``, what pulsar-admin takes (Java and Python regex alike).
#: Each of tenant and namespace holds a character that is not whitespace (Spark matches with
#: Java's ``(?U)``, Unicode whitespace as Python's ``\s``; ``\x1c-\x1f`` Python strips too), so a
#: name Spark accepts is one :func:`~trimtab.contract.split_bundle` accepts after stripping.
BUNDLE_PATTERN = (
    r"^[^/]*[^/\s\x1c-\x1f][^/]*/[^/]*[^/\s\x1c-\x1f][^/]*/0x[0-9a-fA-F]{1,16}_0x[0-9a-fA-F]{1,16}$"
)
#: host[:port] as :class:`~trimtab.cluster.NodeId` accepts it (bracketed IPv6 allowed).
NODE_ID_PATTERN = (
    r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.\-]+)"
    r"(:0*([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?$"
)
#: A topic name Kafka accepts (besides ``.`` and ``..``).
TOPIC_PATTERN = r"^[A-Za-z0-9._-]{1,249}$"


class Kind(StrEnum):
    """The family of values a column holds, which decides the rules it obeys."""

    TEXT = "text"  # free text
    NODE_ID = "node_id"  # an inventory node's id: host[:port]
    NODE_REF = "node_ref"  # a telemetry row's node or broker: must be in the inventory
    LOCATION = "location"  # a region or rack name: no '/'
    FRACTION = "fraction"  # a usage in 0..1
    COUNT = "count"  # a whole number >= 0 within a long
    RATE = "rate"  # a finite number >= 0
    TIMESTAMP = "timestamp"
    STATE = "state"  # writable, readonly or down
    HEALTH = "health"  # up, down, maintenance or draining (the node_health table)
    ROLE = "role"  # bookie, broker or empty (both)
    BUNDLE = "bundle"  # tenant/namespace/0xLOWER_0xUPPER
    TOPIC = "topic"  # a Kafka topic name


_NUMBERS = (Kind.FRACTION, Kind.RATE)


@dataclass(frozen=True, slots=True)
class UnitHint:
    """What a value below a column's plausible least most likely is, in words a reason can
    carry: ``text`` with ``{v}`` (the value as given) and ``{x}`` (the value times ``factor``,
    what to write instead) and ``{name}`` (the column). Python fills it with :meth:`format`,
    Spark with ``format_string`` (:meth:`spark`), so both say the same words."""

    text: str
    factor: float

    def format(self, name: str, value: str, instead: str) -> str:
        """The reason for column ``name`` holding ``value`` (``instead``: what to write)."""
        return self.text.format(name=name, v=value, x=instead)

    def spark(self, name: str) -> str:
        """``text`` as a ``format_string`` pattern: ``{v}`` is argument 1, ``{x}`` 2."""
        pattern = self.text.replace("%", "%%").replace("{name}", name)
        return pattern.replace("{v}", "%1$s").replace("{x}", "%2$s")


@dataclass(frozen=True, slots=True)
class Column:
    """One column. ``required``: the column must be in every file and its value not blank
    (an optional column may be absent; a blank value is then unknown). ``key``: the column
    names the row (blank -> ``missing_key``). ``positive``: a count that must be above 0.
    ``most``: the largest plausible value of a number (above: ``implausible``). ``least``:
    the smallest plausible value (below: ``implausible``, the reason from ``hint`` naming the
    unit the value seems to be in)."""

    name: str
    type: ColumnType
    kind: Kind
    required: bool = True
    key: bool = False
    positive: bool = False
    most: int | None = None
    least: int | None = None
    hint: UnitHint | None = None


@dataclass(frozen=True, slots=True)
class Table:
    """One input table; ``label`` names it in messages, ``optional`` tables may be absent."""

    name: str
    label: str
    columns: tuple[Column, ...]
    optional: bool = False

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns if c.required)

    @property
    def optional_columns(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns if not c.required)

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns if c.key)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def of(self, *kinds: Kind) -> tuple[Column, ...]:
        return tuple(c for c in self.columns if c.kind in kinds)


@dataclass(frozen=True, slots=True)
class Rule:
    """A rule's name (as the quarantine and the readers report it) and what it refuses."""

    name: str
    meaning: str
    scope: Literal["row", "key"] = "row"


class RowError(ValueError):
    """A row refused by ``rule``; the message is the reason."""

    def __init__(self, rule: str, reason: str) -> None:
        super().__init__(reason)
        self.rule = rule


def _c(
    name: str,
    type_: ColumnType,
    kind: Kind,
    *,
    required: bool = True,
    key: bool = False,
    positive: bool = False,
    most: int | None = None,
) -> Column:
    return Column(name, type_, kind, required, key, positive, most)


def _bytes(name: str, *, required: bool = True) -> Column:
    return _c(name, "long", Kind.COUNT, required=required, most=BYTES_MAX)


def _capacity(
    name: str, least: int, hint: UnitHint, *, most: int = BYTES_MAX, positive: bool = False
) -> Column:
    """An inventory capacity: a whole number with a plausible least, under which (0 aside,
    "none") it is most likely written in a bigger unit (10 meant as 10 Gb/s)."""
    return Column(name, "long", Kind.COUNT, True, False, positive, most, least, hint)


#: The least plausible NIC speed of a node (1 Mb/s), memory (1 MiB) and disk (1 MB): below,
#: the value is most likely in Gb/s, GiB or GB, and the reason says what to write instead.
#: (Low on purpose: upstream's own tests run bookies of 10 MB disks, and they must load.)
NIC_BPS_LEAST = 10**6
MEMORY_BYTES_LEAST = 2**20
DISK_BYTES_LEAST = 10**6
_NIC_HINT = UnitHint("nic_bps {v} is {v} bit/s; for {v} Gb/s write {x}", 1e9)
_MEMORY_HINT = UnitHint("memory_bytes {v} is {v} bytes; for {v} GiB write {x}", 2**30)
_DISK_HINT = UnitHint("disk_total_bytes {v} is {v} bytes; for {v} GB write {x}", 1e9)
#: Usages are fractions; a value above 1 is most likely a percentage.
PERCENT_HINT = UnitHint("{name} {v} is above 1: usages are fractions; for {v} % write {x}", 0.01)


_TS = _c("ts", "timestamp", Kind.TIMESTAMP, key=True)
_CLUSTER = _c("cluster", "string", Kind.TEXT, key=True)
_RATES = (
    *(
        _c(n, "double", Kind.RATE, most=MESSAGES_PER_S_MAX)
        for n in ("msg_in_per_s", "msg_out_per_s")
    ),
    *(
        _c(n, "double", Kind.RATE, most=BYTES_PER_S_MAX)
        for n in ("throughput_in_bytes_per_s", "throughput_out_bytes_per_s")
    ),
)

#: Every input table, by the name of its directory under the pipeline's input.
TABLES: dict[str, Table] = {
    "nodes": Table(
        "nodes",
        "inventory",
        (
            _CLUSTER,
            _c("node", "string", Kind.NODE_ID, key=True),
            _c("region", "string", Kind.LOCATION, required=False),
            _c("rack", "string", Kind.LOCATION, required=False),
            _c("cores", "long", Kind.COUNT, positive=True, most=CORES_MAX),
            _capacity("memory_bytes", MEMORY_BYTES_LEAST, _MEMORY_HINT),
            _capacity("disk_total_bytes", DISK_BYTES_LEAST, _DISK_HINT),
            _bytes("disk_free_bytes", required=False),
            _capacity("nic_bps", NIC_BPS_LEAST, _NIC_HINT, most=BITS_PER_S_MAX, positive=True),
            _c("state", "string", Kind.STATE),
            _c("role", "string", Kind.ROLE, required=False),
        ),
    ),
    "node_metrics": Table(
        "node_metrics",
        "node_metrics",
        (
            _TS,
            _CLUSTER,
            _c("node", "string", Kind.NODE_REF, key=True),
            _c("cpu", "double", Kind.FRACTION),
            _c("memory", "double", Kind.FRACTION),
            _c("direct_memory", "double", Kind.FRACTION),
            _c("net_in_bps", "double", Kind.RATE, most=BITS_PER_S_MAX),
            _c("net_out_bps", "double", Kind.RATE, most=BITS_PER_S_MAX),
            *_RATES,
            _bytes("disk_free_bytes", required=False),
            _bytes("disk_total_bytes", required=False),
        ),
    ),
    "bundle_metrics": Table(
        "bundle_metrics",
        "bundle_metrics",
        (
            _TS,
            _CLUSTER,
            _c("bundle", "string", Kind.BUNDLE, key=True),
            _c("broker", "string", Kind.NODE_REF, key=True),
            *_RATES,
            _bytes("storage_bytes", required=False),
        ),
    ),
    "allocation_requests": Table(
        "allocation_requests",
        "allocation requests",
        (
            # Blank: the inventory's only cluster (or the one the command names).
            _c("cluster", "string", Kind.TEXT, required=False, key=True),
            _c("topic", "string", Kind.TOPIC, key=True),
            _c("partitions", "long", Kind.COUNT, positive=True, most=PARTITIONS_MAX),
            _c("replication_factor", "long", Kind.COUNT, positive=True, most=REPLICAS_MAX),
            _bytes("partition_size_bytes", required=False),
        ),
        optional=True,
    ),
    # What the partition balancer (``trimtab rebalance --health``) knows of each broker: a
    # node left out is up. ``down_since`` (when it stopped answering) lets the availability
    # timeout decide; blank on a down node means down longer than the timeout.
    "node_health": Table(
        "node_health",
        "node health",
        (
            _c("cluster", "string", Kind.TEXT, required=False, key=True),
            _c("node", "string", Kind.NODE_REF, key=True),
            _c("state", "string", Kind.HEALTH),
            _c("down_since", "timestamp", Kind.TIMESTAMP, required=False),
        ),
        optional=True,
    ),
}

#: What a decoder puts for bytes that are not UTF-8 (Spark's readers and Python's with
#: ``errors="replace"``): a value holding it came from a file in another encoding.
REPLACEMENT = "\ufffd"


def not_utf8(column: str) -> str:
    """The reason of a row whose ``column`` held bytes that are not UTF-8 (one wording for the
    readers, the batch job and the stream)."""
    return (
        f"{column} holds bytes that are not UTF-8 (a Latin-1 or Windows export?): save the "
        "file as UTF-8 (CSV UTF-8 in Excel)"
    )


#: The row rules in the order they are checked; the first one broken is the row's verdict.
ROW_RULES: tuple[Rule, ...] = (
    Rule(
        "malformed",
        "the line is not a row of the table (not JSON, more fields than columns, text that "
        "is not UTF-8)",
    ),
    Rule("missing_key", "a column naming the row (cluster, node, bundle, topic, ts) is blank"),
    Rule("bad_timestamp", "ts is neither epoch seconds nor ISO 8601"),
    Rule("wrong_type", "a number column holds no number, or a whole-number column no long"),
    Rule("missing_value", "a required value (cores, state, cpu, partitions...) is blank"),
    Rule("not_finite", "a number is NaN or infinite"),
    Rule(
        "out_of_range",
        "a usage (cpu, memory, direct_memory) lies outside 0..1 (above 1: most likely a "
        "percentage, the reason says the fraction to write)",
    ),
    Rule("negative", "a count or rate is below 0"),
    Rule("not_positive", "cores, nic_bps, partitions or replication_factor is 0"),
    Rule(
        "implausible",
        "a number above what one machine can have or do (its column's most), or a capacity "
        "below its least (nic_bps under 1 Mb/s, memory_bytes under 1 MiB, disk_total_bytes "
        "under 1 MB: most likely written in Gb/s, GiB or GB); the reason names the unit",
    ),
    Rule("free_above_total", "disk_free_bytes is above disk_total_bytes"),
    Rule(
        "bad_state",
        "state is not writable, readonly or down (node_health: up, down, maintenance, draining)",
    ),
    Rule("bad_role", "role is not bookie, broker or empty (both)"),
    Rule("bad_node_id", "an inventory node is not host[:port]"),
    Rule("bad_location", "region or rack contains '/'"),
    Rule("bad_topic", "a topic name Kafka would refuse"),
    Rule("future_timestamp", "ts lies in the future beyond the tolerance (300 s by default)"),
    Rule("bad_bundle", "a bundle is not tenant/namespace/0xLOWER_0xUPPER", scope="key"),
)
#: Rules that need other rows, checked after the row rules.
MEMBERSHIP_RULES: tuple[Rule, ...] = (
    Rule("unknown_cluster", "the row's cluster is not in the accepted inventory"),
    Rule("unknown_node", "the row's node or broker is not a node of its cluster"),
    Rule("duplicate", "an exact copy of an earlier row with the same key (the first is kept)"),
    Rule("conflict", "rows with the same key (for samples: and ts) that differ: all refused"),
)
