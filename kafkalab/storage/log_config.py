"""Topic-level log configuration: Kafka's defaults, keyed by Kafka's dotted names.

A :class:`LogConfig` holds the settings one partition's log obeys. The field names are the
topic-level keys with dots turned into underscores (``segment.bytes`` -> ``segment_bytes``),
so a learner can look any of them up in Kafka's documentation. Defaults are Kafka's topic
defaults (``TopicConfig`` / ``LogConfig`` in Kafka 4.x), read from the one table of config keys
in :mod:`kafkalab.config.definitions`.

Example::

    >>> config = LogConfig.from_properties({"segment.bytes": "1024", "index.interval.bytes": "100"})
    >>> config.segment_bytes, config.index_interval_bytes, config.segment_ms
    (1024, 100, 604800000)

Only basic type conversion and range checks happen here; ``kafkalab.config`` owns key
validation and broker/topic precedence and calls :meth:`LogConfig.from_properties`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kafkalab.config.definitions import SEGMENT_BYTES_MIN, topic_default
from kafkalab.config.types import INT_MAX, LONG_MAX
from kafkalab.errors import ConfigError

SEGMENT_INDEX_BYTES_MIN = 4  # Kafka's lower bound for segment.index.bytes

TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
CLEANUP_POLICIES = ("delete", "compact", "compact,delete", "delete,compact")


@dataclass(frozen=True, slots=True)
class LogConfig:
    """The settings of one partition's log. Immutable; shared freely between threads."""

    segment_bytes: int = topic_default("segment.bytes")
    segment_ms: int = topic_default("segment.ms")
    segment_jitter_ms: int = topic_default("segment.jitter.ms")
    segment_index_bytes: int = topic_default("segment.index.bytes")
    index_interval_bytes: int = topic_default("index.interval.bytes")
    max_message_bytes: int = topic_default("max.message.bytes")
    message_timestamp_type: str = topic_default("message.timestamp.type")
    message_timestamp_before_max_ms: int = topic_default("message.timestamp.before.max.ms")
    message_timestamp_after_max_ms: int = topic_default("message.timestamp.after.max.ms")
    flush_messages: int = topic_default("flush.messages")
    flush_ms: int = topic_default("flush.ms")
    retention_ms: int = topic_default("retention.ms")
    retention_bytes: int = topic_default("retention.bytes")
    cleanup_policy: str = ",".join(topic_default("cleanup.policy"))
    delete_retention_ms: int = topic_default("delete.retention.ms")
    file_delete_delay_ms: int = topic_default("file.delete.delay.ms")
    min_cleanable_dirty_ratio: float = topic_default("min.cleanable.dirty.ratio")
    min_compaction_lag_ms: int = topic_default("min.compaction.lag.ms")
    max_compaction_lag_ms: int = topic_default("max.compaction.lag.ms")
    min_insync_replicas: int = topic_default("min.insync.replicas")
    preallocate: bool = topic_default("preallocate")
    unclean_leader_election_enable: bool = topic_default("unclean.leader.election.enable")

    def __post_init__(self) -> None:
        for name, low, high in _RANGES:
            value = getattr(self, name)
            if not low <= value <= high:
                key = name.replace("_", ".")
                raise ConfigError(f"{key}={value} is outside the allowed range [{low}, {high}]")
        if self.message_timestamp_type not in TIMESTAMP_TYPES:
            raise ConfigError(
                f"message.timestamp.type={self.message_timestamp_type!r} must be one of {TIMESTAMP_TYPES}"
            )
        if self.cleanup_policy not in CLEANUP_POLICIES:
            raise ConfigError(f"cleanup.policy={self.cleanup_policy!r} must be one of {CLEANUP_POLICIES}")

    @property
    def compacted(self) -> bool:
        """True when ``cleanup.policy`` includes ``compact``: every record must then have a key."""
        return "compact" in self.cleanup_policy

    @property
    def log_append_time(self) -> bool:
        """True when the broker stamps its own clock into every batch (``LogAppendTime``)."""
        return self.message_timestamp_type == "LogAppendTime"

    @classmethod
    def from_properties(cls, properties: Mapping[str, str | int | float | bool]) -> LogConfig:
        """Build a config from Kafka's topic-level keys (``{"segment.bytes": "1024"}``).

        Unknown keys raise :class:`ConfigError`; values are converted from strings as Kafka's
        ``ConfigDef`` would (``"true"``/``"false"`` for booleans).
        """
        values: dict[str, object] = {}
        for key, raw in properties.items():
            name = key.replace(".", "_")
            if name not in _CONVERTERS:
                raise ConfigError(f"unknown topic-level log config key {key!r}")
            try:
                values[name] = _CONVERTERS[name](raw)
            except ValueError as exc:
                raise ConfigError(f"{key}={raw!r} is not a valid value: {exc}") from None
        return cls(**values)  # type: ignore[arg-type]

    def with_overrides(self, **changes: object) -> LogConfig:
        """A copy with some fields changed (``config.with_overrides(segment_bytes=4096)``)."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


def _to_bool(raw: str | int | float | bool) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        raise ValueError("expected true or false")
    return text == "true"


def _to_int(raw: str | int | float | bool) -> int:
    if isinstance(raw, bool) or isinstance(raw, float):
        raise ValueError("expected an integer")
    return int(str(raw).strip())


_CONVERTERS: dict[str, Callable[[str | int | float | bool], object]] = {
    f.name: (
        _to_bool if f.type in ("bool", bool) else
        (lambda raw: float(str(raw))) if f.type in ("float", float) else
        (lambda raw: str(raw).strip()) if f.type in ("str", str) else
        _to_int
    )
    for f in dataclasses.fields(LogConfig)
}

# (field, lowest allowed, highest allowed) -- Kafka's ConfigDef ranges for these keys.
_RANGES: tuple[tuple[str, float, float], ...] = (
    ("segment_bytes", SEGMENT_BYTES_MIN, INT_MAX),
    ("segment_ms", 1, LONG_MAX),
    ("segment_jitter_ms", 0, LONG_MAX),
    ("segment_index_bytes", SEGMENT_INDEX_BYTES_MIN, INT_MAX),
    ("index_interval_bytes", 0, INT_MAX),
    ("max_message_bytes", 0, INT_MAX),
    ("flush_messages", 1, LONG_MAX),
    ("flush_ms", 0, LONG_MAX),
    ("retention_ms", -1, LONG_MAX),
    ("retention_bytes", -1, LONG_MAX),
    ("delete_retention_ms", 0, LONG_MAX),
    ("file_delete_delay_ms", 0, LONG_MAX),
    ("min_cleanable_dirty_ratio", 0.0, 1.0),
    ("min_compaction_lag_ms", 0, LONG_MAX),
    ("max_compaction_lag_ms", 1, LONG_MAX),
    ("min_insync_replicas", 1, INT_MAX),
    ("message_timestamp_before_max_ms", 0, LONG_MAX),
    ("message_timestamp_after_max_ms", 0, LONG_MAX),
)
