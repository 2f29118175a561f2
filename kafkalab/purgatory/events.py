"""Trace events the purgatory emits, for the book and for curious learners.

The same zero-cost-when-unobserved mechanism as the timer's (``kafkalab.timer.events``): every
emitting site first tests the purgatory's listener list, so a broker with no listeners builds no
event and calls nothing. Register with ``DelayedOperationPurgatory.add_listener``.

Every operation handed to ``try_complete_else_watch`` produces exactly one opening event and at
most one ending event:

* ``OperationCompleted(key=None)`` -- it completed inside ``try_complete_else_watch`` (on arrival,
  or at the second check right after it was watched); or
* ``OperationWatched`` -- it waits on its keys and in the timer; later, either
  ``OperationCompleted(key=k)`` when ``check_and_complete(k)`` completed it, or
  ``OperationExpired`` when the timer ran it at its timeout. (``cancel_for_key``, or a
  ``force_complete`` called from outside the purgatory, ends it without an event.)

``OperationsPurged`` reports a sweep of the watch lists. Worked example (the chapter's two
fetches, ``fetch.max.wait.ms`` = 500, ``fetch.min.bytes`` = 100)::

    try_complete_else_watch(busy, ["t-0"])   -> OperationWatched("fetch t-0", keys ("t-0",))
    try_complete_else_watch(quiet, ["t-1"])  -> OperationWatched("fetch t-1", keys ("t-1",))
    check_and_complete("t-0") at 40 ms       -> (60 bytes < 100: nothing)
    check_and_complete("t-0") at 90 ms       -> OperationCompleted("fetch t-0", key "t-0")
    advance_clock(500)                       -> OperationExpired("fetch t-1", now_ms 500)

``operation_key`` is the operation's ``id()``, the same number the timer's events carry as
``task_key``, so the two traces can be joined.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class OperationWatched:
    """The operation could not complete yet: it now waits on every key and in the timer."""

    purgatory: str
    operation_key: int
    name: str
    watch_keys: tuple[Hashable, ...]
    delay_ms: int


@dataclass(frozen=True, slots=True)
class OperationCompleted:
    """``try_complete`` succeeded: after an event on ``key``, or on arrival if ``key`` is None."""

    purgatory: str
    operation_key: int
    name: str
    key: Hashable | None


@dataclass(frozen=True, slots=True)
class OperationExpired:
    """The timer ran the operation at ``now_ms`` (the timer's time): its timeout completed it."""

    purgatory: str
    operation_key: int
    name: str
    expiration_ms: int
    now_ms: int


@dataclass(frozen=True, slots=True)
class OperationsPurged:
    """A sweep dropped ``purged_count`` completed entries from the watch lists.

    ``estimated_total`` and ``num_delayed`` are the counts that triggered it (see the
    purgatory's docstring): operations watched since the last purge, and those still pending.
    """

    purgatory: str
    purged_count: int
    estimated_total: int
    num_delayed: int


PurgatoryEvent = OperationWatched | OperationCompleted | OperationExpired | OperationsPurged
PurgatoryListener = Callable[[PurgatoryEvent], None]
