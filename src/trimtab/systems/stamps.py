"""What tells a server that a file it serves with was renewed: one stamp per file.

Shared by every part that picks up renewed files without a restart (the agent's TLS, the
metrics endpoint's web config and certificates), as upstream's ``FileModifiedTimeUpdater`` and
the exporter-toolkit do: a ``stat`` per file at each new connection, cheap next to a handshake.
Modification time, size and inode together catch a file rewritten in place within one clock
tick as well as one renamed over the old (what most certificate renewers do).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

__all__ = ["Stamp", "file_stamps"]

Stamp = tuple[tuple[int, int, int], ...]


def file_stamps(paths: Iterable[Path]) -> Stamp:
    """(mtime_ns, size, inode) of each of ``paths``; (-1, -1, -1) for one that cannot be read."""
    stamps = []
    for path in paths:
        try:
            st = path.stat()
        except OSError:
            stamps.append((-1, -1, -1))
        else:
            stamps.append((st.st_mtime_ns, st.st_size, st.st_ino))
    return tuple(stamps)
