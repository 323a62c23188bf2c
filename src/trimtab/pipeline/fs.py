"""File operations through Hadoop's FileSystem API, so paths may be local, HDFS or S3.

The job must not assume a local filesystem beyond the paths it is given, so listing input
files, reading CSV headers, writing ``run.json`` and switching the output directory all go
through the JVM's ``org.apache.hadoop.fs.FileSystem`` of the running session.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["HadoopFS", "local_directory"]


def local_directory(uri: str) -> str | None:
    """The local path of a ``file:`` URI (or a plain path), else None (HDFS, object stores:
    written by Spark's own writer)."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        return parsed.path
    return None


class HadoopFS:
    """A thin wrapper over the session's Hadoop FileSystems: one per run, built once and
    passed down. Each path is served by the FileSystem of its own scheme and authority
    (looked up once each), so one object reads a local input and writes to HDFS alike."""

    def __init__(self, spark: SparkSession) -> None:
        jvm: Any = spark.sparkContext._jvm
        self._jvm = jvm
        # Looked up once: each step of ``jvm.org.apache...`` is a Py4J round trip.
        self._path_class = jvm.org.apache.hadoop.fs.Path
        self._conf = spark.sparkContext._jsc.hadoopConfiguration()
        self._filesystems: dict[tuple[str, str], Any] = {}

    def _path(self, path: str) -> Any:
        return self._path_class(path)

    def _fs(self, path: str) -> Any:
        """The FileSystem of ``path``'s scheme and authority (a plain path: the default)."""
        parsed = urlparse(path)
        key = (parsed.scheme, parsed.netloc)
        found = self._filesystems.get(key)
        if found is None:
            found = self._path(path).getFileSystem(self._conf)
            self._filesystems[key] = found
        return found

    def qualify(self, path: str) -> str:
        """The absolute URI of ``path`` (``file:/...``, ``hdfs://...``)."""
        return str(self._fs(path).makeQualified(self._path(path)).toString())

    def exists(self, path: str) -> bool:
        return bool(self._fs(path).exists(self._path(path)))

    def is_dir(self, path: str) -> bool:
        return bool(self._fs(path).getFileStatus(self._path(path)).isDirectory())

    def list_files(self, path: str) -> list[str]:
        """Data files directly under ``path`` (or ``path`` itself), skipping hidden/marker files."""
        return [name for name, _ in self.sized_files(path)]

    def sized_files(self, path: str) -> list[tuple[str, int]]:
        """:meth:`list_files` with each file's size in bytes, from the same listing."""
        status = self._fs(path).getFileStatus(self._path(path))
        if not status.isDirectory():
            return [(self.qualify(path), int(status.getLen()))]
        found = []
        for status in self._fs(path).listStatus(self._path(path)):
            name = str(status.getPath().getName())
            if status.isFile() and not name.startswith(("_", ".")):
                found.append((str(status.getPath().toString()), int(status.getLen())))
        return sorted(found)

    def size(self, path: str) -> int:
        """A file's size in bytes."""
        return int(self._fs(path).getFileStatus(self._path(path)).getLen())

    def file_stamps(self, path: str) -> list[tuple[str, int, int]]:
        """Every file directly under ``path``, hidden ones too: its name, size in bytes and
        modification time (ms), as listed."""
        return [
            (str(s.getPath().getName()), int(s.getLen()), int(s.getModificationTime()))
            for s in self._fs(path).listStatus(self._path(path))
            if s.isFile()
        ]

    def list_dirs(self, path: str) -> list[str]:
        """Directories directly under ``path`` (empty if ``path`` does not exist)."""
        if not self.exists(path):
            return []
        return sorted(
            str(status.getPath().toString())
            for status in self._fs(path).listStatus(self._path(path))
            if status.isDirectory()
        )

    def first_line(self, path: str) -> str:
        """The first line of a text file (a CSV header), read without scanning the file."""
        stream = self._fs(path).open(self._path(path))
        try:
            reader = self._jvm.java.io.BufferedReader(
                self._jvm.java.io.InputStreamReader(stream, "UTF-8")
            )
            line = reader.readLine()
            return "" if line is None else str(line)
        finally:
            stream.close()

    def write_text(self, path: str, text: str) -> None:
        stream = self._fs(path).create(self._path(path), True)
        try:
            stream.write(bytearray(text.encode("utf-8")))
        finally:
            stream.close()

    def read_text(self, path: str) -> str:
        return self.read_bytes(path).decode("utf-8")

    def read_bytes(self, path: str) -> bytes:
        stream = self._fs(path).open(self._path(path))
        try:
            return bytes(self._jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
        finally:
            stream.close()

    def mkdirs(self, path: str) -> None:
        self._fs(path).mkdirs(self._path(path))

    def replace_text(self, path: str, text: str) -> None:
        """Write ``path`` so that readers see the old text or the new, never none: on a local
        filesystem a file written beside it by Python (no Hadoop ``.crc`` to go stale) and
        renamed over it; elsewhere (HDFS, object stores, whose rename never overwrites) the
        best there is, delete then rename."""
        fs = self._fs(path)
        if fs.getUri().getScheme() == "file":
            local = Path(str(fs.pathToFile(self._path(path)).getPath()))
            beside = local.with_name(f"_{local.name}.tmp")
            beside.write_text(text, encoding="utf-8")
            beside.replace(local)
            return
        aside = f"{path}.tmp"
        self.write_text(aside, text)
        self.delete(path)
        if not self.rename(aside, path):
            raise OSError(f"could not replace {path}")

    def rename(self, source: str, target: str) -> bool:
        return bool(self._fs(source).rename(self._path(source), self._path(target)))

    def delete(self, path: str) -> None:
        self._fs(path).delete(self._path(path), True)
