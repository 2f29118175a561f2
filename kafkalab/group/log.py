"""The seam between the group coordinator and the log that makes its state durable.

The coordinator never touches a partition's log itself. It hands key/value pairs to a
:class:`CoordinatorLog` and learns the offset they landed at; at start-up it asks the same
object for every record of every partition and replays them. Today the broker implements this
over its local log store (append as leader, high watermark = log end offset). A replica manager
implements it by waiting for ``acks=all``: :meth:`CoordinatorLog.when_committed` calls back once
the high watermark passes the record.

Worked example: a commit by group ``g`` (partition 12 of ``__consumer_offsets``) calls
``append(12, [(key, value)], now_ms=1000)``; the broker creates the topic if it is missing,
writes one v2 batch and returns its base offset, say 7.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

KeyValue = tuple[bytes, bytes | None]  # a None value is a tombstone


class CoordinatorLog(Protocol):
    """Durable, ordered storage for one coordinator's internal topic."""

    def append(self, partition: int, records: Sequence[KeyValue], now_ms: int,
               producer: tuple[int, int] | None = None) -> int:
        """Append ``records`` to ``partition`` as one batch; return its base offset. With
        ``producer`` (id, epoch) the batch belongs to that producer's transaction: replay
        applies it only once the transaction's COMMIT marker follows it."""
        ...

    def replay(self) -> Iterable[tuple[int, bytes, bytes | None]]:
        """Every record (partition, key, value) of the topic, in offset order per partition;
        a transaction's records only once its COMMIT marker follows them."""
        ...

    def open_transactions(self) -> dict[int, list[tuple[int, bytes, bytes | None]]]:
        """After :meth:`replay`: producer id -> the records of its transaction that no marker
        has decided yet, in log order."""
        ...

    def when_committed(self, partition: int, offset: int, callback: Callable[[int], None]) -> None:
        """Call ``callback(error code)`` once ``offset`` of ``partition`` is committed (NONE),
        or will never be by this node (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE)."""
        ...


class MemoryCoordinatorLog:
    """A list per partition: for tests and the simulation. Not thread-safe."""

    def __init__(self) -> None:
        self.partitions: dict[int, list[KeyValue]] = {}

    def append(self, partition: int, records: Sequence[KeyValue], now_ms: int,
               producer: tuple[int, int] | None = None) -> int:
        log = self.partitions.setdefault(partition, [])
        base_offset = len(log)
        log.extend(records)
        return base_offset

    def when_committed(self, partition: int, offset: int, callback: Callable[[int], None]) -> None:
        callback(0)  # one copy: committed when appended

    def replay(self) -> Iterable[tuple[int, bytes, bytes | None]]:
        for partition, records in sorted(self.partitions.items()):
            for key, value in records:
                yield partition, key, value

    def open_transactions(self) -> dict[int, list[tuple[int, bytes, bytes | None]]]:
        return {}  # transactional appends are kept like any other here
