"""Hypothesis strategies shared by the test suites (attrs keeps them in one place too).

Names are drawn from small pools on purpose: nodes must collide on racks and regions for the
properties to say anything about grouping.
"""

from __future__ import annotations

from hypothesis import strategies as st

from trimtab.cluster import ClusterState, NodeId

__all__ = [
    "allocation_clusters",
    "allocation_scripts",
    "inner_scopes",
    "locations",
    "node_ids",
    "placement_clusters",
    "placement_requests",
    "shedding_snapshots",
    "topologies",
]

_NAMES = ("a", "b", "c", "dc1", "r-2")


def node_ids() -> st.SearchStrategy[NodeId]:
    """Node ids ``bk<n>.<domain>:<port>``, a few hosts with a few ports each."""
    return st.builds(
        lambda n, domain, port: NodeId(f"bk{n}.{domain}:{port}"),
        st.integers(0, 40),
        st.sampled_from(("dc1", "dc2", "local")),
        st.sampled_from((3181, 3182)),
    )


def locations(depth: int) -> st.SearchStrategy[str]:
    """Locations with exactly ``depth`` components from a small pool of names."""
    return st.lists(st.sampled_from(_NAMES), min_size=depth, max_size=depth).map(
        lambda parts: "/" + "/".join(parts)
    )


@st.composite
def topologies(
    draw: st.DrawFn, *, min_nodes: int = 0, max_nodes: int = 30, depth: int | None = None
) -> list[tuple[NodeId, str]]:
    """(node id, location) pairs, distinct ids, every location at one depth (1 to 3)."""
    levels = draw(st.integers(1, 3)) if depth is None else depth
    ids = draw(st.lists(node_ids(), min_size=min_nodes, max_size=max_nodes, unique=True))
    return [(node, draw(locations(levels))) for node in ids]


@st.composite
def inner_scopes(draw: st.DrawFn, entries: list[tuple[NodeId, str]]) -> str:
    """An inner path of the topology ``entries`` describes (root, a region, a rack…), or an
    unknown one, sometimes written with a trailing slash."""
    known = {"/"}
    for _, location in entries:
        parts = location[1:].split("/")
        known.update("/" + "/".join(parts[:i]) for i in range(1, len(parts) + 1))
    scope = draw(st.sampled_from(sorted(known)) | st.just("/nowhere/at-all"))
    return scope + "/" if scope != "/" and draw(st.booleans()) else scope


@st.composite
def placement_clusters(
    draw: st.DrawFn, *, max_nodes: int = 10, max_racks: int = 4, max_regions: int = 3
) -> dict[NodeId, str]:
    """Writable nodes ``n<i>:3181`` at ``/region/rack`` locations, racks and regions shared.

    Rack names repeat across regions (``/dc1/r0`` and ``/dc2/r0`` are different racks), and
    small pools make lopsided clusters (one big rack, single-node racks) common.
    """
    regions = [f"dc{i}" for i in range(draw(st.integers(1, max_regions)))]
    racks = sorted(
        draw(
            st.lists(
                st.tuples(st.sampled_from(regions), st.sampled_from(("r0", "r1", "r2"))),
                min_size=1,
                max_size=max_racks,
                unique=True,
            )
        )
    )
    count = draw(st.integers(1, max_nodes))
    return {
        NodeId(f"n{i}:3181"): "/{}/{}".format(*draw(st.sampled_from(racks))) for i in range(count)
    }


@st.composite
def placement_requests(
    draw: st.DrawFn, nodes: list[NodeId], *, max_ensemble: int = 6
) -> tuple[int, int, int, frozenset[NodeId]]:
    """``(E, W, A, exclude)`` with ``1 <= A <= W <= E``; exclusions drawn from ``nodes``
    plus an id the cluster does not know."""
    ensemble = draw(st.integers(1, max_ensemble))
    write = draw(st.integers(1, ensemble))
    ack = draw(st.integers(1, write))
    pool = [*nodes, NodeId("stranger:3181")]
    exclude = draw(st.lists(st.sampled_from(pool), max_size=3, unique=True))
    return ensemble, write, ack, frozenset(exclude)


