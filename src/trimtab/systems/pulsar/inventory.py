"""Pulsar brokers as inventory rows, from their load reports (``trimtab inventory``).

A report's ``limit`` fields are the broker's capacities: cpu in percent of one core times the
cores (upstream's ``LinuxBrokerHostUsageImpl``: 100 per core), memory in MiB, NIC in Kbit/s;
:attr:`~trimtab.systems.pulsar.load_reports.LoadReport.capacity` converts them. Reports say
nothing of disks or racks: those come from ``--defaults``.
"""

from __future__ import annotations

from collections.abc import Iterable

from trimtab.systems.inventory_rows import NodeRow
from trimtab.systems.pulsar.load_reports import LoadReport

__all__ = ["broker_rows"]


def broker_rows(reports: Iterable[LoadReport], cluster: str) -> list[NodeRow]:
    """One writable broker row per report; a zero limit (not measured) is left to defaults."""
    rows = []
    for report in sorted(reports, key=lambda r: r.broker):
        cap = report.capacity
        row = NodeRow(cluster, report.broker)
        row.measured("cores", cap.cores or None)
        row.measured("memory_bytes", cap.memory_bytes or None)
        row.measured("nic_bps", cap.nic_bps or None)
        row.measured("state", "writable")
        row.measured("role", "broker")
        rows.append(row)
    return rows
