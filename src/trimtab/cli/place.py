"""``trimtab place``: place many ensembles on an inventory and show how they spread.

The nodes are the inventory's writable nodes at their ``/region/rack`` locations (read-only
nodes are known to the policy but never chosen; down nodes are left out). Each run places
``--count`` ensembles of ``-E/-W/-A`` with the policy named by ``--policy`` (or the config),
with a seeded RNG, and prints per node how often it was included and how often it came first
(the first member takes the first write of every round), plus the adherence counts.

``--weights disk`` (default: ``diskWeightBasedPlacementEnabled`` of the config) hands the
policy each writable node's ``disk_total_bytes``/``disk_free_bytes`` as its disk info
(:func:`trimtab.diskinfo.disk_info`: a node whose free space is unknown gets the smallest
weight), so nodes are picked in proportion to their (capped) free space; ``off`` places
uniformly.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace
from typing import Annotated, Any

import typer
from rich.progress import Progress
from rich.table import Table

from trimtab._format import plural
from trimtab.cli._common import (
    ClusterOption,
    ConfigOption,
    InventoryOption,
    JsonFlag,
    app,
    figures_table,
    load_config,
    one_cluster,
    out,
    print_json,
    progress_bar,
    report_input_problems,
    user_errors,
)
from trimtab.cluster import ClusterState, NodeId, NodeState, Role
from trimtab.config import PLACEMENT_POLICIES, WEIGHTS_MODES, Config, WeightsMode, spelled
from trimtab.diskinfo import disk_info
from trimtab.errors import TrimtabError
from trimtab.placement import Adherence, EnsemblePlacement
from trimtab.readers.inventory import read_inventory
from trimtab.systems.bookkeeper.placement_setup import make_policy
from trimtab.topology import topology_of

__all__ = ["PlacementRun", "place", "run_placements"]

#: Above this many ensembles a progress bar is shown (people's view only).
_PROGRESS_FROM = 20_000
#: The most ensembles one run places (about a minute on a laptop; the JSON would be GBs beyond).
MAX_COUNT = 10_000_000


class PlacementRun:
    """The ensembles placed on one cluster and the counts the command prints."""

    __slots__ = (
        "adherence",
        "cluster",
        "ensembles",
        "first",
        "inclusion",
        "notes",
        "policy",
        "weights",
    )

    def __init__(self, cluster: ClusterState, policy: str, weights: WeightsMode) -> None:
        self.cluster = cluster
        self.policy = policy
        self.weights = weights
        writable = sorted(cluster.writable)
        self.ensembles: list[tuple[NodeId, ...]] = []
        self.inclusion: Counter[NodeId] = Counter(dict.fromkeys(writable, 0))
        self.first: Counter[NodeId] = Counter(dict.fromkeys(writable, 0))
        self.adherence: Counter[Adherence] = Counter(dict.fromkeys(Adherence, 0))
        self.notes: Counter[str] = Counter()

    def record(self, placed: EnsemblePlacement) -> None:
        self.ensembles.append(placed.ensemble)
        self.inclusion.update(placed.ensemble)
        self.first[placed.ensemble[0]] += 1
        self.adherence[placed.adherence] += 1
        self.notes.update(placed.notes)

    def as_json(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster.name,
            "policy": self.policy,
            "weights": self.weights.value,
            "ensembles": [list(e) for e in self.ensembles],
            "inclusion": dict(sorted(self.inclusion.items())),
            "first": dict(sorted(self.first.items())),
            "adherence": {a.name: self.adherence[a] for a in Adherence},
            "notes": dict(sorted(self.notes.items())),
        }


def run_placements(
    cluster: ClusterState,
    config: Config,
    *,
    ensemble_size: int,
    write_quorum: int,
    ack_quorum: int,
    count: int,
    exclude: tuple[NodeId, ...] = (),
    seed: int = 0,
    progress: Progress | None = None,
) -> PlacementRun:
    """Place ``count`` ensembles on ``cluster`` with the policy ``config`` names."""
    topology = topology_of(cluster)
    locations = {str(n): loc for n in topology.nodes() if (loc := topology.location_of(n))}
    policy = make_policy(config, resolver=locations, rng=random.Random(seed))
    policy.on_cluster_changed(cluster.writable, cluster.readonly)
    disk = config.placement.disk_weight_based_placement_enabled
    if disk:
        policy.update_bookie_info(disk_info(cluster))
    weights = WeightsMode.DISK if disk else WeightsMode.OFF
    run = PlacementRun(cluster, config.placement.ensemble_placement_policy, weights)
    task = progress.add_task("placing", total=count) if progress is not None else None
    for i in range(count):
        run.record(policy.new_ensemble(ensemble_size, write_quorum, ack_quorum, exclude))
        if progress is not None and task is not None and i % 1000 == 999:
            progress.update(task, completed=i + 1)
    return run


@app.command()
def place(
    inventory: InventoryOption,
    ensemble_size: Annotated[int, typer.Option("-E", "--ensemble-size", help="Ensemble size.")],
    write_quorum: Annotated[int, typer.Option("-W", "--write-quorum", help="Write quorum.")],
    ack_quorum: Annotated[int, typer.Option("-A", "--ack-quorum", help="Ack quorum.")],
    policy: Annotated[
        str | None,
        typer.Option(
            "--policy", help="default, rackaware, regionaware or zoneaware (default: the config's)."
        ),
    ] = None,
    count: Annotated[int, typer.Option("--count", "-n", help="Ensembles to place.")] = 1000,
    exclude: Annotated[
        str | None, typer.Option("--exclude", help="Node ids never to use, comma-separated.")
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Random seed (same seed, same run).")] = 0,
    weights: Annotated[
        str | None,
        typer.Option(
            "--weights",
            help="off or disk: pick by the inventory's free disk (default: the config's "
            "diskWeightBasedPlacementEnabled).",
        ),
    ] = None,
    cluster: ClusterOption = None,
    config: ConfigOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Place COUNT ensembles on the inventory's writable nodes and count where they went."""
    with user_errors():
        cfg = load_config(config)
        if policy is not None:
            cfg = _with_policy(cfg, policy)
        if weights is not None:
            cfg = _with_weights(cfg, weights)
        if not 1 <= count <= MAX_COUNT:
            raise TrimtabError(f"--count must be from 1 to {MAX_COUNT:,}, got {count}")
        inv = read_inventory(inventory)
        state = one_cluster(inv, cluster).for_role(Role.BOOKIE)
        excluded = _known(_parse_exclude(exclude), state)

        def go(progress: Progress | None = None) -> PlacementRun:
            return run_placements(
                state,
                cfg,
                ensemble_size=ensemble_size,
                write_quorum=write_quorum,
                ack_quorum=ack_quorum,
                count=count,
                exclude=excluded,
                seed=seed,
                progress=progress,
            )

        if as_json or count < _PROGRESS_FROM:
            run = go()
        else:
            with progress_bar() as bar:
                run = go(bar)
    if as_json:
        print_json(run.as_json())
        return
    out.print(_table(run, ensemble_size, write_quorum, ack_quorum))
    adherence = ", ".join(f"{a.name} {run.adherence[a]}" for a in reversed(Adherence))
    out.print(f"adherence: {adherence}", highlight=False)
    for note, times in sorted(run.notes.items()):
        out.print(f"[yellow]note[/] ({times}x): {note}", highlight=False)
    report_input_problems(inv)


