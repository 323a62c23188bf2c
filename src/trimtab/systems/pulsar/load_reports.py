"""Pulsar's broker load reports (``LocalBrokerData`` JSON), read and written.

Goals
    Point trimtab at a cluster as it is: each broker of the modular load manager writes its
    ``LocalBrokerData`` to ``/loadbalance/brokers/<host:port>``; ``pulsar-admin broker-stats
    load-report`` prints the same document. A report becomes one ``node_metrics`` row and one
    ``bundle_metrics`` row per bundle (:meth:`LoadReport.node_row`,
    :meth:`LoadReport.bundle_rows`), which :mod:`~trimtab.systems.pulsar.snapshots` checks by
    the table contract (:mod:`trimtab.contract`) and turns into the shedder's snapshot: one
    path, the same rules as the tables. (Pulsar's load reports, not trimtab's HTML report,
    which is :mod:`trimtab.report`.)

The document (upstream ``LocalBrokerData``, ``ResourceUsage``, ``NamespaceBundleStats``)
    * ``cpu``, ``memory``, ``directMemory``, ``bandwidthIn``, ``bandwidthOut``: ``{usage,
      limit}``. cpu in percent of one core (limit = 100 × cores), memory in MiB, bandwidth in
      kilobits/s. A share is ``usage / limit``, and 0 when ``limit <= 0`` (unknown), as
      upstream's ``percentUsage``.
    * ``msgThroughputIn/Out`` (bytes/s), ``msgRateIn/Out`` (msg/s), ``lastUpdate`` (epoch ms;
      one in epoch seconds is refused saying so and what to write).
    * ``lastStats``: bundle -> ``{msgRateIn, msgThroughputIn, msgRateOut, msgThroughputOut,
      consumerCount, producerCount, topics, cacheSize}``.
    * The extensible load manager (PIP-192) writes ``BrokerLoadData`` instead: the same
      usages and rates, ``updatedAt`` for ``lastUpdate``, no bundles; its busiest bundles are
      a ``TopBundlesLoadData`` (``{"topBundlesLoadData": [{"bundleName", "stats"}]}``), read
      from ``<host:port>.top-bundles.json`` beside ``<host:port>.json``
      (:func:`read_report_dir`), or both from the saved output of ``pulsar-client consume``
      on PIP-192's two system topics (:mod:`~trimtab.systems.pulsar.consume_output`). Both
      are read as one report.
    * ``bundles``, ``webServiceUrl``, ``pulsarServiceUrl``, ``brokerVersionString``, ...:
      kept for display; every other field is ignored, as upstream's readers ignore them.

Rules
    * Required: the five usages (each with numeric ``usage`` and ``limit``), the four rates,
      ``lastUpdate`` and ``lastStats`` (each bundle with its four rates). Missing or mistyped,
      the report is refused naming the file or znode and the field (:class:`ReportError`).
    * ``usage > limit`` (with a known limit) is refused for cpu, memory and direct memory:
      cpu usage is measured as a share of that very limit, and the JVM never holds more heap
      or direct memory than its maximum. Bandwidth may exceed its limit (a NIC speed detected
      wrong or overridden, upstream #21409), as upstream's within-limit rule expects.
    * The broker is the znode's name, else the file's name if it is ``host:port``, else the
      host:port of ``webServiceUrl`` (what upstream names the znode after).
    * Heartbeat and SLA-monitor bundles (``pulsar/<cluster>/<host:port>``,
      ``pulsar/<host:port>``, ``sla-monitor/<cluster>/<host:port>``) are never shed upstream:
      they count in the broker's totals but give no ``bundle_metrics`` row.
    * Limits come from the report: cores = cpu limit / 100, memory = memory limit MiB, NIC =
      bandwidth-in limit (else out) kb/s. No inventory is needed.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from trimtab.cluster import Capacity, NodeId
from trimtab.errors import ReportError
from trimtab.readers.sniff import raw_kind, seems_to_be
from trimtab.readers.special_files import refuse_special
from trimtab.systems.pulsar.consume_output import is_consume_output, messages

__all__ = [
    "LAST_UPDATE_MS_LEAST",
    "REPORT_COMMAND",
    "RESOURCES",
    "BundleStats",
    "LoadReport",
    "ResourceUsage",
    "broker_of_file",
    "is_system_bundle",
    "is_top_bundles",
    "parse_report",
    "parse_top_bundles",
    "read_report_dir",
    "to_document",
]

#: The five resources of a report, as upstream spells them.
RESOURCES = ("cpu", "memory", "directMemory", "bandwidthIn", "bandwidthOut")
#: Resources whose usage cannot exceed a known limit (see the module docstring).
_BOUNDED = ("cpu", "memory", "directMemory")
_RATES = ("msgThroughputIn", "msgThroughputOut", "msgRateIn", "msgRateOut")
_BUNDLE_RATES = ("msgRateIn", "msgThroughputIn", "msgRateOut", "msgThroughputOut")
_BUNDLE_COUNTS = ("consumerCount", "producerCount", "topics", "cacheSize")
_MIB = 1024 * 1024
#: upstream ``NamespaceService``: heartbeat (v1, v2) and SLA-monitor namespaces.
_SYSTEM = re.compile(r"^(pulsar/[^/]+/[^/:]+:\d+|pulsar/[^/:]+:\d+|sla-monitor/[^/]+/[^/:]+:\d+)$")


def is_system_bundle(bundle: str) -> bool:
    """Whether ``bundle`` belongs to a heartbeat or SLA-monitor namespace (never shed)."""
    return bool(_SYSTEM.match(bundle.rsplit("/", 1)[0]))


@dataclass(frozen=True, slots=True)
class ResourceUsage:
    """Upstream ``ResourceUsage``: a usage and its limit in the same unit."""

    usage: float
    limit: float

    @property
    def share(self) -> float:
        """``usage / limit``; 0 when the limit is unknown (upstream ``percentUsage() / 100``)."""
        return self.usage / self.limit if self.limit > 0 else 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class BundleStats:
    """Upstream ``NamespaceBundleStats``: one bundle's rates and counts."""

    msg_rate_in: float
    msg_throughput_in: float
    msg_rate_out: float
    msg_throughput_out: float
    consumer_count: int = 0
    producer_count: int = 0
    topics: int = 0
    cache_size: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadReport:
    """One broker's ``LocalBrokerData``, read; ``source`` names the file or znode."""

    broker: str
    source: str
    usages: Mapping[str, ResourceUsage]
    msg_throughput_in: float
    msg_throughput_out: float
    msg_rate_in: float
    msg_rate_out: float
    last_update: float  # seconds since the epoch (the document holds milliseconds)
    last_stats: Mapping[str, BundleStats]
    bundles: frozenset[str] = frozenset()
    web_service_url: str | None = None
    pulsar_service_url: str | None = None
    broker_version: str | None = None

    @property
    def capacity(self) -> Capacity:
        """The broker's limits, from the report's ``limit`` fields."""
        cpu, memory = self.usages["cpu"], self.usages["memory"]
        nic = self.usages["bandwidthIn"].limit
        if nic <= 0:
            nic = self.usages["bandwidthOut"].limit
        return Capacity(
            cores=max(0, round(cpu.limit / 100.0)),
            memory_bytes=max(0, round(memory.limit * _MIB)),
            disk_total_bytes=0,
            nic_bps=max(0, round(nic * 1000.0)),
        )

    def node_row(self, cluster: str) -> dict[str, Any]:
        """The report as a raw ``node_metrics`` row (shares keep upstream's percentUsage)."""
        nic = self.capacity.nic_bps
        u = self.usages
        return {
            "ts": self.last_update,
            "cluster": cluster,
            "node": self.broker,
            "cpu": u["cpu"].share,
            "memory": u["memory"].share,
            "direct_memory": u["directMemory"].share,
            "net_in_bps": u["bandwidthIn"].share * nic,
            "net_out_bps": u["bandwidthOut"].share * nic,
            "msg_in_per_s": self.msg_rate_in,
            "msg_out_per_s": self.msg_rate_out,
            "throughput_in_bytes_per_s": self.msg_throughput_in,
            "throughput_out_bytes_per_s": self.msg_throughput_out,
        }

    def bundle_rows(self, cluster: str) -> list[dict[str, Any]]:
        """One raw ``bundle_metrics`` row per bundle of ``lastStats``, system bundles left out."""
        return [
            {
                "ts": self.last_update,
                "cluster": cluster,
                "bundle": name,
                "broker": self.broker,
                "msg_in_per_s": s.msg_rate_in,
                "msg_out_per_s": s.msg_rate_out,
                "throughput_in_bytes_per_s": s.msg_throughput_in,
                "throughput_out_bytes_per_s": s.msg_throughput_out,
            }
            for name, s in sorted(self.last_stats.items())
            if not is_system_bundle(name)
        ]


