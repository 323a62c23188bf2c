"""What ``trimtab rebalance`` prints: the ``--json`` document, the readable plan, and the
warnings of a plan that lowers rack diversity.

Kept apart from the command (:mod:`trimtab.cli.rebalance`), which reads the inputs and plans.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trimtab._format import plural
from trimtab.allocation.balance_plan import Balancing, PlannedMove, RebalancePlan
from trimtab.cli._common import figures_table, out
from trimtab.cluster import NodeId

__all__ = ["diversity_warnings", "plan_document", "print_plan"]


def _move(m: PlannedMove, ids: Mapping[NodeId, int]) -> dict[str, Any]:
    return {
        "topic": m.topic,
        "partition": m.partition,
        "from": ids[m.source],
        "to": ids[m.target],
        "reason": m.reason,
        "bytes": m.size_bytes,
        "required": m.required,
    }


def _balancing(b: Balancing | None, ids: Mapping[NodeId, int]) -> dict[str, Any] | None:
    if b is None:
        return None
    optional = [] if b.included else [_move(m, ids) for m in b.moves]
    return b.figures() | {"optional_moves": optional}


def plan_document(plan: RebalancePlan, ids: Mapping[NodeId, int]) -> dict[str, Any]:
    """The ``--json`` document (nodes as broker ids). ``moves`` are the plan's, each marked
    ``required`` or not; ``balancing.optional_moves`` are those balancing would add when it
    was left out."""
    return {
        "moves": [_move(m, ids) for m in plan.moves],
        "cancelled": [
            {"topic": c.topic, "partition": c.partition, "why": c.why} for c in plan.cancelled
        ],
        "unfixable": [
            {
                "reason": u.reason,
                "why": u.why,
                "topic": u.topic,
                "partition": u.partition,
                "broker": None if u.node is None else ids[u.node],
            }
            for u in plan.unfixable
        ],
        "counts_by_reason": plan.counts_by_reason,
        "balance_before": plan.balance_before,
        "balance_after": plan.balance_after,
        "bytes_moved": plan.bytes_moved,
        "lower_bound_moves": plan.lower_bound_moves,
        "lower_bound_bytes": plan.lower_bound_bytes,
        "lower_bound_terms": plan.lower_bound_terms,
        "balancing": _balancing(plan.balancing, ids),
        "rack_diversity_lowered": plan.diversity_lowered,
        "log_dir_moves": [
            {
                "topic": m.topic,
                "partition": m.partition,
                "broker": ids[m.node],
                "from_dir": m.source,
                "to_dir": m.target,
                "bytes": m.size_bytes,
            }
            for m in plan.dir_moves
        ],
        "all_moves": len(plan.moves) + len(plan.dir_moves),
        "lower_bound_all_moves": plan.lower_bound_all_moves,
        "closed_brokers": [{"broker": ids[n], "why": why} for n, why in plan.closed.items()],
    }


def _log_dir_lines(plan: RebalancePlan, ids: Mapping[NodeId, int]) -> list[str]:
    """Brokers closed to new replicas and the moves between log dirs of one broker."""
    lines = [f"closed to new replicas: broker {ids[n]} ({why})" for n, why in plan.closed.items()]
    if plan.dir_moves:
        size = sum(m.size_bytes for m in plan.dir_moves)
        lines.append(
            f"moves inside brokers (between log dirs, no network bytes): "
            f"{len(plan.dir_moves):,}; {size:,} bytes"
        )
        lines.append(
            f"all moves (between and inside brokers) / lower bound: "
            f"{len(plan.moves) + len(plan.dir_moves):,} / {plan.lower_bound_all_moves:,}"
        )
        lines += [
            f"  {m.topic}-{m.partition} on broker {ids[m.node]}: {m.source} → {m.target} "
            f"({m.size_bytes:,} bytes)"
            for m in plan.dir_moves[:50]
        ]
        if len(plan.dir_moves) > 50:
            lines.append(f"  first 50 of {len(plan.dir_moves):,} (--json lists all)")
    return lines


def print_plan(plan: RebalancePlan, ids: Mapping[NodeId, int]) -> None:
    out.print(
        f"[bold]{plan.cluster}[/]: {plural(len(plan.moves), 'replica move')} in "
        f"{plural(len(plan.after), 'partition')} ({plan.bytes_moved:,} bytes), mode {plan.mode}; "
        f"balance {plan.balance_before:.6f} → {plan.balance_after:.6f}",
        highlight=False,
    )
    out.print(
        f"moves / lower bound: {len(plan.moves):,} / {plan.lower_bound_moves:,}; "
        f"bytes / lower bound: {plan.bytes_moved:,} / {plan.lower_bound_bytes:,}",
        highlight=False,
    )
    for line in _balancing_lines(plan):
        out.print(line, highlight=False)
    for line in _log_dir_lines(plan, ids):
        out.print(line, highlight=False)
    if plan.unavailable or plan.full:
        down = ", ".join(str(ids[n]) for n in plan.unavailable) or "none"
        full = ", ".join(f"{ids[n]} ({r:.1%})" for n, r in plan.full.items()) or "none"
        out.print(f"down past the timeout: {down}; disks over the limit: {full}", highlight=False)
    counts = figures_table(("reason", "moves", "lower bound", "not fixed"), text=("reason",))
    missed: dict[str, int] = {}
    for u in plan.unfixable:
        missed[u.reason] = missed.get(u.reason, 0) + 1
    for reason, made in plan.counts_by_reason.items():
        bound = plan.lower_bound_terms.get(reason, 0)
        counts.add_row(reason, f"{made:,}", f"{bound:,}", f"{missed.get(reason, 0):,}")
    out.print(counts)
    if plan.moves:
        table = figures_table(
            ("topic", "partition", "from", "to", "reason", "bytes"), text=("topic", "reason")
        )
        for m in plan.moves[:50]:
            table.add_row(
                m.topic,
                str(m.partition),
                str(ids[m.source]),
                str(ids[m.target]),
                m.reason,
                f"{m.size_bytes:,}",
            )
        if len(plan.moves) > 50:
            table.caption = f"first 50 of {len(plan.moves):,} moves (--json lists all)"
        out.print(table)
    for c in plan.cancelled:
        out.print(f"cancel {c.topic}/{c.partition}: {c.why}", highlight=False)
    for u in plan.unfixable[:20]:
        where = (
            f"{u.topic}/{u.partition}"
            if u.topic is not None
            else f"broker {ids[u.node]}"
            if u.node
            else ""
        )
        out.print(f"[yellow]not fixed[/] ({u.reason}) {where}: {u.why}", highlight=False)
    if len(plan.unfixable) > 20:
        out.print(f"… and {len(plan.unfixable) - 20:,} more not fixed (--json lists all)")


def _balancing_lines(plan: RebalancePlan) -> list[str]:
    """What count balancing adds (or would add), what topic balance costs and buys, and
    any loss of rack diversity."""
    b, lines = plan.balancing, []
    if b is not None and (b.moves or b.retargeted):
        verb = "adds" if b.included else "would add (give --mode to include it)"
        elsewhere = (
            f", landing {plural(b.retargeted, 'required move')} elsewhere at no cost"
            if b.retargeted
            else ""
        )
        lines.append(
            f"count balancing {verb} {plural(len(b.moves), 'move')} "
            f"({b.bytes_moved:,} bytes; lower bound {b.lower_bound_moves:,}){elsewhere}: "
            f"balance {b.balance_before:.6f} → {b.balance_after:.6f}"
        )
        if b.topic_aware and b.beyond_counts:
            lines.append(
                f"topic balance: {plural(b.beyond_counts, 'move')} beyond the count bound, "
                f"buying a topic spread of {b.topic_spread_before:,} → "
                f"{b.topic_spread_after:,} replicas above their topic share "
                "(--no-topic-aware leaves it out)"
            )
    return lines


def diversity_warnings(plan: RebalancePlan) -> list[str]:
    """A plan (or the balancing it leaves out) that spreads partitions over fewer racks says
    so, rack awareness on or off."""
    out = []
    if plan.diversity_lowered:
        out.append(
            f"this plan lowers the rack diversity of "
            f"{plural(plan.diversity_lowered, 'partition')} (their replicas span fewer racks; "
            "--rack-aware keeps it)"
        )
    b = plan.balancing
    if b is not None and not b.included and b.diversity_lowered:
        out.append(
            f"the count balancing left out would lower the rack diversity of "
            f"{plural(b.diversity_lowered, 'partition')}"
        )
    return out
