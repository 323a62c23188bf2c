"""What an agent answers: the total and usable space of its ledger directories.

Goals: the same numbers BookKeeper's bookie reports. ``DiskChecker`` sums, over the *distinct
filesystems* holding the ledger directories, ``getTotalSpace`` (``f_blocks * f_frsize``) and
``getUsableSpace`` (``f_bavail * f_frsize``: what a non-root writer can still use). Two ledger
directories on one disk must not count that disk twice, so filesystems are told apart by the
``st_dev`` of each directory.

Read-only rule (upstream ``LedgerDirsMonitor``): a node turns read-only when *every* filesystem
is used above ``diskUsageThreshold`` (no directory can take writes), and turns writable again
once some filesystem drops below ``diskUsageLwmThreshold``; the gap stops a node near the mark
from flapping. :func:`next_readonly` is that rule as a pure function.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from trimtab.diskinfo import BookieInfo

__all__ = ["DiskUsage", "FilesystemUsage", "measure_disks", "next_readonly"]


@dataclass(frozen=True, slots=True)
class FilesystemUsage:
    """One filesystem under the ledger directories, with the directories that live on it."""

    device: int
    directories: tuple[str, ...]
    total_bytes: int
    free_bytes: int

    @property
    def used_fraction(self) -> float:
        return 0.0 if self.total_bytes <= 0 else 1.0 - self.free_bytes / self.total_bytes


@dataclass(frozen=True, slots=True)
class DiskUsage:
    """The ledger directories' filesystems, each counted once, and their sums."""

    filesystems: tuple[FilesystemUsage, ...]

    @property
    def total_bytes(self) -> int:
        return sum(fs.total_bytes for fs in self.filesystems)

    @property
    def free_bytes(self) -> int:
        return sum(fs.free_bytes for fs in self.filesystems)

    def info(self) -> BookieInfo:
        return BookieInfo(self.total_bytes, self.free_bytes)


def measure_disks(
    directories: Iterable[str | Path],
    *,
    stat: Callable[[str], os.stat_result] = os.stat,
    statvfs: Callable[[str], os.statvfs_result] = os.statvfs,
) -> DiskUsage:
    """Measure the filesystems holding ``directories``; raises ``OSError`` as the OS does.

    ``stat`` and ``statvfs`` are injectable so tests can describe several filesystems.
    """
    by_device: dict[int, list[str]] = {}
    for directory in directories:
        path = str(directory)
        by_device.setdefault(stat(path).st_dev, []).append(path)
    filesystems = []
    for device, paths in sorted(by_device.items()):
        vfs = statvfs(paths[0])
        filesystems.append(
            FilesystemUsage(
                device=device,
                directories=tuple(paths),
                total_bytes=vfs.f_blocks * vfs.f_frsize,
                free_bytes=vfs.f_bavail * vfs.f_frsize,
            )
        )
    return DiskUsage(tuple(filesystems))


def next_readonly(
    readonly: bool, usage: DiskUsage, *, threshold: float, lwm_threshold: float
) -> bool:
    """Whether a node whose disks read ``usage`` should now be read-only.

    >>> full = DiskUsage((FilesystemUsage(1, ("/a",), 100, 3),))
    >>> next_readonly(False, full, threshold=0.95, lwm_threshold=0.90)
    True
    >>> half = DiskUsage((FilesystemUsage(1, ("/a",), 100, 7),))  # 93 % used: inside the gap
    >>> next_readonly(True, half, threshold=0.95, lwm_threshold=0.90)
    True
    """
    if not usage.filesystems:
        return readonly
    lwm = min(lwm_threshold, threshold)  # upstream refuses lwm > threshold; clamp instead
    if readonly:
        return not any(fs.used_fraction < lwm for fs in usage.filesystems)
    return all(fs.used_fraction > threshold for fs in usage.filesystems)
