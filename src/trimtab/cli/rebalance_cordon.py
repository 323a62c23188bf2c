"""``rebalance --cordon BROKER:DIR``: the log dirs to empty (KIP-1066's cordon, Kafka 4.3).

A cordoned log dir takes no new replica, and a broker whose log dirs are all cordoned takes
none at all (KIP-1066's placer rule). Emptying every log dir of a broker is therefore a drain
of that broker: its replicas are required moves, counted in ``lower_bound_moves`` by the
drain term. Emptying one log dir of several needs moves inside the broker (the ``log_dirs``
field of the reassignment document, issue 40 part 7), which trimtab does not plan yet: such
a cordon is refused rather than planned as a network move.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from trimtab.cluster import NodeId
from trimtab.errors import TrimtabError
from trimtab.systems.kafka.readers import LogDirs

__all__ = ["CLOSED_WHY", "closed_brokers", "cordoned_brokers"]

#: Why a broker whose log dirs are all cordoned is closed, as the plan prints it.
CLOSED_WHY = "all its log dirs cordoned (KIP-1066): emptied, takes no new replica"


def cordoned_brokers(
    specs: Sequence[str], dirs: LogDirs | None, ids: Mapping[NodeId, int]
) -> list[NodeId]:
    """The nodes whose log dirs ``specs`` (``BROKER:DIR``) cordon all of; a spec naming no
    known log dir is one error naming the nearest one."""
    if dirs is None:
        raise TrimtabError(
            "--cordon needs --log-dirs (kafka-log-dirs.sh --describe output) to know each "
            "broker's log dirs"
        )
    node_of = {b: n for n, b in ids.items()}
    known = [f"{b}:{d}" for b in sorted(dirs.dirs) for d in dirs.dirs[b]]
    chosen: dict[int, set[str]] = {}
    for spec in specs:
        number, _, path = spec.strip().partition(":")
        if not number.isdigit() or spec.strip() not in known or int(number) not in node_of:
            near = difflib.get_close_matches(spec.strip(), known, n=1, cutoff=0.0)
            hint = f"; did you mean {near[0]}?" if near else " (--log-dirs names none)"
            raise TrimtabError(f"--cordon {spec}: no such BROKER:DIR in --log-dirs{hint}")
        chosen.setdefault(int(number), set()).add(path)
    out: list[NodeId] = []
    for broker, paths in sorted(chosen.items()):
        rest = [d for d in dirs.dirs[broker] if d not in paths]
        if rest:
            raise TrimtabError(
                f"--cordon {broker}:{sorted(paths)[0]}: broker {broker} keeps "
                f"{', '.join(rest)}; emptying one log dir of several needs moves inside the "
                "broker, which trimtab does not plan yet (cordon all its dirs to drain it)"
            )
        out.append(node_of[broker])
    return out


def closed_brokers(specs: Sequence[str]) -> list[dict[str, Any]]:
    """The brokers ``specs`` close, each with its cordoned log dirs and why (for --json and
    the table); ``specs`` were checked by :func:`cordoned_brokers`."""
    dirs: dict[int, list[str]] = {}
    for spec in specs:
        number, _, path = spec.strip().partition(":")
        dirs.setdefault(int(number), []).append(path)
    return [
        {"broker": b, "log_dirs": sorted(set(d)), "why": CLOSED_WHY}
        for b, d in sorted(dirs.items())
    ]
