"""Log dirs in ``trimtab rebalance``: cordons read from the log dirs and ``--cordon BROKER:DIR``.

Kept apart from the command so it stays short: the option, the check of each ``BROKER:DIR``
(an unknown broker or dir is one ``error:`` line naming the nearest good one), and what the
planner is given (the nodes closed to new replicas, the replicas that must leave their
broker) with the moves inside brokers the plan shows apart.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated

import typer

from trimtab.allocation.health import NodeStatus
from trimtab.allocation.log_dirs import (
    DirMove,
    DirNeed,
    LogDir,
    after_moves,
    closed_nodes,
    dir_needs,
    empty_log_dirs,
    relieve_full_dirs,
)
from trimtab.cluster import NodeHealth, NodeId
from trimtab.errors import TrimtabError
from trimtab.systems.kafka.readers import LogDirs

__all__ = ["CordonOption", "LogDirPlan", "log_dir_plan"]

CordonOption = Annotated[
    list[str] | None,
    typer.Option(
        "--cordon",
        metavar="BROKER:DIR",
        help="Empty one log dir, BROKER:DIR (repeatable; needs --log-dirs): its replicas go to "
        "another open dir of the broker when one has room, else to other brokers.",
    ),
]


@dataclass(frozen=True, slots=True)
class LogDirPlan:
    """What the log dirs add to a plan: nodes closed to new replicas (as maintenance, and
    why), moves inside brokers, and replicas that must leave their broker."""

    closed: dict[NodeId, str] = field(default_factory=dict)
    statuses: tuple[NodeStatus, ...] = ()
    inside: tuple[DirMove, ...] = ()
    evict: tuple[tuple[str, int, NodeId], ...] = ()
    needs: dict[NodeId, DirNeed] = field(default_factory=dict)  # for the lower bound


def log_dir_plan(
    dirs: LogDirs | None,
    cordons: Sequence[str],
    ids: Mapping[NodeId, int],
    health: Sequence[NodeStatus],
    soft: float,
    drain: Collection[NodeId] = (),
) -> LogDirPlan:
    """The log dirs' part of the plan: cordons, dirs emptied (``--cordon``), and full dirs
    (above ``soft`` of their capacity) relieved inside their broker first; ``--cordon``
    without ``--log-dirs`` is an error. Nothing moves inside a broker that is drained or
    down (its replicas leave it, or it cannot take a request): the plan's drain step sees
    to those."""
    if dirs is None:
        if cordons:
            raise TrimtabError(
                "--cordon needs --log-dirs (kafka-log-dirs.sh --describe output): it says "
                "which replicas each log dir holds"
            )
        return LogDirPlan()
    node_of = {b: n for n, b in ids.items()}
    emptied = {_cordon(text, dirs, node_of) for text in cordons}
    known = [
        LogDir(
            node_of[d.broker],
            d.path,
            d.total_bytes,
            d.used_bytes,
            d.cordoned or (node_of[d.broker], d.path) in emptied,
            d.replicas,
        )
        for d in dirs.dirs
        if d.broker in node_of
    ]
    closed = {
        node: f"all log dirs cordoned: {', '.join(paths)}"
        for node, paths in closed_nodes(known).items()
    }
    stated = {s.node for s in health}
    statuses = tuple(
        NodeStatus(node, NodeHealth.MAINTENANCE) for node in closed if node not in stated
    )
    gone = {*drain, *(s.node for s in health if s.health in (NodeHealth.DOWN, NodeHealth.DRAINING))}
    working = [d for d in known if d.node not in gone]
    emptied = {(node, path) for node, path in emptied if node not in gone}
    inside, leave = empty_log_dirs(working, emptied)
    inside += relieve_full_dirs(after_moves(working, inside, emptied), soft)
    needs = dir_needs(working, emptied, soft)
    return LogDirPlan(closed, statuses, tuple(inside), tuple(leave), needs)


def _cordon(text: str, dirs: LogDirs, node_of: Mapping[int, NodeId]) -> tuple[NodeId, str]:
    """(node, path) of one ``BROKER:DIR``; a bad one names the nearest good one."""
    broker_text, sep, path = text.partition(":")
    brokers = sorted({d.broker for d in dirs.dirs if d.broker in node_of})
    if not sep or not path or not broker_text.strip().isdigit():
        raise TrimtabError(f"--cordon {text!r}: write BROKER:DIR, for example 3:/data/d1")
    broker = int(broker_text)
    if broker not in brokers:
        names = [str(b) for b in brokers]
        near = difflib.get_close_matches(broker_text.strip(), names, n=1, cutoff=0.0)
        hint = f"did you mean {near[0]}? " if near else ""
        raise TrimtabError(
            f"--cordon {text!r}: broker {broker} has no log dir in the --log-dirs file "
            f"({hint}brokers: {', '.join(names) or 'none'})"
        )
    paths = [d.path for d in dirs.dirs if d.broker == broker]
    if path not in paths:
        near = difflib.get_close_matches(path, paths, n=1, cutoff=0.0)
        raise TrimtabError(
            f"--cordon {text!r}: broker {broker} has no log dir {path!r} "
            f"(did you mean {broker}:{near[0]}? its dirs: {', '.join(paths)})"
        )
    return node_of[broker], path
