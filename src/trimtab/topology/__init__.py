"""Where nodes sit: the network topology tree, DNS-to-switch resolvers, stabilized removal.

* :class:`NetworkTopology`: regions and racks as inner paths, nodes as leaves, one depth.
* :class:`StabilizedTopology`: the same reads, with removals delayed to ride out flapping.
* Resolvers (:func:`make_resolver`, :class:`TableResolver`, :class:`ScriptResolver`,
  :class:`DefaultResolver`) turn host names into locations; :func:`resolve_locations` asks one
  about a set of nodes and never lets a bad answer through. Pulsar's ``/bookies`` rack map is
  read from ZooKeeper, so its resolver lives with Pulsar:
  :class:`~trimtab.systems.pulsar.bookies.PulsarRackResolver` (``make_resolver(kind="pulsar")``
  builds it).
"""

from trimtab.topology.build import default_rack_for, locations_for, topology_of
from trimtab.topology.resolvers import (
    DefaultResolver,
    RackChangeListener,
    RackChanges,
    Resolver,
    ScriptResolver,
    TableResolver,
    load_resolver,
    make_resolver,
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
    "load_resolver",
    "locations_for",
    "make_resolver",
    "resolve_locations",
    "topology_of",
]
