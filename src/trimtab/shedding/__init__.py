"""Load shedding for Pulsar-style brokers: the load model, PIP-220's TransferShedder, the
older shedders as baselines, and ``balanced``, which reaches the same target in fewer cycles.

Entry points take plain values (dataclasses and NumPy arrays), never file paths::

    from trimtab.shedding import BrokerLoad, BundleLoads, LoadSnapshot, ShedderState, shedder_for

    snapshot = LoadSnapshot.of(loads, BundleLoads.from_arrays(names, owners, throughput_in=...,
                                                              throughput_out=...))
    result = shedder_for(config.shedding).cycle(snapshot, ShedderState(), now=ts)
    result.moves, result.state  # feed the state to the next cycle

:func:`advise` is the one decision the CLI and the pipeline ask for (which plan to run on a
snapshot, guarded against a cluster with no load to compare); :func:`run_cycle` is the one
cycle the live loop, the stream and the simulators run (the shedder, then destinations).

Modules: :mod:`~trimtab.shedding.load` (usage, weighted max, moving averages),
:mod:`~trimtab.shedding.snapshot` (cycle input), :mod:`~trimtab.shedding.decisions` (labels,
reasons, state), :mod:`~trimtab.shedding.base` (the contract), :mod:`~trimtab.shedding.gates`
(the gates every shedder passes), one module per strategy, :mod:`~trimtab.shedding.predict`
(load per byte, projection), :mod:`~trimtab.shedding.destinations` (destinations for
unload-only strategies), :mod:`~trimtab.shedding.filters` (isolation policies, anti-affinity
groups: where a bundle may go), :mod:`~trimtab.shedding.knapsack`. Pulsar's own documents
(load reports, isolation-policy files) and the live loop over them are read in
:mod:`trimtab.systems.pulsar`.
"""

from trimtab.shedding.advice import Advice, advise
from trimtab.shedding.avg import AvgShedder
from trimtab.shedding.balanced import BalancedShedder
from trimtab.shedding.base import LoadStats, Shedder
from trimtab.shedding.cycle import run_cycle
from trimtab.shedding.decisions import (
    CycleResult,
    Decision,
    Label,
    Move,
    Prediction,
    Reason,
    ShedderState,
    breakdown,
)
from trimtab.shedding.destinations import assign_destinations, least_resource_usage
from trimtab.shedding.load import BrokerLoad, Limits, LoadModel, NodeSample, ResourceWeights, Usage
from trimtab.shedding.overload import OverloadShedder
from trimtab.shedding.plan import Plan, plan, worsening
from trimtab.shedding.predict import load_per_byte, project, report, shift
from trimtab.shedding.snapshot import Bundle, BundleIndex, BundleLoads, LoadSnapshot
from trimtab.shedding.strategies import STRATEGIES, shedder_for
from trimtab.shedding.telemetry import BrokerTelemetry, Folded, snapshot_of
from trimtab.shedding.threshold import ThresholdShedder
from trimtab.shedding.transfer import TransferShedder
from trimtab.shedding.uniform import UniformLoadShedder

__all__ = [
    "STRATEGIES",
    "Advice",
    "AvgShedder",
    "BalancedShedder",
    "BrokerLoad",
    "BrokerTelemetry",
    "Bundle",
    "BundleIndex",
    "BundleLoads",
    "CycleResult",
    "Decision",
    "Folded",
    "Label",
    "Limits",
    "LoadModel",
    "LoadSnapshot",
    "LoadStats",
    "Move",
    "NodeSample",
    "OverloadShedder",
    "Plan",
    "Prediction",
    "Reason",
    "ResourceWeights",
    "Shedder",
    "ShedderState",
    "ThresholdShedder",
    "TransferShedder",
    "UniformLoadShedder",
    "Usage",
    "advise",
    "assign_destinations",
    "breakdown",
    "least_resource_usage",
    "load_per_byte",
    "plan",
    "project",
    "report",
    "run_cycle",
    "shedder_for",
    "shift",
    "snapshot_of",
    "worsening",
]
