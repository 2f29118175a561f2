"""The purgatory's trace events: one opening and at most one ending event per operation, built
only when somebody listens, and joinable with the timer's events by operation id."""

from __future__ import annotations

import pytest

from kafkalab.clock import ManualClock
from kafkalab.errors import KafkaError, TimerError
from kafkalab.purgatory import DelayedOperationPurgatory
from kafkalab.purgatory.events import (
    OperationCompleted,
    OperationExpired,
    OperationsPurged,
    OperationWatched,
    PurgatoryEvent,
)
from kafkalab.purgatory.examples import DelayedMinBytesFetch
from kafkalab.timer.events import TaskExpired, TimerEvent

Purgatory = DelayedOperationPurgatory[DelayedMinBytesFetch]


def traced(purge_interval: int = 1_000) -> tuple[ManualClock, Purgatory, list[PurgatoryEvent]]:
    clock = ManualClock(0)
    purgatory: Purgatory = DelayedOperationPurgatory("Fetch", clock, purge_interval=purge_interval)
    events: list[PurgatoryEvent] = []
    purgatory.add_listener(events.append)
    return clock, purgatory, events


def advance(clock: ManualClock, purgatory: Purgatory, now_ms: int) -> None:
    clock.set_ms(now_ms)
    purgatory.advance_clock(now_ms)


def test_the_two_fetches_watched_then_completed_by_an_event_or_expired() -> None:
    clock, purgatory, events = traced()
    appended = {"t-0": 0, "t-1": 0}
    busy = DelayedMinBytesFetch(500, 100, ("t-0",), appended, clock, name="fetch t-0")
    quiet = DelayedMinBytesFetch(500, 100, ("t-1",), appended, clock, name="fetch t-1")
    for fetch in (busy, quiet):
        purgatory.try_complete_else_watch(fetch, fetch.partitions)
    for now_ms, nbytes in ((40, 60), (90, 50)):
        advance(clock, purgatory, now_ms)
        appended["t-0"] += nbytes
        purgatory.check_and_complete("t-0")
    advance(clock, purgatory, 500)
    assert events == [
        OperationWatched("Fetch", id(busy), "fetch t-0", ("t-0",), 500),
        OperationWatched("Fetch", id(quiet), "fetch t-1", ("t-1",), 500),
        OperationCompleted("Fetch", id(busy), "fetch t-0", "t-0"),  # at 90 ms, not at 40
        OperationExpired("Fetch", id(quiet), "fetch t-1", 500, 500),
    ]
    # The events agree with what the operations themselves recorded.
    assert busy.outcome == [("complete", 90)]
    assert quiet.outcome == [("complete", 500), ("expired", 500)]


def test_completed_on_arrival_is_never_watched() -> None:
    clock, purgatory, events = traced()
    fetch = DelayedMinBytesFetch(500, 10, ("t-0",), {"t-0": 64}, clock)
    assert purgatory.try_complete_else_watch(fetch, ["t-0"]) is True
    assert events == [OperationCompleted("Fetch", id(fetch), "fetch", None)]


def test_completed_at_the_second_check_is_watched_then_completed() -> None:
    clock, purgatory, events = traced()
    appended = {"t-0": 0}

    class ArrivesWhileWatching(DelayedMinBytesFetch):
        __slots__ = ()

        def try_complete(self) -> bool:
            # The bytes land between the first check and the second (another thread in Kafka).
            completed = super().try_complete()
            appended["t-0"] = 100
            return completed

    fetch = ArrivesWhileWatching(500, 100, ("t-0",), appended, clock)
    assert purgatory.try_complete_else_watch(fetch, ["t-0", "t-1"]) is True
    assert events == [
        OperationWatched("Fetch", id(fetch), "fetch", ("t-0", "t-1"), 500),
        OperationCompleted("Fetch", id(fetch), "fetch", None),
    ]
    assert purgatory.num_delayed() == 0


