"""The disk-fill simulator: how full a mixed-disk cluster gets before its first node turns
read-only, under each weighting and sampling mode.

Goals
    Measure the seed's promise (nodes fill at the pace of their capacity) end to end: the real
    policies place a stream of ledgers, the policies see free space only through
    ``update_bookie_info`` refreshed every ``getBookieInfoIntervalSeconds`` of simulated time.

Model
    * **Cluster**: :class:`NodeSpec` (name, rack, capacity, bytes already used); a node turns
      read-only when used reaches ``diskUsageThreshold`` (0.95) of its capacity and is then
      reported read-only to the policy.
    * **Ledgers** arrive at ``rate`` per second with log-normal sizes; each is placed with
      ``new_ensemble(E, W, A)`` and, striped round robin, stores ``size · W / E`` on each member.
    * **Disk info**: a full scan every ``refresh_seconds`` (None: before every ledger, the seed's
      "quick model"), a partial scan of a node when it joins (upstream BookieInfoReader).
    * **Events**: :class:`Join` (an empty node arrives) and :class:`Failure` (a node dies; each
      of its ledgers is re-replicated with ``replace_bookie``; the copy lands on the chosen
      node, which then pauses for :func:`recovery_pause`, so the recovery time is the busiest
      target's copy time plus its pauses).
    * **Load** (``weights="disk+load"``): a node's I/O utilisation is the bytes it received in
      the last window over what its disk can absorb in that time (``disk_bandwidth``).

Progress
    ``run_diskfill(run, progress=...)`` reports every :data:`PROGRESS_EVERY` ledgers and once
    at the end: ledgers placed so far, and how far the fullest writable node is on its way to
    read-only (used ÷ (threshold × capacity), at most 1.0). The run stops when that reaches
    1.0 (by default), so it is the share of the run done, near enough; the ledger count is not
    (the stopping point is what the simulation finds out).

Figures (:class:`DiskFillResult`)
    ``usable_fraction_at_first_readonly`` = bytes stored when the first node turns read-only ÷
    (threshold × raw capacity of the nodes then in the cluster); 1.0 is the physical limit.
    Bytes stored count what the disks already held (``initial_bytes``: an inventory's used
    space, a joining node's) as well as what the run placed, so a cluster that starts partly
    full can reach 1.0 too (:data:`USABLE_COUNTS` says so in every output).
    ``max_write_share``: the largest share of one window's stored bytes going to one node (hot
    spots); for a joined node, the largest share of the weights it was ever given, against the
    share its cap allows; the recovery time after a failure; a per-node fill time series.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from trimtab.cluster import ClusterState, NodeId, NodeState
from trimtab.config import CapBasis, Config, PolicyName, Sampling, WeightsMode
from trimtab.diskinfo import BookieInfo, disk_info
from trimtab.errors import NotEnoughNodesError
from trimtab.placement.catalog import Policy
from trimtab.placement.weights import DiskWeights, disk_weights
from trimtab.systems.bookkeeper.placement_setup import make_policy

__all__ = [
    "PROGRESS_EVERY",
    "SCENARIOS",
    "USABLE_COUNTS",
    "DiskFillResult",
    "DiskFillRun",
    "Failure",
    "Join",
    "NodeSpec",
    "Workload",
    "fleet",
    "nodes_of",
    "recovery_pause",
    "run_diskfill",
    "seed_cluster",
    "uneven_fleet",
]

GB = 10**9
TB = 10**12

#: Ledgers between two calls of ``run_diskfill``'s ``progress``.
PROGRESS_EVERY = 250

#: What ``usable_fraction_at_first_readonly`` counts, as the outputs say it.
USABLE_COUNTS = "all bytes stored: initial_bytes (already on the disks) + the bytes placed"


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """One node: its id, rack (``/region/rack``), disk capacity and bytes already used."""

    name: str
    rack: str
    capacity: int
    used: int = 0


@dataclass(frozen=True, slots=True)
class Join:
    """An empty (or not) node joins at ``time`` seconds."""

    time: float
    node: NodeSpec


@dataclass(frozen=True, slots=True)
class Failure:
    """Node ``name`` dies at ``time`` seconds; its ledgers are re-replicated."""

    time: float
    name: str


@dataclass(frozen=True, slots=True)
class Workload:
    """The ledger stream: quorums, mean size and spread (log-normal), arrivals per second."""

    ensemble: int = 3
    write_quorum: int = 3
    ack_quorum: int = 2
    mean_bytes: float = 0.1 * GB
    sigma: float = 0.5
    rate: float = 1.0


@dataclass(frozen=True, slots=True)
class DiskFillRun:
    """One simulation: cluster, workload, policy and weighting, refresh, events."""

    nodes: tuple[NodeSpec, ...]
    workload: Workload = Workload()
    policy: PolicyName = PolicyName.DEFAULT
    weights: WeightsMode = WeightsMode.DISK
    sampling: Sampling = Sampling.PROPORTIONAL
    cap: int = 3  # bookieMaxMultipleForWeightBasedPlacement, <= 0 = no cap
    cap_basis: CapBasis = CapBasis.MEDIAN
    refresh_seconds: float | None = 86_400.0  # getBookieInfoIntervalSeconds; None: every ledger
    threshold: float = 0.95
    joins: tuple[Join, ...] = ()
    failures: tuple[Failure, ...] = ()
    window: int = 500  # ledgers per hot-spot window
    sample_every: int = 1000  # ledgers between time-series samples
    stop_at_first_readonly: bool = True
    max_ledgers: int = 2_000_000
    disk_bandwidth: float = 200e6  # bytes/s a disk absorbs (load-aware model)
    io_threshold: float = 0.7
    recovery_bandwidth: float = 100e6  # bytes/s of one re-replication copy
    recovery_base_pause: float = 1.0
    seed: int = 1

    def config(self) -> Config:
        return Config.of(
            ensemblePlacementPolicy=self.policy,
            diskWeightBasedPlacementEnabled=self.weights != WeightsMode.OFF,
            bookieMaxMultipleForWeightBasedPlacement=self.cap,
            weight_cap_basis=self.cap_basis,
            weighted_sampling=self.sampling,
            load_aware_weighting_enabled=self.weights == WeightsMode.DISK_LOAD,
            io_utilization_threshold=self.io_threshold,
        )


@dataclass(frozen=True, slots=True)
class DiskFillResult:
    """The figures of one run (see the module docstring); ``stored_bytes`` includes
    ``initial_bytes``, the bytes already on the disks before the first ledger."""

    usable_fraction_at_first_readonly: float | None
    first_readonly_node: str | None
    first_readonly_time: float | None
    ledgers: int
    stored_bytes: int
    max_write_share: float
    initial_bytes: int = 0
    joined_max_weight_share: float | None = None
    joined_cap_share: float | None = None
    recovery_seconds: float | None = None
    recovered_ledgers: int = 0
    series: Mapping[str, Sequence[float | str]] = field(default_factory=dict)

    def figures(self) -> dict[str, float | int | str | None]:
        """The scalar figures (the CLI's JSON)."""
        return {
            "usable_fraction_at_first_readonly": self.usable_fraction_at_first_readonly,
            "max_write_share": self.max_write_share,
            "first_readonly_node": self.first_readonly_node,
            "first_readonly_time": self.first_readonly_time,
            "ledgers": self.ledgers,
            "stored_bytes": self.stored_bytes,
            "initial_bytes": self.initial_bytes,
            "usable_counts": USABLE_COUNTS,
            "joined_max_weight_share": self.joined_max_weight_share,
            "joined_cap_share": self.joined_cap_share,
            "recovery_seconds": self.recovery_seconds,
            "recovered_ledgers": self.recovered_ledgers,
        }


def recovery_pause(weight: float, max_weight: float, base: float = 1.0) -> float:
    """Seed §1.3: the pause after re-replicating a ledger, ``base · (1 - w / w_max)``: none for
    the heaviest node, up to ``base`` for an empty-weight one, so heavy nodes do more work."""
    if max_weight <= 0:
        return base
    return base * max(0.0, 1.0 - weight / max_weight)


def seed_cluster() -> tuple[NodeSpec, ...]:
    """The seed's six nodes with 100/100/200/200/300/100 GB, empty, one rack."""
    sizes = (100, 100, 200, 200, 300, 100)
    return tuple(NodeSpec(f"b{i + 1}:3181", "/default-rack", s * GB) for i, s in enumerate(sizes))


def fleet(racks: int = 3, mix: tuple[int, int, int] = (8, 6, 6)) -> tuple[NodeSpec, ...]:
    """A mixed fleet: per rack ``mix`` = how many 4, 8 and 16 TB nodes (default 8/6/6, so three
    racks of 20 nodes and 176 TB each: 60 nodes)."""
    sizes = [tb for tb, count in zip((4, 8, 16), mix, strict=True) for _ in range(count)]
    return tuple(
        NodeSpec(f"n{r}-{j:02d}:3181", f"/r{r}", tb * TB)
        for r in range(racks)
        for j, tb in enumerate(sizes)
    )


def uneven_fleet() -> tuple[NodeSpec, ...]:
    """60 nodes, 20 each of 4, 8 and 16 TB, dealt round robin to three racks of 21/21/18 nodes
    (196/196/168 TB): rack-aware spreading puts one replica per rack, so the small rack caps
    the usable fraction near 168/196 whatever the weights."""
    sizes = (4, 8, 16)
    return tuple(
        NodeSpec(f"u{i:03d}:3181", f"/r{(i // 3) % 3}", sizes[i % 3] * TB) for i in range(60)
    )


def nodes_of(state: ClusterState) -> tuple[NodeSpec, ...]:
    """An inventory cluster's writable nodes: capacity ``disk_total_bytes``, used = total -
    ``disk_free_bytes``. A node whose free space is unknown starts with the smallest free space
    known (the smallest weight, as ``trimtab place`` gives it): the rule of
    :func:`trimtab.diskinfo.disk_info`."""
    info = disk_info(state, assume_unknown=True)
    specs = []
    for node in state.nodes:
        if node.state is not NodeState.WRITABLE:
            continue
        total, free = info[node.id]
        specs.append(NodeSpec(str(node.id), node.location, total, total - free))
    return tuple(specs)


#: About 30 days to fill each built-in cluster, so a daily refresh sees ~30 scans.
MONTH = 30 * 86_400.0


def _fleet_workload() -> Workload:
    return Workload(
        ensemble=3, write_quorum=2, ack_quorum=2, mean_bytes=6 * GB, rate=44_000 / MONTH
    )


#: Built-in scenarios: name -> (nodes, workload, policy).
SCENARIOS: dict[str, tuple[tuple[NodeSpec, ...], Workload, PolicyName]] = {
    "seed": (seed_cluster(), Workload(rate=3_200 / MONTH), PolicyName.DEFAULT),
    "fleet": (fleet(), _fleet_workload(), PolicyName.RACKAWARE),
    "uneven-fleet": (uneven_fleet(), _fleet_workload(), PolicyName.RACKAWARE),
}


class _State:
    """The mutable side of one run (kept out of the frozen inputs)."""

    def __init__(self, run: DiskFillRun) -> None:
        self.cap = {NodeId(n.name): n.capacity for n in run.nodes}
        self.used = {NodeId(n.name): n.used for n in run.nodes}
        self.rack = {NodeId(n.name): n.rack for n in run.nodes}
        self.readonly: set[NodeId] = set()
        self.dead: set[NodeId] = set()
        self.recent: dict[NodeId, int] = {}
        self.window_seconds = 1.0

    def writable(self) -> list[NodeId]:
        return [n for n in self.cap if n not in self.readonly and n not in self.dead]

    def info(self, nodes: Sequence[NodeId]) -> dict[NodeId, BookieInfo]:
        return {n: BookieInfo(self.cap[n], self.cap[n] - self.used[n]) for n in nodes}

    def utilization(self, bandwidth: float) -> dict[NodeId, float]:
        absorb = bandwidth * self.window_seconds
        return {n: min(1.0, b / absorb) for n, b in self.recent.items()}

    def fill(self, threshold: float) -> float:
        """How far the fullest writable node is towards read-only: 0.0 empty, 1.0 there."""
        fullest = 0.0
        writable = self.writable()
        for n in writable:
            limit = threshold * self.cap[n]
            fullest = max(fullest, self.used[n] / limit if limit > 0 else 1.0)
        return min(1.0, fullest) if writable else 1.0


class _Fill:
    """One run in progress: the policy, the ledgers placed and the figures gathered so far.

    :func:`run_diskfill` calls :meth:`step` once per ledger, then :meth:`result`; each step
    admits due joins and failures, refreshes the policy's disk info when due, places one
    ledger, records the hot-spot window and the time series, and marks full nodes read-only.
    """

    def __init__(self, run: DiskFillRun, progress: Callable[[int, float], None] | None) -> None:
        self.run, self.progress = run, progress
        self.st = st = _State(run)
        config = run.config()
        load_aware = run.weights == WeightsMode.DISK_LOAD  # weights fed the recent I/O load
        self.policy = make_policy(
            config,
            resolver={str(n): st.rack[n] for n in st.rack}
            | {j.node.name: j.node.rack for j in run.joins},
            rng=random.Random(run.seed),
            weights=(
                disk_weights(config, load=lambda: st.utilization(run.disk_bandwidth))
                if load_aware
                else None
            ),
        )
        self.policy.on_cluster_changed(st.writable(), [])
        self.known = st.info(st.writable())
        wl = run.workload
        mu = math.log(wl.mean_bytes) - wl.sigma**2 / 2
        self.sizes = np.random.default_rng(run.seed).lognormal(mu, wl.sigma, run.max_ledgers)
        self.joins = sorted(run.joins, key=lambda j: j.time)
        self.failures = sorted(run.failures, key=lambda f: f.time)
        self.joined: set[NodeId] = set()
        self.joined_share = self.joined_cap = 0.0
        self.ledgers: list[tuple[tuple[NodeId, ...], int]] = []
        self.next_refresh = 0.0
        self.initial = sum(n.used for n in run.nodes)  # already stored: counts towards usable
        self.stored = self.initial
        self.window: dict[NodeId, int] = {}
        self.window_total = 0
        self.max_share = 0.0
        st.window_seconds = run.window / wl.rate
        self.first: tuple[str, float, float] | None = None
        self.recovery: float | None = None
        self.recovered = 0
        self.series: dict[str, list[float | str]] = {"time": [], "node": [], "used_fraction": []}

    def step(self, k: int) -> bool:
        """Ledger ``k``: False when the run ends here (no ensemble fits, or the first node
        turned read-only and the run stops there)."""
        now = k / self.run.workload.rate
        self._admit_joins(now)
        self._fail_due(now)
        self._refresh(now)
        self._watch_joined()
        turned = self._place(k)
        if turned is None:
            return False
        self._record(k, now)
        return not turned or self._turn_readonly(turned, now)

    def _admit_joins(self, now: float) -> None:
        st = self.st
        while self.joins and self.joins[0].time <= now:
            spec = self.joins.pop(0).node
            node = NodeId(spec.name)
            st.cap[node], st.used[node], st.rack[node] = spec.capacity, spec.used, spec.rack
            self.initial += spec.used
            self.stored += spec.used
            self.joined.add(node)
            self.policy.on_cluster_changed(st.writable(), st.readonly)
            self.known |= st.info([node])  # partial scan of the newcomer
            self.policy.update_bookie_info(self.known)

    def _fail_due(self, now: float) -> None:
        while self.failures and self.failures[0].time <= now:
            dead = NodeId(self.failures.pop(0).name)
            lost = self.st.used[dead]
            self.recovery, self.recovered, copied = _fail(
                self.run, self.st, self.policy, self.ledgers, dead
            )
            self.stored += copied - lost

    def _refresh(self, now: float) -> None:
        """A full scan of the writable nodes' disks when ``refresh_seconds`` has passed."""
        if self.run.refresh_seconds is None or now >= self.next_refresh:
            self.known = self.st.info(self.st.writable())
            self.policy.update_bookie_info(self.known)
            self.next_refresh = now + (self.run.refresh_seconds or 0.0)

    def _watch_joined(self) -> None:
        if self.joined and isinstance(weights := self.policy.view.weights, DiskWeights):
            share, allowed = _joined_shares(weights, self.st, self.joined, self.run)
            self.joined_share = max(self.joined_share, share)
            self.joined_cap = max(self.joined_cap, allowed)

    def _place(self, k: int) -> list[NodeId] | None:
        """Place ledger ``k``: the members that reached the threshold, None if none fits."""
        wl, st = self.run.workload, self.st
        piece = int(self.sizes[k]) * wl.write_quorum // wl.ensemble
        try:
            ensemble = self.policy.new_ensemble(
                wl.ensemble, wl.write_quorum, wl.ack_quorum
            ).ensemble
        except NotEnoughNodesError:
            return None
        self.ledgers.append((ensemble, piece))
        turned: list[NodeId] = []
        for node in ensemble:
            st.used[node] += piece
            self.window[node] = self.window.get(node, 0) + piece
            if st.used[node] >= self.run.threshold * st.cap[node]:
                turned.append(node)
        self.stored += piece * len(ensemble)
        self.window_total += piece * len(ensemble)
        return turned

    def _record(self, k: int, now: float) -> None:
        """Close the hot-spot window, sample the fill series, report progress, when due."""
        run, st = self.run, self.st
        if (k + 1) % run.window == 0:
            self.max_share = max(self.max_share, max(self.window.values()) / self.window_total)
            st.recent, self.window, self.window_total = self.window, {}, 0
        if k % run.sample_every == 0:
            for node in st.cap:
                self.series["time"].append(now)
                self.series["node"].append(str(node))
                self.series["used_fraction"].append(st.used[node] / st.cap[node])
        if self.progress is not None and (k + 1) % PROGRESS_EVERY == 0:
            self.progress(k + 1, st.fill(run.threshold))

    def _turn_readonly(self, turned: list[NodeId], now: float) -> bool:
        """Mark ``turned`` read-only; the first time, note the figures (and maybe stop)."""
        st = self.st
        st.readonly.update(turned)
        if self.first is None:
            raw = sum(c for n, c in st.cap.items() if n not in st.dead)
            self.first = (str(turned[0]), now, self.stored / (self.run.threshold * raw))
            if self.run.stop_at_first_readonly:
                return False
        self.policy.on_cluster_changed(st.writable(), st.readonly)
        return True

    def result(self, ledgers: int) -> DiskFillResult:
        if self.window_total:
            self.max_share = max(self.max_share, max(self.window.values()) / self.window_total)
        first = self.first
        if self.progress is not None:
            self.progress(ledgers, 1.0 if first is not None else self.st.fill(self.run.threshold))
        return DiskFillResult(
            usable_fraction_at_first_readonly=first[2] if first else None,
            first_readonly_node=first[0] if first else None,
            first_readonly_time=first[1] if first else None,
            ledgers=ledgers,
            stored_bytes=self.stored,
            initial_bytes=self.initial,
            max_write_share=self.max_share,
            joined_max_weight_share=self.joined_share if self.joined else None,
            joined_cap_share=self.joined_cap if self.joined else None,
            recovery_seconds=self.recovery,
            recovered_ledgers=self.recovered,
            series=self.series,
        )


def run_diskfill(
    run: DiskFillRun, *, progress: Callable[[int, float], None] | None = None
) -> DiskFillResult:
    """Simulate ``run`` until the first node turns read-only (or ``max_ledgers``).

    ``progress(ledgers, fill)``, optional, is called every :data:`PROGRESS_EVERY` ledgers and
    once at the end (see the module docstring); it does not change the run.
    """
    fill = _Fill(run, progress)
    k = 0
    for k in range(run.max_ledgers):
        if not fill.step(k):
            break
    return fill.result(k + 1)


def _joined_shares(
    weights: DiskWeights, st: _State, joined: set[NodeId], run: DiskFillRun
) -> tuple[float, float]:
    """The largest single-pick share a joined node has now, and the share the cap allows:
    ``k × basis`` of the pool over the pool's total effective weight."""
    pool = sorted(st.writable())
    eff = weights.effective(pool)
    total = sum(eff)
    got = max((w / total for n, w in zip(pool, eff, strict=True) if n in joined), default=0.0)
    if run.cap <= 0:
        return got, 1.0
    raw = [weights.raw.get(n, 0.0) for n in pool]
    positive = [w for w in raw if w > 0] or [1.0]
    basis = statistics.median(raw) if run.cap_basis == CapBasis.MEDIAN else min(positive)
    return got, min(1.0, run.cap * basis / total) if basis > 0 else 1.0


def _fail(
    run: DiskFillRun,
    st: _State,
    policy: Policy,
    ledgers: list[tuple[tuple[NodeId, ...], int]],
    dead: NodeId,
) -> tuple[float, int, int]:
    """Kill ``dead``; re-replicate its ledgers with ``replace_bookie``: the recovery time (the
    busiest target's copies and pauses), the ledgers and the bytes re-replicated."""
    st.dead.add(dead)
    policy.on_cluster_changed(st.writable(), st.readonly)
    wl = run.workload
    busy: dict[NodeId, float] = {}
    done = copied = 0
    for i, (ensemble, piece) in enumerate(ledgers):
        if dead not in ensemble:
            continue
        try:
            swap = policy.replace_bookie(
                wl.ensemble, wl.write_quorum, wl.ack_quorum, ensemble, dead
            )
        except NotEnoughNodesError:
            continue
        target = swap.node
        st.used[target] += piece
        free = {n: st.cap[n] - st.used[n] for n in st.writable()}
        pause = recovery_pause(free[target], max(free.values()), run.recovery_base_pause)
        busy[target] = busy.get(target, 0.0) + piece / run.recovery_bandwidth + pause
        ledgers[i] = (swap.ensemble, piece)
        done += 1
        copied += piece
    return max(busy.values(), default=0.0), done, copied
