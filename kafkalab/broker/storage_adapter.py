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
``uuid.UUID``, per-topic ``LogConfig`` built from kafkalab.config's effective topic properties,
and DeleteRecords.

Worked example: after producing 10 records to ``orders-0`` and a clean stop,
``recovery-point-offset-checkpoint`` reads ``0 / 1 / orders 0 10`` and the restart skips
recovery; after a crash the marker is missing and the segment is rescanned from offset 0.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from kafkalab.clock import Clock
from kafkalab.storage import Log, LogConfig, partition_metadata
from kafkalab.storage.log_manager import LogManager

_LOG_CONFIG_FIELDS = frozenset(LogConfig.__dataclass_fields__)

PropertiesFor = Callable[[str], Mapping[str, str]]


def log_config_from(properties: Mapping[str, str]) -> LogConfig:
    """The LogConfig for a topic's effective properties (keys LogConfig does not model are
    broker-side concerns, e.g. ``compression.type``, and are left out)."""
    known = {k: v for k, v in properties.items() if k.replace(".", "_") in _LOG_CONFIG_FIELDS}
    return LogConfig.from_properties(known)


class StorageLogStore:
    """Every partition log under one data directory. Not thread-safe; owned by the broker.

    ``properties_for(topic)`` gives a topic's effective properties; ``topics_with_overrides``
    names the topics whose properties differ from the broker defaults, so their logs open with
    the right config.
    """

    def __init__(
        self, data_dir: Path, clock: Clock, properties_for: PropertiesFor, rng: random.Random,
        topics_with_overrides: Iterable[str] = (),
    ) -> None:
        self.data_dir = Path(data_dir)
        self._properties_for = properties_for
        self.manager = LogManager(
            [self.data_dir], clock, log_config_from(properties_for("")),  # "": no topic overrides
            rng=random.Random(rng.getrandbits(64)),
            topic_configs={t: log_config_from(properties_for(t)) for t in topics_with_overrides},
        )

    def partitions(self) -> Iterable[tuple[str, int]]:
        return sorted(self.manager.logs)

    def get_log(self, topic: str, partition: int) -> Log | None:
        return self.manager.get_log(topic, partition)

    def create_log(self, topic: str, partition: int, topic_id: uuid.UUID, properties: Mapping[str, str]) -> Log:
        self.manager.topic_configs[topic] = log_config_from(properties)
        return self.manager.create_log(topic, partition, topic_id=partition_metadata.uuid_to_str(topic_id.bytes))

    def delete_log(self, topic: str, partition: int) -> None:
        self.manager.delete_log(topic, partition)

    def topic_id(self, topic: str, partition: int) -> uuid.UUID | None:
        log = self.manager.get_log(topic, partition)
        if log is None:
            return None
        text = partition_metadata.read(log.directory)
        return None if text is None else uuid.UUID(bytes=partition_metadata.str_to_uuid(text))

    def reconfigure(self, topic: str, properties: Mapping[str, str]) -> None:
        config = log_config_from(properties)
        self.manager.topic_configs[topic] = config
        for (name, _), log in self.manager.logs.items():
            if name == topic:
                log.config = config

    def delete_records(self, topic: str, partition: int, offset: int) -> int:
        log = self.manager.get_log(topic, partition)
        assert log is not None, "the broker checks the partition exists first"
        log.increment_log_start_offset(offset)
        return log.log_start_offset

    def flush(self) -> None:
        for log in self.manager.logs.values():
            log.flush()
        self.manager.checkpoint()

    def close(self) -> None:
        """Flush, checkpoint, release every file and leave the clean-shutdown marker."""
        self.manager.shutdown()
