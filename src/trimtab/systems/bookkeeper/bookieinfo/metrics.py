"""Prometheus metrics of the agent and of the reader (the client side's weights).

Upstream's proposal (§2, Monitoring) asks that "the client expose the weightage it is giving
to each of the bookies". The collectors here read a snapshot on every scrape instead of
updating metric objects as things happen, so the numbers are always those the reader or agent
holds, nodes that left disappear from the output, and each collector sits in its own
``CollectorRegistry`` (several readers or agents in one process, as in tests, do not clash).

Reader metrics (``trimtab watch``): ``trimtab_bookie_weight{node}`` (free bytes, the weight
before the policy's cap), ``trimtab_bookie_free_bytes{node}``, ``trimtab_bookie_total_bytes{node}``,
``trimtab_bookie_info_known{node,state}`` (1 answered, 0 not), ``trimtab_bookieinfo_scans_total
{kind}``, ``trimtab_bookieinfo_queries_total``, ``trimtab_bookieinfo_errors_total{kind}``,
``trimtab_bookieinfo_scan_seconds`` (summary), ``trimtab_bookieinfo_nodes{state}``.

Agent metrics (``trimtab agent --metrics-port``): ``trimtab_agent_disk_total_bytes``,
``trimtab_agent_disk_free_bytes``, ``trimtab_agent_readonly``, ``trimtab_agent_registered``,
``trimtab_agent_answers_total{status}``, ``trimtab_agent_zk_sessions_lost_total``.

The endpoint that serves them (plain, or TLS and Basic auth from ``--web-config``) is
:class:`trimtab.systems.prometheus.MetricsServer`, shared by every command that serves metrics.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
    SummaryMetricFamily,
)
from prometheus_client.registry import Collector

from trimtab.systems.bookkeeper.bookieinfo.agent import AgentStatus
from trimtab.systems.bookkeeper.bookieinfo.info import FetchErrorKind
from trimtab.systems.bookkeeper.bookieinfo.reader import ReaderSnapshot, ScanKind

__all__ = ["AgentCollector", "ReaderCollector"]


class ReaderCollector(Collector):
    """Scrapes ``snapshot()`` of a
    :class:`~trimtab.systems.bookkeeper.bookieinfo.reader.BookieInfoReader`."""

    def __init__(self, snapshot: Callable[[], ReaderSnapshot]) -> None:
        self._snapshot = snapshot

    def collect(self) -> Iterable[Metric]:
        snap = self._snapshot()
        weight = GaugeMetricFamily(
            "trimtab_bookie_weight", "Free bytes: the node's weight before the cap", labels=["node"]
        )
        free = GaugeMetricFamily(
            "trimtab_bookie_free_bytes", "Usable disk bytes the node reported", labels=["node"]
        )
        total = GaugeMetricFamily(
            "trimtab_bookie_total_bytes", "Disk capacity the node reported", labels=["node"]
        )
        for node, info in sorted(snap.info.items()):
            weight.add_metric([node], info.weight)
            free.add_metric([node], info.free_disk_bytes)
            total.add_metric([node], info.total_disk_bytes)
        known = GaugeMetricFamily(
            "trimtab_bookie_info_known",
            "1 if the node answered its latest GetBookieInfo, else 0",
            labels=["node", "state"],
        )
        members = snap.membership
        for node in sorted(members.members):
            known.add_metric([node, members.state_of(node).value], float(node in snap.info))
        nodes = GaugeMetricFamily("trimtab_bookieinfo_nodes", "Members by state", labels=["state"])
        nodes.add_metric(["writable"], len(members.writable))
        nodes.add_metric(["readonly"], len(members.readonly))
        stats = snap.stats
        scans = CounterMetricFamily("trimtab_bookieinfo_scans", "Scans completed", labels=["kind"])
        scans.add_metric([ScanKind.FULL.value], stats.full_scans)
        scans.add_metric([ScanKind.PARTIAL.value], stats.partial_scans)
        queries = CounterMetricFamily("trimtab_bookieinfo_queries", "GetBookieInfo requests sent")
        queries.add_metric([], stats.queries)
        errors = CounterMetricFamily(
            "trimtab_bookieinfo_errors", "Requests that gave no info", labels=["kind"]
        )
        for kind in FetchErrorKind:
            errors.add_metric([kind.value], stats.errors.get(kind, 0))
        latency = SummaryMetricFamily(
            "trimtab_bookieinfo_scan_seconds",
            "Time of one scan",
            count_value=stats.scans,
            sum_value=stats.scan_seconds_total,
        )
        return [weight, free, total, known, nodes, scans, queries, errors, latency]


class AgentCollector(Collector):
    """Scrapes ``status()`` of an :class:`~trimtab.systems.bookkeeper.bookieinfo.agent.Agent`."""

    def __init__(self, status: Callable[[], AgentStatus]) -> None:
        self._status = status

    def collect(self) -> Iterable[Metric]:
        status = self._status()
        out: list[Metric] = []
        if status.usage is not None:
            out.append(
                GaugeMetricFamily(
                    "trimtab_agent_disk_total_bytes",
                    "Capacity of the ledger filesystems",
                    value=status.usage.total_bytes,
                )
            )
            out.append(
                GaugeMetricFamily(
                    "trimtab_agent_disk_free_bytes",
                    "Usable bytes on the ledger filesystems",
                    value=status.usage.free_bytes,
                )
            )
        out.append(
            GaugeMetricFamily("trimtab_agent_readonly", "1 if read-only", value=status.readonly)
        )
        if status.registered is not None:
            out.append(
                GaugeMetricFamily(
                    "trimtab_agent_registered",
                    "1 if the node's znode exists",
                    value=status.registered,
                )
            )
        answers = CounterMetricFamily(
            "trimtab_agent_answers", "GetBookieInfo answers by status", labels=["status"]
        )
        for name, count in sorted(status.answers.items()):
            answers.add_metric([name], count)
        out.append(answers)
        out.append(
            CounterMetricFamily(
                "trimtab_agent_zk_sessions_lost",
                "ZooKeeper sessions lost (then re-registered)",
                value=status.sessions_lost,
            )
        )
        return out
