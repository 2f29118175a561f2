"""Two small delayed operations for the book and the tests: a fetch and a produce that wait.

The broker's real ``DelayedFetch`` and ``DelayedProduce`` read logs and replica state; these
teaching versions keep only the condition each one waits for, so the purgatory's behaviour can
be watched on its own:

* :class:`DelayedMinBytesFetch` -- waits until the watched partitions hold at least
  ``fetch.min.bytes`` new bytes, or ``fetch.max.wait.ms`` passes (Kafka's ``DelayedFetch``);
* :class:`DelayedAcksProduce` -- waits until every in-sync replica has the batch (the high
  watermark reaches ``required_offset``), or ``timeout.ms`` passes (Kafka's ``DelayedProduce``
  for ``acks=all``).

Both record how they ended in ``outcome`` -- ``("complete", now_ms)`` then, if the timer ended
them, ``("expired", now_ms)`` -- reading the time from the clock they are given.

Worked example: a fetch with ``fetch.min.bytes=100`` and ``fetch.max.wait.ms=500`` enters the
purgatory at 0 ms. Appends of 60 and 50 bytes arrive at 40 ms and 90 ms; the second brings the
total to 110 >= 100, so ``check_and_complete`` completes it at 90 ms and its timeout never fires.

Not thread-safe; each operation is owned by one purgatory.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

from kafkalab.clock import Clock
from kafkalab.purgatory.operation import DelayedOperation


class DelayedMinBytesFetch(DelayedOperation):
    """A fetch that answers once ``min_bytes`` have arrived on its partitions, or on timeout.

    ``bytes_by_partition`` is a live view of bytes appended per partition since the fetch began.
    Not thread-safe; owned by one purgatory.
    """

    __slots__ = ("partitions", "min_bytes", "bytes_by_partition", "clock", "outcome")

    def __init__(
        self,
        max_wait_ms: int,
        min_bytes: int,
        partitions: tuple[Hashable, ...],
        bytes_by_partition: Mapping[Hashable, int],
        clock: Clock,
        name: str = "fetch",
    ) -> None:
        super().__init__(max_wait_ms, name)
        self.partitions = partitions
        self.min_bytes = min_bytes
        self.bytes_by_partition = bytes_by_partition
        self.clock = clock
        self.outcome: list[tuple[str, int]] = []

    def accumulated_bytes(self) -> int:
        return sum(self.bytes_by_partition.get(p, 0) for p in self.partitions)

    def try_complete(self) -> bool:
        if self.accumulated_bytes() >= self.min_bytes:
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        self.outcome.append(("complete", self.clock.milliseconds()))

    def on_expiration(self) -> None:
        self.outcome.append(("expired", self.clock.milliseconds()))


class DelayedAcksProduce(DelayedOperation):
    """An ``acks=all`` produce that answers once the high watermark reaches its batch.

    ``high_watermark`` maps partition -> current high watermark (live view).
    Not thread-safe; owned by one purgatory.
    """

    __slots__ = ("required_offset_by_partition", "high_watermark", "clock", "outcome")

    def __init__(
        self,
        timeout_ms: int,
        required_offset_by_partition: Mapping[Hashable, int],
        high_watermark: Mapping[Hashable, int],
        clock: Clock,
        name: str = "produce",
    ) -> None:
        super().__init__(timeout_ms, name)
        self.required_offset_by_partition = dict(required_offset_by_partition)
        self.high_watermark = high_watermark
        self.clock = clock
        self.outcome: list[tuple[str, int]] = []

    def try_complete(self) -> bool:
        if all(
            self.high_watermark.get(p, 0) >= offset
            for p, offset in self.required_offset_by_partition.items()
        ):
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        self.outcome.append(("complete", self.clock.milliseconds()))

    def on_expiration(self) -> None:
        # Kafka answers REQUEST_TIMED_OUT for partitions whose replicas did not catch up.
        self.outcome.append(("expired", self.clock.milliseconds()))
