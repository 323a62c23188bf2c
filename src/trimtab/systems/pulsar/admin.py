"""Bundle moves as ``pulsar-admin`` commands (peers reference §3.3).

Each move becomes::

    pulsar-admin namespaces unload <tenant>/<ns> --bundle <range> --destinationBroker <broker>

``--destinationBroker`` is left out when the shedder named no destination (the bundle is then
placed at its next lookup); upstream refuses ``-d`` without ``-b`` (PR #21879), so ``--bundle``
is always given. Arguments are shell-quoted, so the lines can be piped to ``sh``. The same
unload is available over REST as
``PUT /admin/v2/namespaces/{tenant}/{namespace}/{bundle}/unload?destinationBroker=...``.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from urllib.parse import quote

from trimtab.contract import split_bundle
from trimtab.shedding.decisions import Move

__all__ = ["cycle_script", "unload_command", "unload_commands", "unload_rest"]


def unload_command(move: Move, *, admin: str = "pulsar-admin") -> str:
    """One command line for ``move``; raises ``ValueError`` for a malformed bundle name.

    Every reader of bundle names (``trimtab shed``'s and the pipeline's) refuses a malformed
    one as ``bad_bundle`` with the same pattern (:data:`trimtab.contract.BUNDLE_PATTERN`), so
    a move of a bundle that passed the checks never raises here.
    """
    namespace, hash_range = split_bundle(move.bundle)
    words = [admin, "namespaces", "unload", namespace, "--bundle", hash_range]
    if move.destination is not None:
        words += ["--destinationBroker", move.destination]
    return " ".join(shlex.quote(w) for w in words)


def unload_commands(moves: Iterable[Move], *, admin: str = "pulsar-admin") -> list[str]:
    """One line per move, in the order the moves are to run."""
    return [unload_command(m, admin=admin) for m in moves]


def unload_rest(move: Move) -> str:
    """The REST call ``move``'s command stands for (what ``pulsar-admin`` sends the broker)."""
    namespace, hash_range = split_bundle(move.bundle)
    call = f"PUT /admin/v2/namespaces/{namespace}/{hash_range}/unload"
    if move.destination is not None:
        call += f"?destinationBroker={quote(move.destination, safe=':')}"
    return call


def cycle_script(
    moves: Iterable[tuple[int, Move]], pause_s: float, *, rest: bool = False
) -> list[str]:
    """The unload lines of a plan's net moves, grouped by the cycle of each first move, with a
    ``sleep`` of the shedder's cooldown (upstream's ``loadBalanceSheddingDelayInSeconds``)
    between cycles: run as a script, the unloads are spaced as the shedder would space them,
    so a broker that just lost bundles reports its new load before it is judged again.

    One cycle (a single-cycle plan) gets neither heading nor pause; ``rest`` adds each
    command's REST call as a comment line below it."""
    groups: dict[int, list[Move]] = {}
    for cycle, move in moves:
        groups.setdefault(cycle, []).append(move)
    lines: list[str] = []
    for index, (cycle, group) in enumerate(groups.items()):
        if index and pause_s > 0:
            lines.append(
                f"sleep {pause_s:g}  # the shedder's cooldown between cycles "
                "(loadBalanceSheddingDelayInSeconds)"
            )
        if len(groups) > 1:
            lines.append(f"# cycle {cycle}")
        for move in group:
            lines.append(unload_command(move))
            if rest:
                lines.append(f"#   {unload_rest(move)}")
    return lines
