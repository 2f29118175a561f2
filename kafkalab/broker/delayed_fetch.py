"""Delayed fetches: fetch requests that wait in the purgatory for bytes or for their deadline.

Theory of operation
-------------------
A consumer asks for at least ``min_bytes`` (``fetch.min.bytes``) and will wait up to
``max_wait_ms`` (``fetch.max.wait.ms``). If the log holds less, the broker does not answer with
nothing: it parks the request as a :class:`DelayedFetch` -- Kafka's ``DelayedFetch`` -- in a
:class:`~kafkalab.purgatory.DelayedOperationPurgatory` keyed by topic-partition. The operation
is watched under every partition the fetch reads, and sits on the broker's timing wheel for
``max_wait_ms``::

    fetch (min 150 B, wait 10 s) --> read: 70 B < 150 --> purgatory.try_complete_else_watch(
                                                              op, [("orders", 0)])
    produce to orders-0 --> purgatory.check_and_complete(("orders", 0)) --> op.try_complete():
                              read again: 170 B >= 150 --> force_complete() --> respond
    ...or nothing arrives --> timer reaches the deadline --> op.run() --> force_complete()
                              --> respond with whatever is there --> on_expiration()

Either road completes the operation exactly once (``DelayedOperation.force_complete``); the
other finds it completed and does nothing. ``try_complete`` counts the bytes a read would
return now (file slices, no data copied), so the check costs a few index lookups.

Worked example: fetch F1 (min 1 byte, wait 500 ms) arrives at t=1000 on an empty ``orders-0``
and is watched under ``("orders", 0)``. A produce at t=1200 calls
``check_and_complete(("orders", 0))``; F1's read finds 80 bytes >= 1 and F1 is answered at
t=1200; its timer entry is cancelled. Had nothing arrived, the timer would have run F1 at t=1500
with an empty response and ``expired`` set.

The purgatory shares the broker's one timer with the periodic tasks and delayed deletions, so
its ``num_delayed`` (the timer's size) also counts those few tasks; the purge heuristic
(completed operations beyond ``FETCH_PURGE_INTERVAL``) is off by that handful, which is harmless.

A fetch whose connection closes is *abandoned*: completed without a response, so neither road
answers it and the purgatory purges it like any completed operation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafkalab.purgatory.operation import DelayedOperation

# Kafka's fetch.purgatory.purge.interval.requests default.
FETCH_PURGE_INTERVAL = 1_000
# More parked fetches than this and new ones are answered at once. Each connection has at most
# one request in flight, so this also caps what CONNECTIONS_MAX clients can park.
DELAYED_FETCHES_MAX = 10_000

ReadResult = tuple[Any, int, bool]  # (what was read, record bytes found, whether a partition failed)


class DelayedFetch(DelayedOperation):
    """A parked fetch: how to re-read it, how to answer it, and its ``min_bytes``.

    ``read()`` reads every partition of the request now; ``respond(read)`` builds the response
    from what was read (through the fetch session, if any) and sends it on the fetch's connection. Not thread-safe; owned by the broker's fetch purgatory.
    """

    __slots__ = ("connection_id", "min_bytes", "_read", "_respond", "_ready", "abandoned", "expired")

    def __init__(
        self, connection_id: int, max_wait_ms: int, min_bytes: int,
        read: Callable[[], ReadResult], respond: Callable[[Any], None], *, name: str = "",
    ) -> None:
        super().__init__(max_wait_ms, name or f"fetch-{connection_id}")
        self.connection_id = connection_id
        self.min_bytes = min_bytes
        self._read = read
        self._respond = respond
        self._ready: Any = None  # the response a successful try_complete already read
        self.abandoned = False
        self.expired = False

    def try_complete(self) -> bool:
        """Complete if the partitions now hold ``min_bytes`` or one of them failed (Kafka's
        cases: an error such as a deleted partition or an offset now out of range answers at
        once, so the consumer can react)."""
        response, size_bytes, had_error = self._read()
        if size_bytes >= self.min_bytes or had_error:
            self._ready = response
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        if self.abandoned:
            return
        # The timer's road has not read yet; the event's road read just before force_complete.
        response = self._ready if self._ready is not None else self._read()[0]
        self._ready = None
        self._respond(response)

    def on_expiration(self) -> None:
        self.expired = True

    def abandon(self) -> None:
        """The connection closed: complete without answering, and leave the timer."""
        self.abandoned = True
        self.force_complete()
