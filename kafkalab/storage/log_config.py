"""Topic-level log configuration: Kafka's defaults, keyed by Kafka's dotted names.

A :class:`LogConfig` holds the settings one partition's log obeys. The field names are the
topic-level keys with dots turned into underscores (``segment.bytes`` -> ``segment_bytes``),
so a learner can look any of them up in Kafka's documentation. Defaults are Kafka's topic
defaults (``TopicConfig`` / ``LogConfig`` in Kafka 3.x/4.x).

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

from kafkalab.errors import ConfigError

LONG_MAX = 2**63 - 1  # Java's Long.MAX_VALUE: "never" for flush.messages / flush.ms
INT_MAX = 2**31 - 1
GIB = 1024 * 1024 * 1024
MIB = 1024 * 1024

# The smallest segment Kafka accepts: a segment must hold at least one batch header.
SEGMENT_BYTES_MIN = 14  # LegacyRecord.RECORD_OVERHEAD_V0, Kafka's lower bound for segment.bytes
SEGMENT_INDEX_BYTES_MIN = 4  # Kafka's lower bound for segment.index.bytes

TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
CLEANUP_POLICIES = ("delete", "compact", "compact,delete", "delete,compact")


@dataclass(frozen=True, slots=True)
class LogConfig:
    """The settings of one partition's log. Immutable; shared freely between threads."""

    segment_bytes: int = GIB
    segment_ms: int = 7 * 24 * 60 * 60 * 1000
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10 * MIB
    index_interval_bytes: int = 4096
    max_message_bytes: int = 1048588
    message_timestamp_type: str = "CreateTime"
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_after_max_ms: int = 60 * 60 * 1000  # Kafka 4.0's default: one hour ahead
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    retention_ms: int = 7 * 24 * 60 * 60 * 1000
    retention_bytes: int = -1
    cleanup_policy: str = "delete"
    delete_retention_ms: int = 24 * 60 * 60 * 1000
    file_delete_delay_ms: int = 60_000
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    min_insync_replicas: int = 1
    preallocate: bool = False
    unclean_leader_election_enable: bool = False

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