def to_document(report: LoadReport) -> dict[str, Any]:
    """``report`` as the ``LocalBrokerData`` JSON a broker writes (what :func:`parse_report`
    reads back): for simulators, tests and benches that stand in for brokers. Like upstream's
    serialisation it has no ``bundleStats`` field (``testSerializeLocalBrokerData``)."""
    stats = {
        name: {
            "msgRateIn": s.msg_rate_in,
            "msgThroughputIn": s.msg_throughput_in,
            "msgRateOut": s.msg_rate_out,
            "msgThroughputOut": s.msg_throughput_out,
            "consumerCount": s.consumer_count,
            "producerCount": s.producer_count,
            "topics": s.topics,
            "cacheSize": s.cache_size,
        }
        for name, s in report.last_stats.items()
    }
    usages = {n: {"usage": u.usage, "limit": u.limit} for n, u in report.usages.items()}
    return {
        "webServiceUrl": report.web_service_url or f"http://{report.broker}",
        "pulsarServiceUrl": report.pulsar_service_url,
        **usages,
        "msgThroughputIn": report.msg_throughput_in,
        "msgThroughputOut": report.msg_throughput_out,
        "msgRateIn": report.msg_rate_in,
        "msgRateOut": report.msg_rate_out,
        "lastUpdate": round(report.last_update * 1000),
        "lastStats": stats,
        "numBundles": len(stats),
        "bundles": sorted(report.bundles or stats),
        "brokerVersionString": report.broker_version,
        "loadReportType": "LocalBrokerData",
    }


