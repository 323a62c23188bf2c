"""Rows that share a key: the ``duplicate`` and ``conflict`` rules, decided the same way by
every plain-Python reader (the Spark ingest applies the same rule in ``resolve_copies``).

Rule
    Rows with the same key (a table's key columns: a node of a cluster; a sample's node or
    bundle and broker *and* its ``ts``; a request's cluster and topic) are settled by what
    they hold, never by which file sorts first:

    * all equal: the first one read is kept, the others are refused as ``duplicate``;
    * any two differ: no one can tell which is right, so every one of them is refused as
      ``conflict``, its reason naming the key and where a differing row is.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

from trimtab.contract.declarations import RowError

__all__ = ["Keyed", "settle_repeats"]

K = TypeVar("K", bound=Hashable)
#: One accepted row: its key, the values compared, and where it is (``file:line``).
Keyed = tuple[K, object, str]


def settle_repeats(items: Sequence[Keyed[K]], name: Callable[[K], str]) -> dict[int, RowError]:
    """The position in ``items`` of every row refused by the rule above, with its verdict.

    ``name(key)`` says which key in a reason (``node 3 of cluster 'kafka-prod'``). Only keys
    seen twice are grouped, so a table of unique keys costs one set of keys.
    """
    seen: set[K] = set()
    again: set[K] = set()
    for key, _, _ in items:
        (again if key in seen else seen).add(key)
    groups: dict[K, list[int]] = {}
    for i, (key, _, _) in enumerate(items):
        if key in again:
            groups.setdefault(key, []).append(i)
    verdicts: dict[int, RowError] = {}
    for key, rows in groups.items():
        verdicts.update(_settle(items, rows, name(key)))
    return verdicts


def _settle(items: Sequence[Keyed[K]], rows: list[int], what: str) -> dict[int, RowError]:
    first = items[rows[0]]
    if all(items[i][1] == first[1] for i in rows[1:]):
        return {
            i: RowError("duplicate", f"an exact duplicate of the row for {what} at {first[2]}")
            for i in rows[1:]
        }
    verdicts = {}
    for i in rows:
        other = next(items[j][2] for j in rows if items[j][1] != items[i][1])
        verdicts[i] = RowError(
            "conflict",
            f"conflicting rows for {what}: this one and the one at {other} differ, "
            "so both are refused",
        )
    return verdicts
