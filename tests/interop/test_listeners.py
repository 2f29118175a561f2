"""``listeners`` against ``advertised.listeners`` with a real server process and a real client.

The address a broker advertises is what every client connects to after bootstrapping: librdkafka
must see it in Metadata exactly as configured, and a broker started with the nonroutable
0.0.0.0 must refuse to start, as Kafka's KafkaConfig validation does.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from kafkalab.client.launcher import ServerStartError, start_server, unused_port

confluent_kafka = pytest.importorskip("confluent_kafka")


def test_unused_port_refuses_connections() -> None:
    port = unused_port()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


def test_a_client_is_told_the_advertised_address_not_the_bound_one(tmp_path: Path) -> None:
    nobody = unused_port()
    server = start_server(tmp_path / "data", overrides=[f"advertised.listeners=PLAINTEXT://127.0.0.1:{nobody}"])
    try:
        producer = confluent_kafka.Producer({"bootstrap.servers": server.bootstrap, "log_level": 0})
        brokers = producer.list_topics(timeout=10).brokers
        assert [(b.id, b.host, b.port) for b in brokers.values()] == [(0, "127.0.0.1", nobody)]
        assert nobody != server.port
    finally:
        server.stop()


def test_advertising_the_any_address_stops_the_server_at_start_up(tmp_path: Path) -> None:
    with pytest.raises(ServerStartError, match="advertised.listeners cannot use the nonroutable meta-address"):
        start_server(tmp_path / "data", overrides=["advertised.listeners=PLAINTEXT://0.0.0.0:9092"])


def test_listeners_on_the_any_address_stand_in_for_an_unset_advertised_listener(tmp_path: Path) -> None:
    """Kafka checks the *effective* advertised listeners: with ``advertised.listeners`` unset,
    ``listeners=PLAINTEXT://0.0.0.0:...`` is advertised, so it is refused the same way."""
    import asyncio

    from kafkalab.errors import ConfigError, ErrorCode
    from kafkalab.server import KafkaServer

    server = KafkaServer(tmp_path / "data", {"listeners": "PLAINTEXT://0.0.0.0:0"}, host="0.0.0.0", port=0,
                         allow_remote=True)
    with pytest.raises(ConfigError, match="nonroutable meta-address") as refused:
        asyncio.run(server.start())
    assert refused.value.error_code == ErrorCode.INVALID_CONFIG
