"""Where ``trimtab inventory --zk`` finds the bookies' racks, first found of:

1. ``--resolver-script FILE`` (BookKeeper's ``networkTopologyScriptFileName``);
2. ``--pulsar-racks HOST:PORT``: Pulsar's ``/bookies`` map in that ZooKeeper;
3. the resolver the configuration names (``reppDnsResolverClass`` with its script, table or
   ``metadataStoreUrl``), built as a BookKeeper client builds it;
4. Pulsar's ``/bookies`` map in the ``--zk`` ZooKeeper itself, when the znode exists (a
   Pulsar-managed BookKeeper keeps it there);
5. none: region and rack are left to ``--defaults`` (the summary says so).

A host the resolver cannot place gets its default rack; that answer is not a rack the cluster
published, so it is left out of the row (:attr:`Racks.unplaced`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trimtab.cluster import DEFAULT_RACK
from trimtab.config import Config
from trimtab.config.bookkeeper import zk_hosts
from trimtab.systems.bookkeeper.placement_setup import make_resolver
from trimtab.systems.pulsar.bookies import BOOKIES_PATH, PulsarRackResolver
from trimtab.systems.zookeeper import zk_security
from trimtab.topology import Resolver, ScriptResolver, default_rack_for
from trimtab.topology.tree import default_rack_for_depth

__all__ = ["Racks", "rack_resolver"]


@dataclass
class Racks:
    """A resolver (or None), the sentence saying where racks came from, what to close."""

    resolver: Resolver | None
    note: str
    unplaced: frozenset[str] = frozenset()
    _close: Callable[[], None] = field(default=lambda: None, repr=False)

    def close(self) -> None:
        self._close()


def rack_resolver(
    cfg: Config,
    *,
    script: Path | None,
    pulsar_racks: str | None,
    zk_client: Any,
    zk_where: str,
    timeout_s: float,
) -> Racks:
    """The resolver of the module docstring's order."""
    default = default_rack_for(cfg.placement.ensemble_placement_policy)
    unplaced = frozenset({default, DEFAULT_RACK, default_rack_for_depth(2)})
    topo = cfg.topology
    if script is not None:
        resolver: Resolver = ScriptResolver(
            script,
            number_args=topo.script_number_args,
            timeout_s=topo.script_timeout_seconds,
            default_rack=default,
        )
        return Racks(resolver, f"racks from the script {script}", unplaced)
    if pulsar_racks is not None:
        pulsar = PulsarRackResolver(
            pulsar_racks, default_rack=default, timeout_s=timeout_s, security=zk_security(cfg)
        )
        return Racks(pulsar, f"racks from {pulsar_racks}{BOOKIES_PATH}", unplaced, pulsar.close)
    if _configured(cfg):
        made = make_resolver(
            kind=topo.dns_resolver_class,
            script=topo.script_file_name,
            number_args=topo.script_number_args,
            timeout_s=topo.script_timeout_seconds,
            table=_table(cfg),
            default_rack=default,
            zk_servers=zk_hosts(topo.metadata_store_url) if topo.metadata_store_url else zk_where,
            zk_security=zk_security(cfg),
        )
        closer = getattr(made, "close", None)
        note = f"racks from the configured resolver ({topo.dns_resolver_class})"
        return Racks(made, note, unplaced, closer if callable(closer) else lambda: None)
    if zk_client.exists(BOOKIES_PATH) is not None:
        here = PulsarRackResolver(client=zk_client, default_rack=default)
        return Racks(here, f"racks from Pulsar's rack map {zk_where}{BOOKIES_PATH}", unplaced)
    return Racks(
        None,
        f"no racks: no {BOOKIES_PATH} rack map in {zk_where} and no resolver configured "
        "(--resolver-script, --pulsar-racks, or region/rack in --defaults)",
    )


def _configured(cfg: Config) -> bool:
    """Whether the configuration names a resolver that can place hosts."""
    topo = cfg.topology
    kind = topo.dns_resolver_class.strip().lower()
    if kind == "script":
        return bool(topo.script_file_name)
    if kind == "table":
        return topo.table_file is not None
    return kind != "default"


def _table(cfg: Config) -> Any:
    from trimtab.readers.rack_table import RackTableFile

    table = cfg.topology.table_file
    return None if table is None else RackTableFile(Path(table))
