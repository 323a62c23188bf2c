"""``trimtab inventory --zk``: bookies and brokers from one ZooKeeper (issue 42).

One ZooKeeper session (with the configuration's security: SASL, digest, TLS) looks at what
the ensemble holds: BookKeeper's registry (``<ledgers root>/available``, the root from
``--ledgers-root``, else ``metadataServiceUri``'s path, else ``zkLedgersRootPath``) and Pulsar's
broker load reports (``/loadbalance/brokers``). ``--system`` picks one; without it what is found
is written, both when both are there (a Pulsar cluster keeps its bookies' registry in the same
ZooKeeper): the ``role`` column tells bookies from brokers, and the summary says so.

Bookies: the registry (writable and read-only), one GET_BOOKIE_INFO survey (TLS as
``bookieinfo`` takes it), racks from :mod:`~trimtab.cli._inventory_racks`. Brokers: each
report's limits. Nothing is written to ZooKeeper.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from rich.progress import Progress

from trimtab._format import plural
from trimtab.cli._inventory_racks import rack_resolver
from trimtab.config import Config
from trimtab.errors import TrimtabError
from trimtab.systems.bookkeeper.bookieinfo.client import survey
from trimtab.systems.bookkeeper.bookieinfo.routing import RoutingBookieInfoClient
from trimtab.systems.bookkeeper.bookieinfo.tls_setup import client_tls
from trimtab.systems.bookkeeper.inventory import bookie_rows
from trimtab.systems.bookkeeper.registry import read_membership
from trimtab.systems.inventory_rows import NodeRow
from trimtab.systems.pulsar.inventory import broker_rows, split_entries, zk_reports
from trimtab.systems.pulsar.watcher import BROKERS_PATH
from trimtab.systems.zookeeper import ZkTarget, zk_security, zk_target
from trimtab.systems.zookeeper.reading import read_session, registered_bookies
from trimtab.topology import resolve_locations

__all__ = ["System", "ZkOptions", "zk_inventory"]


class System(StrEnum):
    """What ``--zk`` reads: BookKeeper's bookies, Pulsar's brokers, or both."""

    BOOKKEEPER = "bookkeeper"
    PULSAR = "pulsar"
    BOTH = "both"


@dataclass(frozen=True)
class ZkOptions:
    """The options of ``inventory --zk``."""

    zk: str
    ledgers_root: str | None
    system: System | None
    cluster: str
    timeout_s: float
    tls_ca: Path | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    resolver_script: Path | None = None
    pulsar_racks: str | None = None


@dataclass
class Found:
    """Rows and the sentences of the summary (what was read where, what was chosen)."""

    rows: list[NodeRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    system: System | None = None


def zk_inventory(options: ZkOptions, cfg: Config, bar: Progress) -> Found:
    """Read the ZooKeeper of ``options`` (see the module docstring)."""
    security = zk_security(cfg)
    target = zk_target(
        cfg.bookie_info, hosts=options.zk, root=options.ledgers_root, security=security
    )
    phase = bar.add_task(f"connecting to ZooKeeper {options.zk}", total=None)
    with read_session(options.zk, cfg, options.timeout_s) as client:
        bookkeeper = registered_bookies(client, target) > 0
        entries = zk_reports(client, options.zk)
        system = _choose(options.system, target, bookkeeper, bool(entries))
        found = Found(system=system, notes=[_choice_note(system, options.system, target)])
        if system in (System.BOOKKEEPER, System.BOTH):
            bar.update(phase, description="reading BookKeeper's registry")
            _bookies(found, options, cfg, target, client, bar)
        if system in (System.PULSAR, System.BOTH):
            reports, failed = split_entries(entries)
            found.rows += broker_rows(reports, options.cluster, failed)
            found.notes.append(
                f"{plural(len(entries), 'broker')} from the load reports under "
                f"{options.zk}{BROKERS_PATH}: cores, memory and NIC from their limits"
            )
    return found


def _choose(wanted: System | None, target: ZkTarget, bookkeeper: bool, pulsar: bool) -> System:
    """``--system`` if what it names is there; else what is found (both when both are)."""
    registry = f"bookie registered at {target.available}"
    brokers = f"Pulsar load reports under {BROKERS_PATH}"
    need = {System.BOOKKEEPER: [bookkeeper], System.PULSAR: [pulsar]}
    need[System.BOTH] = [bookkeeper, pulsar]
    if wanted is not None:
        if not all(need[wanted]):
            absent = [w for w, ok in ((registry, bookkeeper), (brokers, pulsar)) if not ok]
            raise TrimtabError(
                f"--system {wanted}: no {' and no '.join(absent)} in ZooKeeper {target.hosts}; "
                "check the chroot (--zk HOST:PORT/chroot) and --ledgers-root (zkLedgersRootPath)"
            )
        return wanted
    if bookkeeper and pulsar:
        return System.BOTH
    if bookkeeper:
        return System.BOOKKEEPER
    if pulsar:
        return System.PULSAR
    raise TrimtabError(
        f"ZooKeeper {target.hosts} holds no {registry} and no {brokers}: check the chroot "
        "(--zk HOST:PORT/chroot) and --ledgers-root (zkLedgersRootPath, metadataServiceUri)"
    )


def _choice_note(system: System, wanted: System | None, target: ZkTarget) -> str:
    if wanted is not None:
        return f"--system {system}"
    if system is System.BOTH:
        return (
            f"found BookKeeper's registry ({target.available}) and Pulsar's brokers "
            f"({BROKERS_PATH}): both written, told apart by the role column "
            "(--system bookkeeper or --system pulsar for one)"
        )
    return f"found only {'BookKeeper bookies' if system is System.BOOKKEEPER else 'Pulsar brokers'}"


def _bookies(
    found: Found, options: ZkOptions, cfg: Config, target: ZkTarget, client: Any, bar: Progress
) -> None:
    """The bookies' rows: registry, GET_BOOKIE_INFO, racks."""
    membership = read_membership(target, timeout=options.timeout_s)
    members = sorted(membership.members)
    asking = f"asking {plural(len(members), 'bookie')} for their disks"
    task = bar.add_task(f"{asking} (timeout {options.timeout_s:g} s)", total=None)
    tls = client_tls(cfg.tls, ca=options.tls_ca, cert=options.tls_cert, key=options.tls_key)
    info = RoutingBookieInfoClient(tls=tls)
    try:
        surveyed = survey(membership, info, timeout=options.timeout_s)
    finally:
        info.close()
    bar.update(task, description="resolving racks")
    racks = rack_resolver(
        cfg,
        script=options.resolver_script,
        pulsar_racks=options.pulsar_racks,
        zk_client=client,
        zk_where=options.zk,
        timeout_s=options.timeout_s,
    )
    try:
        locations = resolve_locations(racks.resolver, members) if racks.resolver else {}
    finally:
        racks.close()
    rows = bookie_rows(surveyed, locations, options.cluster, unplaced=racks.unplaced)
    found.rows += rows
    answered = sum(1 for r in rows if not r.problems)
    found.notes.append(
        f"{plural(len(members), 'bookie')} in BookKeeper's registry {target.available} "
        f"({len(membership.readonly)} read-only); {answered} answered GET_BOOKIE_INFO"
    )
    found.notes.append(racks.note)
