"""Delayed operations: requests that wait for something to happen, or for their timeout.

Mirrors Kafka's ``DelayedOperation`` (``org.apache.kafka.server.purgatory``). Some requests cannot
be answered at once:

* a produce with ``acks=all`` waits until the followers have copied the batch (the high
  watermark passes it) -- Kafka's ``DelayedProduce``, bounded by the request's ``timeout.ms``;
* a fetch waits until ``fetch.min.bytes`` have accumulated -- ``DelayedFetch``, bounded by
  ``fetch.max.wait.ms``.

(A segment's ``file.delete.delay.ms`` wait is no delayed operation: nothing but time ends it, so
the log hands it to the scheduler as a one-shot task, as Kafka's log manager does.)

Each is a timer task with three hooks a subclass fills in:

* ``try_complete()`` -- check the condition; if it holds, call ``force_complete()`` and return
  its result; otherwise return False;
* ``on_complete()`` -- the work of completing (send the response); runs **exactly once**;
* ``on_expiration()`` -- extra work when completion came from the timeout (metrics, logging).

There are two roads to completion and the operation must not be completed twice when they
cross (an event arrives just as the timeout fires)::

    external event -> purgatory.check_and_complete(key) -> try_complete() -> force_complete()
    timeout        -> timer runs the task -> run()      ---------------->  force_complete()
                                                                              |
                                        first caller wins: completed = True, cancel the timer
                                        task, on_complete(); every later call returns False

Kafka guards the flag with a lock because both roads run on different threads. kafkalab's core
is single-threaded, so the guard is a plain flag -- but it is still a guard: ``on_complete`` may
itself trigger events that reach ``force_complete`` again, and the flag is set *before*
``on_complete`` runs so such re-entry finds the operation already completed.

Worked example: a fetch with ``fetch.max.wait.ms=500`` enters the purgatory at 1,000 ms. A
produce at 1,120 ms appends enough bytes, the broker calls ``check_and_complete(partition)``,
``try_complete`` sees the bytes and completes it at 1,120 ms; the timer task is cancelled and
nothing happens at 1,500 ms. Without that produce, the timer runs it at 1,500 ms: ``on_complete``
answers with whatever data there is, then ``on_expiration`` counts an expired fetch.

Extension point (how ``DelayedFetch`` and ``DelayedProduce`` plug in)::

    class DelayedMinBytes(DelayedOperation):
        __slots__ = ("log", "min_bytes", "responses")

        def try_complete(self) -> bool:
            if self.log.size_bytes >= self.min_bytes:
                return self.force_complete()
            return False

        def on_complete(self) -> None:
            self.responses.append(self.log.read())

        def on_expiration(self) -> None:
            pass

Not thread-safe; owned by one purgatory (or timer).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkalab.timer.task_list import TimerTask

if TYPE_CHECKING:
    from kafkalab.purgatory.purgatory import DelayedOperationPurgatory


class DelayedOperation(TimerTask):
    """A timer task that completes early on an event or, at the latest, when its delay runs out.

    Subclasses implement ``try_complete``, ``on_complete`` and ``on_expiration``, and declare
    ``__slots__`` for their own fields. Not thread-safe; owned by one purgatory.
    """

    __slots__ = ("_completed", "_purgatory")

    def __init__(self, delay_ms: int, name: str = "") -> None:
        super().__init__(delay_ms, name)
        self._completed = False
        # The purgatory that watches this operation (set by try_complete_else_watch), so the
        # timer's road can report the expiry to that purgatory's trace listeners.
        self._purgatory: DelayedOperationPurgatory[Any] | None = None

    @property
    def is_completed(self) -> bool:
        return self._completed

    def force_complete(self) -> bool:
        """Complete now if nobody has yet; True only for the call that completed it."""
        if self._completed:
            return False
        # The flag goes up before on_complete runs, so re-entrant calls see it.
        self._completed = True
        self.cancel()
        self.on_complete()
        return True

    def safe_try_complete(self) -> bool:
        """``try_complete`` unless already completed (Kafka's ``safeTryComplete``, lock-free)."""
        if self._completed:
            return False
        return self.try_complete()

    def run(self) -> None:
        """The timer's road: the delay ran out before any event completed the operation."""
        if self.force_complete():
            self.on_expiration()
            purgatory = self._purgatory
            if purgatory is not None and purgatory._listeners:
                purgatory._emit_expired(self)

    def try_complete(self) -> bool:
        """Check the condition; if it holds return ``self.force_complete()``, else False."""
        raise NotImplementedError(f"{type(self).__name__} must override try_complete()")

    def on_complete(self) -> None:
        """The completion work (e.g. send the response). Called exactly once."""
        raise NotImplementedError(f"{type(self).__name__} must override on_complete()")

    def on_expiration(self) -> None:
        """Extra work when the timeout, not an event, completed the operation."""
        raise NotImplementedError(f"{type(self).__name__} must override on_expiration()")
