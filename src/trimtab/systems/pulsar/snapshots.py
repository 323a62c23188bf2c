"""Pulsar's load reports as the shedder's snapshot, through the table contract.

A report (:class:`~trimtab.systems.pulsar.load_reports.LoadReport`) gives one ``node_metrics``
row and its bundles' ``bundle_metrics`` rows; :func:`check_report` checks them with the rules
every table obeys (:func:`~trimtab.contract.check_row`), :func:`report_cluster` makes the
reporting brokers a cluster (limits from their reports, no inventory needed) and
:func:`report_snapshot` builds the snapshot through
:func:`~trimtab.shedding.telemetry.build_snapshot`, so ``trimtab shed`` on reports, the live
loop (:mod:`~trimtab.systems.pulsar.follow`) and the tables decide on the same rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from itertools import chain

from trimtab.cluster import Capacity, ClusterState, Node, NodeId, NodeState, Role
from trimtab.contract import RejectedRow, RowError
from trimtab.readers.metrics import parse_bundle_row, parse_node_row
from trimtab.shedding.load import LoadModel
from trimtab.shedding.snapshot import BundleLoads
from trimtab.shedding.telemetry import (
    Built,
    BundleRow,
    Folded,
    NodeRow,
    broker_telemetry,
    build_snapshot,
    snapshot_of,
)
from trimtab.systems.pulsar.load_reports import LoadReport

__all__ = ["Checked", "check_report", "report_cluster", "report_snapshot"]


@dataclass(frozen=True)
class Checked:
    """A report through the table contract: its node row and bundle rows, and what was
    refused (a report whose node row is refused keeps no bundle row: it gives no load data)."""

    report: LoadReport
    node: tuple[NodeRow, RejectedRow] | None
    bundles: tuple[tuple[BundleRow, RejectedRow], ...]
    rejected: tuple[RejectedRow, ...]

    @cached_property
    def table(self) -> BundleLoads:
        """The accepted bundles as a table of their own, built once per report."""
        return BundleLoads.of(row.bundle for row, _ in self.bundles)


def check_report(report: LoadReport, cluster: str) -> Checked:
    """The report's rows, each checked by :func:`~trimtab.contract.check_row` (the contract
    the tables obey); a refused row names the report's source and the rule."""
    rejected: list[RejectedRow] = []
    raw = report.node_row(cluster)
    try:
        node = (parse_node_row(raw), RejectedRow(report.source, 1, "", raw))
    except RowError as exc:
        rejected.append(RejectedRow(report.source, 1, f"{exc.rule}: {exc}", raw))
        return Checked(report, None, (), tuple(rejected))
    bundles: list[tuple[BundleRow, RejectedRow]] = []
    for row in report.bundle_rows(cluster):
        try:
            bundles.append((parse_bundle_row(row), RejectedRow(report.source, 1, "", row)))
        except RowError as exc:
            rejected.append(RejectedRow(report.source, 1, f"{exc.rule}: {exc}", row))
    return Checked(report, node, tuple(bundles), tuple(rejected))


def report_cluster(
    reports: Iterable[LoadReport], cluster: str, *, silent: Iterable[str] = ()
) -> ClusterState:
    """The reporting brokers as a cluster, limits from their reports. ``silent``: brokers
    registered whose report was refused; they are available without load data, as upstream
    sees a broker whose report it cannot read."""
    nodes = [_broker_node(r.broker, r.capacity) for r in reports]
    known = {str(n.id) for n in nodes}
    blank = Capacity(cores=0, memory_bytes=0, disk_total_bytes=0, nic_bps=0)
    for name in sorted(set(silent) - known):
        try:
            nodes.append(_broker_node(name, blank))
        except ValueError:
            continue  # a znode name that is no host:port names no broker
    return ClusterState.of(cluster, nodes)


@lru_cache(maxsize=65_536)  # a live loop builds the same brokers every cycle
def _broker_node(name: str, capacity: Capacity) -> Node:
    return Node(
        id=NodeId(name),
        location="/default-region/default-rack",
        capacity=capacity,
        state=NodeState.WRITABLE,
        role=Role.BROKER,
    )


def report_snapshot(
    state: ClusterState,
    checked: Iterable[Checked],
    model: LoadModel,
    *,
    previous: Mapping[str, Folded] | None = None,
    unique: bool | None = None,
) -> Built:
    """The snapshot of ``state`` (:func:`report_cluster`) from the checked reports, through
    :func:`~trimtab.shedding.telemetry.build_snapshot`; ``previous`` carries a live loop's
    history, ``unique`` says (when the caller knows) that no bundle is in two reports. The
    rows refused by the contract come first in ``rejected``."""
    items = list(checked)
    refused = tuple(r for c in items for r in c.rejected)
    if unique is None:
        count = sum(len(c.table) for c in items)
        unique = len(set(chain.from_iterable(c.table.names for c in items))) == count
    if unique:
        # No bundle is reported twice (the usual case, outside a transfer under way): the
        # rows need no per-row rule, so the brokers' tables are joined as they are.
        samples = {c.report.broker: [c.node[0].sample] for c in items if c.node is not None}
        brokers = broker_telemetry(state, samples, model, previous=previous)
        table = BundleLoads.concat([c.table for c in items])
        # A report lists its broker's bundles as of its last update: none is stale on its own.
        times = [c.report.last_update for c in items for _ in range(len(c.table))]
        return replace(snapshot_of(brokers, table, model, bundle_times=times), rejected=refused)
    samples_rows = [c.node for c in items if c.node is not None]
    rows = [row for c in items for row in c.bundles]
    built = build_snapshot(state, samples_rows, rows, model, previous=previous)
    return replace(built, rejected=(*refused, *built.rejected))
