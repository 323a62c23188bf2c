"""Log dirs within a broker (JBOD): cordons (KIP-1066) and the emptying of one dir.

Goals
    Kafka 4.3 lets an operator cordon a log dir (KIP-1066): it keeps its replicas but takes no
    new one, and the placer skips a broker whose log dirs are all cordoned. A plan must do the
    same: never send a replica to a cordoned dir, nor to a broker with no open dir
    (:func:`closed_nodes`, which the planner sees as nodes in maintenance: they keep their
    replicas and take none).
    Emptying a dir (``rebalance --cordon BROKER:DIR``) moves every replica of it. A replica
    that another open dir of the same broker can take moves there (``AlterReplicaLogDirs``:
    a copy on the broker's own disks, no network traffic); only the others leave the broker
    and go through the partition planner (:func:`empty_log_dirs`), after Cruise Control's
    intra-broker disk capacity goal, which relieves a disk inside its broker first.

Rule for the dir that takes a replica: the open dir of the broker with the most room left
(its capacity less its bytes and what this plan already sent it), when its capacity is known
and the replica fits; with no capacity known (``kafka-log-dirs.sh`` prints none), the dir
holding the fewest bytes, as Kafka's own placement of a new replica picks the dir with the
fewest partitions (then every replica stays on its broker).

Which replicas stay when the room is short (fewest moves off the broker, then fewest bytes
over the network, as the planner's own order): the smallest are placed first, which keeps
the most of them (for one open dir, the most possible); then each replica that must leave,
largest first, takes the place of the smallest kept one it can replace in that one's dir,
which sends fewer bytes away for as many moves.

Full dirs (after Cruise Control's ``IntraBrokerDiskCapacityGoal``): a dir of known capacity
above the soft disk limit (``partition_autobalancing_max_disk_usage_percent``, 80 %) on a
broker with open dirs under it is relieved inside the broker first
(:func:`relieve_full_dirs`): while it is over, the smallest replica that alone takes it under
goes, else the largest (fewest moves, then fewest bytes, as the planner's full-disk step),
each to the open dir with the most room that stays under the limit with it. What no dir of
the broker can take is left to the partition planner's full-disk step (the broker's total).

What any plan must do (:func:`dir_needs`, the lower bound's input): the packing above is one
way to choose which replicas of an emptied dir leave the broker, not the only one, and with
several open dirs not always the best (packing the largest first, 30, 25 and 25 GB with
50 GB free keep the 30 and send 50 GB away, where keeping the two of 25 sends 30). So the
bound takes no packing's choice. Every replica of an
emptied dir moves once at least (inside the broker or off it); the bytes of the broker's
emptied dirs beyond the room of its open dirs (their free bytes, unbounded when one has no
known capacity) must leave the broker, which no fewer replicas than its largest can carry
(moving a replica of an open dir away makes room too, so any of the broker's replicas may be
among them). A broker with no open dir sends every replica of its emptied dirs away.

Worked example: broker 3 has /d1 (cordoned, 40 GB in two replicas of 30 and 10 GB) and /d2
with 20 GB free. ``--cordon 3:/d1``: the 30 GB replica does not fit /d2 and leaves broker 3
(one inter-broker move); the 10 GB one moves to /d2 (one intra-broker move, no network
bytes).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field, replace

from trimtab.cluster import NodeId

__all__ = [
    "DirMove",
    "DirNeed",
    "LogDir",
    "after_moves",
    "closed_nodes",
    "dir_needs",
    "empty_log_dirs",
    "full_dir_bound",
    "relieve_full_dirs",
]


@dataclass(frozen=True, slots=True)
class LogDir:
    """One log dir of a broker: its path, capacity (``None`` when unknown), bytes held,
    cordon, and its replicas ((topic, partition) → bytes, future replicas left out)."""

    node: NodeId
    path: str
    total_bytes: int | None = None
    used_bytes: int = 0
    cordoned: bool = False
    replicas: dict[tuple[str, int], int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DirMove:
    """A replica moving between two log dirs of its broker (no network bytes)."""

    topic: str
    partition: int
    node: NodeId
    source: str
    target: str
    size_bytes: int


@dataclass(frozen=True, slots=True)
class DirNeed:
    """What one broker's log dirs ask of every plan (module doc): ``deficit`` bytes at least
    leave the broker; ``emptied`` its replicas in emptied dirs, each moving once at least
    (within the broker or off it); ``full`` the fewest replicas its dirs over the soft limit
    must send away (:func:`full_dir_bound`); ``closed`` when no open dir can take anything
    (every replica of ``emptied`` leaves the broker)."""

    deficit: int = 0
    emptied: frozenset[tuple[str, int]] = frozenset()
    full: int = 0
    closed: bool = False


def closed_nodes(dirs: Iterable[LogDir]) -> dict[NodeId, tuple[str, ...]]:
    """Nodes whose log dirs are all cordoned, with those dirs (KIP-1066's placer skips them)."""
    by_node: dict[NodeId, list[LogDir]] = {}
    for d in dirs:
        by_node.setdefault(d.node, []).append(d)
    return {
        node: tuple(d.path for d in ds)
        for node, ds in by_node.items()
        if ds and all(d.cordoned for d in ds)
    }


def empty_log_dirs(
    dirs: Iterable[LogDir], emptied: Collection[tuple[NodeId, str]]
) -> tuple[list[DirMove], list[tuple[str, int, NodeId]]]:
    """Every replica of the ``emptied`` (node, path) dirs: those another open dir of their
    node takes (moves inside the broker), and those that must leave the node (topic,
    partition, node), both in a stable order."""
    by_node: dict[NodeId, list[LogDir]] = {}
    for d in dirs:
        by_node.setdefault(d.node, []).append(d)
    inside: list[DirMove] = []
    leave: list[tuple[str, int, NodeId]] = []
    for node, path in sorted(emptied):
        ds = by_node.get(node, [])
        source = next((d for d in ds if d.path == path), None)
        if source is None:
            continue
        open_dirs = [d for d in ds if not d.cordoned and (node, d.path) not in emptied]
        added = {d.path: 0 for d in open_dirs}
        known = any(d.total_bytes is not None for d in open_dirs)
        kept: dict[tuple[str, int], tuple[str, int]] = {}  # key: (target path, size)
        gone: list[tuple[tuple[str, int], int]] = []
        order = sorted(source.replicas.items(), key=lambda kv: (kv[1] if known else -kv[1], kv[0]))
        for key, size in order:
            target = _room_for(open_dirs, added, size)
            if target is None:
                gone.append((key, size))
                continue
            added[target.path] += size
            kept[key] = (target.path, size)
        if known:
            gone = _trade_up(open_dirs, added, kept, gone)
        inside += [DirMove(t, p, node, path, where, size) for (t, p), (where, size) in kept.items()]
        leave += [(t, p, node) for (t, p), _ in sorted(gone, key=lambda kv: (-kv[1], kv[0]))]
    return inside, leave


def _trade_up(
    open_dirs: list[LogDir],
    added: dict[str, int],
    kept: dict[tuple[str, int], tuple[str, int]],
    gone: list[tuple[tuple[str, int], int]],
) -> list[tuple[tuple[str, int], int]]:
    """Each leaving replica, largest first, takes the place of the smallest kept one whose
    dir then still fits it (as many moves off the broker, fewer bytes); the new leavers."""
    room = {d.path: (d.total_bytes or 0) - d.used_bytes - added[d.path] for d in open_dirs}
    out = []
    for key, size in sorted(gone, key=lambda kv: (-kv[1], kv[0])):
        swap = min(
            (
                (small, k)
                for k, (where, small) in kept.items()
                if small < size and room.get(where, -1) + small >= size
            ),
            default=None,
        )
        if swap is None:
            out.append((key, size))
            continue
        small, k = swap
        where, _ = kept.pop(k)
        room[where] += small - size
        added[where] += size - small
        kept[key] = (where, size)
        out.append((k, small))
    return out


def dir_needs(
    dirs: Iterable[LogDir], emptied: Collection[tuple[NodeId, str]], soft: float
) -> dict[NodeId, DirNeed]:
    """Per broker with an emptied dir or a dir over ``soft`` of its capacity, what every plan
    must do there (module doc), whatever replicas it picks."""
    by_node: dict[NodeId, list[LogDir]] = {}
    for d in dirs:
        by_node.setdefault(d.node, []).append(d)
    out: dict[NodeId, DirNeed] = {}
    for node, ds in sorted(by_node.items()):
        gone = [d for d in ds if (node, d.path) in emptied]
        open_dirs = [d for d in ds if not d.cordoned and (node, d.path) not in emptied]
        full = full_dir_bound(_relievable(ds, open_dirs, emptied, soft), soft)
        if not gone and not full:
            continue
        held = sum(sum(d.replicas.values()) for d in gone)
        if any(d.total_bytes is None for d in open_dirs):
            room = held  # a dir of unknown capacity takes whatever comes
        else:
            room = sum(max(0, (d.total_bytes or 0) - d.used_bytes) for d in open_dirs)
        keys = frozenset(key for d in gone for key in d.replicas)
        out[node] = DirNeed(max(0, held - room), keys, full, closed=bool(gone) and not open_dirs)
    return out


def _relievable(
    ds: list[LogDir],
    open_dirs: list[LogDir],
    emptied: Collection[tuple[NodeId, str]],
    soft: float,
) -> list[LogDir]:
    """The dirs over the limit whose excess the broker's other open dirs of known capacity
    have room for under it (summed): relieving those inside is a goal of the plan; the
    others are left to the full-disk step, which sees the broker's total."""
    out = []
    for d in ds:
        if (d.node, d.path) in emptied or not d.total_bytes:
            continue
        excess = d.used_bytes - soft * d.total_bytes
        room = sum(
            max(0.0, soft * (o.total_bytes or 0) - o.used_bytes)
            for o in open_dirs
            if o is not d and o.total_bytes
        )
        if excess > 0 and room >= excess:
            out.append(d)
    return out


def _room_for(open_dirs: list[LogDir], added: dict[str, int], size: int) -> LogDir | None:
    """The open dir that takes ``size`` bytes (module doc's rule), or None."""
    known = [d for d in open_dirs if d.total_bytes is not None]
    if known:
        room = {d.path: (d.total_bytes or 0) - d.used_bytes - added[d.path] for d in known}
        best = max(known, key=lambda d: (room[d.path], d.path))
        return best if room[best.path] >= size else None
    if not open_dirs:
        return None
    return min(open_dirs, key=lambda d: (d.used_bytes + added[d.path], d.path))


def after_moves(
    dirs: Iterable[LogDir], moves: Iterable[DirMove], emptied: Collection[tuple[NodeId, str]]
) -> list[LogDir]:
    """``dirs`` once ``moves`` are made and the ``emptied`` dirs hold nothing (what did not
    move inside its broker leaves it)."""
    out = {(d.node, d.path): replace(d, replicas=dict(d.replicas)) for d in dirs}
    for key in emptied:
        if key in out:
            out[key] = replace(out[key], replicas={}, used_bytes=0)
    for m in moves:
        target = out[(m.node, m.target)]
        target.replicas[(m.topic, m.partition)] = m.size_bytes
        out[(m.node, m.target)] = replace(target, used_bytes=target.used_bytes + m.size_bytes)
    return list(out.values())


def relieve_full_dirs(dirs: Iterable[LogDir], soft: float) -> list[DirMove]:
    """Moves inside brokers that bring each dir over ``soft`` × its capacity under it, as far
    as the broker's open dirs allow (module doc's rule); most filled dirs first."""
    by_node: dict[NodeId, list[LogDir]] = {}
    for d in dirs:
        by_node.setdefault(d.node, []).append(d)
    moves: list[DirMove] = []
    for node in sorted(by_node):
        ds = [d for d in by_node[node] if d.total_bytes]
        used = {d.path: d.used_bytes for d in ds}
        limit = {d.path: soft * (d.total_bytes or 0) for d in ds}
        for d in sorted(ds, key=lambda d: (-used[d.path] / (d.total_bytes or 1), d.path)):
            sized = sorted((size, key) for key, size in d.replicas.items() if size > 0)
            while used[d.path] > limit[d.path] and sized:
                excess = used[d.path] - limit[d.path]
                k = next((i for i, (size, _) in enumerate(sized) if size >= excess), -1)
                size, (topic, partition) = sized.pop(k)
                fits = [
                    o
                    for o in ds
                    if o is not d and not o.cordoned and used[o.path] + size <= limit[o.path]
                ]
                if not fits:
                    continue
                target = max(fits, key=lambda o: (limit[o.path] - used[o.path], o.path))
                used[d.path] -= size
                used[target.path] += size
                moves.append(DirMove(topic, partition, node, d.path, target.path, size))
    return moves


def full_dir_bound(dirs: Iterable[LogDir], soft: float) -> int:
    """The fewest moves that bring every dir of known capacity under ``soft`` of it: for each
    dir over, the fewest of its largest replicas whose bytes reach its excess (no k replicas
    carry more than its k largest; a replica moved away leaves one dir). A bound for any plan
    that brings them all under; it may exceed a plan that stops short (no room left)."""
    total = 0
    for d in dirs:
        if not d.total_bytes or d.used_bytes <= soft * d.total_bytes:
            continue
        excess = d.used_bytes - soft * d.total_bytes
        carried = 0
        for size in sorted(d.replicas.values(), reverse=True):
            if carried >= excess:
                break
            carried += size
            total += 1
    return total
