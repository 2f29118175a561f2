"""DelayedOperation and DelayedOperationPurgatory: events vs expiry, exactly once, watch keys,
purging -- with a DelayedFetch-like operation as the extension-point example."""

from __future__ import annotations

import pytest

from kafkalab.clock import ManualClock
from kafkalab.errors import TimerError
from kafkalab.purgatory import DelayedOperation, DelayedOperationPurgatory
from kafkalab.timer import Timer


class FakeLog:
    """Stands in for a partition's log: only its size matters here."""

    def __init__(self) -> None:
        self.size_bytes = 0


class DelayedMinBytes(DelayedOperation):
    """A fetch waiting for fetch.min.bytes (the extension point shown in the docstring)."""

    __slots__ = ("logs", "min_bytes", "outcome")

    def __init__(self, delay_ms: int, logs: list[FakeLog], min_bytes: int, name: str = "") -> None:
        super().__init__(delay_ms, name)
        self.logs = logs
        self.min_bytes = min_bytes
        self.outcome: list[str] = []

    def try_complete(self) -> bool:
        if sum(log.size_bytes for log in self.logs) >= self.min_bytes:
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        self.outcome.append("complete")

    def on_expiration(self) -> None:
        self.outcome.append("expired")


def make(purge_interval: int = 1_000) -> tuple[ManualClock, DelayedOperationPurgatory[DelayedMinBytes]]:
    clock = ManualClock(1_000)
    return clock, DelayedOperationPurgatory("fetch", clock, purge_interval=purge_interval)


def advance(clock: ManualClock, purgatory: DelayedOperationPurgatory, to_ms: int) -> None:
    clock.set_ms(to_ms)
    purgatory.advance_clock(to_ms)


def test_completion_by_external_event_before_timeout() -> None:
    clock, purgatory = make()
    log = FakeLog()
    fetch = DelayedMinBytes(500, [log], min_bytes=100)
    assert purgatory.try_complete_else_watch(fetch, ["t-0"]) is False
    assert purgatory.num_delayed() == 1 and purgatory.watched() == 1
    advance(clock, purgatory, 1_120)
    log.size_bytes = 150
    assert purgatory.check_and_complete("t-0") == 1
    assert fetch.outcome == ["complete"]
    assert purgatory.num_delayed() == 0 and purgatory.watched() == 0
    advance(clock, purgatory, 2_000)
    assert fetch.outcome == ["complete"]  # the timeout did not fire a second completion


def test_completion_by_expiry_runs_on_complete_then_on_expiration() -> None:
    clock, purgatory = make()
    fetch = DelayedMinBytes(500, [FakeLog()], min_bytes=100)
    purgatory.try_complete_else_watch(fetch, ["t-0"])
    advance(clock, purgatory, 1_499)
    assert fetch.outcome == []
    advance(clock, purgatory, 1_500)
    assert fetch.outcome == ["complete", "expired"]
    assert fetch.is_completed and purgatory.num_delayed() == 0
    # The expired operation lingers in the watch list until checked or purged.
    assert purgatory.watched() == 1
    assert purgatory.check_and_complete("t-0") == 0
    assert purgatory.watched() == 0


def test_already_satisfiable_operation_completes_without_watching() -> None:
    clock, purgatory = make()
    log = FakeLog()
    log.size_bytes = 10
    fetch = DelayedMinBytes(500, [log], min_bytes=1)
    assert purgatory.try_complete_else_watch(fetch, ["t-0"]) is True
    assert fetch.outcome == ["complete"]
    assert purgatory.watched() == 0 and purgatory.num_delayed() == 0


def test_event_between_first_check_and_watch_is_not_missed() -> None:
    class SecondTime(DelayedMinBytes):
        __slots__ = ("checks",)

        def try_complete(self) -> bool:
            self.checks = getattr(self, "checks", 0) + 1
            return self.force_complete() if self.checks >= 2 else False

    clock, purgatory = make()
    op = SecondTime(500, [], min_bytes=0)
    assert purgatory.try_complete_else_watch(op, ["a", "b"]) is True
    assert op.outcome == ["complete"]
    assert purgatory.num_delayed() == 0  # never reached the timer


def test_force_complete_exactly_once_across_roads_and_reentry() -> None:
    class Reentrant(DelayedMinBytes):
        __slots__ = ()

        def on_complete(self) -> None:
            self.outcome.append("complete")
            # Completing triggers something that tries to complete us again.
            assert self.force_complete() is False

    clock, purgatory = make()
    op = Reentrant(100, [FakeLog()], min_bytes=1)
    purgatory.try_complete_else_watch(op, ["k"])
    assert op.force_complete() is True
    assert op.force_complete() is False
    op.run()  # the timer's road, arriving late
    advance(clock, purgatory, 5_000)
    purgatory.check_and_complete("k")
    assert op.outcome == ["complete"]


