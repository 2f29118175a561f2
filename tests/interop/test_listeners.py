"""``listeners`` against ``advertised.listeners`` with a real server process and a real client.

The address a broker advertises is what every client connects to after bootstrapping: librdkafka
must see it in Metadata exactly as configured, and a broker started with the nonroutable
0.0.0.0 must refuse to start, as Kafka's KafkaConfig validation does.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from kafkalab.client.launcher import start_server, unused_port

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


@pytest.mark.parametrize("properties", [
    {"advertised.listeners": "PLAINTEXT://0.0.0.0:9092"},
    # Kafka checks the *effective* advertised listeners: with advertised.listeners unset,
    # listeners stand in for it, so a listener on 0.0.0.0 is refused the same way.
    {"listeners": "PLAINTEXT://0.0.0.0:0"},
], ids=["advertised", "listeners-standing-in"])
def test_the_any_address_is_never_advertised(tmp_path: Path, properties: dict[str, str]) -> None:
    """The server refuses to start with a typed error carrying INVALID_CONFIG; ``kafkalab
    server-start`` prints it and exits 1 (chapter 16 runs that path through the launcher)."""
    import asyncio

    from kafkalab.errors import ConfigError, ErrorCode
    from kafkalab.server import KafkaServer

    host = "0.0.0.0" if "listeners" in properties else "127.0.0.1"
    server = KafkaServer(tmp_path / "data", properties, host=host, port=0, allow_remote=True)
    with pytest.raises(ConfigError, match="advertised.listeners cannot use the nonroutable meta-address") as refused:
        asyncio.run(server.start())
    assert refused.value.error_code == ErrorCode.INVALID_CONFIG
