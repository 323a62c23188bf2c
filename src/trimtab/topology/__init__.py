"""Where nodes sit: the network topology tree, DNS-to-switch resolvers, stabilized removal.

* :class:`NetworkTopology`: regions and racks as inner paths, nodes as leaves, one depth.
* :class:`StabilizedTopology`: the same reads, with removals delayed to ride out flapping.
* Resolvers (:class:`TableResolver`, :class:`ScriptResolver`,
  :class:`DefaultResolver`) turn host names into locations; :func:`resolve_locations` asks one
  about a set of nodes and never lets a bad answer through. Pulsar's ``/bookies`` rack map is
  read from ZooKeeper, so its resolver lives with Pulsar:
  :class:`~trimtab.systems.pulsar.bookies.PulsarRackResolver`. The resolver a configuration
  names is built by :func:`trimtab.systems.bookkeeper.placement_setup.make_resolver`.
"""

from trimtab.topology.build import default_rack_for, locations_for, topology_of
from trimtab.topology.resolvers import (
    DefaultResolver,
    RackChangeListener,
    RackChanges,
    Resolver,
    ScriptResolver,
    TableResolver,
    resolve_locations,
)
from trimtab.topology.stabilized import StabilizedTopology
from trimtab.topology.tree import NetworkTopology, default_rack_for_depth

__all__ = [
    "DefaultResolver",
    "NetworkTopology",
    "RackChangeListener",
    "RackChanges",
    "Resolver",
    "ScriptResolver",
    "StabilizedTopology",
    "TableResolver",
    "default_rack_for",
    "default_rack_for_depth",
    "locations_for",
    "resolve_locations",
    "topology_of",
]
