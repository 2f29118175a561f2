"""The log manager: every partition's log under the broker's ``log.dirs`` (Kafka's ``LogManager``).

Each log directory holds one sub-directory per partition plus the broker-wide checkpoint
files, one line per partition in that directory::

    /data/kafka-logs/
      orders-0/  orders-1/  payments-0/
      recovery-point-offset-checkpoint   up to where each log is fsynced
      log-start-offset-checkpoint        logs whose start moved past their first segment
      replication-offset-checkpoint      each partition's high watermark
      .kafka_cleanshutdown               present only after a clean shutdown

Start-up reads the checkpoints (a corrupt one is ignored with Kafka's fallback: recover from
offset 0, log start from the first segment) and opens every partition directory; if
``.kafka_cleanshutdown`` was present no segment is re-validated, and the marker is removed so
that a crash from now on is noticed. :meth:`shutdown` flushes and closes every log, writes the
checkpoints and then the marker.

Example: ``LogManager([dir_a, dir_b], clock, LogConfig())`` followed by
``create_log("orders", 0)`` places ``orders-0`` in the directory holding fewer partitions.
"""

from __future__ import annotations

import random
import shutil
from collections.abc import Collection
from pathlib import Path

from kafkalab.clock import Clock
from kafkalab.errors import ErrorCode, LogDirFailureError, StorageError
from kafkalab.storage import checkpoints, partition_metadata
from kafkalab.storage.checkpoints import CorruptCheckpointError, TopicPartition
from kafkalab.storage.log import Log, Scheduler
from kafkalab.storage.log_files import parse_partition_dir
from kafkalab.storage.log_config import LogConfig
from kafkalab.storage.log_dir_failure import io_errors_offline

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
# KRaft's own log (KafkaRaftServer.MetadataTopic): the Raft layer owns it, not the log manager,
# which skips its directory as Kafka's LogManager.loadLogs does.
KRAFT_METADATA_TOPIC = "__cluster_metadata"
DELETE_DIR_SUFFIX = "-delete"


