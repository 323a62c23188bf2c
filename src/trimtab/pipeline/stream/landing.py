"""Files that change after they landed: the stream reads each file once.

Why a module of its own
    Spark's file source reads a file once, when it first lists it: a file written in place
    (opened in the input directory and filled while the stream runs) is read as far as it was
    written then, and the rest is never read (25 of 52 rows, seen). ``pipeline run`` reads
    whole files because it runs after they are written. The stream cannot tell a file being
    written from a finished one, so the rule is the one Spark's docs give: move files into
    the input directory whole (write elsewhere, then rename). This watcher makes a broken rule
    visible: a telemetry file modified after the stream read it gets one ``warning:`` line
    naming it. "Read" is what Spark recorded: its file source logs every file it takes, with
    the modification time it listed, under the checkpoint's ``sources/`` (a ``v1`` line, then
    JSON lines ``{"path", "timestamp", "batchId"}``), so the comparison is exact whenever the
    watch looks. Watching on our own listing instead (first seen against now) missed a file
    filled a trigger apart when both halves fell between two looks. Without a checkpoint the
    watch falls back to that first-seen rule. So does a FIFO, device or socket that
    appears there: Spark lists it as an empty file and reads nothing from it (it never blocks
    the stream), and without the warning nobody would learn why its rows never arrive.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Protocol
from urllib.parse import unquote, urlparse

from trimtab.pipeline.fs import local_directory
from trimtab.readers.special_files import special_kind

__all__ = ["LandingWatch", "StampSource", "watch_dirs"]


class StampSource(Protocol):
    def exists(self, path: str) -> bool: ...

    def file_stamps(self, path: str) -> list[tuple[str, int, int]]: ...

    def list_dirs(self, path: str) -> list[str]: ...

    def read_text(self, path: str) -> str: ...


#: A file is known by its table directory and its name: Spark logs absolute URIs, the watch
#: lists the input as the user named it (relative, say).
FileKey = tuple[str, str]


@dataclass(slots=True)
class LandingWatch:
    """Warns once per telemetry file under ``dirs`` modified after the stream read it (by the
    times Spark logged under ``checkpoint``), or, with no checkpoint, after it was first seen."""

    dirs: tuple[str, ...]
    checkpoint: str | None = None
    seen: dict[str, tuple[int, int]] = field(default_factory=dict)
    warned: set[str] = field(default_factory=set)
    read_at: dict[FileKey, int] = field(default_factory=dict)
    logs_read: set[str] = field(default_factory=set)

    def check(self, fs: StampSource) -> list[str]:
        """The warnings for files changed since they were read (once per file)."""
        if self.checkpoint is not None:
            self._read_source_logs(fs, self.checkpoint)
        out = []
        for directory in self.dirs:
            if not fs.exists(directory):
                continue
            out += self._special(directory)
            table = PurePosixPath(directory.rstrip("/")).name
            for name, size, modified in fs.file_stamps(directory):
                if name.startswith((".", "_")):
                    continue  # Spark's file source skips hidden and underscore files too
                path = f"{directory.rstrip('/')}/{name}"
                if path in self.warned:
                    continue
                if self.checkpoint is not None:
                    read = self.read_at.get((table, name))
                    if read is not None and modified > read:
                        self.warned.add(path)
                        out.append(_changed_after_read(path, read, size))
                    continue
                first = self.seen.setdefault(path, (size, modified))
                if first != (size, modified):
                    self.warned.add(path)
                    out.append(_warning(path, first, size))
        return out

    def _read_source_logs(self, fs: StampSource, checkpoint: str) -> None:
        """Every file Spark's file sources took, with the modification time they listed (a
        batch's log file, or a ``.compact`` one, is written once: each is read once)."""
        sources = f"{checkpoint.rstrip('/')}/sources"
        if not fs.exists(sources):
            return
        for source in fs.list_dirs(sources):
            for name, _, _ in fs.file_stamps(source):
                log = f"{source.rstrip('/')}/{name}"
                if name.startswith(".") or log in self.logs_read:
                    continue
                if not name.removesuffix(".compact").isdigit():
                    continue
                self.logs_read.add(log)
                for line in fs.read_text(log).splitlines()[1:]:  # after the "v1" line
                    try:
                        entry = json.loads(line)
                        parts = PurePosixPath(unquote(urlparse(entry["path"]).path)).parts
                        key, stamp = (parts[-2], parts[-1]), int(entry["timestamp"])
                    except (ValueError, KeyError, TypeError, IndexError):
                        continue  # a log line of another Spark version: no opinion on it
                    self.read_at.setdefault(key, stamp)

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


def _changed_after_read(path: str, read: int, size: int) -> str:
    when = datetime.fromtimestamp(read / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return (
        f"{path} changed after the stream read it (it read the file as modified at "
        f"{when[:-4]}Z; {size:,} bytes now): the stream reads each file once, so rows written "
        "later are missing; move files into the input directory whole (write elsewhere, then "
        "rename)"
    )


def watch_dirs(
    input_dir: str, tables: Iterable[str], checkpoint: str | None = None
) -> LandingWatch:
    """A watch over the telemetry tables' directories under ``input_dir``; ``checkpoint`` is
    the stream's, whose source logs say what Spark read."""
    return LandingWatch(tuple(f"{input_dir.rstrip('/')}/{t}" for t in tables), checkpoint)
