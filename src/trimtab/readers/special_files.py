"""Input paths that are not regular files, refused before anything opens them (issue 43).

Opening a FIFO for reading waits until someone writes to it, so a named pipe given as an
input (or lying in an input directory) used to hang a command for ever; a device or a socket
is no table either. :func:`refuse_special` looks at the file's type with ``stat``, which never
blocks, and every reader of a user's file calls it first.
"""

from __future__ import annotations

import stat
from pathlib import Path

from trimtab.errors import InputError

__all__ = ["refuse_special", "special_kind"]

_KINDS = {
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


def special_kind(path: Path) -> str | None:
    """What ``path`` is when it is a FIFO, a device or a socket (``"a FIFO (named pipe)"``...);
    None for a regular file, a directory or a path that does not exist (the caller says so in
    its own words)."""
    try:
        mode = path.stat().st_mode
    except (OSError, ValueError):
        return None
    return _KINDS.get(stat.S_IFMT(mode))


def refuse_special(what: str, path: Path) -> None:
    """Refuse ``path`` (named ``what`` in the message) when it is not a regular file or a
    directory: reading it could wait for ever, or read a device."""
    kind = special_kind(path)
    if kind is not None:
        raise InputError(
            f"{what} {path} is {kind}, not a regular file: give a file (reading it would "
            "wait for a writer or read a device)"
        )
