"""Power loss: what a broker's disk holds when the machine loses power, as the simulation models it.

Theory of operation
-------------------
A write returns once the bytes are in the operating system's page cache; they reach the disk
when the kernel writes the dirty pages back, or when the process calls ``fsync``. Killing the
process loses nothing the log wrote (the kernel still has it), which is why a plain crash keeps
every file as written. Losing power loses the page cache: only what was fsynced -- and whatever
the kernel happened to write back -- survives.

Kafka does not fsync each append (``flush.messages`` and ``flush.ms`` default to never): it
counts on replication instead. A broker that loses power comes back with a shorter, possibly
torn log, recovers it (a batch cut in half fails its CRC and is truncated, indexes past the
recovery point are rebuilt), and fetches what it lost from the leader. Acknowledged records
survive as long as another replica in the ISR kept them.

The model, per segment: :attr:`LogSegment.durable_bytes` is the ``.log`` file's length at its
last fsync. On power loss the file keeps its durable bytes plus a seeded prefix of the rest (the
kernel writes a file's dirty pages back roughly in order; a prefix may end mid-batch, which is
the torn write recovery must handle). A segment that lost bytes loses its ``.index`` and
``.timeindex`` too, whose unflushed entries may point past the new end; recovery rebuilds them,
as it does for any missing index. Checkpoint files are written to a temporary file, fsynced and
renamed, so they are durable. Files whose directory entry was never fsynced are kept (a
simplification: a real file system may lose a new file altogether).

Worked example: a segment flushed at 4,096 bytes and written to 10,000 loses between 0 and
5,904 bytes; with a draw of 1,000 it keeps 5,096 bytes, cutting the batch that spans byte 5,096,
and the next start's recovery truncates the file to the last whole batch before it.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kafkalab.storage.log import Log


@dataclass(frozen=True, slots=True)
class UnflushedTail:
    """One segment's bytes past its last fsync, noted while the broker still runs."""

    log_path: Path
    index_paths: tuple[Path, ...]
    durable_bytes: int
    size_bytes: int


@dataclass(frozen=True, slots=True)
class LostTail:
    """What a power loss took from one segment file."""

    log_path: Path
    kept_bytes: int
    lost_bytes: int


def unflushed_tails(logs: Iterable[Log]) -> list[UnflushedTail]:
    """Every segment with bytes the disk may not have, in path order; call before the process dies."""
    tails = [UnflushedTail(segment.log_path, (segment.offset_index.path, segment.time_index.path),
                           segment.durable_bytes, segment.size_bytes)
             for log in logs for segment in log.segments if segment.size_bytes > segment.durable_bytes]
    return sorted(tails, key=lambda tail: tail.log_path)


def lose_unflushed(tails: Iterable[UnflushedTail], rng: random.Random) -> list[LostTail]:
    """Cut each file to its durable bytes plus a drawn prefix of the rest; the process must be
    gone (its files closed). Returns what each file lost."""
    lost = []
    for tail in tails:
        kept = tail.durable_bytes + rng.randrange(tail.size_bytes - tail.durable_bytes + 1)
        if kept < tail.size_bytes and tail.log_path.exists():
            os.truncate(tail.log_path, kept)
            for index_path in tail.index_paths:
                index_path.unlink(missing_ok=True)
            lost.append(LostTail(tail.log_path, kept, tail.size_bytes - kept))
    return lost


__all__ = ["LostTail", "UnflushedTail", "lose_unflushed", "unflushed_tails"]
