"""A three-broker KRaft cluster whose nodes talk only over TCP, in one process.

Three servers, each a broker behind its own listener, and the active controller behind its
controller listener (:class:`~kafkalab.server.controller_server.ControllerServer`). Brokers
register, heartbeat, propose ISR changes and fetch ``__cluster_metadata`` from the controller,
and followers fetch from leaders, all through the peer channel over real sockets. Admin requests
reach the controller the same way: a broker forwards them in an Envelope, and asks for producer
id blocks with AllocateProducerIds.

kafka-python's admin client creates a topic with RF=3 and ``min.insync.replicas=2`` through one
broker (Kafka's Java Admin too, in its own test), and produces with acks=all; a config changed
through one broker is enforced by the partition leader. The slow test then kills the leader (its sockets close, nothing is flushed): the controller fences
it after ``broker.session.timeout.ms``, elects a new leader from the ISR, the brokers learn it by
fetching the metadata log, and the idempotent producer carries on; every acknowledged record is
read back exactly once.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic
from kafka.errors import NotEnoughReplicasError

from kafkalab.broker.lifecycle import BrokerState
from kafkalab.client.launcher import unused_port
from kafkalab.clock import SystemClock
from kafkalab.controller.controller_node import ControllerNode
from kafkalab.controller.heartbeats import BrokerHeartbeatManager
from kafkalab.controller.local import LocalController
from kafkalab.server import KafkaServer
from kafkalab.server.controller_server import ControllerServer
from tests.java_client import java_client

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qk"
CONTROLLER_ID = 0  # the controller's address in the brokers' channel to it
SESSION_MS = 3_000  # broker.session.timeout.ms, shortened so the failover test is quick
WAIT_S = 30.0
BATCH = 20


class Cluster:
    """The controller server and three broker servers, on one event loop."""

    def __init__(self, tmp_path: Path) -> None:
        clock = SystemClock()
        self.controller = LocalController([], random.Random(7), clock_ms=clock.milliseconds)
        self.node = ControllerNode(self.controller, CLUSTER, BrokerHeartbeatManager(SESSION_MS))
        self.controller_server = ControllerServer(self.node, clock)
        self.ports = {i: unused_port() for i in (1, 2, 3)}
        self.tmp_path = tmp_path
        self.servers: dict[int, KafkaServer] = {}

    async def start(self) -> None:
        address = await self.controller_server.start()
        for i, port in self.ports.items():
            self.servers[i] = KafkaServer(
                self.tmp_path / f"node-{i}", {"node.id": str(i), "min.insync.replicas": "2",
                                              "offsets.topic.replication.factor": "3"},
                port=port, seed=i, cluster_id=CLUSTER,
                peers={n: ("127.0.0.1", p) for n, p in self.ports.items() if n != i},
                controller_address=(CONTROLLER_ID, address))
            await self.servers[i].start()
        await until(lambda: all(s.broker is not None and s.broker.lifecycle is not None
                                and s.broker.lifecycle.state is BrokerState.RUNNING for s in self.running()))

    def running(self) -> list[KafkaServer]:
        return [s for s in self.servers.values() if s.broker is not None]

    async def create_topic(self, name: str, through: int = 2) -> int:
        """Create ``name`` (1 partition, RF=3, ``min.insync.replicas=2``) with kafka-python's
        admin client through broker ``through`` alone; its leader."""
        await asyncio.to_thread(_admin_create, self.address(through), name)
        await self.learned()
        image = self.controller.image
        assert name in image.topics
        return image.topics[name].partitions[0].leader

    def address(self, node: int) -> str:
        return f"127.0.0.1:{self.ports[node]}"

    async def learned(self) -> None:
        """Until every running broker has replayed the controller's whole log."""
        end = self.controller.image.offset
        await until(lambda: all(s.broker is not None and s.broker.image.offset >= end for s in self.running()))

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.ports.values())

    async def stop(self) -> None:
        for server in self.running():
            await server.stop()
        await self.controller_server.stop()


async def until(condition: Callable[[], bool]) -> None:
    async with asyncio.timeout(WAIT_S):
        while not condition():
            await asyncio.sleep(0.02)


def _admin_create(bootstrap: str, name: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    try:
        admin.create_topics([NewTopic(name, 1, 3, topic_configs={"min.insync.replicas": "2"})])  # raises on errors
    finally:
        admin.close()


def _admin_set(bootstrap: str, topic: str, key: str, value: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    try:
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, {key: value})], incremental=True)
    finally:
        admin.close()


