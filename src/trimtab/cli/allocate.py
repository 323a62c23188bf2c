"""``trimtab allocate``: place new partitions on a cluster and print or export the plan."""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from trimtab._format import plural
from trimtab.allocation import (
    MODES,
    AllocationPlan,
    AllocationRequest,
    PartitionAssignment,
    evens_out,
    plan_allocations,
)
from trimtab.allocation.model import PARTITION_ROLE
from trimtab.cli._common import (
    ClusterOption,
    ConfigOption,
    InventoryOption,
    JsonFlag,
    app,
    err,
    figures_table,
    load_config,
    one_cluster,
    one_of,
    out,
    owned_output,
    print_rejected,
    print_warnings,
    progress_bar,
    user_errors,
    writable_output,
)
from trimtab.cluster import ClusterState
from trimtab.config import AllocationConfig
from trimtab.contract import RejectedRow
from trimtab.errors import AllocationError, TrimtabError
from trimtab.readers.allocation_requests import read_requests
from trimtab.readers.inventory import read_inventory
from trimtab.readers.table_files import RawRow
from trimtab.systems.kafka.ids import broker_ids, read_broker_ids
from trimtab.systems.kafka.readers import read_current_assignment
from trimtab.systems.kafka.writers import dumps, reassignment

__all__ = ["AllocateOptions", "allocate", "plan_json", "write_atomically"]

FORMATS = ("table", "json", "kafka-reassignment")
_PROGRESS_FROM = 50_000  # replicas: below this a run takes a second or two, no bar


# The options of ``trimtab allocate``, each declared once (the command's signature stays short).
_Requests = Annotated[
    Path | None,
    typer.Option(
        "--requests",
        "-r",
        help=(
            "Table of topic, partitions, replication_factor "
            "(optional: cluster, partition_size_bytes)."
        ),
    ),
]
_Mode = Annotated[
    str | None,
    typer.Option("--mode", help="rfc, constraints or rendezvous (default: config allocator)."),
]
_RackAware = Annotated[
    bool | None,
    typer.Option(
        "--rack-aware/--no-rack-aware",
        help="Prefer distinct racks (default: config enable_rack_awareness).",
    ),
]
_Seed = Annotated[int, typer.Option("--seed", help="Seed of every random choice.")]
_OutFormat = Annotated[str, typer.Option("--format", help="table, json or kafka-reassignment.")]
_Output = Annotated[
    Path | None,
    typer.Option(
        "--output", "-o", help="Write the json or kafka-reassignment here.", dir_okay=False
    ),
]
_BrokerIds = Annotated[
    Path | None,
    typer.Option("--broker-ids", help="Table node, broker_id (Kafka broker ids of nodes)."),
]
_Existing = Annotated[
    Path | None,
    typer.Option(
        "--existing",
        help="Current assignment: reassignment JSON, kafka-reassign-partitions.sh --generate "
        "or --execute output, or rpk cluster partitions list (table or JSON).",
    ),
]
_Rebalance = Annotated[
    bool,
    typer.Option("--rebalance", help="Also move existing replicas towards capacity shares."),
]
_MaxMoves = Annotated[
    int | None, typer.Option("--max-moves", help="At most this many replica moves.", min=0)
]
_AddPartitions = Annotated[
    bool,
    typer.Option(
        "--add-partitions",
        help="A request for a topic of --existing adds that many partitions to it "
        "(without it: error 'topic already exists').",
    ),
]


@dataclass(frozen=True, slots=True, kw_only=True)
class AllocateOptions:
    """The options of one ``trimtab allocate`` run, as given."""

    inventory: Path
    requests: Path | None
    mode: str | None
    rack_aware: bool | None
    cluster: str | None
    seed: int
    out_format: str
    output: Path | None
    broker_id_file: Path | None
    existing: Path | None
    rebalance: bool
    max_moves: int | None
    add_partitions: bool
    config: Path | None
    as_json: bool


