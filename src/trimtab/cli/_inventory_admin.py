"""``trimtab inventory --pulsar-admin URL``: brokers from Pulsar's admin REST API (issue 42).

The active brokers come from ``GET /admin/v2/brokers/{cluster}`` (the cluster from
``--cluster``, else the one ``GET /admin/v2/clusters`` lists); each broker's report from its
own ``GET /admin/v2/broker-stats/load-report`` (a broker answers that call only for itself, so
it is asked at the web service URL its ``ownedNamespaces`` redirect gives, as ``pulsar-admin
--admin-url`` pointed at each broker would). Token and TLS as ``trimtab execute`` takes them
(:mod:`~trimtab.systems.pulsar.credentials`): ``--pulsar-token-file``, a broker.conf given with
``--config``, ``PULSAR_TOKEN``; ``--tls-ca``, ``--tls-cert``/``--tls-key``; a token over
``http://`` only with ``--allow-insecure``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.progress import Progress

from trimtab._format import plural
from trimtab.cli._common import err, printable
from trimtab.cli._inventory_zk import Found, System
from trimtab.errors import TrimtabError
from trimtab.systems.pulsar.admin_api import PulsarAdmin
from trimtab.systems.pulsar.inventory import admin_reports, broker_rows, split_entries
from trimtab.systems.pulsar.target import PulsarTargetOptions, admin_client

__all__ = ["AdminOptions", "admin_inventory"]


@dataclass(frozen=True)
class AdminOptions:
    """The options of ``inventory --pulsar-admin``."""

    url: str
    cluster: str | None
    token_file: Path | None
    broker_conf: Path | None
    tls_ca: Path | None
    tls_cert: Path | None
    tls_key: Path | None
    allow_insecure: bool
    timeout_s: float


def admin_inventory(options: AdminOptions, bar: Progress) -> Found:
    """The brokers' rows (see the module docstring); the list of brokers failing is one
    ``error:`` line, one broker's report failing is that broker's row with the reason."""
    target = PulsarTargetOptions(
        admin_url=options.url,
        cluster=options.cluster or "",
        token_file=options.token_file,
        tls_ca=options.tls_ca,
        tls_cert=options.tls_cert,
        tls_key=options.tls_key,
        allow_insecure=options.allow_insecure,
        timeout_s=options.timeout_s,
        broker_conf=options.broker_conf,
    )
    admin, warnings = admin_client(target)
    for warning in warnings:
        err.print(f"[yellow]warning:[/] {printable(warning)}", highlight=False, soft_wrap=True)
    task = bar.add_task(f"asking {options.url} for its brokers", total=None)
    try:
        admin.cluster = options.cluster or _only_cluster(admin)
        brokers = admin.brokers()
        bar.update(task, description="reading each broker's load report", total=len(brokers))
        entries = admin_reports(admin, lambda _broker: bar.advance(task))
    finally:
        admin.rest.close()
    reports, failed = split_entries(entries)
    if failed and not reports:
        raise next(iter(failed.values()))
    note = (
        f"{plural(len(entries), 'broker')} of cluster {admin.cluster} from {options.url} "
        f"(GET /admin/v2/brokers/{admin.cluster}, each broker's broker-stats/load-report): "
        "cores, memory and NIC from their limits"
    )
    rows = broker_rows(reports, options.cluster or admin.cluster, failed)
    return Found(rows, [note], System.PULSAR)


def _only_cluster(admin: PulsarAdmin) -> str:
    """The cluster name when ``--cluster`` gives none: the one the admin API lists."""
    names = admin.clusters()
    if len(names) != 1:
        listed = ", ".join(names) or "none"
        raise TrimtabError(
            f"{admin.rest.admin_url} lists {plural(len(names), 'cluster')} ({listed}): "
            "give --cluster NAME"
        )
    return names[0]