@st.composite
def shedding_snapshots(draw: st.DrawFn, *, max_brokers: int = 10, max_bundles: int = 8) -> object:
    """A ``LoadSnapshot`` of 2..max_brokers brokers of mixed sizes (NIC 1.25 or 3.125 GB/s,
    sometimes unknown) whose loads follow their bundles' traffic, with some noise, some idle
    brokers, some one-bundle brokers and some pinned bundles. Fresh at ``t = 10_000``."""
    from trimtab.shedding import BrokerLoad, Bundle, LoadSnapshot

    n = draw(st.integers(2, max_brokers))
    loads, bundles = [], []
    for i in range(n):
        broker = f"broker{i}"
        cap = draw(st.sampled_from((1.25e9, 3.125e9, None)))
        sizes = draw(st.lists(st.floats(1e5, 3e8), max_size=max_bundles))
        for k, size in enumerate(sizes):
            bundles.append(
                Bundle(
                    name=f"t{i % 3}/ns{i}/0x{k:08x}_0x{k + 1:08x}",
                    broker=broker,
                    throughput_in=size * 0.4,
                    throughput_out=size * 0.6,
                    msg_rate_in=size / 4096,
                    msg_rate_out=size / 2048,
                    pinned=draw(st.booleans()) and draw(st.booleans()),
                )
            )
        tput = sum(sizes)
        level = tput / (cap or 1.25e9) * draw(st.floats(0.8, 1.25))
        loads.append(
            BrokerLoad(
                broker=broker,
                cpu=level,
                bandwidth_out=level * 0.9,
                msg_throughput_in=tput * 0.4,
                msg_throughput_out=tput * 0.6,
                msg_rate_in=tput / 4096,
                msg_rate_out=tput / 2048,
                weighted_max=level,
                weighted_max_ema=level * draw(st.floats(0.9, 1.1)),
                msg_throughput_ema=tput,
                updated_at=10_000.0,
                samples=draw(st.integers(1, 5)),
                capacity_bytes_per_s=cap,
            )
        )
    return LoadSnapshot.of(loads, bundles)


# -- allocation ------------------------------------------------------------------------------


@st.composite
def allocation_clusters(draw: st.DrawFn, *, max_nodes: int = 8) -> ClusterState:
    """Small mixed clusters: 1 to 8 cores, up to 3 racks, mostly writable nodes, disks of
    every kind (unknown size, unknown free space, nearly full)."""
    from trimtab.cluster import Capacity, Node, NodeState

    count = draw(st.integers(1, max_nodes))
    nodes = []
    for i in range(count):
        total = draw(st.sampled_from((0, 10**9, 10**10)))
        free = None if total == 0 else draw(st.none() | st.integers(0, total))
        state = draw(
            st.sampled_from((NodeState.WRITABLE,) * 4 + (NodeState.READONLY, NodeState.DOWN))
        )
        nodes.append(
            Node(
                id=NodeId(f"{i}"),
                location=f"/dc/r{draw(st.integers(0, 2))}",
                capacity=Capacity(
                    cores=draw(st.integers(1, 8)),
                    memory_bytes=1,
                    disk_total_bytes=total,
                    disk_free_bytes=free,
                    nic_bps=1,
                ),
                state=state,
            )
        )
    return ClusterState.of("c", nodes)


def allocation_scripts(*, max_steps: int = 10) -> st.SearchStrategy[list[tuple[int, ...]]]:
    """Steps ``(0, topic, partitions, replication factor, size)`` to allocate and ``(1, k)`` to
    free the k-th held partition (modulo how many are held)."""
    allocate = st.tuples(
        st.just(0),
        st.integers(0, 2),
        st.integers(1, 6),
        st.integers(1, 4),
        st.sampled_from((0, 0, 10**8, 10**9)),
    )
    free = st.tuples(st.just(1), st.integers(0, 1000))
    return st.lists(st.one_of(allocate, allocate, free), min_size=1, max_size=max_steps)
