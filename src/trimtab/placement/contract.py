"""The placement contract: what every ensemble placement policy answers, and its result types.

BookKeeper's ``EnsemblePlacementPolicy`` with Pythonic names (seed 002, reference §2):

==================================  ===================================================
upstream                            here
==================================  ===================================================
``initialize(conf, resolver, …)``   the constructor, keyword-only (config, resolver,
                                    rng, clock, features, stats)
``uninitalize()``                   :meth:`PlacementPolicy.close`
``onClusterChanged(w, ro)``         :meth:`~PlacementPolicy.on_cluster_changed`,
                                    returns the nodes that died (left, not read-only)
``newEnsemble(E, W, A, excl)``      :meth:`~PlacementPolicy.new_ensemble` ->
                                    :class:`EnsemblePlacement` (members + adherence)
``replaceBookie(…)``                :meth:`~PlacementPolicy.replace_bookie` ->
                                    :class:`Replacement`
``isEnsembleAdheringTo…``           :meth:`~PlacementPolicy.is_ensemble_adhering`
``areAckedBookiesAdheringTo…``      :meth:`~PlacementPolicy.are_acked_bookies_adhering`
``reorderReadSequence`` / ``…LAC…`` :meth:`~PlacementPolicy.reorder_read_sequence` /
                                    :meth:`~PlacementPolicy.reorder_read_lac_sequence`
``registerSlowBookie``              :meth:`~PlacementPolicy.register_slow_bookie`
``updateBookieInfo(map)``           :meth:`~PlacementPolicy.update_bookie_info`
``BKNotEnoughBookiesException``     :class:`~trimtab.errors.NotEnoughNodesError`
==================================  ===================================================

Policies are deciders: no threads, no locks, no I/O of their own. Whoever shares one between
threads (the membership watcher and the writers) holds one lock around every call.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Protocol, runtime_checkable

from trimtab.cluster import NodeId
from trimtab.diskinfo import BookieInfoSink
from trimtab.errors import InvalidQuorumError

__all__ = [
    "Adherence",
    "EnsemblePlacement",
    "PlacementPolicy",
    "Replacement",
    "check_durable_quorums",
    "check_quorums",
    "node_ids",
]


class Adherence(IntEnum):
    """How well an ensemble keeps the policy's rules (upstream ``PlacementPolicyAdherence``).

    The values are upstream's, so ``MEETS_SOFT < MEETS_STRICT`` compares as "worse".
    """

    FAIL = 1
    MEETS_SOFT = 3
    MEETS_STRICT = 5


@dataclass(frozen=True, slots=True)
class EnsemblePlacement:
    """A new ensemble, in write order, with its adherence and any notes on how it was found.

    ``notes`` is empty on the usual path; it says so when the policy had to fall back (a rack
    scope with nothing left, an exact search, the stabilized topology, a random fill).
    """

    ensemble: tuple[NodeId, ...]
    adherence: Adherence
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Replacement:
    """The node chosen to replace another, the ensemble it makes, and that ensemble's adherence."""

    node: NodeId
    ensemble: tuple[NodeId, ...]
    adherence: Adherence
    notes: tuple[str, ...] = ()