#: Fields only the extensible load manager's ``BrokerLoadData`` (PIP-192) has.
_BROKER_LOAD_DATA = ("weightedMaxEMA", "maxResourceUsage", "updatedAt", "reportedAt")
#: The command that prints the document trimtab reads, for refusals.
REPORT_COMMAND = "pulsar-admin broker-stats load-report > HOST:PORT.json (one file per broker)"


def parse_report(data: bytes | str, *, source: str, broker: str | None = None) -> LoadReport:
    """Read one ``LocalBrokerData`` (modular load manager) or ``BrokerLoadData`` (extensible
    load manager, PIP-192: no bundle stats; see :func:`parse_top_bundles`) document, or
    raise :class:`ReportError` with the reason."""
    doc = _json_object(data, source)
    extensible = "lastStats" not in doc and any(k in doc for k in _BROKER_LOAD_DATA)
    if "lastStats" not in doc and not extensible:
        _refuse_other(doc, source)
    usages = {name: _usage(doc, name, source) for name in RESOURCES}
    for name in _BOUNDED:
        u = usages[name]
        if u.limit > 0 and u.usage > u.limit:
            raise ReportError(
                source,
                f"{name} usage {u.usage:g} is above its limit {u.limit:g}, which it cannot be",
            )
    rates = {name: _rate(doc, name, source) for name in _RATES}
    stats = {} if extensible else doc.get("lastStats")
    if not isinstance(stats, dict):
        raise ReportError(source, _missing("lastStats", stats, "an object of bundle stats"))
    return LoadReport(
        broker=_broker(doc, source, broker),
        source=source,
        usages=usages,
        msg_throughput_in=rates["msgThroughputIn"],
        msg_throughput_out=rates["msgThroughputOut"],
        msg_rate_in=rates["msgRateIn"],
        msg_rate_out=rates["msgRateOut"],
        last_update=_last_update(doc, source, "updatedAt" if extensible else "lastUpdate"),
        last_stats={str(k): _bundle(v, f"lastStats[{k!r}]", source) for k, v in stats.items()},
        bundles=frozenset(str(b) for b in doc.get("bundles") or () if isinstance(b, str)),
        web_service_url=_text(doc.get("webServiceUrl")),
        pulsar_service_url=_text(doc.get("pulsarServiceUrl")),
        broker_version=_text(doc.get("brokerVersionString")),
    )


def parse_top_bundles(data: bytes | str, *, source: str) -> dict[str, BundleStats]:
    """The bundles of a ``TopBundlesLoadData`` (PIP-192: ``{"topBundlesLoadData":
    [{"bundleName", "stats": NamespaceBundleStats}]}``, the broker's busiest bundles), by
    name; :class:`ReportError` when the document is not one."""
    doc = _json_object(data, source)
    entries = doc.get("topBundlesLoadData")
    if not isinstance(entries, list):
        raise ReportError(source, _missing("topBundlesLoadData", entries, "a list of bundles"))
    out: dict[str, BundleStats] = {}
    for n, entry in enumerate(entries):
        name = entry.get("bundleName") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name:
            raise ReportError(source, f"topBundlesLoadData[{n}] has no bundleName")
        out[name] = _bundle(entry.get("stats"), f"topBundlesLoadData[{n}].stats", source)
    return out


