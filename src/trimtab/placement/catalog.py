"""The four placement policies by the name ``ensemblePlacementPolicy`` gives them.

Building a policy from a configuration (its resolver, its ZooKeeper, the local host) reads files
and dials servers, so it lives with BookKeeper's adapters:
:func:`trimtab.systems.bookkeeper.placement_setup.make_policy`.
"""

from __future__ import annotations

from trimtab.config.bookkeeper import PolicyName
from trimtab.placement.default import DefaultPolicy
from trimtab.placement.rackaware import RackAwarePolicy
from trimtab.placement.regionaware import RegionAwarePolicy
from trimtab.placement.zoneaware import ZoneAwarePolicy

__all__ = ["POLICIES", "Policy"]

#: Any of the four policies (each satisfies :class:`~trimtab.placement.contract.PlacementPolicy`).
Policy = DefaultPolicy | RackAwarePolicy | RegionAwarePolicy | ZoneAwarePolicy

POLICIES: dict[PolicyName, type[Policy]] = {
    PolicyName.DEFAULT: DefaultPolicy,
    PolicyName.RACKAWARE: RackAwarePolicy,
    PolicyName.REGIONAWARE: RegionAwarePolicy,
    PolicyName.ZONEAWARE: ZoneAwarePolicy,
}