def _with_policy(cfg: Config, policy: str) -> Config:
    canonical = PLACEMENT_POLICIES.get(policy.strip().lower())
    if canonical is None:
        allowed = ", ".join(sorted(set(PLACEMENT_POLICIES.values())))
        raise TrimtabError(f"unknown policy {policy!r}: expected one of {allowed}")
    return replace(cfg, placement=replace(cfg.placement, ensemble_placement_policy=canonical))


def _with_weights(cfg: Config, text: str) -> Config:
    mode = spelled(WEIGHTS_MODES, text)
    if mode not in (WeightsMode.OFF, WeightsMode.DISK):
        raise TrimtabError(f"--weights {text!r}: choose off or disk")
    enabled = mode is WeightsMode.DISK
    return replace(
        cfg, placement=replace(cfg.placement, disk_weight_based_placement_enabled=enabled)
    )


def _parse_exclude(text: str | None) -> tuple[NodeId, ...]:
    if not text:
        return ()
    try:
        return tuple(NodeId(part) for part in text.split(",") if part.strip())
    except ValueError as exc:
        raise TrimtabError(f"--exclude: {exc}") from None


def _known(excluded: tuple[NodeId, ...], cluster: ClusterState) -> tuple[NodeId, ...]:
    """``--exclude`` ids, each of which must be a node of the cluster (a typo excludes nothing)."""
    known = {node.id for node in cluster}
    unknown = [node for node in excluded if node not in known]
    if unknown:
        raise TrimtabError(
            f"--exclude names {', '.join(unknown)}, not a node of cluster {cluster.name!r} "
            f"({plural(len(known), 'bookie')} known, such as {min(known, default='none')})"
        )
    return excluded


def _table(run: PlacementRun, size: int, wq: int, aq: int) -> Table:
    total = len(run.ensembles)
    state = run.cluster
    title = (
        f"{state.name}: {plural(total, 'ensemble')} of E={size} W={wq} A={aq}, "
        f"{run.policy} policy, weights {run.weights.value}, "
        f"{plural(len(run.inclusion), 'writable node')}"
    )
    columns = ("node", "location", "included", "share", "first", "first share")
    table = figures_table(columns, text=("node", "location"), title=title)
    for node_id, included in sorted(run.inclusion.items()):
        node = state.node(node_id)
        assert node.state is NodeState.WRITABLE
        first = run.first[node_id]
        table.add_row(
            node_id,
            node.location,
            str(included),
            f"{included / total:.1%}",
            str(first),
            f"{first / total:.1%}",
        )
    return table
