"""How a Pulsar plan action compares with the live cluster: pure rules over what was read.

An ``unload`` action assumes its bundle is owned by ``precondition.owner`` and takes it to
``target.owner`` (a broker, or ``null``: wherever the next lookup places it). Read now:

====================================================  ========================================
the live owner                                        check
====================================================  ========================================
the target broker                                     DONE (ran before, or someone did it)
any broker but the source, for a ``null`` target      DONE (placed by a lookup)
the source, and source and target are active          READY
nobody, while this run's unload of it is in flight    MOVING
nobody, otherwise; another broker; or the source or   CHANGED, with ``why``
the target broker is no longer active
====================================================  ========================================

A ``split`` action assumes the bundle is owned by ``precondition.owner``: READY while it is
and the namespace still has that range, DONE once the range is gone from the namespace's
bundles (split into smaller ones), CHANGED otherwise. ``live`` is always ``{"owner": ...}``,
the shape of the precondition, so a diff prints side by side.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from trimtab.plans.document import Action
from trimtab.plans.target import Check, Observation

__all__ = ["check_action"]


def check_action(
    action: Action,
    *,
    owners: Mapping[str, str],
    brokers: Collection[str],
    ranges: Mapping[str, Collection[str]] | None = None,
    in_flight: bool = False,
) -> Observation:
    """The live check of ``action``: ``owners`` maps bundle -> owning broker (unowned bundles
    are absent), ``brokers`` are the active brokers, ``ranges`` namespace -> its bundle ranges
    (needed for splits), ``in_flight`` says this run unloaded the bundle and waits for it."""
    owner = owners.get(action.item)
    live = {"owner": owner}
    source = action.precondition.get("owner")
    if action.kind == "split":
        return _split(action, owner, source, brokers, ranges or {})
    target = action.target.get("owner")
    done = owner == target if target is not None else owner not in (None, source)
    if done:
        return Observation(action.id, Check.DONE, live)
    if owner is None and in_flight:
        return Observation(action.id, Check.MOVING, live, "unloaded; not owned again yet")
    if target is not None and target not in brokers:
        return Observation(action.id, Check.CHANGED, live, f"destination broker {target} is gone")
    if owner == source and source in brokers:
        return Observation(action.id, Check.READY, live)
    return Observation(action.id, Check.CHANGED, live, _why(owner, source, brokers))


def _split(
    action: Action,
    owner: str | None,
    source: str | None,
    brokers: Collection[str],
    ranges: Mapping[str, Collection[str]],
) -> Observation:
    live = {"owner": owner}
    namespace, _, hash_range = action.item.rpartition("/")
    present = ranges.get(namespace)
    if present is not None and hash_range not in present and owner is None:
        return Observation(action.id, Check.DONE, live)
    if owner == source and source in brokers:
        return Observation(action.id, Check.READY, live)
    return Observation(action.id, Check.CHANGED, live, _why(owner, source, brokers))


def _why(owner: str | None, source: str | None, brokers: Collection[str]) -> str:
    if source not in brokers:
        return f"broker {source} is gone"
    if owner is None:
        return f"not owned by any broker (expected {source})"
    return f"owned by {owner}, not {source}"
