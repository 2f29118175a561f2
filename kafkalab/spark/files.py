"""Where segment files live: a local directory or an object store, behind one small interface.

Theory of operation
-------------------
A Kafka data directory copied to an object store keeps its layout: ``s3://bucket/logs/orders-0/
00000000000000000000.log`` and so on. The ``kafkalog`` source plans and reads through a
:class:`Location`, a file or directory on a ``pyarrow.fs`` filesystem:

* a plain path (``/tmp/kafka-logs``) or a ``file://`` URL is the local filesystem;
* ``s3://``, ``gs://``, ``hdfs://`` and ``abfs://`` URLs go to pyarrow's own clients
  (``FileSystem.from_uri``). Credentials and endpoints come from each ecosystem's usual
  settings -- for S3 the AWS SDK chain (``AWS_ACCESS_KEY_ID``, ``~/.aws/credentials``,
  ``AWS_ENDPOINT_URL``, instance roles), for GCS application-default credentials -- or from the
  URL's query string (``s3://bucket/logs?endpoint_override=…``), never from kafkalab's code.

Planning needs only listings, sizes and the small ``.index``/``.timeindex`` files, so it costs
one listing per partition and a few small reads. Reading a split is one ranged read of its bytes
(``read_range``), which an object store answers with a single ranged GET. A local split is
memory-mapped instead, so local scans cost what they did before.

A Location pickles with its filesystem (pyarrow's filesystems are picklable), which is how a
split planned on Spark's driver is read on an executor in another process or machine.

Worked example: ``Location.of("s3://logs/prod?endpoint_override=127.0.0.1:9000&scheme=http")``
names the directory ``logs/prod`` on that S3 server; ``.child("orders-0").child(
"00000000000000000000.log").read_range(0, 61)`` fetches the first batch header.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from kafkalab.errors import StorageError

URL_SCHEMES = ("file", "s3", "gs", "gcs", "hdfs", "viewfs", "abfs", "abfss")
LISTING_ENTRIES_MAX = 10_000_000  # a directory with more entries is not a Kafka data directory
COPY_CHUNK_BYTES = 8 * 1024 * 1024  # one multipart-upload part at a time


class Location:
    """A file or directory on a pyarrow filesystem. Immutable; picklable; hashable."""

    __slots__ = ("filesystem", "path")

    def __init__(self, filesystem: Any, path: str) -> None:
        self.filesystem = filesystem
        self.path = path.rstrip("/") or "/"

    @classmethod
    def of(cls, where: str | Path | Location) -> Location:
        """A Location for a local path, a ``file://`` URL or an object-store URL."""
        if isinstance(where, Location):
            return where
        text = str(where)
        scheme = text.split("://", 1)[0].lower() if "://" in text else ""
        if not scheme:
            from pyarrow.fs import LocalFileSystem

            return cls(LocalFileSystem(), os.path.abspath(text))
        if scheme not in URL_SCHEMES:
            raise StorageError(f"cannot read {text}: scheme {scheme!r} is not one of {URL_SCHEMES}")
        from pyarrow.fs import FileSystem

        try:
            filesystem, path = FileSystem.from_uri(text)
        except (OSError, ValueError) as exc:
            raise StorageError(f"cannot open {text}: {exc}") from exc
        return cls(filesystem, path)

    @property
    def is_local(self) -> bool:
        return type(self.filesystem).__name__ == "LocalFileSystem"

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def parent(self) -> Location:
        return Location(self.filesystem, self.path.rsplit("/", 1)[0] or "/")

    def child(self, name: str) -> Location:
        return Location(self.filesystem, f"{self.path}/{name}")

    def with_suffix(self, suffix: str) -> Location:
        """``…/00000000000000000000.log`` -> ``…/00000000000000000000.index`` for ``".index"``."""
        stem = self.path.rsplit(".", 1)[0] if "." in self.name else self.path
        return Location(self.filesystem, stem + suffix)

    def _info(self) -> Any:
        try:
            return self.filesystem.get_file_info(self.path)
        except OSError as exc:
            raise StorageError(f"cannot stat {self}: {exc}") from exc

    def exists(self) -> bool:
        from pyarrow.fs import FileType

        return bool(self._info().type != FileType.NotFound)

    def is_dir(self) -> bool:
        from pyarrow.fs import FileType

        return bool(self._info().type == FileType.Directory)

    def size(self) -> int:
        info = self._info()
        if info.size is None:
            raise StorageError(f"{self} is not a file")
        return int(info.size)

    def children(self) -> list[tuple[Location, bool]]:
        """``(location, is_directory)`` of each entry directly inside this directory."""
        from pyarrow.fs import FileSelector, FileType

        try:
            infos = self.filesystem.get_file_info(FileSelector(self.path, allow_not_found=True))
        except OSError as exc:
            raise StorageError(f"cannot list {self}: {exc}") from exc
        if len(infos) > LISTING_ENTRIES_MAX:
            raise StorageError(f"{self} holds more than {LISTING_ENTRIES_MAX} entries")
        return [(Location(self.filesystem, info.path), info.type == FileType.Directory) for info in infos]

    def read_range(self, start: int, end: int) -> memoryview:
        """Bytes ``[start, end)`` of a file (fewer if the file is shorter), as a read-only view
        of the buffer pyarrow filled: no copy."""
        try:
            with self.filesystem.open_input_file(self.path) as handle:
                return memoryview(handle.read_at(max(0, end - start), start))
        except OSError as exc:
            raise StorageError(f"cannot read {self} [{start}, {end}): {exc}") from exc

    def read_bytes(self) -> bytes:
        return bytes(self.read_range(0, self.size()))

    def __str__(self) -> str:
        if self.is_local:
            return self.path
        return f"{self.filesystem.type_name}://{self.path}"

    def __repr__(self) -> str:
        return f"Location({self})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Location) and (self.path, str(self)) == (other.path, str(other))

    def __hash__(self) -> int:
        return hash(str(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return (Location, (self.filesystem, self.path))


def is_url(where: str | Path) -> bool:
    """True for ``scheme://…`` (``file://`` included), False for a plain path."""
    return "://" in str(where)


def copy_tree(source: Location, target: Location, show_progress: bool = True) -> int:
    """Copy every file under ``source`` to the same relative path under ``target`` (e.g. a data
    directory to ``s3://bucket/logs``), with a progress bar in bytes; returns the bytes copied."""
    from pyarrow.fs import FileSelector, FileType
    from tqdm import tqdm

    files = [info for info in source.filesystem.get_file_info(FileSelector(source.path, recursive=True))
             if info.type == FileType.File]
    total = sum(int(info.size or 0) for info in files)
    with tqdm(total=total, unit="B", unit_scale=True, disable=not show_progress, desc=f"to {target}") as bar:
        for info in files:
            relative = info.path[len(source.path):].lstrip("/")
            destination = target.child(relative)
            target.filesystem.create_dir(destination.parent.path, recursive=True)
            with source.filesystem.open_input_stream(info.path) as reader, \
                    target.filesystem.open_output_stream(destination.path) as writer:
                while chunk := reader.read(COPY_CHUNK_BYTES):
                    writer.write(chunk)
                    bar.update(len(chunk))
    return total


__all__ = ["Location", "URL_SCHEMES", "copy_tree", "is_url"]
