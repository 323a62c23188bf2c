"""``trimtab topology``: the network tree placement works on, for people and machines."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.tree import Tree

from trimtab._format import human_bps, human_bytes, plural, rejected_json
from trimtab.cli._common import (
    ConfigOption,
    InventoryOption,
    JsonFlag,
    app,
    err,
    load_config,
    out,
    print_json,
    printable,
    report_input_problems,
    select_clusters,
    user_errors,
)
from trimtab.cli._resolver_options import PulsarRacksOption, ResolverScriptOption
from trimtab.cluster import ClusterState, Node, NodeId, NodeState
from trimtab.readers.inventory import read_inventory
from trimtab.systems.pulsar.bookies import PulsarRackResolver
from trimtab.systems.zookeeper import zk_security
from trimtab.topology import (
    NetworkTopology,
    Resolver,
    ScriptResolver,
    default_rack_for,
    locations_for,
    topology_of,
)

__all__ = ["topology"]


# -- topology ----------------------------------------------------------------------------------


@app.command()
def topology(
    inventory: InventoryOption,
    resolver_script: ResolverScriptOption = None,
    pulsar_racks: PulsarRacksOption = None,
    cluster: Annotated[
        str | None, typer.Option("--cluster", help="Show only this cluster.")
    ] = None,
    config: ConfigOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Print the network topology: regions, racks and nodes with their state and disk.

    Locations come from the inventory's region and rack columns, or from a DNS-to-switch
    script or Pulsar's rack map when one is given (hosts they cannot place go to the default
    rack).
    """
    with user_errors():
        cfg = load_config(config)
        inv = read_inventory(inventory)
        clusters = select_clusters(inv, cluster)
        script = resolver_script or (
            Path(cfg.topology.script_file_name) if cfg.topology.script_file_name else None
        )
        default_rack = default_rack_for(cfg.placement.ensemble_placement_policy)
        resolver: Resolver | None = (
            ScriptResolver(
                script,
                number_args=cfg.topology.script_number_args,
                timeout_s=cfg.topology.script_timeout_seconds,
                default_rack=default_rack,
            )
            if script
            else None
        )
        if pulsar_racks is not None:
            resolver = PulsarRackResolver(
                pulsar_racks,
                default_rack=default_rack,
                timeout_s=cfg.topology.script_timeout_seconds,
                security=zk_security(cfg),
            )
        views = []
        for state in clusters:
            locations = (
                locations_for((n.id for n in state), resolver, default_rack=default_rack)
                if resolver
                else None
            )
            if isinstance(resolver, PulsarRackResolver) and locations:
                _warn_unplaced(state.name, locations, default_rack, script=script)
            views.append((state, topology_of(state, locations)))
        if isinstance(resolver, PulsarRackResolver):
            resolver.close()
    if as_json:
        print_json(
            {
                "clusters": [_topology_json(s, t) for s, t in views],
                "rejected": [rejected_json(r) for r in inv.rejected],
                "warnings": list(inv.warnings),
            }
        )
        return
    for state, topo in views:
        out.print(_topology_tree(state, topo))
        out.print()
    report_input_problems(inv)


def _warn_unplaced(
    cluster: str, locations: dict[NodeId, str], default_rack: str, *, script: Path | None
) -> None:
    """One warning when Pulsar's rack map places none of the cluster's nodes (every one on
    the default rack, which the map's resolver does silently, host by host)."""
    if any(location != default_rack for location in locations.values()):
        return
    unused = f"; the rack script {script} is not asked with --pulsar-racks" if script else ""
    text = (
        f"Pulsar's rack map (/bookies) places none of cluster {cluster}'s "
        f"{plural(len(locations), 'node')}: all on the default rack {default_rack}{unused}"
    )
    # one line however long, as the resolvers' own warnings (trimtab.cli._WarningLines)
    err.print(f"[yellow]warning:[/] {printable(text)}", highlight=False, soft_wrap=True)


def _node_json(node: Node, topo: NetworkTopology) -> dict[str, Any]:
    cap = node.capacity
    return {
        "id": node.id,
        "location": topo.location_of(node.id),
        "region": topo.region_of(node.id),
        "state": node.state.value,
        "cores": cap.cores,
        "memory_bytes": cap.memory_bytes,
        "disk_total_bytes": cap.disk_total_bytes,
        "disk_free_bytes": cap.disk_free_bytes,
        "nic_bps": cap.nic_bps,
    }


def _topology_json(state: ClusterState, topo: NetworkTopology) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for node in state:
        location = topo.location_of(node.id) or node.location
        branch = tree
        for part in location.strip("/").split("/"):
            branch = branch.setdefault(part, {})
        branch.setdefault("nodes", []).append(node.id)
    return {
        "cluster": state.name,
        "depth": topo.depth,
        "regions": list(topo.regions()),
        "racks": list(topo.racks()),
        "nodes": [_node_json(n, topo) for n in state],
        "tree": tree,
    }


_STATE_STYLE = {NodeState.WRITABLE: "green", NodeState.READONLY: "yellow", NodeState.DOWN: "red"}


def _disk(nodes: list[Node]) -> str:
    total = sum(n.capacity.disk_total_bytes for n in nodes)
    frees = [n.capacity.disk_free_bytes for n in nodes]
    if any(f is None for f in frees) or total == 0:
        return f"{human_bytes(total)} disk"
    free = sum(f for f in frees if f is not None)
    return f"{human_bytes(free)} free of {human_bytes(total)} ({free / total:.0%})"


def _topology_tree(state: ClusterState, topo: NetworkTopology) -> Tree:
    by_id = {n.id: n for n in state}
    counts = {s: len(state.in_state(s)) for s in NodeState}
    summary = ", ".join(f"{counts[s]} {s.value}" for s in NodeState if counts[s])
    root = Tree(
        f"[bold]{state.name}[/]  {plural(len(state), 'node')} ({summary}); "
        f"{plural(len(topo.regions()), 'region')}, {plural(len(topo.racks()), 'rack')}; "
        f"{_disk(list(state))}",
        highlight=False,
    )

    def walk(branch: Tree, path: str) -> None:
        # "/" is depth 0: with every host on one default rack the depth is 1, and the root's
        # children are racks, not nodes
        at_rack = len([part for part in path.split("/") if part]) == topo.depth
        for child in topo.children(path):
            if at_rack:  # the children of a rack are its nodes
                branch.add(_node_line(by_id[NodeId(child)]))
                continue
            child_path = f"{path.rstrip('/')}/{child}"
            members = [by_id[n] for n in topo.leaves(child_path) if n in by_id]
            label = f"[bold cyan]{child}[/]  {plural(len(members), 'node')}; {_disk(members)}"
            sub = branch.add(label, highlight=False)
            walk(sub, child_path)

    walk(root, "/")
    return root


def _node_line(node: Node) -> str:
    cap = node.capacity
    style = _STATE_STYLE[node.state]
    return (
        f"{node.id}  [{style}]{node.state.value}[/]  {cap.cores} cores, "
        f"{human_bytes(cap.memory_bytes, binary=True)} RAM, {human_bps(cap.nic_bps)}, "
        f"{_disk([node])}"
    )
