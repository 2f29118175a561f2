"""The book's teaching operations behave as their docstrings say."""

from __future__ import annotations

from kafkalab.clock import ManualClock
from kafkalab.purgatory import DelayedOperationPurgatory
from kafkalab.purgatory.examples import DelayedAcksProduce, DelayedMinBytesFetch


def test_fetch_completes_when_min_bytes_arrive() -> None:
    clock = ManualClock(0)
    purgatory: DelayedOperationPurgatory[DelayedMinBytesFetch] = DelayedOperationPurgatory("fetch", clock)
    appended = {"t-0": 0}
    fetch = DelayedMinBytesFetch(500, 100, ("t-0",), appended, clock)
    assert not purgatory.try_complete_else_watch(fetch, fetch.partitions)
    for at_ms, nbytes in ((40, 60), (90, 50)):
        clock.set_ms(at_ms)
        purgatory.advance_clock(at_ms)
        appended["t-0"] += nbytes
        purgatory.check_and_complete("t-0")
    clock.set_ms(1_000)
    purgatory.advance_clock(1_000)
    assert fetch.outcome == [("complete", 90)]


def test_fetch_expires_with_too_few_bytes() -> None:
    clock = ManualClock(0)
    purgatory: DelayedOperationPurgatory[DelayedMinBytesFetch] = DelayedOperationPurgatory("fetch", clock)
    fetch = DelayedMinBytesFetch(500, 100, ("t-0", "t-1"), {"t-0": 30, "t-1": 30}, clock)
    purgatory.try_complete_else_watch(fetch, fetch.partitions)
    clock.set_ms(500)
    purgatory.advance_clock(500)
    assert fetch.outcome == [("complete", 500), ("expired", 500)]


def test_produce_waits_for_every_partition_high_watermark() -> None:
    clock = ManualClock(0)
    purgatory: DelayedOperationPurgatory[DelayedAcksProduce] = DelayedOperationPurgatory("produce", clock)
    hw = {"t-0": 10, "t-1": 4}
    produce = DelayedAcksProduce(30_000, {"t-0": 12, "t-1": 5}, hw, clock)
    purgatory.try_complete_else_watch(produce, ["t-0", "t-1"])
    hw["t-0"] = 12
    assert purgatory.check_and_complete("t-0") == 0
    clock.set_ms(7)
    hw["t-1"] = 5
    assert purgatory.check_and_complete("t-1") == 1
    assert produce.outcome == [("complete", 7)]
