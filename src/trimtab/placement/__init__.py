"""Ensemble placement: BookKeeper's default, rack-aware and region-aware policies.

A policy reads as a short pipeline: *candidates* (writable nodes of the topology, minus the
excluded and the already chosen) -> *constraints* (distinct node, exclusions, write-quorum rack
and region coverage) -> *weights* (uniform now; disk weights plug into the same seam) -> *pick*
(bounded: it raises :class:`~trimtab.errors.NotEnoughNodesError`, it never spins).

* :class:`DefaultPolicy`, :class:`RackAwarePolicy`, :class:`RegionAwarePolicy`,
  :class:`ZoneAwarePolicy` (:data:`POLICIES` by name); the one a :class:`~trimtab.config.Config`
  names, with its resolver, is built by
  :func:`trimtab.systems.bookkeeper.placement_setup.make_policy` (it reads files and ZooKeeper);
* :class:`EnsemblePlacement`, :class:`Replacement`, :class:`Adherence`: what they answer;
* :class:`QuorumCoverage`, :func:`windows_of`: the coverage rules, shared with adherence;
* :class:`Weights`, :class:`UniformWeights`: the seam the disk-weight issue fills.

Example::

    policy = make_policy(Config.of(ensemblePlacementPolicy="rackaware"),
                         resolver={"bk1:3181": "/r1", ...}, rng=random.Random(7))
    policy.on_cluster_changed(writable=[...], readonly=[])
    placed = policy.new_ensemble(5, 3, 2)
    placed.ensemble, placed.adherence
"""

from trimtab.placement.catalog import POLICIES, Policy
from trimtab.placement.contract import (
    Adherence,
    EnsemblePlacement,
    PlacementPolicy,
    Replacement,
    check_quorums,
)
from trimtab.placement.coverage import QuorumCoverage, covers_write_quorums, windows_of
from trimtab.placement.default import DefaultPolicy
from trimtab.placement.locations import Locator
from trimtab.placement.rackaware import RackAwarePolicy
from trimtab.placement.regionaware import RegionAwarePolicy
from trimtab.placement.reorder import ReadClass, SlowNodes, reorder_reads
from trimtab.placement.selection import CandidateIndex, UniformWeights, Weights, pick
from trimtab.placement.services import (
    FeatureSwitches,
    MemoryStats,
    NoFeatures,
    NullStats,
    StaticFeatures,
    Stats,
)
from trimtab.placement.shares import interleave, region_shares
from trimtab.placement.solver import solve_racks

__all__ = [
    "POLICIES",
    "Adherence",
    "CandidateIndex",
    "DefaultPolicy",
    "EnsemblePlacement",
    "FeatureSwitches",
    "Locator",
    "MemoryStats",
    "NoFeatures",
    "NullStats",
    "PlacementPolicy",
    "Policy",
    "QuorumCoverage",
    "RackAwarePolicy",
    "ReadClass",
    "RegionAwarePolicy",
    "Replacement",
    "SlowNodes",
    "StaticFeatures",
    "Stats",
    "UniformWeights",
    "Weights",
    "check_quorums",
    "covers_write_quorums",
    "interleave",
    "pick",
    "region_shares",
    "reorder_reads",
    "solve_racks",
    "windows_of",
]