class LogManager:
    """All logs of one broker. Not thread-safe; owned by the broker's storage thread."""

    def __init__(
        self, log_dirs: list[Path], clock: Clock, default_config: LogConfig, *,
        scheduler: Scheduler | None = None, rng: random.Random | None = None,
        topic_configs: dict[str, LogConfig] | None = None,
    ) -> None:
        if not log_dirs:
            raise StorageError("log.dirs must name at least one directory")
        self.log_dirs = [Path(d) for d in log_dirs]
        self.clock = clock
        self.default_config = default_config
        self.scheduler = scheduler
        self.rng = rng or random.Random(0)
        self.topic_configs = dict(topic_configs or {})
        self._logs: dict[TopicPartition, Log] = {}
        self.warnings: list[str] = []
        for log_dir in self.log_dirs:
            log_dir.mkdir(parents=True, exist_ok=True)
            self._load_dir(log_dir)

    def config_for(self, topic: str) -> LogConfig:
        return self.topic_configs.get(topic, self.default_config)

    def _read_checkpoint(self, path: Path, fallback: str) -> dict[TopicPartition, int]:
        try:
            return checkpoints.read_offsets(path)
        except CorruptCheckpointError as exc:
            self.warnings.append(f"{exc}; {fallback}")
            return {}

    def _load_dir(self, log_dir: Path) -> None:
        marker = log_dir / CLEAN_SHUTDOWN_FILE
        clean = marker.exists()
        recovery_points = self._read_checkpoint(
            log_dir / checkpoints.RECOVERY_POINT_CHECKPOINT, "resetting recovery points to 0"
        )
        start_offsets = self._read_checkpoint(
            log_dir / checkpoints.LOG_START_OFFSET_CHECKPOINT, "using first segment base offsets"
        )
        high_watermarks = self._read_checkpoint(
            log_dir / checkpoints.REPLICATION_OFFSET_CHECKPOINT, "high watermarks start at 0"
        )
        for child in sorted(log_dir.iterdir()):
            if not child.is_dir():
                continue
            if child.name.endswith(DELETE_DIR_SUFFIX):
                shutil.rmtree(child, ignore_errors=True)  # a deletion that never finished
                continue
            topic, partition = parse_partition_dir(child)
            if topic == KRAFT_METADATA_TOPIC:
                continue
            key = (topic, partition)
            if key in self._logs:
                raise StorageError(f"duplicate log directories for {topic}-{partition}: {child}")
            log = Log.open(
                child, self.config_for(topic), self.clock,
                recovery_point=recovery_points.get(key, 0), log_start_offset=start_offsets.get(key),
                scheduler=self.scheduler, had_clean_shutdown=clean, rng=self.rng,
            )
            if key in high_watermarks:
                log.update_high_watermark(high_watermarks[key])
            self._logs[key] = log
        marker.unlink(missing_ok=True)

    # -- logs -------------------------------------------------------------------------------

    @property
    def logs(self) -> dict[TopicPartition, Log]:
        return dict(self._logs)

    def get_log(self, topic: str, partition: int) -> Log | None:
        return self._logs.get((topic, partition))

    def _next_log_dir(self) -> Path:
        counts = {d: 0 for d in self.log_dirs}
        for log in self._logs.values():
            counts[log.directory.parent] = counts.get(log.directory.parent, 0) + 1
        return min(self.log_dirs, key=lambda d: (counts[d], self.log_dirs.index(d)))

    def get_or_create_log(
        self, topic: str, partition: int, *, topic_id: str | None = None
    ) -> Log:
        """The partition's log, created (with ``partition.metadata``) if it does not exist."""
        existing = self._logs.get((topic, partition))
        if existing is not None:
            return existing
        if partition < 0 or not topic or "/" in topic:
            raise StorageError(
                f"cannot create a log for topic {topic!r} partition {partition}",
                error_code=ErrorCode.INVALID_TOPIC_EXCEPTION,
            )
        log_dir = self._next_log_dir()
        directory = log_dir / f"{topic}-{partition}"
        with io_errors_offline(log_dir, f"Error while creating log for {topic}-{partition}"):
            log = Log.open(directory, self.config_for(topic), self.clock, scheduler=self.scheduler, rng=self.rng)
            partition_metadata.write(directory, topic_id or partition_metadata.random_topic_id(self.rng))
        self._logs[(topic, partition)] = log
        return log

    create_log = get_or_create_log

    def delete_log(self, topic: str, partition: int) -> bool:
        """Close the log, rename its directory ``<name>.<id>-delete``, remove it later."""
        log = self._logs.pop((topic, partition), None)
        if log is None:
            return False
        log.close()
        suffix = partition_metadata.random_topic_id(self.rng).replace("-", "x").replace("_", "y")
        renamed = log.directory.with_name(f"{log.directory.name}.{suffix}{DELETE_DIR_SUFFIX}")
        log.directory.rename(renamed)

        def remove() -> None:
            shutil.rmtree(renamed, ignore_errors=True)
        if self.scheduler is None:
            remove()
        else:
            self.scheduler.schedule(log.config.file_delete_delay_ms, remove)
        return True

    # -- checkpoints and shutdown -----------------------------------------------------------

    def checkpoint(self, offline_dirs: Collection[str] = ()) -> None:
        """Write the three per-directory checkpoint files in every directory still online; an
        I/O error raises :class:`~kafkalab.errors.LogDirFailureError` for its directory."""
        for log_dir in self.log_dirs:
            if str(log_dir) not in offline_dirs:
                with io_errors_offline(log_dir, "Error while writing checkpoints"):
                    self._checkpoint_dir(log_dir)

    def _checkpoint_dir(self, log_dir: Path) -> None:
        here = {k: log for k, log in self._logs.items() if log.directory.parent == log_dir}
        checkpoints.write_offsets(
            log_dir / checkpoints.RECOVERY_POINT_CHECKPOINT,
            {k: log.recovery_point for k, log in here.items()},
        )
        checkpoints.write_offsets(
            log_dir / checkpoints.LOG_START_OFFSET_CHECKPOINT,
            {k: log.log_start_offset for k, log in here.items()
             if log.log_start_offset > log.segments[0].base_offset},
        )
        checkpoints.write_offsets(
            log_dir / checkpoints.REPLICATION_OFFSET_CHECKPOINT,
            {k: log.high_watermark for k, log in here.items()},
        )

    def flush_dirty_logs(self) -> None:
        """The periodic flusher: apply ``flush.ms`` to every log."""
        for log in self._logs.values():
            log.maybe_flush_by_time()

    def shutdown(self, offline_dirs: Collection[str] = ()) -> None:
        """Flush and close every log, write checkpoints, then mark the shutdown clean.

        A directory in ``offline_dirs`` gets nothing written: its logs only release their
        files, as Kafka's shutdown skips failed directories. An I/O error stops the writes to
        its directory; every log is still released, then the first such error is raised as a
        :class:`~kafkalab.errors.LogDirFailureError`."""
        failures: list[LogDirFailureError] = []
        for log_dir in self.log_dirs:
            if str(log_dir) not in offline_dirs:
                try:
                    with io_errors_offline(log_dir, "Error while shutting down logs"):
                        self._shut_down_dir(log_dir)
                except LogDirFailureError as error:
                    failures.append(error)
        for log in self._logs.values():
            log.close_handlers()  # idempotent after close()
        self._logs.clear()
        if failures:
            raise failures[0]

    def _shut_down_dir(self, log_dir: Path) -> None:
        here = [log for log in self._logs.values() if log.directory.parent == log_dir]
        for log in here:
            log.flush()
        self._checkpoint_dir(log_dir)
        for log in here:
            log.close()
        checkpoints.write_atomically(log_dir / CLEAN_SHUTDOWN_FILE, b"")


__all__ = ["LogManager", "CLEAN_SHUTDOWN_FILE", "parse_partition_dir"]
