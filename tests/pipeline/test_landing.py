"""A telemetry file written in place while the stream runs gets one ``warning:`` (issue 43,
point 6): the stream reads each file once, when it first lists it. With the stream's
checkpoint the watch knows what Spark read (its file source's log, in Spark's own format)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from trimtab.pipeline.stream.landing import watch_dirs


class LocalStamps:
    """The two listing calls of HadoopFS, on the local file system."""

    def exists(self, path: str) -> bool:
        return Path(path).exists()

    def file_stamps(self, path: str) -> list[tuple[str, int, int]]:
        return [
            (p.name, p.stat().st_size, int(p.stat().st_mtime * 1000))
            for p in Path(path).iterdir()
            if p.is_file()
        ]

    def list_dirs(self, path: str) -> list[str]:
        return sorted(str(p) for p in Path(path).iterdir() if p.is_dir())

    def read_text(self, path: str) -> str:
        return Path(path).read_text()


def test_a_file_filled_after_it_landed_is_named_once(tmp_path: Path) -> None:
    metrics = tmp_path / "node_metrics"
    metrics.mkdir()
    half = metrics / "part-1.csv"
    half.write_text("cluster,node,ts,cpu\n" + "c,n1,1,0.5\n" * 25)
    whole = metrics / "part-0.csv"
    whole.write_text("cluster,node,ts,cpu\nc,n1,0,0.5\n")
    (metrics / ".part-2.csv.crc").write_text("x")
    watch = watch_dirs(str(tmp_path), ["node_metrics", "bundle_metrics"])
    fs = LocalStamps()
    assert watch.check(fs) == []
    with half.open("a") as handle:
        handle.write("c,n1,2,0.5\n" * 27)
    os.utime(half, (1, 1))
    (metrics / ".part-2.csv.crc").write_text("xy")  # hidden files are Spark's own business
    (warning,) = watch.check(fs)
    assert warning.startswith(f"{half} changed after the stream first saw it")
    assert "move files into the input directory whole" in warning
    assert watch.check(fs) == []  # once per file


def test_a_fifo_appearing_in_a_watched_directory_is_named_once(tmp_path: Path) -> None:
    """Issue 43, point 1: a FIFO landing among the telemetry is skipped by Spark (listed as an
    empty file, never opened for reading); the watch names it once, without opening it."""
    metrics = tmp_path / "node_metrics"
    metrics.mkdir()
    (metrics / "part-0.csv").write_text("cluster,node,ts,cpu\nc,n1,0,0.5\n")
    watch = watch_dirs(str(tmp_path), ["node_metrics", "bundle_metrics"])
    fs = LocalStamps()
    assert watch.check(fs) == []
    os.mkfifo(metrics / "late.csv")
    os.mkfifo(metrics / ".hidden.csv")  # Spark's file source skips hidden files itself
    (warning,) = watch.check(fs)  # would hang here if anything opened the FIFO
    assert warning.startswith(f"{metrics / 'late.csv'} is a FIFO (named pipe), not a regular")
    assert "the stream skips it" in warning
    assert watch.check(fs) == []  # once


def _spark_read(checkpoint: Path, source: int, batch: int, *files: Path) -> None:
    """A batch's log of Spark's file source: ``v1``, then a JSON line per file it took."""
    log = checkpoint / "sources" / str(source) / str(batch)
    log.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps(
            {
                "path": f.resolve().as_uri(),
                "timestamp": int(f.stat().st_mtime * 1000),
                "batchId": batch,
            }
        )
        for f in files
    ]
    log.write_text("\n".join(["v1", *lines]))


def test_the_checkpoint_says_what_spark_read_and_a_later_change_is_named(tmp_path: Path) -> None:
    """A file filled before Spark took it is no change, however the watch's looks fall; one
    filled after Spark took it is named, even if the watch never saw its first half."""
    metrics, checkpoint = tmp_path / "in" / "node_metrics", tmp_path / "checkpoint"
    metrics.mkdir(parents=True)
    early, late = metrics / "early.csv", metrics / "late file.csv"
    early.write_text("cluster,node,ts,cpu\n" + "c,n1,1,0.5\n" * 25)
    late.write_text("cluster,node,ts,cpu\n" + "c,n1,1,0.5\n" * 25)
    watch = watch_dirs(str(tmp_path / "in"), ["node_metrics"], str(checkpoint))
    fs = LocalStamps()
    with early.open("a") as handle:  # filled before Spark's listing: read whole
        handle.write("c,n1,2,0.5\n" * 27)
    os.utime(early, (5, 5))
    _spark_read(checkpoint, 0, 0, early, late)
    with late.open("a") as handle:  # filled after it: the rest is never read
        handle.write("c,n1,2,0.5\n" * 27)
    os.utime(late, (late.stat().st_atime, late.stat().st_mtime + 2))
    (warning,) = watch.check(fs)
    assert warning.startswith(f"{late} changed after the stream read it (it read the file as")
    assert "move files into the input directory whole" in warning
    assert watch.check(fs) == []  # once per file
