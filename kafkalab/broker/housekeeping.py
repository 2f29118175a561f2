"""The broker's periodic work, run by its timing wheel: retention, the flusher, checkpoints.

Theory of operation
-------------------
Kafka's ``LogManager.startup`` hands a few recurring jobs to the broker's scheduler, and
``ReplicaManager`` adds one more. kafkalab schedules the same jobs, under Kafka's task names,
on the broker's one :class:`~kafkalab.timer.Timer` (through a
:class:`~kafkalab.timer.Scheduler`), next to the delayed fetches and the ``file.delete.delay.ms``
deletions::

    task                                 every (broker key, Kafka's default)
    kafka-log-retention                  log.retention.check.interval.ms           300 000 ms
    kafka-log-flusher                    log.flush.scheduler.interval.ms           never
    kafka-recovery-point-checkpoint      log.flush.offset.checkpoint.interval.ms    60 000 ms
    kafka-log-start-offset-checkpoint    log.flush.start.offset.checkpoint.interval.ms 60 000 ms
    highwatermark-checkpoint             replica.high.watermark.checkpoint.interval.ms  5 000 ms
    PeriodicProducerExpirationCheck      producer.id.expiration.check.interval.ms  600 000 ms

Each task runs first after ``min(30 000 ms, its interval)`` -- Kafka waits 30 s
(``InitialTaskDelayMs``) before the first run; kafkalab starts sooner when the interval is
shorter, so a learner who sets a 1 s retention check sees it work within a second -- and then
reschedules itself one interval after each run. An interval of 0 (allowed for the two
checkpoints) or beyond the timer's range (the flusher's "never") schedules nothing; the
checkpoints are still written at shutdown.

The producer expiration check forgets, in every log, the idempotent producers whose last batch
is older than ``producer.id.expiration.ms`` (one day) and that have no open transaction (Kafka
schedules it per log; one broker-wide task over the same logs does the same work).

The flusher applies each topic's ``flush.ms`` (``Log.maybe_flush_by_time``). As in Kafka it
runs only as often as ``log.flush.scheduler.interval.ms``, which is also the last synonym of
``flush.ms``: setting it alone gives every topic that flush interval.

Worked example: ``log.retention.check.interval.ms=1000`` and a topic whose ``retention.ms`` an
IncrementalAlterConfigs lowered to 1 000 ms at t=0. The retention task runs at t=1 000 ms,
finds the old segment's newest record older than 1 000 ms, renames its files ``.deleted`` and
schedules their removal ``file.delete.delay.ms`` later on the same timer.

A task whose work fails with a storage or OS error records the error and stays scheduled (Kafka's
scheduler logs and carries on), so one bad disk write does not stop retention for good; a typed
error also goes to ``on_error``, through which the broker takes a failed log directory offline.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from kafkalab.config import ConfigLayers
from kafkalab.config.definitions import broker_default
from kafkalab.config.resolve import broker_value
from kafkalab.errors import KafkaError
from kafkalab.storage.log import Log, Scheduler
from kafkalab.storage.retention import delete_old_segments
from kafkalab.timer.task_list import DELAY_MS_MAX

# Each interval's broker key; the defaults are Kafka's, from kafkalab.config.definitions.
_KEYS = {
    "retention_check_ms": "log.retention.check.interval.ms",
    "flush_check_ms": "log.flush.scheduler.interval.ms",
    "recovery_point_checkpoint_ms": "log.flush.offset.checkpoint.interval.ms",
    "log_start_offset_checkpoint_ms": "log.flush.start.offset.checkpoint.interval.ms",
    "high_watermark_checkpoint_ms": "replica.high.watermark.checkpoint.interval.ms",
    "producer_id_expiration_check_ms": "producer.id.expiration.check.interval.ms",
}
INITIAL_TASK_DELAY_MS = 30_000  # Kafka's LogManager.InitialTaskDelayMs before a task's first run
ERRORS_KEPT = 10  # the last few task failures, for the server to log and tests to inspect


@dataclass(frozen=True, slots=True)
class HousekeepingIntervals:
    """How often each periodic task runs, in ms. Immutable; read once at start-up (the keys are
    read-only broker configs, as in Kafka)."""

    retention_check_ms: int = broker_default(_KEYS["retention_check_ms"])
    flush_check_ms: int = broker_default(_KEYS["flush_check_ms"])
    recovery_point_checkpoint_ms: int = broker_default(_KEYS["recovery_point_checkpoint_ms"])
    log_start_offset_checkpoint_ms: int = broker_default(_KEYS["log_start_offset_checkpoint_ms"])
    high_watermark_checkpoint_ms: int = broker_default(_KEYS["high_watermark_checkpoint_ms"])
    producer_id_expiration_check_ms: int = broker_default(_KEYS["producer_id_expiration_check_ms"])

    @classmethod
    def from_layers(cls, layers: ConfigLayers, broker_id: str) -> HousekeepingIntervals:
        def value(key: str) -> int:
            parsed = broker_value(layers, broker_id, key)
            assert isinstance(parsed, int), (key, parsed)  # definitions.py gives every key a default
            return parsed

        return cls(**{field: value(key) for field, key in _KEYS.items()})


def dynamic_broker_int(layers: Callable[[], ConfigLayers], broker_id: str, key: str) -> Callable[[], int]:
    """A reader of a dynamic broker key's current value, for a task that must see alterations."""
    def read() -> int:
        parsed = broker_value(layers(), broker_id, key)
        assert isinstance(parsed, int), (key, parsed)  # definitions.py gives every key a default
        return parsed
    return read