def test_a_check_that_completes_nothing_emits_nothing() -> None:
    clock, purgatory, events = traced()
    fetch = DelayedMinBytesFetch(500, 100, ("t-0",), {"t-0": 0}, clock)
    purgatory.try_complete_else_watch(fetch, ["t-0"])
    del events[:]
    assert purgatory.check_and_complete("t-0") == 0
    assert purgatory.check_and_complete("unknown") == 0
    assert events == []


def test_purge_reports_what_it_dropped_and_why() -> None:
    clock, purgatory, events = traced(purge_interval=1_000)
    nothing: dict[str, int] = {}
    for _ in range(1_500):
        purgatory.try_complete_else_watch(
            DelayedMinBytesFetch(500, 1, ("quiet-0",), nothing, clock), ["quiet-0"]
        )
    advance(clock, purgatory, 500)
    expired = [e for e in events if isinstance(e, OperationExpired)]
    assert len(expired) == 1_500 and all(e.now_ms == 500 for e in expired)
    # 1,500 watched - 0 pending > 1,000: one sweep, reported last.
    assert events[-1] == OperationsPurged("Fetch", 1_500, 1_500, 0)
    assert sum(isinstance(e, OperationsPurged) for e in events) == 1


def test_cancel_for_key_ends_an_operation_silently() -> None:
    clock, purgatory, events = traced()
    fetch = DelayedMinBytesFetch(500, 100, ("t-0",), {"t-0": 0}, clock)
    purgatory.try_complete_else_watch(fetch, ["t-0"])
    purgatory.cancel_for_key("t-0")
    advance(clock, purgatory, 1_000)
    assert [type(e) for e in events] == [OperationWatched]


def test_operation_key_joins_the_timer_trace() -> None:
    clock, purgatory, events = traced()
    timer_events: list[TimerEvent] = []
    purgatory.timer.add_listener(timer_events.append)
    fetch = DelayedMinBytesFetch(300, 100, ("t-0",), {"t-0": 0}, clock)
    purgatory.try_complete_else_watch(fetch, ["t-0"])
    advance(clock, purgatory, 300)
    (timer_expired,) = [e for e in timer_events if isinstance(e, TaskExpired)]
    (expired,) = [e for e in events if isinstance(e, OperationExpired)]
    assert expired.operation_key == timer_expired.task_key == id(fetch)
    assert expired.expiration_ms == timer_expired.expiration_ms == 300


def test_no_events_are_built_when_nobody_listens(monkeypatch: pytest.MonkeyPatch) -> None:
    import kafkalab.purgatory.purgatory as purgatory_module

    def boom(*args: object) -> None:
        raise AssertionError("an event was built with no listener")

    for name in ("OperationWatched", "OperationCompleted", "OperationExpired", "OperationsPurged"):
        monkeypatch.setattr(purgatory_module, name, boom)
    clock = ManualClock(0)
    purgatory: Purgatory = DelayedOperationPurgatory("Fetch", clock, purge_interval=0)
    unsubscribe = purgatory.add_listener(lambda event: None)
    unsubscribe()  # listened once, then not: still nothing may be built
    appended = {"t-0": 0}
    early = DelayedMinBytesFetch(500, 1, ("t-0",), {"t-0": 5}, clock)
    waiting = DelayedMinBytesFetch(500, 10, ("t-0",), appended, clock)
    timing_out = DelayedMinBytesFetch(200, 10, ("t-1",), {}, clock)
    purgatory.try_complete_else_watch(early, ["t-0"])
    purgatory.try_complete_else_watch(waiting, ["t-0"])
    purgatory.try_complete_else_watch(timing_out, ["t-1"])
    appended["t-0"] = 10
    assert purgatory.check_and_complete("t-0") == 1
    advance(clock, purgatory, 200)  # expires one and purges
    assert timing_out.outcome == [("complete", 200), ("expired", 200)]
    assert purgatory.purge_count == 1


def test_listener_must_be_callable() -> None:
    purgatory: Purgatory = DelayedOperationPurgatory("Fetch", ManualClock(0))
    with pytest.raises(TimerError, match="not callable") as info:
        purgatory.add_listener("print")  # type: ignore[arg-type]
    assert isinstance(info.value, KafkaError)