def _produce_once(bootstrap: str, topic: str) -> Exception | None:
    """One acks=all record, no retries: the error the leader answered, if any."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=False, retries=0,
                             request_timeout_ms=5_000)
    try:
        producer.send(topic, b"x", partition=0).get(WAIT_S)
        return None
    except NotEnoughReplicasError as error:
        return error
    finally:
        producer.close(2)


def _produce(producer: KafkaProducer, topic: str, first: int) -> list[int]:
    futures = [producer.send(topic, f"r{i}".encode(), partition=0) for i in range(first, first + BATCH)]
    return [f.get(WAIT_S).offset for f in futures]


def _new_producer(bootstrap: str) -> KafkaProducer:
    return KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, linger_ms=2,
                         request_timeout_ms=5_000, retries=20, retry_backoff_ms=200)


def _read_all(bootstrap: str, topic: str, expected: int) -> list[bytes]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=10_000)
    try:
        consumer.assign([TopicPartition(topic, 0)])
        consumer.seek_to_beginning()
        values = []
        for message in consumer:
            values.append(message.value)
            if len(values) == expected:
                break
        return values
    finally:
        consumer.close()


def test_rf3_acks_all_over_tcp(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        try:
            await cluster.start()
            leader = await cluster.create_topic("orders", through=2)
            for server in cluster.running():  # the creation's ConfigRecord, mirrored everywhere
                assert server.broker is not None
                assert server.broker.config_store.get("topics", "orders") == {"min.insync.replicas": "2"}
            producer = await asyncio.to_thread(_new_producer, cluster.bootstrap)  # it connects at once
            try:
                offsets = await asyncio.to_thread(_produce, producer, "orders", 0)
            finally:
                await asyncio.to_thread(producer.close, 2)
            assert offsets == list(range(BATCH))
            # The idempotent producer's id came from a block the controller allocated
            # (AllocateProducerIds), recorded as ProducerIdsRecord.
            assert cluster.controller.image.next_producer_id == 1000
            await until(lambda: all(s.broker.log_store.get_log("orders", 0).high_watermark == BATCH  # type: ignore[union-attr]
                                    for s in cluster.running()))
            values = await asyncio.to_thread(_read_all, cluster.bootstrap, "orders", BATCH)
            assert values == [f"r{i}".encode() for i in range(BATCH)]
            # min.insync.replicas set through a follower is enforced by the leader.
            follower = next(n for n in cluster.servers if n != leader)
            await asyncio.to_thread(_admin_set, cluster.address(follower), "orders", "min.insync.replicas", "4")
            assert cluster.controller.image.configs[(2, "orders")] == {"min.insync.replicas": "4"}
            await cluster.learned()
            error = await asyncio.to_thread(_produce_once, cluster.address(leader), "orders")
            assert isinstance(error, NotEnoughReplicasError)
        finally:
            await cluster.stop()

    asyncio.run(asyncio.wait_for(scenario(), 4 * WAIT_S))


@pytest.mark.slow
def test_producer_keeps_going_after_the_leader_is_killed(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        try:
            await cluster.start()
            leader = await cluster.create_topic("orders")
            producer = await asyncio.to_thread(_new_producer, cluster.bootstrap)  # it connects at once
            try:
                assert await asyncio.to_thread(_produce, producer, "orders", 0) == list(range(BATCH))
                await cluster.servers[leader].halt()
                await until(lambda: cluster.controller.image.partition("orders", 0).leader not in (leader, -1))  # type: ignore[union-attr]
                await cluster.learned()
                offsets = await asyncio.to_thread(_produce, producer, "orders", BATCH)
            finally:
                await asyncio.to_thread(producer.close, 2)
            assert offsets == list(range(BATCH, 2 * BATCH))
            values = await asyncio.to_thread(_read_all, cluster.bootstrap, "orders", 2 * BATCH)
            assert values == [f"r{i}".encode() for i in range(2 * BATCH)]  # each once, in order
        finally:
            await cluster.stop()

    asyncio.run(asyncio.wait_for(scenario(), 4 * WAIT_S))


def test_java_admin_creates_a_replicated_topic_through_one_broker(tmp_path: Path) -> None:
    """Kafka's Admin 3.9.1 ``createTopics`` (CreateTopics v7, forwarded to the controller) with
    RF=3 and a config, then ``describeTopics`` sees three replicas."""
    client = java_client()

    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        try:
            await cluster.start()
            out = await asyncio.to_thread(client.run, "TopicCreator", "", cluster.address(3), "payments", "2", "3",
                                          "min.insync.replicas=2", timeout_s=90)
            lines = out.splitlines()
            assert lines[0] == "created payments 2 3"
            assert [line.split()[:2] for line in lines[1:]] == [["partition", "0"], ["partition", "1"]]
            assert all(sorted(line.split()[-1].split(",")) == ["1", "2", "3"] for line in lines[1:])
            assert cluster.controller.image.configs[(2, "payments")] == {"min.insync.replicas": "2"}
            again = await asyncio.to_thread(client.run, "TopicCreator", "", cluster.address(1), "payments", "1", "3",
                                            timeout_s=90)
            assert again.splitlines() == ["error TopicExistsException"]
        finally:
            await cluster.stop()

    asyncio.run(asyncio.wait_for(scenario(), 6 * WAIT_S))
