"""Hypothesis strategies shared by the test suites (attrs keeps them in one place too).

Names are drawn from small pools on purpose: nodes must collide on racks and regions for the
properties to say anything about grouping.
"""

from __future__ import annotations

from hypothesis import strategies as st

from trimtab.cluster import NodeId

__all__ = ["inner_scopes", "locations", "node_ids", "topologies"]

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
