"""The producer's settings: Kafka's names, Kafka's defaults, Kafka's cross-checks.

Theory of operation
-------------------
:func:`producer_config` turns a ``{"dotted.name": value}`` mapping -- the same keys a Java
``KafkaProducer`` takes -- into a frozen :class:`ProducerConfig`. Every value is parsed and
range-checked on its own first; then the rules that tie settings together run, as Kafka's
``ProducerConfig.postProcessAndValidateIdempotenceConfigs`` does:

* idempotence needs ``acks=all``, ``retries`` > 0 and ``max.in.flight.requests.per.connection``
  <= 5. If ``enable.idempotence=true`` was *set*, a conflict is a :class:`ConfigError`; if it
  was left at its default, idempotence is quietly switched off instead (Kafka 3.2+).
* ``delivery.timeout.ms`` must be at least ``linger.ms + request.timeout.ms``: a record must
  have time to wait for its batch and then for one request. A value set too low is an error; the
  default is raised to the sum.

Worked example: ``producer_config({"acks": "1"})`` gives ``acks=1`` and
``enable_idempotence=False`` (the default gave way), while
``producer_config({"acks": "1", "enable.idempotence": "true"})`` raises ``ConfigError: Must set
acks to all in order to use the idempotent producer`` -- Kafka's own message.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafkalab.errors import ConfigError
from kafkalab.records.header import Compression

IDEMPOTENT_IN_FLIGHT_MAX = 5  # the broker keeps the last 5 batches per producer (ProducerStateEntry)
INT32_MAX = 2**31 - 1
ACKS = {"all": -1, "-1": -1, "0": 0, "1": 1}
CODECS = {c.name.lower(): c for c in Compression}


@dataclass(frozen=True, slots=True)
class ProducerConfig:
    """A validated producer configuration; field names are Kafka's keys with underscores.

    Immutable; safe to share."""

    bootstrap_servers: str = ""
    client_id: str = "kafkalab-producer"
    acks: int = -1
    batch_size: int = 16_384
    linger_ms: int = 0
    buffer_memory: int = 32 * 1024 * 1024
    max_block_ms: int = 60_000
    max_request_size: int = 1_048_576
    compression_type: Compression = Compression.NONE
    retries: int = INT32_MAX
    retry_backoff_ms: int = 100
    delivery_timeout_ms: int = 120_000
    request_timeout_ms: int = 30_000
    max_in_flight_requests_per_connection: int = 5
    enable_idempotence: bool = True
    metadata_max_age_ms: int = 300_000
    send_buffer_bytes: int = 131_072  # SO_SNDBUF; -1: the operating system's default
    receive_buffer_bytes: int = 32_768  # SO_RCVBUF; -1: the operating system's default


def _int(key: str, raw: Any, low: int, high: int = 2**63 - 1) -> int:
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"Invalid value {raw!r} for configuration {key}: not a number") from None
    if not low <= value <= high:
        raise ConfigError(f"Invalid value {value} for configuration {key}: Value must be in [{low}, {high}]")
    return value


def _bool(key: str, raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        raise ConfigError(f"Invalid value {raw!r} for configuration {key}: Expected value to be either true or false")
    return text == "true"


def _acks(key: str, raw: Any) -> int:
    text = str(raw).strip().lower()
    if text not in ACKS:
        raise ConfigError(f"Invalid value {raw!r} for configuration {key}: String must be one of: all, -1, 0, 1")
    return ACKS[text]


def _codec(key: str, raw: Any) -> Compression:
    text = str(raw).strip().lower()
    if text not in CODECS:
        raise ConfigError(f"Invalid value {raw!r} for configuration {key}: String must be one of: "
                          + ", ".join(CODECS))
    return CODECS[text]


PARSERS: dict[str, Any] = {
    "bootstrap.servers": lambda k, v: str(v),
    "client.id": lambda k, v: str(v),
    "acks": _acks,
    "batch.size": lambda k, v: _int(k, v, 0, INT32_MAX),
    "linger.ms": lambda k, v: _int(k, v, 0),
    "buffer.memory": lambda k, v: _int(k, v, 0),
    "max.block.ms": lambda k, v: _int(k, v, 0),
    "max.request.size": lambda k, v: _int(k, v, 0, INT32_MAX),
    "compression.type": _codec,
    "retries": lambda k, v: _int(k, v, 0, INT32_MAX),
    "retry.backoff.ms": lambda k, v: _int(k, v, 0),
    "delivery.timeout.ms": lambda k, v: _int(k, v, 0, INT32_MAX),
    "request.timeout.ms": lambda k, v: _int(k, v, 0, INT32_MAX),
    "max.in.flight.requests.per.connection": lambda k, v: _int(k, v, 1, INT32_MAX),
    "enable.idempotence": _bool,
    "metadata.max.age.ms": lambda k, v: _int(k, v, 0),
    "send.buffer.bytes": lambda k, v: _int(k, v, -1, INT32_MAX),
    "receive.buffer.bytes": lambda k, v: _int(k, v, -1, INT32_MAX),
}


def producer_config(properties: Mapping[str, Any] | None = None) -> ProducerConfig:
    """Parse and cross-check ``properties`` (Kafka's keys); unknown keys are a ConfigError."""
    properties = dict(properties or {})
    values: dict[str, Any] = {}
    for key, raw in properties.items():
        if key not in PARSERS:
            raise ConfigError(f"Unknown producer configuration {key!r}; kafkalab's producer knows "
                              + ", ".join(sorted(PARSERS)))
        values[key.replace(".", "_")] = PARSERS[key](key, raw)
    values["enable_idempotence"] = _idempotence(values, explicit="enable.idempotence" in properties)
    values["delivery_timeout_ms"] = _delivery_timeout(values, explicit="delivery.timeout.ms" in properties)
    return ProducerConfig(**values)


def _idempotence(values: dict[str, Any], *, explicit: bool) -> bool:
    """Kafka's rule: a conflict with an explicit ``enable.idempotence=true`` is an error; with
    the default it turns idempotence off."""
    wanted = values.get("enable_idempotence", True)
    if not wanted:
        return False
    conflicts = []
    if values.get("acks", -1) != -1:
        conflicts.append("Must set acks to all in order to use the idempotent producer. "
                         "Otherwise we cannot guarantee idempotence.")
    if values.get("max_in_flight_requests_per_connection", 5) > IDEMPOTENT_IN_FLIGHT_MAX:
        conflicts.append("Must set max.in.flight.requests.per.connection to at most 5 "
                         "to use the idempotent producer.")
    if values.get("retries", INT32_MAX) == 0:
        conflicts.append("Must set retries to non-zero when using the idempotent producer.")
    if conflicts and explicit:
        raise ConfigError(" ".join(conflicts))
    return not conflicts


def _delivery_timeout(values: dict[str, Any], *, explicit: bool) -> int:
    floor = values.get("linger_ms", 0) + values.get("request_timeout_ms", 30_000)
    delivery = values.get("delivery_timeout_ms", 120_000)
    if delivery >= floor:
        return int(delivery)
    if explicit:
        raise ConfigError(f"delivery.timeout.ms should be equal to or larger than linger.ms + "
                          f"request.timeout.ms: {delivery} < {floor}")
    return int(floor)
