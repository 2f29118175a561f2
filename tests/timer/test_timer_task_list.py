"""TimerTaskList: O(1) add and cancel on a ring with a sentinel; flush hands over everything."""

from __future__ import annotations

import pytest

from kafkalab.errors import KafkaError, TimerError
from kafkalab.timer.events import TaskCancelled
from kafkalab.timer.task_list import DELAY_MS_MAX, TimerTask, TimerTaskList


class Named(TimerTask):
    __slots__ = ()

    def run(self) -> None:
        pass


def make(names: list[str], listeners: list | None = None) -> tuple[TimerTaskList, list[Named]]:
    bucket = TimerTaskList(level=0, index=3, listeners=[] if listeners is None else listeners)
    tasks = [Named(10, name) for name in names]
    for task in tasks:
        bucket.add(task)
    return bucket, tasks


def test_add_keeps_insertion_order_and_count() -> None:
    bucket, tasks = make(["a", "b", "c"])
    assert [t.name for t in bucket.tasks()] == ["a", "b", "c"]
    assert len(bucket) == 3
    assert all(t.pending for t in tasks)


@pytest.mark.parametrize("victim", [0, 1, 2])
def test_cancel_unlinks_head_middle_or_tail(victim: int) -> None:
    bucket, tasks = make(["a", "b", "c"])
    assert tasks[victim].cancel() is True
    expected = [t.name for i, t in enumerate(tasks) if i != victim]
    assert [t.name for t in bucket.tasks()] == expected
    assert len(bucket) == 2
    assert not tasks[victim].pending and tasks[victim].cancelled


def test_cancel_twice_and_cancel_unscheduled_are_harmless() -> None:
    bucket, tasks = make(["a"])
    assert tasks[0].cancel() is True
    assert tasks[0].cancel() is False
    assert Named(5).cancel() is False
    assert len(bucket) == 0 and bucket.tasks() == []


def test_flush_detaches_all_and_resets_expiration() -> None:
    bucket, tasks = make(["a", "b", "c"])
    bucket.expiration_ms = 200
    flushed = list(bucket.flush())
    assert flushed == tasks
    assert bucket.expiration_ms == -1 and len(bucket) == 0 and bucket.tasks() == []
    assert not any(t.pending for t in tasks)
    # The ring is reusable after a flush.
    bucket.add(tasks[1])
    assert bucket.tasks() == [tasks[1]]


def test_cancel_after_flush_does_not_touch_the_bucket() -> None:
    bucket, tasks = make(["a", "b"])
    list(bucket.flush())
    tasks[0].cancel()
    assert len(bucket) == 0


def test_flush_skips_a_task_cancelled_mid_flush() -> None:
    # A task that runs early in a flush may cancel one later in the same bucket: it is still
    # linked, so cancel unlinks it and the flush never hands it over.
    bucket, tasks = make(["a", "b", "c"])
    handed: list[str] = []
    for task in bucket.flush():
        handed.append(task.name)
        if task.name == "a":
            assert tasks[2].cancel() is True
    assert handed == ["a", "b"]
    assert bucket.expiration_ms == -1 and len(bucket) == 0


def test_flush_stopped_early_keeps_the_rest_linked() -> None:
    bucket, tasks = make(["a", "b", "c"])
    bucket.expiration_ms = 200
    flush = bucket.flush()
    assert next(flush) is tasks[0]
    del flush  # the consumer gave up (a task raised)
    assert bucket.tasks() == tasks[1:] and bucket.expiration_ms == 200


def test_cancel_emits_event_only_when_listened() -> None:
    events: list = []
    bucket, tasks = make(["a", "b"], listeners=[events.append])
    tasks[1].expiration_ms = 17
    tasks[1].cancel()
    assert events == [TaskCancelled(id(tasks[1]), "b", 17, 0, 3)]


@pytest.mark.parametrize("delay_ms", [-1, DELAY_MS_MAX + 1, 1.5, "10", None])
def test_delay_out_of_bounds_is_a_typed_error(delay_ms: object) -> None:
    with pytest.raises(TimerError, match=r"delay .* ms is not a whole number of milliseconds in \[0, ") as info:
        Named(delay_ms, "bad")  # type: ignore[arg-type]
    assert isinstance(info.value, KafkaError)


def test_base_task_run_must_be_overridden() -> None:
    with pytest.raises(NotImplementedError):
        TimerTask(1).run()


def test_flush_single_detaches_the_only_task() -> None:
    bucket, tasks = make(["only"])
    bucket.expiration_ms = 40
    assert bucket.flush_single() is tasks[0]
    assert bucket.expiration_ms == -1 and len(bucket) == 0 and bucket.tasks() == []
    assert not tasks[0].pending
    bucket.add(tasks[0])
    assert bucket.tasks() == [tasks[0]]
