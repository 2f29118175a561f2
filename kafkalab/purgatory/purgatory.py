"""The purgatory: where delayed operations wait, watched by keys, until an event or a timeout.

Mirrors Kafka's ``DelayedOperationPurgatory`` (``org.apache.kafka.server.purgatory``). It keeps
every waiting operation in two places at once:

* a **watch list** per key -- e.g. the topic-partition a fetch reads, or each partition a
  produce wrote to -- so an event on that key (an append, a high-watermark move) can try to
  complete exactly the operations that care about it;
* the **timer** -- so that, at the latest, the operation completes when its delay runs out.

::

    try_complete_else_watch(op, keys)     check_and_complete(key)         advance_clock(now_ms)
      try_complete() -> done? return        for op in watchers[key]:        timer flushes due
      watch op under every key                 completed? drop it           buckets; expired ops
      try_complete() again (closes the         try_complete()? drop it       force_complete() and
        race with an event in between)                                       on_expiration();
      add op to the timer                                                    then maybe purge

Completion by one road leaves the operation behind on the other: an operation completed by an
event stays in the watch lists of its *other* keys, and one completed by the timer stays in all
of them. ``check_and_complete`` drops completed operations it meets, but a quiet key is never
checked. So the purgatory counts operations it has watched (``estimated_total``) and, when that
count exceeds the pending delayed operations by more than ``purge_interval`` (Kafka's
``*.purgatory.purge.interval.requests``, default 1,000), sweeps every watch list.

Worked example: 1,500 fetches on partition ``t-0`` all expire at their ``fetch.max.wait.ms``.
The timer has run them, so ``num_delayed`` is 0 but ``estimated_total`` is 1,500 and the
watch list for ``t-0`` still holds 1,500 completed operations. 1,500 - 0 > 1,000, so the next
``advance_clock`` purges them and resets ``estimated_total`` to 0.

Every step can be watched: ``add_listener`` receives the trace events of
``kafkalab.purgatory.events`` (watched, completed by an event, expired by the timer, purged).
With no listener the purgatory builds no event -- each site tests the listener list first.

Not thread-safe; owned by one broker. The timer should be the purgatory's own (as in Kafka),
since ``num_delayed`` is the timer's size.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

from kafkalab.clock import Clock
from kafkalab.errors import TimerError
from kafkalab.purgatory.events import (
    OperationCompleted,
    OperationExpired,
    OperationsPurged,
    OperationWatched,
    PurgatoryEvent,
    PurgatoryListener,
)
from kafkalab.purgatory.operation import DelayedOperation
from kafkalab.timer.timer import Timer

Op = TypeVar("Op", bound=DelayedOperation)

# Kafka's fetch.purgatory.purge.interval.requests / producer.purgatory.purge.interval.requests.
PURGE_INTERVAL_DEFAULT = 1_000
# One operation watched under more keys than this is a bug in the caller (a produce touches at
# most the partitions of one request; Kafka's default max.request.size fits far fewer).
WATCH_KEYS_MAX = 100_000


class DelayedOperationPurgatory(Generic[Op]):
    """Delayed operations watched by key and expired by a timer.

    Not thread-safe; owned by one broker.
    """

    def __init__(
        self,
        name: str,
        clock: Clock | None = None,
        *,
        timer: Timer | None = None,
        purge_interval: int = PURGE_INTERVAL_DEFAULT,
    ) -> None:
        if (clock is None) == (timer is None):
            raise TimerError(f"purgatory {name!r} needs exactly one of a clock or a timer")
        if purge_interval < 0:
            raise TimerError(
                f"cannot create purgatory {name!r} with purge interval {purge_interval}: "
                "must be >= 0"
            )
        if timer is None:
            assert clock is not None
            timer = Timer(clock)
        self.name = name
        self.timer = timer
        self.purge_interval = purge_interval
        self._watchers: dict[Hashable, list[Op]] = {}
        # Operations ever watched since the last purge (Kafka's estimatedTotalOperations).
        self.estimated_total = 0
        self.purge_count = 0
        # Trace listeners (kafkalab.purgatory.events): every emitting site tests this list
        # first, so an unobserved purgatory builds no events.
        self._listeners: list[PurgatoryListener] = []

    # -- the three entry points --------------------------------------------------------------

    def try_complete_else_watch(self, operation: Op, watch_keys: Sequence[Hashable]) -> bool:
        """Complete ``operation`` now if it can; otherwise watch it under every key and start
        its timeout. True if it completed during this call."""
        if not watch_keys:
            raise TimerError(
                f"purgatory {self.name!r}: cannot watch {operation!r} under no keys"
            )
        if len(watch_keys) > WATCH_KEYS_MAX:
            raise TimerError(
                f"purgatory {self.name!r}: {operation!r} has {len(watch_keys)} watch keys, "
                f"more than {WATCH_KEYS_MAX}"
            )
        if operation.safe_try_complete():
            if self._listeners:
                self._emit_completed(operation, None)
            return True
        for key in watch_keys:
            if operation.is_completed:
                # Completed re-entrantly by an earlier watch; the other keys need not know.
                break
            self._watchers.setdefault(key, []).append(operation)
        self.estimated_total += 1
        operation._purgatory = self
        if self._listeners:
            self._emit(
                OperationWatched(
                    self.name, id(operation), operation.name, tuple(watch_keys),
                    operation.delay_ms,
                )
            )
        # Second check: an event between the first check and the watch would otherwise be
        # missed forever (Kafka's safeTryCompleteOrElse).
        if operation.safe_try_complete():
            if self._listeners:
                self._emit_completed(operation, None)
            return True
        if not operation.is_completed:
            self.timer.add(operation)
        return False

    def check_and_complete(self, key: Hashable) -> int:
        """An event happened on ``key``: try to complete the operations watching it.

        Returns how many this call completed. Completed operations leave the watch list.
        """
        operations = self._watchers.get(key)
        if operations is None:
            return 0
        completed = 0
        # Iterate over a snapshot: on_complete may watch new operations under this same key.
        for operation in tuple(operations):
            if not operation.is_completed and operation.safe_try_complete():
                completed += 1
                if self._listeners:
                    self._emit_completed(operation, key)
        self._drop_completed(key)
        return completed

    def advance_clock(self, now_ms: int | None = None) -> int:
        """Expire operations due by ``now_ms``; purge the watch lists if they hold too many
        completed operations. Returns the buckets the timer flushed."""
        flushed = self.timer.advance_clock(now_ms)
        # num_delayed() sums the timer's buckets; skip it while the total cannot exceed the bound.
        if self.estimated_total > self.purge_interval and \
                self.estimated_total - self.num_delayed() > self.purge_interval:
            self.purge_completed()
        return flushed

    # -- housekeeping ------------------------------------------------------------------------

    def purge_completed(self) -> int:
        """Drop completed operations from every watch list; returns how many were dropped."""
        estimated_total, num_delayed = self.estimated_total, self.num_delayed()
        self.estimated_total = num_delayed
        purged = 0
        for key in list(self._watchers):
            purged += self._drop_completed(key)
        self.purge_count += 1
        if self._listeners:
            self._emit(OperationsPurged(self.name, purged, estimated_total, num_delayed))
        return purged

    def cancel_for_key(self, key: Hashable) -> list[Op]:
        """Stop watching ``key`` and cancel its pending operations *without* completing them
        (Kafka's ``cancelForKey``, used when a partition is deleted or moves away)."""
        operations = self._watchers.pop(key, [])
        for operation in operations:
            operation.cancel()
        return operations

    def _drop_completed(self, key: Hashable) -> int:
        operations = self._watchers.get(key)
        if operations is None:
            return 0
        remaining = [op for op in operations if not op.is_completed]
        dropped = len(operations) - len(remaining)
        if remaining:
            operations[:] = remaining
        else:
            del self._watchers[key]
        return dropped

    # -- trace events ------------------------------------------------------------------------

    def add_listener(self, listener: PurgatoryListener) -> Callable[[], None]:
        """Call ``listener(event)`` for every trace event; returns a function that unsubscribes."""
        if not callable(listener):
            raise TimerError(
                f"purgatory {self.name!r}: cannot add listener {listener!r}: it is not callable"
            )
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def _emit(self, event: PurgatoryEvent) -> None:
        for listener in self._listeners:
            listener(event)

    def _emit_completed(self, operation: Op, key: Hashable | None) -> None:
        self._emit(OperationCompleted(self.name, id(operation), operation.name, key))

    def _emit_expired(self, operation: DelayedOperation) -> None:
        """Called by ``DelayedOperation.run`` when the timeout completed a watched operation."""
        now_ms = self.timer.current_time_ms
        self._emit(
            OperationExpired(
                self.name, id(operation), operation.name, operation.expiration_ms, now_ms
            )
        )

    # -- inspection --------------------------------------------------------------------------

    def watched(self) -> int:
        """Entries across all watch lists (Kafka's ``PurgatorySize``). An operation watched under
        three keys counts three times, and completed ones count until purged."""
        return sum(len(ops) for ops in self._watchers.values())

    def num_delayed(self) -> int:
        """Operations waiting in the timer (Kafka's ``NumDelayedOperations``)."""
        return self.timer.size

    def watch_keys(self) -> list[Hashable]:
        """Keys that currently have a watch list."""
        return list(self._watchers)

    def __repr__(self) -> str:
        return (
            f"DelayedOperationPurgatory(name={self.name!r}, watched={self.watched()}, "
            f"delayed={self.num_delayed()}, estimated_total={self.estimated_total})"
        )
