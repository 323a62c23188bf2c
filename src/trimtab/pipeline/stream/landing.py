"""Files that change after they landed: the stream reads each file once.

Why a module of its own
    Spark's file source reads a file once, when it first lists it: a file written in place
    (opened in the input directory and filled while the stream runs) is read as far as it was
    written then, and the rest is never read (25 of 52 rows, seen). ``pipeline run`` reads
    whole files because it runs after they are written. The stream cannot tell a file being
    written from a finished one, so the rule is the one Spark's docs give: move files into
    the input directory whole (write elsewhere, then rename). This watcher makes a broken rule
    visible: a telemetry file whose size or modification time changes after the stream first
    listed it gets one ``warning:`` line naming it. So does a FIFO, device or socket that
    appears there: Spark lists it as an empty file and reads nothing from it (it never blocks
    the stream), and without the warning nobody would learn why its rows never arrive.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from trimtab.pipeline.fs import local_directory
from trimtab.readers.special_files import special_kind

__all__ = ["LandingWatch", "StampSource", "watch_dirs"]


class StampSource(Protocol):
    def exists(self, path: str) -> bool: ...

    def file_stamps(self, path: str) -> list[tuple[str, int, int]]: ...


@dataclass(slots=True)
class LandingWatch:
    """Remembers each file's (size, modification time) when first seen under ``dirs``."""

    dirs: tuple[str, ...]
    seen: dict[str, tuple[int, int]] = field(default_factory=dict)
    warned: set[str] = field(default_factory=set)

    def check(self, fs: StampSource) -> list[str]:
        """The warnings for files that changed since they were first seen (once per file)."""
        out = []
        for directory in self.dirs:
            if not fs.exists(directory):
                continue
            out += self._special(directory)
            for name, size, modified in fs.file_stamps(directory):
                if name.startswith((".", "_")):
                    continue  # Spark's file source skips hidden and underscore files too
                path = f"{directory.rstrip('/')}/{name}"
                first = self.seen.setdefault(path, (size, modified))
                if first != (size, modified) and path not in self.warned:
                    self.warned.add(path)
                    out.append(_warning(path, first, size))
        return out

    def _special(self, directory: str) -> list[str]:
        """The warnings for non-regular files newly seen in a local ``directory``."""
        local = local_directory(directory)
        if local is None or not Path(local).is_dir():
            return []  # HDFS and object stores hold no FIFOs
        out = []
        for entry in sorted(Path(local).iterdir()):
            kind = None if entry.name.startswith((".", "_")) else special_kind(entry)
            if kind is None or str(entry) in self.warned:
                continue
            self.warned.add(str(entry))
            out.append(
                f"{entry} is {kind}, not a regular file: the stream skips it; move "
                "telemetry files into the input directory whole"
            )
        return out


def _warning(path: str, first: tuple[int, int], size: int) -> str:
    return (
        f"{path} changed after the stream first saw it ({first[0]:,} bytes then, {size:,} "
        "now): the stream reads each file once, so rows written later may be missing; move "
        "files into the input directory whole (write elsewhere, then rename)"
    )


def watch_dirs(input_dir: str, tables: Iterable[str]) -> LandingWatch:
    """A watch over the telemetry tables' directories under ``input_dir``."""
    return LandingWatch(tuple(f"{input_dir.rstrip('/')}/{t}" for t in tables))
