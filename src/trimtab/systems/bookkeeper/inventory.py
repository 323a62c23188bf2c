"""Bookies as inventory rows (``trimtab inventory --zk``, issue 42).

Who the bookies are comes from BookKeeper's registry in ZooKeeper (writable and read-only,
:func:`~trimtab.systems.bookkeeper.registry.read_membership`); their disks from one
GET_BOOKIE_INFO survey (:func:`~trimtab.systems.bookkeeper.bookieinfo.client.survey`, as
``trimtab bookieinfo``: the v3 protocol at a bookie's port, gRPC for a trimtab agent, TLS as
configured); their racks from whatever resolver the caller made (Pulsar's ``/bookies`` map, a
script, a table). A bookie that does not answer is a row all the same, with its disk values
missing and the reason, and a read-only bookie is ``state = readonly``: the inventory keeps
what the registry says, the commands reading it decide what read-only means.

Cores, memory and NIC are published by no BookKeeper API: they come from ``--defaults``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from trimtab.cluster import NodeId
from trimtab.diskinfo import BookieInfo
from trimtab.systems.bookkeeper.bookieinfo.client import SurveyRow
from trimtab.systems.inventory_rows import NodeRow

__all__ = ["bookie_rows"]


def bookie_rows(
    surveyed: Iterable[SurveyRow],
    locations: Mapping[NodeId, str],
    cluster: str,
    *,
    unplaced: frozenset[str] = frozenset(),
) -> list[NodeRow]:
    """One row per bookie, in id order: state and role from the registry, disk from its
    answer (or the reason it gave none), region and rack from ``locations`` unless the
    location is one of ``unplaced`` (a resolver's default rack: it did not know the host)."""
    rows = []
    for entry in sorted(surveyed, key=lambda r: r.node):
        row = NodeRow(cluster, str(entry.node))
        row.measured("state", entry.state.value)
        row.measured("role", "bookie")
        if isinstance(entry.result, BookieInfo):
            row.measured("disk_total_bytes", entry.result.total_disk_bytes)
            row.measured("disk_free_bytes", entry.result.free_disk_bytes)
        else:
            row.problems.append(f"GET_BOOKIE_INFO: {entry.result}")
        location = locations.get(entry.node)
        if location is not None and location not in unplaced:
            row.located(location)
        rows.append(row)
    return rows