def is_top_bundles(data: bytes | str) -> bool:
    """Whether ``data`` is a ``TopBundlesLoadData`` document (read beside a BrokerLoadData)."""
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        return False
    return isinstance(doc, dict) and "topBundlesLoadData" in doc


def _json_object(data: bytes | str, source: str) -> dict[str, Any]:
    """The report's JSON object. A file of another kind is refused with what it seems to be
    and the command that makes a report; the reason starts "not UTF-8 text" or "not JSON"
    (the pipeline's quarantine groups by it)."""
    raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
    kind = raw_kind(raw)
    if kind is not None:
        head = "not JSON" if kind == "an empty file" else "not UTF-8 text"
        kind = kind.removesuffix(", not UTF-8 text")
        raise ReportError(
            source,
            f"{head}, so no Pulsar load report: it is {kind}. Make one with: {REPORT_COMMAND}",
        )
    text = raw.decode("utf-8-sig")
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        guess = seems_to_be(text)
        seems = f": it seems to be {guess}. Make one with: {REPORT_COMMAND}" if guess else ""
        raise ReportError(source, f"not JSON ({exc}), so no Pulsar load report{seems}") from None
    if not isinstance(doc, dict):
        raise ReportError(source, f"a load report is a JSON object, got {type(doc).__name__}")
    return doc


def _refuse_other(doc: dict[str, Any], source: str) -> None:
    """A document of neither load manager: refused saying what it seems to be, unless it
    has the usages of one or nothing at all (then the field it lacks is named, as before)."""
    if not doc or any(name in doc for name in RESOURCES):
        return
    guess = seems_to_be(json.dumps(doc))
    seems = f"it seems to be {guess}" if guess else "it is no format trimtab knows"
    raise ReportError(
        source,
        "not a Pulsar load report (LocalBrokerData, or BrokerLoadData of the extensible load "
        f"manager): {seems}. Make one with: {REPORT_COMMAND}",
    )


def _missing(field: str, value: Any, what: str) -> str:
    if value is None:
        return f"missing {field} ({what})"
    return f"{field} must be {what}, got {json.dumps(value)[:60]}"


