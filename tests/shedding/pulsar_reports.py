"""LocalBrokerData documents for tests: brokers as Pulsar's modular load manager reports them."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from trimtab.systems.pulsar.load_reports import BundleStats, LoadReport, ResourceUsage, to_document

#: A 10 Gb/s NIC in kilobits per second, the unit of bandwidthIn/Out.
NIC_KBPS = 10_000_000.0


def broker_report(
    broker: str,
    *,
    cpu: float,
    bundles: Mapping[str, float],
    last_update: float,
    cores: int = 4,
) -> LoadReport:
    """A broker at ``cpu`` (a fraction of its cores) owning ``bundles`` (name -> bytes/s in)."""
    stats = {
        name: BundleStats(
            msg_rate_in=tput / 1000.0,
            msg_throughput_in=tput,
            msg_rate_out=0.0,
            msg_throughput_out=0.0,
            topics=1,
        )
        for name, tput in bundles.items()
    }
    total = sum(bundles.values())
    return LoadReport(
        broker=broker,
        source="test",
        usages={
            "cpu": ResourceUsage(cpu * 100.0 * cores, 100.0 * cores),
            "memory": ResourceUsage(512.0, 4096.0),
            "directMemory": ResourceUsage(64.0, 4096.0),
            "bandwidthIn": ResourceUsage(total * 8 / 1000.0, NIC_KBPS),
            "bandwidthOut": ResourceUsage(0.0, NIC_KBPS),
        },
        msg_throughput_in=total,
        msg_throughput_out=0.0,
        msg_rate_in=total / 1000.0,
        msg_rate_out=0.0,
        last_update=last_update,
        last_stats=stats,
        web_service_url=f"http://{broker}",
        pulsar_service_url=f"pulsar://{broker.split(':')[0]}:6650",
        broker_version="3.3.0",
    )


def fixture_reports(
    now: float, cpus: tuple[float, ...] = (0.02, 0.04, 0.06, 0.80, 0.90)
) -> list[LoadReport]:
    """Upstream TransferShedderTest's fixture: five brokers, two bundles each."""
    return [
        broker_report(
            f"broker{i}:8080",
            cpu=cpu,
            bundles={
                f"tenant/ns{i}/0x00000000_0x7fffffff": 1e6 * i,
                f"tenant/ns{i}/0x7fffffff_0xffffffff": 2e6 * i,
            },
            last_update=now,
        )
        for i, cpu in enumerate(cpus, start=1)
    ]


def document(report: LoadReport) -> bytes:
    return json.dumps(to_document(report)).encode()


def write_reports(directory: Path, reports: list[LoadReport]) -> Path:
    """One ``<host:port>.json`` per broker, as an operator saves ``pulsar-admin`` output."""
    directory.mkdir(parents=True, exist_ok=True)
    for report in reports:
        (directory / f"{report.broker}.json").write_bytes(document(report))
    return directory


#: The fixture bundle that broker2 lists too while it moves there from broker1.
MOVED = "tenant/ns1/0x00000000_0x7fffffff"


def mid_transfer(reports: list[LoadReport], seconds: float = 30.0) -> LoadReport:
    """broker2's report ``seconds`` later, listing broker1's bundle :data:`MOVED` too (a
    transfer under way: both reports hold it)."""
    source, target = reports[0], reports[1]
    return replace(
        target,
        last_update=target.last_update + seconds,
        last_stats={**target.last_stats, MOVED: source.last_stats[MOVED]},
    )
