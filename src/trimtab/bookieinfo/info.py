"""The values GetBookieInfo produces and the contract of whoever consumes them.

A :class:`BookieInfo` is one node's answer: total and free disk bytes. Its weight is the free
bytes, as upstream's ``BookieInfo.getWeight()``: not normalised by capacity, so a node with twice
the free space is chosen twice as often (before the policy's cap). A node that did not answer
has *no* BookieInfo; the policy gives it the minimum weight.

:class:`BookieInfoSink` is what the reader feeds, BookKeeper's ``EnsemblePlacementPolicy`` seen
from the reader's side (``onClusterChanged`` and ``updateBookieInfo``). It is a structural
protocol so that any placement policy with those two methods plugs in without importing this
package, and tests use an in-memory fake. ``BookieInfo`` is a named tuple ``(total, free)`` for
the same reason: policies that accept ``(total, free)`` pairs take it as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from enum import IntFlag, StrEnum
from typing import NamedTuple, Protocol, TypeAlias

from trimtab.cluster import NodeId

__all__ = [
    "BookieInfo",
    "BookieInfoSink",
    "FetchError",
    "FetchErrorKind",
    "FetchResult",
    "Requested",
]


class Requested(IntFlag):
    """The bits of ``GetBookieInfoRequest.requested`` (upstream ``GetBookieInfoRequest.Flags``)."""

    TOTAL_DISK_CAPACITY = 0x01
    FREE_DISK_SPACE = 0x02


class BookieInfo(NamedTuple):
    """One node's disk space in bytes, as it answered GetBookieInfo.

    >>> info = BookieInfo(total_disk_bytes=4_000, free_disk_bytes=1_000)
    >>> info.weight, info.used_fraction
    (1000, 0.75)
    """

    total_disk_bytes: int
    free_disk_bytes: int

    @property
    def weight(self) -> int:
        """Free bytes: upstream's weight, before the policy applies its cap."""
        return self.free_disk_bytes

    @property
    def used_fraction(self) -> float:
        """``1 - free/total``; 0.0 for a node that reports no capacity."""
        if self.total_disk_bytes <= 0:
            return 0.0
        return 1.0 - self.free_disk_bytes / self.total_disk_bytes

    @classmethod
    def checked(cls, total_disk_bytes: int, free_disk_bytes: int) -> BookieInfo:
        """Build one from an answer, refusing what no filesystem reports (``ValueError``)."""
        if total_disk_bytes < 0 or free_disk_bytes < 0:
            raise ValueError(
                f"negative disk space: total {total_disk_bytes}, free {free_disk_bytes}"
            )
        if free_disk_bytes > total_disk_bytes:
            raise ValueError(f"free space {free_disk_bytes} exceeds capacity {total_disk_bytes}")
        return cls(total_disk_bytes, free_disk_bytes)


class FetchErrorKind(StrEnum):
    """Why a node has no BookieInfo after a request; each is counted separately in metrics."""

    TIMEOUT = "timeout"  # no answer within getBookieInfoTimeoutSecs (upstream TimeoutException)
    UNAVAILABLE = "unavailable"  # nothing listening, connection refused or reset
    STATUS = "status"  # the node answered with a status other than EOK (EIO, EBADVERSION...)
    BAD_RESPONSE = "bad-response"  # an EOK answer without the requested fields, or impossible
    NO_ADDRESS = "no-address"  # the node is registered but published no GetBookieInfo address


@dataclass(frozen=True, slots=True)
class FetchError:
    """A failed GetBookieInfo request: its kind and a sentence for people."""

    kind: FetchErrorKind
    detail: str

    def __str__(self) -> str:
        return f"{self.kind.value}: {self.detail}"


FetchResult: TypeAlias = BookieInfo | FetchError


class BookieInfoSink(Protocol):
    """The consumer the reader feeds: a placement policy, an exporter, or a test fake.

    The reader calls both methods from its one worker thread, never at the same time, in this
    order for each membership change: ``on_cluster_changed`` first, then (after the scan it
    triggers) ``update_bookie_info``.
    """

    def on_cluster_changed(
        self, writable: set[NodeId], readonly: set[NodeId]
    ) -> AbstractSet[NodeId]:
        """Take the new membership; return the nodes that left (upstream returns dead bookies)."""
        ...

    def update_bookie_info(self, info: Mapping[str, BookieInfo]) -> None:
        """Take the disk space of every writable node that answered its latest request.

        Nodes absent from ``info`` have no known space and get the policy's minimum weight.
        """
        ...