class PeriodicTask:
    """Runs ``work()`` every ``interval_ms`` on a scheduler until stopped.

    Not thread-safe; owned by the broker's housekeeping, on the broker's timer.
    """

    def __init__(self, scheduler: Scheduler, name: str, interval_ms: int, work: Callable[[], object],
                 errors: list[str], on_error: Callable[[KafkaError], None] | None = None) -> None:
        self.name = name
        self._on_error = on_error
        self.interval_ms = interval_ms
        self.runs = 0
        self._scheduler = scheduler
        self._work = work
        self._errors = errors
        self._stopped = False
        self._scheduler.schedule(min(INITIAL_TASK_DELAY_MS, interval_ms), self._run, name=name)

    def _run(self) -> None:
        if self._stopped:
            return
        # Reschedule first: the next run is due one interval from now even if this one fails.
        self._scheduler.schedule(self.interval_ms, self._run, name=self.name)
        self.runs += 1
        try:
            self._work()
        except (KafkaError, OSError) as error:
            self._errors[:] = [*self._errors[-(ERRORS_KEPT - 1):], f"{self.name}: {error}"]
            if isinstance(error, KafkaError) and self._on_error is not None:
                self._on_error(error)  # a failed log directory goes offline

    def stop(self) -> None:
        self._stopped = True


class HousekeepingStore(Protocol):
    """What the tasks need from the log store (``StorageLogStore`` provides it)."""

    def live_logs(self) -> Iterable[Log]: ...

    def flush_dirty_logs(self) -> None: ...

    def checkpoint_recovery_points(self) -> None: ...

    def checkpoint_log_start_offsets(self) -> None: ...

    def checkpoint_high_watermarks(self) -> None: ...


class Housekeeping:
    """The broker's periodic tasks. Not thread-safe; owned by the broker."""

    def __init__(self, scheduler: Scheduler, store: HousekeepingStore, intervals: HousekeepingIntervals,
                 now_ms: Callable[[], int], producer_id_expiration_ms: Callable[[], int] = lambda: 86_400_000,
                 on_error: Callable[[KafkaError], None] | None = None) -> None:
        self.errors: list[str] = []
        self.retention_deleted_segments = 0
        self._now_ms = now_ms
        self._store = store
        # Read at every run: producer.id.expiration.ms is a dynamic, cluster-wide config.
        self._producer_id_expiration_ms = producer_id_expiration_ms
        self.expired_producers = 0
        wanted: Mapping[str, tuple[int, Callable[[], object]]] = {
            "kafka-log-retention": (intervals.retention_check_ms, self._retention),
            "kafka-log-flusher": (intervals.flush_check_ms, store.flush_dirty_logs),
            "kafka-recovery-point-checkpoint": (intervals.recovery_point_checkpoint_ms,
                                                store.checkpoint_recovery_points),
            "kafka-log-start-offset-checkpoint": (intervals.log_start_offset_checkpoint_ms,
                                                  store.checkpoint_log_start_offsets),
            "highwatermark-checkpoint": (intervals.high_watermark_checkpoint_ms, store.checkpoint_high_watermarks),
            "PeriodicProducerExpirationCheck": (intervals.producer_id_expiration_check_ms, self._expire_producers),
        }
        self.tasks = {
            name: PeriodicTask(scheduler, name, interval_ms, work, self.errors, on_error)
            for name, (interval_ms, work) in wanted.items()
            if 1 <= interval_ms <= DELAY_MS_MAX
        }

    def _retention(self) -> None:
        """One pass of Kafka's three retention rules over every live log (storage/retention.py)."""
        now_ms = self._now_ms()  # wall-clock: retention.ms compares record timestamps
        for log in list(self._store.live_logs()):
            self.retention_deleted_segments += delete_old_segments(log, now_ms).total

    def _expire_producers(self) -> None:
        """Forget idle producers in every live log (``ProducerStateManager.removeExpiredProducers``)."""
        now_ms = self._now_ms()  # wall-clock: compared with the producers' batch timestamps
        expiration_ms = self._producer_id_expiration_ms()
        for log in list(self._store.live_logs()):
            self.expired_producers += log.producer_state.remove_expired_producers(now_ms, expiration_ms)

    def stop(self) -> None:
        for task in self.tasks.values():
            task.stop()
