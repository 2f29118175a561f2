"""The consumer's settings: Kafka's config names, Kafka's defaults, checked once.

:func:`consumer_config` turns a properties dict as a Java or librdkafka user writes it
(``{"bootstrap.servers": "127.0.0.1:9092", "group.id": "orders-app", "fetch.min.bytes": 1024}``)
into a frozen :class:`ConsumerConfig`; an unknown key or a value out of range raises
:class:`~kafkalab.errors.ConfigError` naming it, as Kafka's ``ConfigDef`` does. Each field's
comment names the config it mirrors and its default in Kafka's Java consumer (``ConsumerConfig``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafkalab.client.data import FETCH_MAX_BYTES, PARTITION_FETCH_MAX_BYTES
from kafkalab.client.membership import DEFAULT_ASSIGNORS
from kafkalab.errors import ConfigError

RESET_POLICIES = ("earliest", "latest", "none")
ISOLATION_LEVELS = {"read_uncommitted": 0, "read_committed": 1}  # the Fetch/ListOffsets field values


@dataclass(frozen=True, slots=True)
class ConsumerConfig:
    """A consumer's settings; field names are Kafka's dotted names with ``_`` for ``.``."""

    bootstrap_servers: str = ""  # bootstrap.servers (only the socket adapter needs it)
    group_id: str | None = None  # group.id; None: no group, assign() and no commits
    client_id: str = "kafkalab-consumer"  # client.id
    fetch_min_bytes: int = 1  # fetch.min.bytes
    fetch_max_bytes: int = FETCH_MAX_BYTES  # fetch.max.bytes: 50 MiB
    max_partition_fetch_bytes: int = PARTITION_FETCH_MAX_BYTES  # max.partition.fetch.bytes: 1 MiB
    fetch_max_wait_ms: int = 500  # fetch.max.wait.ms
    max_poll_records: int = 500  # max.poll.records
    isolation_level: str = "read_uncommitted"  # isolation.level
    check_crcs: bool = True  # check.crcs
    auto_offset_reset: str = "latest"  # auto.offset.reset
    enable_auto_commit: bool = True  # enable.auto.commit
    auto_commit_interval_ms: int = 5_000  # auto.commit.interval.ms
    partition_assignment_strategy: tuple[str, ...] = DEFAULT_ASSIGNORS  # partition.assignment.strategy
    session_timeout_ms: int = 45_000  # session.timeout.ms
    heartbeat_interval_ms: int = 3_000  # heartbeat.interval.ms
    max_poll_interval_ms: int = 300_000  # max.poll.interval.ms
    request_timeout_ms: int = 30_000  # request.timeout.ms
    retry_backoff_ms: int = 100  # retry.backoff.ms
    metadata_max_age_ms: int = 300_000  # metadata.max.age.ms
    group_instance_id: str | None = None  # group.instance.id
    client_rack: str | None = None  # client.rack

    def __post_init__(self) -> None:
        if self.auto_offset_reset not in RESET_POLICIES:
            raise ConfigError(f"auto.offset.reset {self.auto_offset_reset!r}: choose from {RESET_POLICIES}")
        if self.isolation_level not in ISOLATION_LEVELS:
            raise ConfigError(f"isolation.level {self.isolation_level!r}: choose from {sorted(ISOLATION_LEVELS)}")
        for name in ("fetch_max_bytes", "max_partition_fetch_bytes", "max_poll_records",
                     "auto_commit_interval_ms", "request_timeout_ms"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name.replace('_', '.')} is {getattr(self, name)}; it must be positive")
        for name in ("fetch_min_bytes", "fetch_max_wait_ms", "retry_backoff_ms"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name.replace('_', '.')} is {getattr(self, name)}; it must not be negative")

    @property
    def isolation(self) -> int:
        """The isolation level as the wire carries it: 0 read_uncommitted, 1 read_committed."""
        return ISOLATION_LEVELS[self.isolation_level]


_FIELDS = {f.name: f for f in dataclasses.fields(ConsumerConfig)}


def consumer_config(properties: Mapping[str, Any]) -> ConsumerConfig:
    """``{"fetch.min.bytes": "1024", ...}`` -> :class:`ConsumerConfig`; strings are converted."""
    values: dict[str, Any] = {}
    for key, raw in properties.items():
        name = key.replace(".", "_")
        if name not in _FIELDS:
            raise ConfigError(f"unknown consumer config {key!r}")
        values[name] = _convert(key, _FIELDS[name].default, raw)
    return ConsumerConfig(**values)


def _convert(key: str, default: Any, raw: Any) -> Any:
    try:
        if isinstance(default, bool):
            return raw if isinstance(raw, bool) else str(raw).lower() == "true"
        if isinstance(default, int):
            return int(raw)
        if isinstance(default, tuple):
            return tuple(s.strip() for s in raw.split(",")) if isinstance(raw, str) else tuple(raw)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"consumer config {key}={raw!r}: {error}") from error
    return None if raw is None else str(raw)
