"""Checks for the "change the engine" exercises that edit kafkalab's own code.

Some exercises ask the learner to edit the engine itself (a comparison in
``storage/segment.py``, the sign-bit rule in ``partitioner.py``, ...) and watch what changes.
Each has a check here that **fails on the unchanged engine and passes once the edit is made**.
The learner runs it from the exercise's cell (or ``python -m kafkalab.classroom check NAME``),
after restarting the kernel so the edited module is imported again.

Every check names the edit in :data:`ENGINE_CHANGES` as the exact text to find and its
replacement, so the tests (``tests/classroom/test_engine_changes.py``) can make the edit on a
copy of the package and prove both halves: the check fails before, and passes after. Example::

    >>> ENGINE_CHANGES["sign-bit-abs"].path
    'partitioner.py'

A check builds what it needs in a scratch directory and imports the engine only when it runs,
so it sees the edited code.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


class EngineUnchanged(AssertionError):
    """The engine still behaves as Kafka does: the exercise's edit has not been made."""


@dataclass(frozen=True, slots=True)
class EngineChange:
    """One exercise's edit (``old`` becomes ``new`` in ``kafkalab/<path>``) and its check."""

    path: str
    old: str
    new: str
    check: Callable[[], str]


def check(name: str) -> str:
    """Run the named exercise's check: a sentence on success, :class:`EngineUnchanged` if not."""
    return ENGINE_CHANGES[name].check()


def _check_index_interval_rule() -> str:
    from kafkalab.clock import ManualClock
    from kafkalab.records.model import Record
    from kafkalab.records.v2 import build_v2_batch
    from kafkalab.storage.log import Log
    from kafkalab.storage.log_config import LogConfig

    batch_bytes = len(build_v2_batch([Record(0, 0, None, b"x" * 100)]))
    interval = 2 * batch_bytes  # an exact multiple of the batch size: where > and >= differ
    with tempfile.TemporaryDirectory() as directory:
        clock = ManualClock(0)
        log = Log.open(Path(directory) / "t-0", LogConfig(index_interval_bytes=interval), clock)
        for _ in range(12):
            log.append_as_leader(build_v2_batch([Record(0, 0, None, b"x" * 100)]), leader_epoch=0)
        entries = log.active_segment.offset_index.entries
        log.close()
    kafka_entries = 3  # an entry before batches 3, 6 and 9: more than 2 batches' bytes since the last
    if entries == kafka_entries:
        raise EngineUnchanged(
            f"12 batches of {batch_bytes} bytes with index.interval.bytes={interval} got "
            f"{entries} index entries, as Kafka's strict `>` rule says: the comparison in "
            "LogSegment.append is unchanged (restart the kernel after editing segment.py)")
    return f"with `>=`, the segment got {entries} index entries where Kafka writes {kafka_entries}"


def _check_sign_bit_abs() -> str:
    from kafkalab import partitioner

    foobar_hash = -790332482  # murmur2(b"foobar"), Kafka's test vector
    kafka_partition = (foobar_hash & 0x7FFFFFFF) % 1000
    placed = partitioner.partition_for_key(b"foobar", 1000)
    if placed == kafka_partition:
        raise EngineUnchanged(
            f"`foobar` (negative hash) still goes to partition {placed} of 1000, as Kafka's "
            "sign-bit mask puts it: to_positive is unchanged (restart the kernel after editing)")
    return f"`foobar` now goes to partition {placed} of 1000; Kafka puts it in {kafka_partition}"


def _check_wheel_rule() -> str:
    from kafkalab.timer.task_list import TimerTask
    from kafkalab.timer.wheel import TimingWheel

    task = TimerTask(0)
    task.expiration_ms = 1  # exactly one tick after the wheel's time
    bucket = TimingWheel(1, 20, 0, [], []).add(task)
    if bucket is not None:
        raise EngineUnchanged(
            "a task due one tick from now still goes into a bucket: rule 1 of TimingWheel.add "
            "is unchanged (restart the kernel after editing wheel.py)")
    return "a task due one tick from now is reported due at once: it would run a tick early"


def _check_retention_boundary() -> str:
    from kafkalab.clock import ManualClock
    from kafkalab.records.model import Record
    from kafkalab.records.v2 import build_v2_batch
    from kafkalab.storage.log import Log
    from kafkalab.storage.log_config import LogConfig
    from kafkalab.storage.retention import delete_old_segments

    retention_ms = 60_000
    with tempfile.TemporaryDirectory() as directory:
        clock = ManualClock(0)
        log = Log.open(Path(directory) / "t-0", LogConfig(retention_ms=retention_ms), clock)
        log.append_as_leader(build_v2_batch([Record(0, 1_000, None, b"old")]), leader_epoch=0)
        log.roll("manual")
        log.append_as_leader(build_v2_batch([Record(0, 90_000, None, b"new")]), leader_epoch=0)
        delete_old_segments(log, 1_000 + retention_ms)  # the first segment is exactly retention.ms old
        bases = [s.base_offset for s in log.segments]
        log.close()
    if bases[0] == 0:
        raise EngineUnchanged(
            "a segment whose newest record is exactly retention.ms old is still kept, as Kafka's "
            "strict `>` keeps it: the time rule in retention.py is unchanged")
    return "a segment exactly retention.ms old is now deleted: the boundary moved by 1 ms"


ENGINE_CHANGES: dict[str, EngineChange] = {
    "index-interval-ge": EngineChange(
        "storage/segment.py",
        "if self._bytes_since_last_index_entry > self.index_interval_bytes:",
        "if self._bytes_since_last_index_entry >= self.index_interval_bytes:",
        _check_index_interval_rule),
    "sign-bit-abs": EngineChange(
        "partitioner.py", "    return value & POSITIVE_MASK\n", "    return abs(value)\n",
        _check_sign_bit_abs),
    "retention-time-ge": EngineChange(
        "storage/retention.py",
        "return now_ms - largest_timestamp_ms(segment) > retention_ms",
        "return now_ms - largest_timestamp_ms(segment) >= retention_ms",
        _check_retention_boundary),
    "wheel-rule-le": EngineChange(
        "timer/wheel.py",
        "            if expiration_ms < current_ms + tick_ms:\n",
        "            if expiration_ms <= current_ms + tick_ms:\n",
        _check_wheel_rule),
}
