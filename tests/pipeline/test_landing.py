"""A telemetry file written in place while the stream runs gets one ``warning:`` (issue 43,
point 6): the stream reads each file once, when it first lists it."""

from __future__ import annotations

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
