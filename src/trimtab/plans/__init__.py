"""The plan document: what ``trimtab shed --plan`` and ``trimtab rebalance --plan`` write and
``trimtab execute`` runs.

A plan is one versioned JSON document (:mod:`trimtab.plans.document`): the system and
cluster, when and from what it was computed, the ordered actions with their preconditions and
expected effects, and a SHA-256 digest of its canonical form. Approval is bound to that digest,
so what runs is exactly what a person read. :mod:`trimtab.plans.target` is the contract a real
system's executor (under :mod:`trimtab.systems`) fulfils; the builders turn an engine's result
into a document (:mod:`trimtab.plans.kafka` for Kafka and Redpanda reassignments,
:mod:`trimtab.plans.pulsar` for bundle unloads).
"""

from trimtab.plans.document import (
    FORMAT,
    SYSTEMS,
    VERSION,
    Action,
    PlanDocument,
    canonical_bytes,
    load_plan,
    match_digest,
    read_plan,
)
from trimtab.plans.target import (
    Check,
    Guards,
    Observation,
    Progress,
    Target,
    ThrottlePreview,
    ThrottleSet,
)

__all__ = [
    "FORMAT",
    "SYSTEMS",
    "VERSION",
    "Action",
    "Check",
    "Guards",
    "Observation",
    "PlanDocument",
    "Progress",
    "Target",
    "ThrottlePreview",
    "ThrottleSet",
    "canonical_bytes",
    "load_plan",
    "match_digest",
    "read_plan",
]
