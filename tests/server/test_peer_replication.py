"""Replication over real sockets: two servers, each a broker behind its own TCP listener, the
follower's Fetch carried by the peer channel.

The two servers share one in-process controller (as the simulation's brokers do) in place of
the controller RPCs between processes; everything between the brokers -- the follower's Fetch
with its replica id and the leader's answer -- crosses TCP. kafka-python produces with
acks=all to the leader: each answer arrives only after the follower's next Fetch showed the
leader the batch, and the follower's log ends up byte for byte the leader's.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

from kafka import KafkaProducer

from kafkalab.client.launcher import unused_port
from kafkalab.controller.local import LocalController
from kafkalab.server import KafkaServer

RECORDS = 30
WAIT_S = 30.0


def _segment_bytes(server: KafkaServer, topic: str) -> bytes:
    assert server.broker is not None
    log = server.broker.log_store.get_log(topic, 0)
    log.flush()
    return b"".join(path.read_bytes() for path in sorted(Path(log.directory).glob("*.log")))


def _produce(bootstrap: str, topic: str) -> list[int]:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", request_timeout_ms=20_000, linger_ms=2)
    try:
        futures = [producer.send(topic, f"r{i}".encode(), partition=0) for i in range(RECORDS)]
        return [f.get(WAIT_S).offset for f in futures]
    finally:
        producer.close(timeout=2)  # bounded even when a send failed


def test_acks_all_waits_for_the_follower_fetching_over_tcp(tmp_path: Path) -> None:
    async def scenario() -> None:
        controller = LocalController([], random.Random(3))
        ports = {1: unused_port(), 2: unused_port()}
        servers = {
            node: KafkaServer(tmp_path / f"node-{node}", {"node.id": str(node), "offsets.topic.replication.factor": "2"},
                              port=ports[node], seed=node, controller=controller,
                              peers={n: ("127.0.0.1", p) for n, p in ports.items() if n != node})
            for node in ports
        }
        for server in servers.values():
            await server.start()
        try:
            image = controller.create_topic("orders", 1, 2)
            leader = image.partitions[0].leader
            follower = 3 - leader
            offsets = await asyncio.wait_for(
                asyncio.to_thread(_produce, f"127.0.0.1:{ports[leader]}", "orders"), WAIT_S)
            assert offsets == list(range(RECORDS))
            leader_log = servers[leader].broker.log_store.get_log("orders", 0)  # type: ignore[union-attr]
            assert leader_log.high_watermark == RECORDS  # acks=all answered: the follower had them
            async with asyncio.timeout(WAIT_S):  # the follower learns the HW on its next fetch
                while servers[follower].broker.log_store.get_log("orders", 0).high_watermark < RECORDS:  # type: ignore[union-attr]
                    await asyncio.sleep(0.05)
            assert _segment_bytes(servers[follower], "orders") == _segment_bytes(servers[leader], "orders")
            connection = servers[follower].peers.channel.connection(leader)  # type: ignore[union-attr]
            assert connection is not None and connection.connects == 1
        finally:
            for server in servers.values():
                await server.stop()

    asyncio.run(asyncio.wait_for(scenario(), 3 * WAIT_S))