@runtime_checkable
class PlacementPolicy(BookieInfoSink, Protocol):
    """Where BookKeeper puts a ledger's replicas; see the module docstring for the mapping.

    A policy is a :class:`~trimtab.diskinfo.BookieInfoSink` (``on_cluster_changed``,
    ``update_bookie_info``) with the placement methods below.
    """

    def close(self) -> None:
        """Release what the policy holds (upstream ``uninitalize``); idempotent."""
        ...

    def new_ensemble(
        self, ensemble_size: int, write_quorum: int, ack_quorum: int, exclude: Iterable[str] = ()
    ) -> EnsemblePlacement:
        """Choose ``ensemble_size`` distinct writable nodes, none of ``exclude``.

        Raises :class:`~trimtab.errors.NotEnoughNodesError` when the cluster cannot satisfy the
        request and :class:`~trimtab.errors.InvalidQuorumError` for impossible sizes.
        """
        ...

    def replace_bookie(
        self,
        ensemble_size: int,
        write_quorum: int,
        ack_quorum: int,
        current_ensemble: Sequence[str],
        bookie_to_replace: str,
        exclude: Iterable[str] = (),
    ) -> Replacement:
        """Choose one writable node, outside the ensemble and ``exclude``, to take the place of
        ``bookie_to_replace``."""
        ...

    def is_ensemble_adhering(
        self, ensemble: Sequence[str], write_quorum: int, ack_quorum: int
    ) -> Adherence:
        """How well ``ensemble`` keeps the policy's rules on the current topology."""
        ...

    def replace_to_adhere(
        self,
        ensemble_size: int,
        write_quorum: int,
        ack_quorum: int,
        current_ensemble: Sequence[str],
        exclude: Iterable[str] = (),
    ) -> EnsemblePlacement:
        """Upstream ``replaceToAdherePlacementPolicy``: ``current_ensemble`` if it adheres,
        else an adhering ensemble with the fewest members replaced, else ``((), FAIL)``."""
        ...

    def are_acked_bookies_adhering(
        self, acked: Iterable[str], write_quorum: int, ack_quorum: int
    ) -> bool:
        """Whether the nodes that acknowledged a write span enough fault domains."""
        ...

    def reorder_read_sequence(
        self,
        ensemble: Sequence[str],
        write_set: Sequence[int],
        failure_history: Mapping[str, int] | None = None,
        *,
        pending_requests: Mapping[str, int] | None = None,
    ) -> tuple[int, ...]:
        """The order in which to try the write set's members for a read (indices into
        ``ensemble``); ``failure_history`` maps a node to the last entry id that failed on it."""
        ...

    def reorder_read_lac_sequence(
        self,
        ensemble: Sequence[str],
        write_set: Sequence[int],
        failure_history: Mapping[str, int] | None = None,
        *,
        pending_requests: Mapping[str, int] | None = None,
    ) -> tuple[int, ...]:
        """As :meth:`reorder_read_sequence`, then every other ensemble index in order."""
        ...

    def register_slow_bookie(self, node: str, entry_id: int) -> None:
        """Remember that ``node`` was slow to answer (a speculative read timed out)."""
        ...


def check_quorums(ensemble_size: int, write_quorum: int, ack_quorum: int) -> None:
    """Refuse sizes no placement can honour: need ``1 <= ack <= write <= ensemble``."""
    if not 1 <= ack_quorum <= write_quorum <= ensemble_size:
        raise InvalidQuorumError(
            f"bad quorum sizes E={ensemble_size}, W={write_quorum}, A={ack_quorum}:"
            " need 1 <= A <= W <= E"
        )


def node_ids(nodes: Iterable[str]) -> frozenset[NodeId]:
    """A set of node ids from any strings; a string that is not a node id is an error."""
    return frozenset(NodeId(n) for n in nodes)


def check_durable_quorums(
    ensemble_size: int, write_quorum: int, ack_quorum: int, min_regions: int
) -> None:
    """Region-aware sizes (upstream's validation): ``A >= minRegions``, ``E >= W >= A`` and,
    with durability, ``A > W - W // minRegions``, or a cluster down to ``minRegions`` regions
    could not complete an ack quorum."""
    if ack_quorum < min_regions:
        raise InvalidQuorumError(
            f"ack quorum {ack_quorum} is smaller than the {min_regions} regions durability needs"
        )
    check_quorums(ensemble_size, write_quorum, ack_quorum)
    floor = write_quorum - write_quorum // min_regions if min_regions > 0 else 0
    if min_regions > 0 and ack_quorum <= floor:
        raise InvalidQuorumError(
            f"ack quorum {ack_quorum} cannot survive losing all but {min_regions} regions with a"
            f" write quorum of {write_quorum}: need A > W - W // minRegions = {floor}"
        )