@app.command()
def allocate(
    inventory: InventoryOption,
    requests: _Requests = None,
    mode: _Mode = None,
    rack_aware: _RackAware = None,
    cluster: ClusterOption = None,
    seed: _Seed = 0,
    out_format: _OutFormat = "table",
    output: _Output = None,
    broker_id_file: _BrokerIds = None,
    existing: _Existing = None,
    rebalance: _Rebalance = False,
    max_moves: _MaxMoves = None,
    add_partitions: _AddPartitions = False,
    config: ConfigOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Allocate new partitions (Redpanda's allocator, rendezvous hashing or the 2019 RFC).

    Every request is placed or none is: a request that cannot be met exits with status 2,
    says why, and writes nothing. A request for a topic that already exists (in --existing)
    is refused unless --add-partitions. With --existing (the current assignment) and --rebalance,
    existing replicas move too, as Redpanda's partition balancer would move them. The
    summary shows replicas per node and per core and the balance figure N·Σx²/(Σx)²,
    x = replicas/share, the capacity share as far as the racks allow it (1.0 is perfect).
    """
    options = AllocateOptions(
        inventory=inventory,
        requests=requests,
        mode=mode,
        rack_aware=rack_aware,
        cluster=cluster,
        seed=seed,
        out_format=out_format,
        output=output,
        broker_id_file=broker_id_file,
        existing=existing,
        rebalance=rebalance,
        max_moves=max_moves,
        add_partitions=add_partitions,
        config=config,
        as_json=as_json,
    )
    _allocate(options)


def _allocate(o: AllocateOptions) -> None:
    """Read the inputs, plan, then print the plan or write its document."""
    with user_errors():
        fmt = _format(o.out_format, o.as_json)
        if o.mode is not None:
            one_of("--mode", o.mode, MODES)
        cfg = load_config(o.config).allocation
        inv = read_inventory(o.inventory)
        state = one_cluster(inv, o.cluster).for_role(PARTITION_ROLE)
        if o.requests is None and not o.rebalance:
            raise TrimtabError("give --requests, or --rebalance with --existing")
        _check_moves(o)
        if o.output is not None:
            owned_output(o.output, marker=None)
            writable_output("--output", o.output, directory=False, parents=False)
        batch, sources, warnings = (
            _requests(o.requests, state, set(inv.clusters)) if o.requests else ([], [], [])
        )
        ids_map = read_broker_ids(o.broker_id_file) if o.broker_id_file else None
        held = read_current_assignment(o.existing, state, ids_map, cfg) if o.existing else ()
        plan = _run(state, batch, sources, cfg, o, held, quiet=fmt == "json")
        text = _export(plan, fmt, ids_map)
    print_warnings((*inv.warnings, *warnings))
    if fmt == "table":
        _print_plan(plan)
        print_rejected(inv.rejected, inv.rows_read, "inventory")
    elif o.output is None:
        typer.echo(text, nl=False)
    else:
        write_atomically(o.output, text)
        err.print(f"wrote {plural(plan.partitions, 'partition')} to {o.output}", highlight=False)


def _check_moves(o: AllocateOptions) -> None:
    """--rebalance, --max-moves and --add-partitions act on the current assignment: without
    --existing there is none, and the options would be ignored."""
    for given, option in (
        (o.rebalance, "--rebalance"),
        (o.max_moves is not None, "--max-moves"),
        (o.add_partitions, "--add-partitions"),
    ):
        if given and o.existing is None:
            raise TrimtabError(
                f"{option} acts on the current assignment: give it with --existing "
                "FILE (the reassignment JSON kafka-reassign-partitions --generate prints)"
            )


def _format(out_format: str, as_json: bool) -> str:
    one_of("--format", out_format, FORMATS)
    if as_json and out_format not in ("table", "json"):
        raise TrimtabError("--json and --format kafka-reassignment cannot be combined")
    return "json" if as_json else out_format


def _requests(
    path: Path, state: ClusterState, known: set[str]
) -> tuple[list[AllocationRequest], list[RawRow], list[str]]:
    """This cluster's requests with their rows; bad rows (or unknown clusters) are an error."""
    parsed = read_requests(path)
    rejected = list(parsed.rejected)
    batch: list[AllocationRequest] = []
    sources: list[RawRow] = []
    others: Counter[str] = Counter()
    for request, raw in parsed.accepted:
        if request.cluster is None or request.cluster == state.name:
            batch.append(request)
            sources.append(raw)
        elif request.cluster in known:
            others[request.cluster] += 1
        else:
            reason = f"cluster {request.cluster!r} is not in the inventory"
            rejected.append(RejectedRow(raw.source, raw.line, reason, raw.data or {}))
    if rejected:
        print_rejected(rejected, parsed.rows_read, "request")
        first = rejected[0]
        raise TrimtabError(
            f"{plural(len(rejected), 'request row')} rejected (first: {first}); nothing allocated"
        )
    if not batch:
        raise TrimtabError(f"no requests for cluster {state.name!r} in {path}")
    warnings = list(parsed.warnings)
    warnings += [f"skipped {plural(n, 'request row')} for cluster {c}" for c, n in others.items()]
    return batch, sources, warnings


def _run(
    state: ClusterState,
    batch: list[AllocationRequest],
    sources: list[RawRow],
    cfg: AllocationConfig,
    options: AllocateOptions,
    existing: Iterable[PartitionAssignment],
    *,
    quiet: bool = False,
) -> AllocationPlan:
    """The plan, with a progress bar on large batches; a request that cannot be met is an
    error naming its row."""

    def plan(progress: Callable[[int, int], None] | None = None) -> AllocationPlan:
        return plan_allocations(
            state,
            batch,
            cfg,
            mode=options.mode,
            rack_aware=options.rack_aware,
            seed=options.seed,
            existing=existing,
            rebalance=options.rebalance,
            max_moves=options.max_moves,
            progress=progress,
            add_partitions=options.add_partitions,
        )

    try:
        total = sum(r.replicas for r in batch)
        if quiet or total < _PROGRESS_FROM:
            return plan()
        # evening out (and moving held replicas with --rebalance) often takes longer than the
        # placing itself: shown as its own phase once every replica is placed
        evens = evens_out(cfg, mode=options.mode, rebalance=options.rebalance)
        with progress_bar() as bar:
            task = bar.add_task(f"allocating {plural(total, 'replica')}", total=total)

            def show(done: int, _: int) -> None:
                bar.update(task, completed=done)
                if done >= total and evens:  # a phase of unknown length: a pulsing bar
                    bar.remove_task(task)
                    bar.add_task("evening out the batch", total=None)

            return plan(show)
    except AllocationError as error:
        index = error.request_index
        where = f"{sources[index].source}:{sources[index].line}: " if index is not None else ""
        raise TrimtabError(f"{where}{error}") from None


def _export(plan: AllocationPlan, fmt: str, ids_map: dict[str, int] | None) -> str:
    """The text ``--format`` json or kafka-reassignment writes (empty for the table)."""
    if fmt == "kafka-reassignment":
        changed = [*plan.assignments, *(after for _, after in plan.moves)]
        used = sorted({r.node for a in changed for r in a.replicas})
        return dumps(reassignment(changed, broker_ids(used, ids_map)))
    if fmt == "json":
        return json.dumps(plan_json(plan), indent=2) + "\n"
    return ""


def plan_json(plan: AllocationPlan) -> dict[str, Any]:
    """The ``--json`` document: summary keys first, then every assignment."""
    return {
        "cluster": plan.cluster,
        "mode": plan.mode,
        "rack_aware": plan.rack_aware,
        "seed": plan.seed,
        "partitions": plan.partitions,
        "replicas": plan.replicas,
        "balance": plan.balance,
        "per_node": dict(plan.per_node),
        "per_core": {node: list(cores) for node, cores in plan.per_core.items()},
        "capacity": dict(plan.capacity),
        "active": sorted(plan.active),
        "leaders": dict(plan.leaders),
        "assignments": [
            {
                "topic": a.topic,
                "partition": a.partition,
                "replicas": [{"node": r.node, "core": r.core} for r in a.replicas],
            }
            for a in plan.assignments
        ],
        "moves": [
            {
                "topic": after.topic,
                "partition": after.partition,
                "before": list(before.nodes),
                "after": [{"node": r.node, "core": r.core} for r in after.replicas],
            }
            for before, after in plan.moves
        ],
        "moved_replicas": plan.moved_replicas,
    }


def _print_plan(plan: AllocationPlan) -> None:
    racks = " (rack-aware)" if plan.rack_aware else ""
    out.print(
        f"[bold]{plan.cluster}[/]: {plural(plan.partitions, 'partition')} "
        f"({plural(plan.replicas, 'replica')}) allocated by {plan.mode}{racks}, seed {plan.seed}",
        highlight=False,
    )
    out.print(
        f"balance {plan.balance:.6f}  (N·Σx²/(Σx)², x = replicas/reachable share, the "
        "capacity share as far as racks allow; 1 is perfect)",
        highlight=False,
    )
    if plan.moves:
        out.print(
            f"moves: {plural(plan.moved_replicas, 'replica')} of "
            f"{plural(len(plan.moves), 'existing partition')} change node",
            highlight=False,
        )
    live = [n for n in plan.per_node if n in plan.active]
    total = sum(plan.per_node[n] for n in live)
    whole = sum(plan.capacity[n] for n in live) or 1
    columns = ("node", "capacity", "replicas", "vs share", "leaders", "per core")
    table = figures_table(columns, text=("node", "per core"))
    for node, count in plan.per_node.items():
        cap = plan.capacity[node]
        share = plan.shares.get(node, total * cap / whole)  # the share the racks let it reach
        if node not in plan.active:
            deviation = "inactive"
        else:
            deviation = f"{(count - share) / share:+.1%}" if share else "-"
        cores = plan.per_core[node]
        per_core = (
            " ".join(str(c) for c in cores) if len(cores) <= 8 else f"{min(cores)}–{max(cores)}"
        )
        table.add_row(
            node, f"{cap:,}", f"{count:,}", deviation, f"{plan.leaders[node]:,}", per_core
        )
    out.print(table)


def write_atomically(path: Path, text: str) -> None:
    """Write atomically: a reader sees the old file or the whole new one."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