def _number(value: Any, field: str, source: str) -> float:
    """A finite JSON number (booleans and text are not numbers)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ReportError(source, _missing(field, value, "a number"))
    if not math.isfinite(value):
        raise ReportError(source, f"{field} must be finite, got {value}")
    return float(value)


def _rate(doc: Mapping[str, Any], field: str, source: str) -> float:
    value = _number(doc.get(field), field, source)
    if value < 0:
        raise ReportError(source, f"{field} must be >= 0, got {value:g}")
    return value


#: The least plausible ``lastUpdate`` in epoch milliseconds (1973-03-03): below it (0 aside,
#: never written), the broker's clock did not write it; from 1e8 up it reads as epoch
#: seconds of 1973 to 5138, the mistake a hand-made report makes.
LAST_UPDATE_MS_LEAST = 1e11


def _last_update(doc: Mapping[str, Any], source: str, field: str = "lastUpdate") -> float:
    """``lastUpdate`` (``updatedAt`` of a BrokerLoadData; epoch milliseconds) as epoch
    seconds; one in seconds is refused naming the unit, as it made every broker look out of
    date with no hint (issue 42)."""
    ms = _rate(doc, field, source)
    if 0 < ms < LAST_UPDATE_MS_LEAST:
        if ms >= 1e8:
            when = datetime.fromtimestamp(ms, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            raise ReportError(
                source,
                f"{field} {ms:.0f} is epoch seconds ({when}); a load report's {field} "
                f"is epoch milliseconds: write {ms * 1000:.0f}",
            )
        raise ReportError(
            source, f"{field} {ms:g} is not a time a broker wrote (epoch milliseconds)"
        )
    return ms / 1000.0


def _usage(doc: Mapping[str, Any], name: str, source: str) -> ResourceUsage:
    """A ``{usage, limit}`` pair; a negative usage is allowed only with an unknown limit (the
    ``-1, -1`` of upstream's ``new ResourceUsage()``), where it counts as 0."""
    raw = doc.get(name)
    if not isinstance(raw, dict):
        raise ReportError(source, _missing(name, raw, "an object {usage, limit}"))
    usage = _number(raw.get("usage"), f"{name}.usage", source)
    limit = _number(raw.get("limit"), f"{name}.limit", source)
    if usage < 0 and limit > 0:
        raise ReportError(source, f"{name}.usage must be >= 0, got {usage:g}")
    return ResourceUsage(max(usage, 0.0), limit)


def _bundle(raw: Any, field: str, source: str) -> BundleStats:
    if not isinstance(raw, dict):
        raise ReportError(source, _missing(field, raw, "an object of bundle stats"))
    rates = [_rate(raw, name, source) for name in _BUNDLE_RATES]
    counts = [raw.get(name) for name in _BUNDLE_COUNTS]
    whole = [
        int(c) if isinstance(c, int | float) and not isinstance(c, bool) else 0 for c in counts
    ]
    return BundleStats(
        msg_rate_in=rates[0],
        msg_throughput_in=rates[1],
        msg_rate_out=rates[2],
        msg_throughput_out=rates[3],
        consumer_count=whole[0],
        producer_count=whole[1],
        topics=whole[2],
        cache_size=whole[3],
    )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _broker(doc: Mapping[str, Any], source: str, given: str | None) -> str:
    """The broker's ``host:port``: given (znode or file name), else from ``webServiceUrl``."""
    candidates = [given] if given else []
    url = _text(doc.get("webServiceUrl"))
    if url:
        candidates.append(urlsplit(url).netloc)
    for name in candidates:
        try:
            return str(NodeId(name))
        except ValueError:
            continue
    raise ReportError(
        source, "no broker name: name the file <host:port>.json or give webServiceUrl"
    )


def broker_of_file(name: str) -> str | None:
    """The broker a file named ``host:port`` or ``host:port.json`` is the report of (also
    ``host:port.top-bundles.json``, its PIP-192 TopBundlesLoadData)."""
    stem = name.removesuffix(".json").removesuffix(".top-bundles")
    try:
        NodeId(stem)
    except ValueError:
        return None
    return stem if ":" in stem else None


def _documents(file: Path) -> list[tuple[bytes | str, str, str | None]]:
    """(document, source, broker) of each report in ``file``: the file itself, or each
    broker's newest message when it is saved ``pulsar-client consume`` output (PIP-192's
    system topics, :mod:`~trimtab.systems.pulsar.consume_output`)."""
    data = file.read_bytes()
    text = data.decode("utf-8", errors="replace") if b"got message" in data else ""
    if text and is_consume_output(text):
        return [(body, f"{file} [{key}]", key) for key, body in messages(text).items()]
    return [(data, str(file), broker_of_file(file.name))]


def read_report_dir(path: str | Path) -> tuple[list[LoadReport], list[ReportError]]:
    """Every report in a directory (one JSON file per broker) or one file; the refused ones
    come back as errors. A missing path or an empty directory is an :class:`InputError`."""
    from trimtab.errors import InputError

    root = Path(path)
    refuse_special("--load-reports", root)
    if root.is_dir():
        files = sorted(p for p in root.iterdir() if p.is_file() and not p.name.startswith("."))
    elif root.is_file():
        files = [root]
    else:
        raise InputError(f"--load-reports {root}: no such file or directory")
    if not files:
        raise InputError(
            f"--load-reports directory {root} holds no load report files (one JSON file per "
            "broker). "
            f"Make them with: {REPORT_COMMAND}"
        )
    newest: dict[str, LoadReport] = {}
    errors: list[ReportError] = []
    top: dict[str, tuple[str, dict[str, BundleStats]]] = {}
    for file in files:
        for data, source, broker in _documents(file):
            try:
                if is_top_bundles(data):
                    if broker is None:
                        raise ReportError(
                            source, "name a TopBundlesLoadData <host:port>.top-bundles.json"
                        )
                    top[broker] = (source, parse_top_bundles(data, source=source))
                    continue
                report = parse_report(data, source=source, broker=broker)
            except ReportError as exc:
                errors.append(exc)
                continue
            seen = newest.get(report.broker)
            if seen is not None:
                old, new = sorted((seen, report), key=lambda r: (r.last_update, r.source))
                reason = (
                    f"a second report of broker {report.broker}; the newer {new.source} is kept"
                )
                errors.append(ReportError(old.source, reason))
                report = new
            newest[report.broker] = report
    for broker, (source, bundles) in sorted(top.items()):
        if broker not in newest:
            errors.append(ReportError(source, f"no BrokerLoadData of broker {broker} beside it"))
        elif newest[broker].last_stats:
            errors.append(ReportError(source, f"broker {broker}'s report has its bundles already"))
        else:
            newest[broker] = replace(newest[broker], last_stats=bundles)
    return list(newest.values()), errors
