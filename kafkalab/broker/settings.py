"""The broker-level settings request handling reads, parsed from Kafka's keys.

Worked example: ``{"node.id": "1", "num.partitions": "3",
"advertised.listeners": "PLAINTEXT://localhost:19092"}`` gives node 1 advertising
localhost:19092 and creating 3-partition topics on demand. ``advertised.listeners`` may not name
0.0.0.0 -- clients cannot connect to "any address" -- which Kafka's KafkaConfig refuses the same
way at start-up (when ``advertised.listeners`` is unset, the check applies to ``listeners``, which
then stand in for it). kafkalab is stricter than Kafka in one respect: it also refuses the IPv6
any-address ``::`` and an empty host, which Kafka lets through.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar
from dataclasses import dataclass

from kafkalab.config.definitions import broker_default
from kafkalab.errors import ConfigError

T = TypeVar("T")



@dataclass(frozen=True, slots=True)
class BrokerSettings:
    """Immutable; built once at start-up."""

    node_id: int = 0
    host: str = "127.0.0.1"
    port: int = 9092
    cluster_id: str = "kafkalab-cluster"
    auto_create_topics_enable: bool = broker_default("auto.create.topics.enable")
    num_partitions: int = broker_default("num.partitions")
    default_replication_factor: int = broker_default("default.replication.factor")
    message_max_bytes: int = broker_default("message.max.bytes")
    rack: str | None = None

    def __post_init__(self) -> None:
        if self.node_id < 0:
            raise ConfigError(f"node.id must be >= 0, got {self.node_id}")
        if self.num_partitions < 1:
            raise ConfigError(f"num.partitions must be >= 1, got {self.num_partitions}")
        if self.host in ("0.0.0.0", "::", ""):
            raise ConfigError(
                f"advertised.listeners cannot use the nonroutable meta-address {self.host!r}; "
                "advertise a host name or address clients can reach"
            )

    @classmethod
    def from_properties(
        cls, properties: Mapping[str, str], *, bound_host: str, bound_port: int
    ) -> BrokerSettings:
        """Settings from server.properties keys; the listener's bound address is the fallback."""
        node_id = properties.get("node.id", properties.get("broker.id", "0"))
        host, port = bound_host, bound_port
        advertised = properties.get("advertised.listeners")
        if advertised:
            host, port = parse_listener(advertised.split(",")[0])
            port = port or bound_port
        return cls(
            node_id=_int("node.id", node_id),
            host=host,
            port=port,
            cluster_id=properties.get("cluster.id", "kafkalab-cluster"),
            auto_create_topics_enable=_setting(properties, "auto.create.topics.enable", _bool),
            num_partitions=_setting(properties, "num.partitions", _int),
            default_replication_factor=_setting(properties, "default.replication.factor", _int),
            message_max_bytes=_setting(properties, "message.max.bytes", _int),
            rack=properties.get("broker.rack"),
        )


def parse_listener(text: str) -> tuple[str, int]:
    """``"PLAINTEXT://localhost:9092"`` -> ("localhost", 9092); an empty host stays empty."""
    _, _, address = text.strip().rpartition("://")
    host, _, port = address.rpartition(":")
    if not port.isdigit():
        raise ConfigError(f"listener {text!r} must look like PLAINTEXT://host:port")
    return host.strip("[]"), int(port)


def _setting(properties: Mapping[str, str], key: str, parse: Callable[[str, str], T]) -> T:
    """``key`` parsed from ``properties``, or Kafka's default when it is not set."""
    text = properties.get(key)
    return broker_default(key) if text is None else parse(key, text)


def _int(key: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"{key}={text!r} is not an integer") from None


def _bool(key: str, text: str) -> bool:
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise ConfigError(f"{key}={text!r} must be true or false")
    return lowered == "true"
