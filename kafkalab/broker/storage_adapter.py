"""A :class:`~kafkalab.broker.log_store.LogStore` over the storage engine's ``LogManager``.

The data directory has Kafka's layout, so a directory written by Apache Kafka opens here and the
other way round::

    data-dir/
      orders-0/  00000000000000000000.log .index .timeindex  partition.metadata
      orders-1/  ...
      recovery-point-offset-checkpoint    log-start-offset-checkpoint
      .kafka_cleanshutdown                (present only between a clean stop and the next start)
      meta.properties                     (written by Kafka; not needed here)

The ``LogManager`` does the storage work (opening and recovering partitions, checkpoints, the
clean-shutdown marker); this adapter adds what the broker needs on top: topic ids as
``uuid.UUID``, per-topic ``LogConfig`` from kafkalab.config's config store (kept live by
``attach_log``), DeleteRecords, and the checkpoint writes the periodic tasks make.

Worked example: after producing 10 records to ``orders-0`` and a clean stop,
``recovery-point-offset-checkpoint`` reads ``0 / 1 / orders 0 10`` and the restart skips
recovery; after a crash the marker is missing and the segment is rescanned from offset 0.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path

from kafkalab.clock import Clock
from kafkalab.errors import LogDirFailureError
from kafkalab.metadata.image import MetadataImage
from kafkalab.config import DynamicConfigStore
from kafkalab.config.store import to_log_config
from kafkalab.storage import Log, checkpoints, partition_metadata
from kafkalab.storage.log import Scheduler
from kafkalab.storage.log_dir_failure import io_errors_offline
from kafkalab.storage.log_config import LogConfig
from kafkalab.storage.log_manager import KRAFT_METADATA_TOPIC, LogManager


class StorageLogStore:
    """Every partition log under one data directory. Not thread-safe; owned by the broker.

    Each log's config is kept equal to its topic's effective config by the config store
    (``DynamicConfigStore.attach_log``): an alter of a topic or of a broker default reconfigures
    the live logs it affects, with no call from the request handlers. ``scheduler`` runs the
    delayed file deletions (``file.delete.delay.ms``); without one they happen at once.
    """

    def __init__(
        self, data_dir: Path, clock: Clock, config_store: DynamicConfigStore, rng: random.Random, *,
        scheduler: Scheduler | None = None,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.config_store = config_store
        self.manager = LogManager(
            [self.data_dir], clock, config_store.log_config(""),  # "": a topic with no overrides
            scheduler=scheduler, rng=random.Random(rng.getrandbits(64)),
            topic_configs={t: config_store.log_config(t) for t in config_store.entity_names("topics")},
        )
        for log in self.manager.logs.values():
            config_store.attach_log(log)
        self.metadata_log: Log | None = None

    @property
    def log_dirs(self) -> list[Path]:
        return self.manager.log_dirs

    def partitions(self) -> Iterable[tuple[str, int]]:
        return sorted(self.manager.logs)

    def get_log(self, topic: str, partition: int) -> Log | None:
        return self.manager.get_log(topic, partition)

    def live_logs(self) -> Iterable[Log]:
        return self.manager.logs.values()

    def create_log(self, topic: str, partition: int, topic_id: uuid.UUID, properties: Mapping[str, str]) -> Log:
        self.manager.topic_configs[topic] = to_log_config(properties)
        log = self.manager.create_log(topic, partition, topic_id=partition_metadata.uuid_to_str(topic_id.bytes))
        self.config_store.attach_log(log)
        return log

    def open_or_create_log(self, topic: str, partition: int, image: MetadataImage) -> Log:
        """The replica manager's way in: the log this broker holds for a replica the metadata
        image assigns it, created with the topic's id and configs if it is new."""
        log = self.manager.get_log(topic, partition)
        if log is not None:
            return log
        return self.create_log(topic, partition, image.topics[topic].topic_id,
                               self.config_store.topic_properties(topic))

    def delete_log(self, topic: str, partition: int) -> None:
        log = self.manager.get_log(topic, partition)
        if log is not None:
            self.config_store.detach_log(log)
        self.manager.delete_log(topic, partition)

    def topic_id(self, topic: str, partition: int) -> uuid.UUID | None:
        log = self.manager.get_log(topic, partition)
        if log is None:
            return None
        text = partition_metadata.read(log.directory)
        return None if text is None else uuid.UUID(bytes=partition_metadata.str_to_uuid(text))

    def delete_records(self, topic: str, partition: int, offset: int) -> int:
        log = self.manager.get_log(topic, partition)
        assert log is not None, "the broker checks the partition exists first"
        log.increment_log_start_offset(offset)
        return log.log_start_offset

    # --- the periodic tasks' work (kafkalab.broker.housekeeping) -----------------------------

    def flush_dirty_logs(self) -> None:
        """Apply every log's ``flush.ms`` (Kafka's ``LogManager.flushDirtyLogs``)."""
        self.manager.flush_dirty_logs()

    def checkpoint_recovery_points(self) -> None:
        self._checkpoint(checkpoints.RECOVERY_POINT_CHECKPOINT, lambda log: log.recovery_point)

    def checkpoint_log_start_offsets(self) -> None:
        # Kafka lists only the logs whose start moved past their first segment's base offset.
        self._checkpoint(checkpoints.LOG_START_OFFSET_CHECKPOINT, lambda log: log.log_start_offset,
                         lambda log: log.log_start_offset > log.segments[0].base_offset)

    def checkpoint_high_watermarks(self) -> None:
        self._checkpoint(checkpoints.REPLICATION_OFFSET_CHECKPOINT, lambda log: log.high_watermark)

    def _checkpoint(self, file_name: str, offset_of: Callable[[Log], int],
                    wanted: Callable[[Log], bool] = lambda log: True) -> None:
        """Write one checkpoint file per log directory, as ``LogManager.checkpoint`` does for
        all three at shutdown."""
        for log_dir in self.manager.log_dirs:
            offsets = {key: offset_of(log) for key, log in self.manager.logs.items()
                       if log.directory.parent == log_dir and wanted(log)}
            with io_errors_offline(log_dir, f"Error while writing {file_name}"):
                checkpoints.write_offsets(log_dir / file_name, offsets)

    # --- shutdown ------------------------------------------------------------------------------

    def flush(self) -> None:
        for log in self.manager.logs.values():
            log.flush()
        self.manager.checkpoint()

    def open_metadata_log(self) -> Log:
        """KRaft's ``__cluster_metadata-0`` in the data directory (Kafka's default
        ``metadata.log.dir``), opened beside the partition logs, never among them."""
        if self.metadata_log is None:
            directory = self.data_dir / f"{KRAFT_METADATA_TOPIC}-0"
            directory.mkdir(exist_ok=True)
            self.metadata_log = Log.open(directory, LogConfig(), self.manager.clock, rng=random.Random(0))
        return self.metadata_log

    def close(self, offline_dirs: Collection[str] = ()) -> None:
        """Flush, checkpoint, release every file and leave the clean-shutdown marker, writing
        nothing to a directory in ``offline_dirs``."""
        metadata_log, self.metadata_log = self.metadata_log, None
        failure: LogDirFailureError | None = None
        if metadata_log is not None and str(self.data_dir) not in offline_dirs:
            try:
                with io_errors_offline(self.data_dir, "Error while closing the metadata log"):
                    metadata_log.close()
            except LogDirFailureError as error:
                failure = error
        if metadata_log is not None:
            metadata_log.close_handlers()  # idempotent after close()
        self.manager.shutdown(offline_dirs)
        if failure is not None:
            raise failure
