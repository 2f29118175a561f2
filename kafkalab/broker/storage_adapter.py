"""A :class:`~kafkalab.broker.log_store.LogStore` over kafkalab's storage engine and a data dir.

The data directory has Kafka's layout, so a directory written by Apache Kafka opens here and the
other way round::

    data-dir/
      orders-0/  00000000000000000000.log .index .timeindex  partition.metadata
      orders-1/  ...
      recovery-point-offset-checkpoint    log-start-offset-checkpoint
      .kafka_cleanshutdown                (present only between a clean stop and the next start)
      meta.properties                     (written by Kafka; read for information only)

At start-up every ``<topic>-<partition>`` directory is opened with its recovery point and log
start offset from the checkpoints; without the clean-shutdown marker every segment past the
recovery point is re-validated (the storage engine's recovery). ``flush`` fsyncs the logs and
rewrites the checkpoints; ``close`` also leaves the clean-shutdown marker for the next start.

Worked example: after producing 10 records to ``orders-0`` and a clean stop,
``recovery-point-offset-checkpoint`` reads ``0 / 1 / orders 0 10`` and the restart skips
recovery; after a crash the marker is missing and the segment is rescanned from offset 0.
"""

from __future__ import annotations

import random
import re
import shutil
import uuid
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from kafkalab.clock import Clock
from kafkalab.errors import StorageError
from kafkalab.storage import Log, LogConfig
from kafkalab.storage import checkpoints, partition_metadata
from kafkalab.storage.checkpoints import CorruptCheckpointError

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
_PARTITION_DIR = re.compile(r"^(?P<topic>[a-zA-Z0-9._-]+)-(?P<partition>\d+)$")
_LOG_CONFIG_FIELDS = frozenset(LogConfig.__dataclass_fields__)

PropertiesFor = Callable[[str], Mapping[str, str]]


def log_config_from(properties: Mapping[str, str]) -> LogConfig:
    """The LogConfig for a topic's effective properties (keys LogConfig does not model are
    broker-side concerns, e.g. ``compression.type``, and are left out)."""
    known = {k: v for k, v in properties.items() if k.replace(".", "_") in _LOG_CONFIG_FIELDS}
    return LogConfig.from_properties(known)


class StorageLogStore:
    """Every partition log under one data directory. Not thread-safe; owned by the broker."""

    def __init__(self, data_dir: Path, clock: Clock, properties_for: PropertiesFor, rng: random.Random) -> None:
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._clock = clock
        self._properties_for = properties_for
        self._rng = rng
        self._logs: dict[tuple[str, int], Log] = {}
        self.had_clean_shutdown = (self.data_dir / CLEAN_SHUTDOWN_FILE).exists()
        self._open_all()
        (self.data_dir / CLEAN_SHUTDOWN_FILE).unlink(missing_ok=True)

    def _read_checkpoint(self, name: str) -> dict[tuple[str, int], int]:
        path = self.data_dir / name
        if not path.exists():
            return {}
        try:
            return checkpoints.read_offsets(path)
        except CorruptCheckpointError:
            return {}  # Kafka's fallback: recover everything, start offsets from the segments

    def _open_all(self) -> None:
        recovery_points = self._read_checkpoint(checkpoints.RECOVERY_POINT_CHECKPOINT)
        start_offsets = self._read_checkpoint(checkpoints.LOG_START_OFFSET_CHECKPOINT)
        for directory in sorted(self.data_dir.iterdir()):
            match = _PARTITION_DIR.match(directory.name)
            if not directory.is_dir() or match is None:
                continue
            key = (match["topic"], int(match["partition"]))
            self._logs[key] = Log.open(
                directory, log_config_from(self._properties_for(key[0])), self._clock,
                recovery_point=recovery_points.get(key, 0), log_start_offset=start_offsets.get(key),
                had_clean_shutdown=self.had_clean_shutdown, rng=random.Random(self._rng.getrandbits(64)),
            )

    # --- LogStore --------------------------------------------------------------------------------

    def partitions(self) -> Iterable[tuple[str, int]]:
        return sorted(self._logs)

    def get_log(self, topic: str, partition: int) -> Log | None:
        return self._logs.get((topic, partition))

    def create_log(self, topic: str, partition: int, topic_id: uuid.UUID, properties: Mapping[str, str]) -> Log:
        if (topic, partition) in self._logs:
            raise StorageError(f"log {topic}-{partition} already exists in {self.data_dir}")
        directory = self.data_dir / f"{topic}-{partition}"
        directory.mkdir(parents=True, exist_ok=False)
        partition_metadata.write(directory, partition_metadata.uuid_to_str(topic_id.bytes))
        log = Log.open(directory, log_config_from(properties), self._clock,
                       rng=random.Random(self._rng.getrandbits(64)))
        self._logs[(topic, partition)] = log
        return log

    def delete_log(self, topic: str, partition: int) -> None:
        log = self._logs.pop((topic, partition), None)
        if log is None:
            return
        log.close()
        shutil.rmtree(log.directory, ignore_errors=True)

    def topic_id(self, topic: str, partition: int) -> uuid.UUID | None:
        log = self._logs.get((topic, partition))
        if log is None:
            return None
        text = partition_metadata.read(log.directory)
        return None if text is None else uuid.UUID(bytes=partition_metadata.str_to_uuid(text))

    def reconfigure(self, topic: str, properties: Mapping[str, str]) -> None:
        config = log_config_from(properties)
        for (name, _), log in self._logs.items():
            if name == topic:
                log.config = config

    def delete_records(self, topic: str, partition: int, offset: int) -> int:
        log = self._logs[(topic, partition)]
        log.increment_log_start_offset(offset)
        return log.log_start_offset

    def flush(self) -> None:
        for log in self._logs.values():
            log.flush()
        self.write_checkpoints()

    def write_checkpoints(self) -> None:
        checkpoints.write_offsets(
            self.data_dir / checkpoints.RECOVERY_POINT_CHECKPOINT,
            {key: log.recovery_point for key, log in self._logs.items()},
        )
        checkpoints.write_offsets(
            self.data_dir / checkpoints.LOG_START_OFFSET_CHECKPOINT,
            {key: log.log_start_offset for key, log in self._logs.items()},
        )

    def close(self) -> None:
        """Flush, checkpoint, release every file and leave the clean-shutdown marker."""
        self.flush()
        for log in self._logs.values():
            log.close()
        (self.data_dir / CLEAN_SHUTDOWN_FILE).touch()