def test_operation_watched_under_several_keys() -> None:
    clock, purgatory = make()
    logs = [FakeLog(), FakeLog()]
    produce = DelayedMinBytes(1_000, logs, min_bytes=2)
    purgatory.try_complete_else_watch(produce, ["t-0", "t-1"])
    assert sorted(purgatory.watch_keys()) == ["t-0", "t-1"]
    assert purgatory.watched() == 2
    logs[0].size_bytes = 1
    assert purgatory.check_and_complete("t-0") == 0  # not enough yet
    logs[1].size_bytes = 1
    assert purgatory.check_and_complete("t-1") == 1
    # Completed via t-1; t-0 still lists it until checked or purged.
    assert purgatory.watch_keys() == ["t-0"]
    assert purgatory.check_and_complete("t-0") == 0
    assert purgatory.watched() == 0


def test_check_on_unknown_key_is_zero() -> None:
    clock, purgatory = make()
    assert purgatory.check_and_complete("nobody") == 0


def test_purge_after_purge_interval_completed_operations() -> None:
    clock, purgatory = make(purge_interval=1_000)
    for i in range(1_500):
        purgatory.try_complete_else_watch(DelayedMinBytes(500, [FakeLog()], 1), ["t-0"])
    assert purgatory.watched() == 1_500 and purgatory.estimated_total == 1_500
    advance(clock, purgatory, 1_500)  # all expire; 1,500 - 0 > 1,000 -> purge
    assert purgatory.purge_count == 1
    assert purgatory.watched() == 0 and purgatory.estimated_total == 0


def test_no_purge_below_interval() -> None:
    clock, purgatory = make(purge_interval=1_000)
    for i in range(900):
        purgatory.try_complete_else_watch(DelayedMinBytes(500, [FakeLog()], 1), ["t-0"])
    advance(clock, purgatory, 1_500)
    assert purgatory.purge_count == 0 and purgatory.watched() == 900
    assert purgatory.purge_completed() == 900
    assert purgatory.watched() == 0


def test_purge_keeps_pending_operations() -> None:
    clock, purgatory = make(purge_interval=0)
    log = FakeLog()
    waiting = DelayedMinBytes(10_000, [log], 1_000)
    done = DelayedMinBytes(10_000, [FakeLog()], 1)
    purgatory.try_complete_else_watch(waiting, ["t-0"])
    purgatory.try_complete_else_watch(done, ["t-0", "t-1"])
    done.force_complete()
    advance(clock, purgatory, 1_001)
    assert purgatory.purge_count == 1
    assert purgatory.watched() == 1 and purgatory.watch_keys() == ["t-0"]
    log.size_bytes = 1_000
    assert purgatory.check_and_complete("t-0") == 1


def test_cancel_for_key_neither_completes_nor_expires() -> None:
    clock, purgatory = make()
    op = DelayedMinBytes(100, [FakeLog()], 1)
    purgatory.try_complete_else_watch(op, ["t-0"])
    assert purgatory.cancel_for_key("t-0") == [op]
    advance(clock, purgatory, 5_000)
    assert op.outcome == [] and not op.is_completed
    assert purgatory.num_delayed() == 0


def test_shared_timer_can_be_injected() -> None:
    clock = ManualClock(0)
    timer = Timer(clock)
    purgatory: DelayedOperationPurgatory[DelayedMinBytes] = DelayedOperationPurgatory(
        "produce", timer=timer
    )
    op = DelayedMinBytes(30, [FakeLog()], 1)
    purgatory.try_complete_else_watch(op, ["t-0"])
    timer.advance_clock(30)
    assert op.outcome == ["complete", "expired"]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({}, "exactly one of a clock or a timer"),
        ({"clock": ManualClock(0), "timer": Timer(ManualClock(0))}, "exactly one"),
        ({"clock": ManualClock(0), "purge_interval": -1}, "purge interval -1"),
    ],
)
def test_bad_construction_is_a_typed_error(kwargs: dict, message: str) -> None:
    with pytest.raises(TimerError, match=message):
        DelayedOperationPurgatory("p", **kwargs)


def test_empty_watch_keys_is_a_typed_error() -> None:
    clock, purgatory = make()
    with pytest.raises(TimerError, match="no keys"):
        purgatory.try_complete_else_watch(DelayedMinBytes(1, [], 1), [])


def test_base_operation_hooks_must_be_overridden() -> None:
    op = DelayedOperation(10)
    with pytest.raises(NotImplementedError):
        op.try_complete()
    with pytest.raises(NotImplementedError):
        op.force_complete()  # on_complete is abstract too
