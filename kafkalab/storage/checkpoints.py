"""Checkpoint files: small text files that remember offsets across restarts.

Mirrors Kafka's ``CheckpointFile``. Line 1 is the format version, line 2 the number of
entries, then one entry per line; every line ends with ``\\n``. Writes are crash-safe: the text
goes to ``<name>.tmp``, is flushed and fsynced, then atomically renamed over the old file and
the directory is fsynced, so a reader sees either the old file or the new one, never half.

Example ``recovery-point-offset-checkpoint`` in a log directory holding two partitions::

    0
    2
    orders 0 1500
    orders 1 1320

``leader-epoch-checkpoint`` (one per partition directory) holds ``epoch startOffset`` pairs::

    0
    2
    0 0
    3 120

A malformed file raises :class:`CorruptCheckpointError`; callers decide on the fallback Kafka
uses (the log manager resets a recovery point to 0, which means "recover everything").
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from kafkalab.errors import StorageError

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
CURRENT_VERSION = 0
# A checkpoint names at most every partition a broker hosts; Kafka has no explicit cap, so we
# bound the file size instead: 64 MiB is far beyond a million partitions' lines.
CHECKPOINT_BYTES_MAX = 64 * 1024 * 1024


class CorruptCheckpointError(StorageError):
    """A checkpoint file whose text does not follow the version/count/entries format."""


def write_lines(path: Path, lines: Sequence[str]) -> None:
    """Write ``version``, ``count`` and ``lines`` crash-safely (tmp, fsync, rename, dir fsync)."""
    path = Path(path)
    text = f"{CURRENT_VERSION}\n{len(lines)}\n" + "".join(f"{line}\n" for line in lines)
    write_atomically(path, text.encode("utf-8"))


def write_atomically(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_directory(path.parent)


def fsync_directory(directory: Path) -> None:
    """Make a rename durable: fsync the directory that holds the renamed entry."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_lines(path: Path, fields_per_line: int) -> list[list[str]]:
    """Read a checkpoint, checking version, count and field counts. Missing file -> []."""
    path = Path(path)
    if not path.exists():
        return []
    if path.stat().st_size > CHECKPOINT_BYTES_MAX:
        raise CorruptCheckpointError(f"checkpoint {path} is larger than {CHECKPOINT_BYTES_MAX} bytes")
    try:
        text = path.read_text("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptCheckpointError(f"checkpoint {path} is not UTF-8 text: {exc}") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) < 2:
        raise CorruptCheckpointError(f"checkpoint {path} lacks the version and count lines")
    if lines[0].strip() != str(CURRENT_VERSION):
        raise CorruptCheckpointError(f"unrecognised version {lines[0]!r} in checkpoint {path}")
    expected = _parse_int(lines[1], path, 2)
    entries = [line.split() for line in lines[2:]]
    if expected != len(entries):
        raise CorruptCheckpointError(
            f"checkpoint {path} says {expected} entries but holds {len(entries)}"
        )
    for number, fields in enumerate(entries, start=3):
        if len(fields) != fields_per_line:
            raise CorruptCheckpointError(f"malformed line {number} in checkpoint {path}: {fields}")
    return entries


def _parse_int(text: str, path: Path, line_number: int) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise CorruptCheckpointError(
            f"malformed line {line_number} in checkpoint {path}: {text!r} is not an integer"
        ) from None


TopicPartition = tuple[str, int]


def write_offsets(path: Path, offsets: Mapping[TopicPartition, int]) -> None:
    """Write ``topic partition offset`` lines, sorted for stable diffs."""
    lines = [f"{topic} {partition} {offset}" for (topic, partition), offset in sorted(offsets.items())]
    write_lines(path, lines)


def read_offsets(path: Path) -> dict[TopicPartition, int]:
    result: dict[TopicPartition, int] = {}
    for number, (topic, partition, offset) in enumerate(read_lines(path, 3), start=3):
        result[(topic, _parse_int(partition, path, number))] = _parse_int(offset, path, number)
    return result


def write_leader_epochs(path: Path, entries: Sequence[tuple[int, int]]) -> None:
    write_lines(path, [f"{epoch} {start_offset}" for epoch, start_offset in entries])


def read_leader_epochs(path: Path) -> list[tuple[int, int]]:
    return [
        (_parse_int(epoch, path, n), _parse_int(start, path, n))
        for n, (epoch, start) in enumerate(read_lines(path, 2), start=3)
    ]
