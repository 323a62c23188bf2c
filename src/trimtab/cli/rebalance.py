"""``trimtab rebalance``: plan replica moves on a running Kafka or Redpanda cluster.

Inputs are what the clusters' own tools print: the current assignment
(``kafka-reassign-partitions.sh --generate``), partition sizes (``kafka-log-dirs.sh
--describe``), plus a small health table. The output is the reassignment document with only
the partitions that change and the rollback document (their current assignment), as
``--generate`` prints its "Proposed" and "Current" documents.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any

import typer

from trimtab._format import plural
from trimtab.allocation.balance_plan import InFlight, RebalancePlan
from trimtab.allocation.health import NodeStatus
from trimtab.allocation.model import PARTITION_ROLE
from trimtab.allocation.optimal import OptimalPlan, plan_optimal
from trimtab.allocation.planner import plan_rebalance
from trimtab.allocation.replica_constraints import disk_ratios
from trimtab.cli._common import (
    ClusterOption,
    ConfigOption,
    InventoryOption,
    JsonFlag,
    app,
    err,
    load_config,
    one_cluster,
    one_of,
    owned_output,
    print_json,
    print_rejected,
    print_warnings,
    progress_bar,
    user_errors,
    writable_output,
)
from trimtab.cli.allocate import write_atomically
from trimtab.cli.plan_output import (
    PlanOption,
    check_plan_output,
    command_argv,
    write_plan_document,
)
from trimtab.cli.rebalance_log_dirs import CordonOption, LogDirPlan, log_dir_plan
from trimtab.cli.rebalance_optimal import (
    OptimalFlag,
    TimeLimitOption,
    print_proof,
    proof_document,
)
from trimtab.cli.rebalance_output import diversity_warnings, plan_document, print_plan
from trimtab.cluster import ClusterState, NodeId
from trimtab.config import BALANCER_MODES
from trimtab.errors import TrimtabError
from trimtab.plans.kafka import rebalance_plan_document
from trimtab.plans.source import created_now, plan_source
from trimtab.readers.inventory import Inventory, read_inventory
from trimtab.readers.node_health import read_health
from trimtab.readers.sniff import read_text, seems_to_be
from trimtab.readers.special_files import refuse_special
from trimtab.systems.kafka.ids import broker_ids, read_broker_ids
from trimtab.systems.kafka.readers import (
    LogDirs,
    free_space_from_log_dirs,
    read_current_assignment,
    read_log_dirs,
)
from trimtab.systems.kafka.writers import dumps, reassignment, reassignment_with_dirs

__all__ = ["RebalanceOptions", "plan_document", "rebalance"]

FORMATS = ("table", "json", "kafka-reassignment")
SYSTEMS = ("kafka", "redpanda")


# The options of ``trimtab rebalance``, each declared once (the command's signature stays short).
_Assignment = Annotated[
    Path,
    typer.Option(
        "--assignment",
        "-a",
        help="Current assignment: reassignment JSON, kafka-reassign-partitions.sh --generate "
        "or --execute output, or rpk cluster partitions list (table or JSON).",
    ),
]
_LogDirs = Annotated[
    Path | None,
    typer.Option("--log-dirs", help="kafka-log-dirs.sh --describe output (partition sizes)."),
]
_Health = Annotated[
    Path | None,
    typer.Option("--health", help="Table node, state (up|down|maintenance|draining), down_since."),
]
_Drain = Annotated[
    str | None, typer.Option("--drain", help="Brokers to empty, comma-separated: 3,4.")
]
_MaxMoves = Annotated[
    int | None,
    typer.Option(
        "--max-moves", min=1, help="Partitions reassigned at most (default: concurrent_moves)."
    ),
]
_Mode = Annotated[
    str | None,
    typer.Option(
        "--mode",
        help="off, node_add or continuous (default: config). Given here, count balancing joins "
        "a drain or repair; else it is only shown.",
    ),
]
_RackAware = Annotated[
    bool | None,
    typer.Option(
        "--rack-aware/--no-rack-aware",
        help="Keep and repair rack diversity (default: config enable_rack_awareness).",
    ),
]
_TopicAware = Annotated[
    bool | None,
    typer.Option(
        "--topic-aware/--no-topic-aware",
        help="Balance each topic's spread too, not only counts (default: config "
        "partition_autobalancing_topic_aware).",
    ),
]
_InProgress = Annotated[
    Path | None,
    typer.Option("--in-progress", help="The --json of the plan being executed (to cancel)."),
]
_OutFormat = Annotated[str, typer.Option("--format", help="table, json or kafka-reassignment.")]
_Output = Annotated[
    Path | None,
    typer.Option("--output", "-o", help="Write the reassignment document here.", dir_okay=False),
]
_Rollback = Annotated[
    Path | None,
    typer.Option(
        "--rollback",
        help="Write the rollback document here (default: OUTPUT.rollback.json).",
        dir_okay=False,
    ),
]
_BrokerIds = Annotated[
    Path | None,
    typer.Option("--broker-ids", help="Table node, broker_id (Kafka broker ids of nodes)."),
]
_Seed = Annotated[int, typer.Option("--seed", help="Seed of every random choice.")]
_System = Annotated[
    str, typer.Option("--system", help="kafka or redpanda: the cluster the plan is for.")
]


@dataclass(frozen=True, slots=True, kw_only=True)
class RebalanceOptions:
    """The options of one ``trimtab rebalance`` run, as given."""

    inventory: Path
    assignment: Path
    log_dirs: Path | None
    health: Path | None
    drain: str | None
    max_moves: int | None
    mode: str | None
    rack_aware: bool | None
    topic_aware: bool | None
    in_progress: Path | None
    out_format: str
    output: Path | None
    rollback: Path | None
    broker_id_file: Path | None
    cluster: str | None
    seed: int
    config: Path | None
    as_json: bool
    plan: Path | None = None
    system: str = "kafka"
    argv: tuple[str, ...] | list[str] = ()
    optimal: bool = False
    time_limit: float = 60.0
    cordon: tuple[str, ...] = ()


@app.command()
def rebalance(
    ctx: typer.Context,
    inventory: InventoryOption,
    assignment: _Assignment,
    log_dirs: _LogDirs = None,
    health: _Health = None,
    drain: _Drain = None,
    max_moves: _MaxMoves = None,
    mode: _Mode = None,
    rack_aware: _RackAware = None,
    topic_aware: _TopicAware = None,
    in_progress: _InProgress = None,
    out_format: _OutFormat = "table",
    output: _Output = None,
    rollback: _Rollback = None,
    broker_id_file: _BrokerIds = None,
    cluster: ClusterOption = None,
    seed: _Seed = 0,
    config: ConfigOption = None,
    as_json: JsonFlag = False,
    plan: PlanOption = None,
    system: _System = "kafka",
    optimal: OptimalFlag = False,
    time_limit: TimeLimitOption = 60.0,
    cordon: CordonOption = None,
) -> None:
    """Plan replica moves (Redpanda's partition balancer): off down, draining and full nodes,
    rack repair, then counts towards capacity shares.

    A drain, a node down, a full disk or a rack repair moves only what it must; count
    balancing joins it when --mode is given, and the plan says what it would add. Every plan
    prints its moves against a lower bound (the fewest moves any plan reaching the same goals
    needs).

    Prints the plan and, with --output, writes the reassignment document (only the partitions
    that change) and the rollback document (their current assignment). --format
    kafka-reassignment without --output prints both as kafka-reassign-partitions --generate.
    --plan writes the plan document that trimtab execute runs.
    --optimal solves the same plan exactly (fewest moves, then bytes) and prints the proof.
    --cordon BROKER:DIR empties a log dir; brokers whose log dirs are all cordoned
    (KIP-1066, read from --log-dirs) take no new replica.
    """
    options = RebalanceOptions(
        inventory=inventory,
        assignment=assignment,
        log_dirs=log_dirs,
        health=health,
        drain=drain,
        max_moves=max_moves,
        mode=mode,
        rack_aware=rack_aware,
        topic_aware=topic_aware,
        in_progress=in_progress,
        out_format=out_format,
        output=output,
        rollback=rollback,
        broker_id_file=broker_id_file,
        cluster=cluster,
        seed=seed,
        config=config,
        as_json=as_json,
        plan=plan,
        system=system,
        argv=command_argv(ctx),
        optimal=optimal,
        time_limit=time_limit,
        cordon=tuple(cordon or ()),
    )
    _rebalance(options)


def _rebalance(o: RebalanceOptions) -> None:
    """Read the inputs, plan, then print the plan and write its documents."""
    with user_errors():
        fmt = "json" if o.as_json else o.out_format
        one_of("--format", fmt, FORMATS)
        if o.mode is not None:
            one_of("--mode", o.mode, BALANCER_MODES)
        one_of("--system", o.system, SYSTEMS)
        check_plan_output(o.plan)
        back = o.rollback or (o.output.with_suffix(".rollback.json") if o.output else None)
        for option, path in (("--output", o.output), ("--rollback", back)):
            if path is not None:
                owned_output(path, marker=None)
                writable_output(option, path, directory=False, parents=False)
        if o.optimal and o.in_progress is not None:
            raise TrimtabError("--optimal plans from a settled assignment: leave out --in-progress")
        plan, ids, warnings, inv, proof = _plan(o, quiet=fmt != "table")
    # --json carries the rack diversity lost as figures (rack_diversity_lowered)
    print_warnings([*warnings, *(diversity_warnings(plan) if fmt != "json" else [])])
    proposed, current = _documents(plan, ids)
    if o.output is not None and back is not None:
        write_atomically(o.output, proposed)
        write_atomically(back, current)
        err.print(
            f"wrote {plural(len(plan.after), 'partition')} to {o.output}, the rollback to {back}",
            highlight=False,
        )
    if o.plan is not None:
        _write_plan(o, plan, ids)
    if fmt == "json":
        doc = plan_document(plan, ids)
        if proof is not None:
            doc["optimal"] = proof_document(*proof)
        print_json(doc)
    elif fmt == "kafka-reassignment" and o.output is None:
        typer.echo(f"Current partition replica assignment\n{current}")
        typer.echo(f"Proposed partition reassignment configuration\n{proposed}", nl=False)
    elif fmt == "table":
        print_plan(plan, ids)
        if proof is not None:
            print_proof(*proof)
        print_rejected(inv.rejected, inv.rows_read, "inventory")


def _documents(plan: RebalancePlan, ids: Mapping[NodeId, int]) -> tuple[str, str]:
    """The reassignment document and its rollback; a move between log dirs pins its replica's
    directory in ``log_dirs`` (the target there, the source in the rollback)."""
    to: dict[tuple[str, int], dict[NodeId, str]] = {}
    back: dict[tuple[str, int], dict[NodeId, str]] = {}
    for m in plan.dir_moves:
        to.setdefault((m.topic, m.partition), {})[m.node] = m.target
        back.setdefault((m.topic, m.partition), {})[m.node] = m.source
    if not to:
        return dumps(reassignment(plan.after, ids)), dumps(reassignment(plan.before, ids))
    return (
        dumps(reassignment_with_dirs(plan.after, ids, to, plan.dir_partitions)),
        dumps(reassignment_with_dirs(plan.before, ids, back, plan.dir_partitions)),
    )


def _write_plan(o: RebalanceOptions, plan: RebalancePlan, ids: Mapping[NodeId, int]) -> None:
    """Write the plan document (``--plan``) and say its digest, which approves it."""
    assert o.plan is not None
    cfg = load_config(o.config).allocation
    source = plan_source(
        "trimtab rebalance",
        {
            "inventory": o.inventory,
            "assignment": o.assignment,
            "log_dirs": o.log_dirs,
            "health": o.health,
            "broker_ids": o.broker_id_file,
            "in_progress": o.in_progress,
            "config": o.config,
        },
        {
            "mode": plan.mode,
            "drain": o.drain,
            "cordon": ",".join(o.cordon) or None,
            "max_moves": o.max_moves,
            "rack_aware": o.rack_aware,
            "seed": o.seed,
        },
        o.argv,
    )
    document = rebalance_plan_document(
        plan,
        ids,
        system=o.system,
        created=created_now(),
        source=source,
        concurrent_moves=cfg.concurrent_moves,
    )
    write_plan_document(o.plan, document)


def _plan(
    o: RebalanceOptions, *, quiet: bool
) -> tuple[
    RebalancePlan,
    dict[NodeId, int],
    list[str],
    Inventory,
    tuple[OptimalPlan, RebalancePlan] | None,
]:
    """The plan of the cluster as the inputs give it, the broker id of each node, the
    warnings, the inventory read, and with --optimal the solver's plan (the plan returned)
    with the fast planner's."""
    cfg = load_config(o.config).allocation
    inv = read_inventory(o.inventory)
    state = one_cluster(inv, o.cluster).for_role(PARTITION_ROLE)
    mapping = read_broker_ids(o.broker_id_file) if o.broker_id_file else None
    ids = broker_ids([n.id for n in state], mapping)
    held = read_current_assignment(o.assignment, state, mapping, cfg)
    warnings = list(inv.warnings)
    dirs = None
    if o.log_dirs is not None:
        held, state, dirs = _with_sizes(held, state, ids, o.log_dirs, warnings)
    statuses = _health(o.health, state, ids) if o.health else []
    drain = _nodes(o.drain, state, ids, "--drain") if o.drain else []
    extra = log_dir_plan(dirs, o.cordon, ids, statuses, disk_ratios(cfg)[0], drain)
    statuses = [*statuses, *extra.statuses]
    now = time.time()
    in_flight = _in_flight(o.in_progress, held, ids) if o.in_progress else []
    with progress_bar(quiet=quiet) as bar:
        bar.add_task(f"planning over {plural(len(held), 'partition')}", total=None)
        try:
            plan = plan_rebalance(
                state,
                held,
                cfg,
                health=statuses,
                drain=drain,
                now=now,
                in_flight=in_flight,
                mode=o.mode,
                max_moves=o.max_moves,
                rack_aware=o.rack_aware,
                topic_aware=o.topic_aware,
                seed=o.seed,
                evict=extra.evict,
                dir_needs=extra.needs,
                # moves inside brokers are required too: balancing only when asked for
                balance=False if extra.inside and o.mode is None else None,
            )
            plan = _with_log_dirs(plan, extra, held)
        except ValueError as exc:  # an in-progress plan that does not fit the assignment
            raise TrimtabError(f"--in-progress {o.in_progress}: {exc}") from None
        if not o.optimal:
            return plan, ids, warnings, inv, None
        bar.add_task(f"solving exactly (at most {o.time_limit:g} s)", total=None)
        proof = plan_optimal(
            state,
            held,
            plan,
            cfg,
            health=statuses,
            drain=drain,
            now=now,
            mode=o.mode,
            rack_aware=o.rack_aware,
            time_limit_s=o.time_limit,
            evict=extra.evict,
        )
    return _with_log_dirs(proof.plan, extra, held), ids, warnings, inv, (proof, plan)


def _with_log_dirs(plan: RebalancePlan, extra: LogDirPlan, held: tuple[Any, ...]) -> RebalancePlan:
    """``plan`` with the moves inside brokers (and their partitions as they are) and the
    brokers closed to new replicas."""
    # a replica the plan sends off its broker does not move between that broker's dirs first
    left = {(m.topic, m.partition, m.source) for m in plan.moves}
    inside = tuple(d for d in extra.inside if (d.topic, d.partition, d.node) not in left)
    extra = replace(extra, inside=inside)
    keys = {(m.topic, m.partition) for m in extra.inside}
    current = tuple(a for a in held if (a.topic, a.partition) in keys)
    return replace(
        plan,
        dir_moves=extra.inside,
        closed=dict(extra.closed),
        dir_partitions=current,
    )


def _nodes(text: str, state: ClusterState, ids: Mapping[NodeId, int], option: str) -> list[NodeId]:
    """Nodes named by broker id or node id, comma-separated; an unknown one is an error."""
    by_broker = {str(b): n for n, b in ids.items()}
    known = {n.id for n in state}
    out = []
    for token in (t.strip() for t in text.split(",")):
        if token in by_broker:
            out.append(by_broker[token])
        elif token in known:
            out.append(NodeId(token))
        else:
            raise TrimtabError(
                f"{option}: {token!r} is not a broker of cluster {state.name!r} "
                f"(brokers: {', '.join(sorted(by_broker, key=int))})"
            )
    return out


def _with_sizes(
    held: tuple[Any, ...],
    state: ClusterState,
    ids: Mapping[NodeId, int],
    path: Path,
    warnings: list[str],
) -> tuple[tuple[Any, ...], ClusterState, LogDirs]:
    """Assignments with their sizes from the log dirs, the cluster (a node the inventory
    gives no free disk for takes the bytes the log dirs report as used) and the log dirs."""
    dirs = read_log_dirs(path)
    warnings += [f"{path}: log dir with an error skipped: {e}" for e in dirs.errors]
    sized = tuple(replace(a, size_bytes=dirs.size(a.topic, a.partition)) for a in held)
    unsized = sum(1 for a in sized if a.size_bytes == 0)
    if unsized:
        warnings.append(f"{path}: no size for {plural(unsized, 'partition')} (counted as 0 bytes)")
    return sized, free_space_from_log_dirs(state, ids, dirs), dirs


def _health(path: Path, state: ClusterState, ids: Mapping[NodeId, int]) -> list[NodeStatus]:
    """The health rows of this cluster, nodes named by node id or broker id; bad rows are an
    error listing them."""
    parsed = read_health(path)
    if parsed.rejected:
        print_rejected(parsed.rejected, parsed.rows_read, "health")
        raise TrimtabError(f"{plural(len(parsed.rejected), 'health row')} rejected in {path}")
    rows = [s for s, _ in parsed.accepted if s.cluster in (None, state.name)]
    named = _nodes(",".join(s.node for s in rows), state, ids, str(path)) if rows else []
    return [replace(s, node=node) for s, node in zip(rows, named, strict=True)]


_IN_PROGRESS = "the --json of trimtab rebalance"
_IN_PROGRESS_MAKE = "trimtab rebalance ... --json > plan.json (the run whose moves are under way)"


def _in_flight(path: Path, held: tuple[Any, ...], ids: Mapping[NodeId, int]) -> list[InFlight]:
    """The reassignments of an earlier plan's --json; the assignment may show the partitions
    before or after them."""
    refuse_special("--in-progress", path)
    text = read_text(path, _IN_PROGRESS, _IN_PROGRESS_MAKE)
    try:
        doc = json.loads(text)
        moves = [
            (m["topic"], int(m["partition"]), m["from"], m["to"], m["reason"]) for m in doc["moves"]
        ]
    except (ValueError, KeyError, TypeError) as exc:
        guess = seems_to_be(text)
        seems = f"it seems to be {guess}" if guess else f"{type(exc).__name__}: {exc}"
        raise TrimtabError(
            f"--in-progress {path} is not {_IN_PROGRESS}: {seems}. Make one with: "
            f"{_IN_PROGRESS_MAKE}"
        ) from None
    node_of = {b: n for n, b in ids.items()}
    current = {(a.topic, a.partition): a.nodes for a in held}
    grouped: dict[tuple[str, int], list[tuple[NodeId, NodeId, str]]] = {}
    for topic, partition, source, target, reason in moves:
        if source not in node_of or target not in node_of or (topic, partition) not in current:
            raise TrimtabError(
                f"--in-progress {path}: {topic}/{partition} is not in the assignment"
            )
        grouped.setdefault((topic, partition), []).append(
            (node_of[source], node_of[target], reason)
        )
    out = []
    for (topic, partition), steps in grouped.items():
        nodes = current[(topic, partition)]
        forth = {s: t for s, t, _ in steps}
        back = {t: s for s, t, _ in steps}
        if all(s in nodes for s in forth):  # the document from before the move
            previous, target = nodes, tuple(forth.get(n, n) for n in nodes)
        else:
            previous, target = tuple(back.get(n, n) for n in nodes), nodes
        out.append(InFlight(topic, partition, previous, target, steps[0][2]))
    return out
