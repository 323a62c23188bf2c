"""Bundle moves as ``pulsar-admin`` commands (peers reference §3.3).

Each move becomes::

    pulsar-admin namespaces unload <tenant>/<ns> --bundle <range> --destinationBroker <broker>

``--destinationBroker`` is left out when the shedder named no destination (the bundle is then
placed at its next lookup); upstream refuses ``-d`` without ``-b`` (PR #21879), so ``--bundle``
is always given. Arguments are shell-quoted, so the lines can be piped to ``sh``. The same
unload is available over REST as
``PUT /admin/v2/namespaces/{tenant}/{namespace}/{bundle}/unload?destinationBroker=...``.

A plan of several shedding cycles is printed as a script (:func:`unload_script`): each
cycle's unloads under a comment, and between cycles the pause the shedder itself would take:
its cycle period (``loadBalancerSheddingIntervalMinutes``), longer when a broker of the next
cycle unloaded within its cooldown (``loadBalanceSheddingDelayInSeconds``).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence
from urllib.parse import quote

from trimtab.contract import split_bundle
from trimtab.shedding.decisions import Move

__all__ = ["unload_command", "unload_commands", "unload_rest", "unload_script"]


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


def unload_script(
    moves: Sequence[tuple[int, Move]],
    *,
    interval_s: float,
    cooldown_s: float,
    rest: bool = False,
) -> list[str]:
    """``(cycle, move)`` pairs (net moves, in order) as lines ``sh`` runs: a comment per
    cycle, its commands (each followed by its REST call as a comment with ``rest``), and a
    ``sleep`` before each later cycle: the cycles between at ``interval_s`` each, or longer
    when one of the cycle's sources unloaded less than ``cooldown_s`` before."""
    cycles: dict[int, list[Move]] = {}
    for cycle, move in moves:
        cycles.setdefault(cycle, []).append(move)
    lines: list[str] = []
    unloaded: dict[str, float] = {}  # source broker -> when (script seconds) it last unloaded
    now, previous = 0.0, None
    for cycle, group in cycles.items():
        if previous is not None:
            wait = interval_s * (cycle - previous)
            cooling = [unloaded[m.source] + cooldown_s - now for m in group if m.source in unloaded]
            wait = max([wait, *cooling])
            if wait > 0:
                why = (
                    "the shedder's next cycle"
                    if wait <= interval_s * (cycle - previous)
                    else ("a broker's cooldown after its last unload")
                )
                lines.append(f"sleep {round(wait)}  # {why}")
            now += wait
        if len(cycles) > 1:
            lines.append(f"# cycle {cycle}: {len(group)} unload(s)")
        for move in group:
            lines.append(unload_command(move))
            if rest:
                lines.append(f"#   {unload_rest(move)}")
            unloaded[move.source] = now
        previous = cycle
    return lines
