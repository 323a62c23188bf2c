"""Pulsar brokers as inventory rows, from their load reports (``trimtab inventory``).

A report's ``limit`` fields are the broker's capacities: cpu in percent of one core times the
cores (upstream's ``LinuxBrokerHostUsageImpl``: 100 per core), memory in MiB, NIC in Kbit/s;
:attr:`~trimtab.systems.pulsar.load_reports.LoadReport.capacity` converts them. Reports say
nothing of disks or racks: those come from ``--defaults``.

The reports come from a directory (``--load-reports``), from ZooKeeper
(:func:`zk_reports`: ``/loadbalance/brokers/<broker>``, read once, never created) or from the
admin API (:func:`admin_reports`: ``GET /admin/v2/brokers/{cluster}``, then each broker's own
``GET /admin/v2/broker-stats/load-report``). A broker whose report cannot be read is still a
row, with its capacities missing and the reason (:func:`broker_rows`), never dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from trimtab.errors import ReportError, TargetError, TrimtabError
from trimtab.systems.inventory_rows import NodeRow
from trimtab.systems.pulsar.admin_api import PulsarAdmin
from trimtab.systems.pulsar.load_reports import LoadReport, parse_report
from trimtab.systems.pulsar.watcher import BROKERS_PATH

__all__ = ["Entry", "admin_reports", "broker_rows", "split_entries", "zk_reports"]

#: A broker's report, or why it could not be had.
Entry = LoadReport | TrimtabError


def broker_rows(
    reports: Iterable[LoadReport], cluster: str, failed: Mapping[str, TrimtabError] | None = None
) -> list[NodeRow]:
    """One writable broker row per report (a zero limit, not measured, is left to defaults)
    and one per broker of ``failed`` with no capacities and its reason, in broker order."""
    rows = []
    for report in reports:
        cap = report.capacity
        row = NodeRow(cluster, report.broker)
        row.measured("cores", cap.cores or None)
        row.measured("memory_bytes", cap.memory_bytes or None)
        row.measured("nic_bps", cap.nic_bps or None)
        row.measured("state", "writable")
        row.measured("role", "broker")
        rows.append(row)
    for broker, error in (failed or {}).items():
        row = NodeRow(cluster, broker)
        row.measured("state", "writable")
        row.measured("role", "broker")
        row.problems.append(f"no load report: {_reason(error)}")
        rows.append(row)
    return sorted(rows, key=lambda r: r.node)


def _reason(error: TrimtabError) -> str:
    return error.reason if isinstance(error, ReportError) else str(error)


def split_entries(
    entries: Mapping[str, Entry],
) -> tuple[list[LoadReport], dict[str, TrimtabError]]:
    """The reports read and, by broker, the failures."""
    reports = [e for e in entries.values() if isinstance(e, LoadReport)]
    failed = {b: e for b, e in entries.items() if not isinstance(e, LoadReport)}
    return reports, failed


def zk_reports(client: Any, where: str, path: str = BROKERS_PATH) -> dict[str, Entry]:
    """Every ``path/<broker>`` report of a started kazoo ``client`` (``where`` names the
    ensemble in sources), read once; an empty dict when the path does not exist."""
    from kazoo.exceptions import NoNodeError

    try:
        children = sorted(client.get_children(path))
    except NoNodeError:
        return {}
    entries: dict[str, Entry] = {}
    for broker in children:
        source = f"zk://{where}{path}/{broker}"
        try:
            data, _stat = client.get(f"{path}/{broker}")
        except NoNodeError:
            continue  # left between listing and reading
        try:
            entries[broker] = parse_report(data or b"", source=source, broker=broker)
        except ReportError as exc:
            entries[broker] = exc
    return entries


def admin_reports(
    admin: PulsarAdmin, on_broker: Callable[[str], None] | None = None
) -> dict[str, Entry]:
    """Each active broker's report, asked of the broker itself (the admin URL redirects the
    ``ownedNamespaces`` call to it, which gives its own web service URL). The list of brokers
    failing is the caller's error; one broker failing is that broker's entry."""
    entries: dict[str, Entry] = {}
    for broker in admin.brokers():
        try:
            entries[broker] = admin.report(broker)
        except TargetError as exc:
            entries[broker] = exc
        if on_broker is not None:
            on_broker(broker)
    return entries
