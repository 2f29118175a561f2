"""Fetching from the closest replica (KIP-392) on a simulated 3-rack cluster: the leader points a
consumer in another rack to the follower in its own rack, and the follower serves it up to the
follower's high watermark. Every request and answer crosses the network as encoded Kafka bytes."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from kafkalab.broker.replica_fetch import follower_fetch_request
from kafkalab.client.consumer import ConsumerConfig, ConsumerCore
from kafkalab.errors import ErrorCode
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.records import Record, build_batch, iter_batches
from kafkalab.replication.fetcher import PartitionFetch
from kafkalab.replication.replica_selector import (
    RACK_AWARE_REPLICA_SELECTOR, Candidate, ReplicaView, preferred_read_replica, rack_aware)
from kafkalab.sim.cluster import SimCluster

RACKS = {1: "a", 2: "b", 3: "c"}


def fetch(cluster: SimCluster, node: int, offset: int, *, rack: str, version: int = 12) -> Any:
    """One consumer Fetch (replica id -1) of orders-0 sent to ``node``; its partition answer."""
    answers: list[Any] = []
    request = follower_fetch_request(-1, [PartitionFetch("orders", 0, offset, -1, -1, -1, 1 << 20)])
    body = dataclasses.replace(request, max_wait_ms=0, min_bytes=0, rack_id=rack)
    cluster.send_request(node, ApiKey.FETCH, version, body,
                         lambda response: answers.append(response.responses[0].partitions[0]))
    cluster.run_until(lambda: bool(answers), 10_000)
    return answers[0]


def offsets_of(answer: Any) -> list[int]:
    data = answer.records.read_bytes() if hasattr(answer.records, "read_bytes") else bytes(answer.records or b"")
    return [r.offset for batch in iter_batches(data) for r in batch.records]


@pytest.fixture
def cluster(tmp_path: Path) -> SimCluster:
    sim = SimCluster(tmp_path, nodes=3, seed=3, racks=RACKS,
                     properties={"replica.selector.class": RACK_AWARE_REPLICA_SELECTOR})
    sim.create_topic("orders", 1, 3)
    for value in (b"a", b"b", b"c"):
        assert sim.produce("orders", 0, build_batch([Record(0, 0, None, value)]), acks=-1).error_code == 0
    sim.run_for(2_000)  # the followers' next fetches bring them the leader's HW
    yield sim
    sim.close()


def test_the_leader_sends_a_consumer_to_the_follower_in_its_rack(cluster: SimCluster):
    leader = cluster.leader("orders", 0)
    follower = next(n for n in RACKS if n != leader)
    answer = fetch(cluster, leader, 0, rack=RACKS[follower])
    assert (answer.error_code, answer.preferred_read_replica, offsets_of(answer)) == (0, follower, [])
    served = fetch(cluster, follower, 0, rack=RACKS[follower])
    assert (served.error_code, served.preferred_read_replica, offsets_of(served)) == (0, -1, [0, 1, 2])


def test_a_consumer_in_the_leaders_rack_or_with_none_reads_the_leader(cluster: SimCluster):
    leader = cluster.leader("orders", 0)
    for rack in (RACKS[leader], "", "elsewhere"):
        answer = fetch(cluster, leader, 0, rack=rack)
        assert (answer.preferred_read_replica, offsets_of(answer)) == (-1, [0, 1, 2]), rack


def test_before_fetch_v11_only_the_leader_serves_consumers(cluster: SimCluster):
    follower = next(n for n in RACKS if n != cluster.leader("orders", 0))
    answer = fetch(cluster, follower, 0, rack="", version=10)
    assert answer.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_a_follower_serves_only_below_its_own_high_watermark(cluster: SimCluster):
    leader = cluster.leader("orders", 0)
    follower = next(n for n in RACKS if n != leader)
    log = cluster.nodes[follower].broker.replica_manager.partition("orders", 0).log
    cluster.send_produce("orders", 0, build_batch([Record(0, 0, None, b"d")]), lambda answer: None, acks=1)
    assert cluster.run_until(lambda: log.log_end_offset == 4, 5_000)
    # It holds offset 3 but learns that the HW passed it only with its next fetch's answer.
    assert log.high_watermark == 3
    answer = fetch(cluster, follower, 0, rack=RACKS[follower])
    assert (answer.high_watermark, offsets_of(answer)) == (3, [0, 1, 2])  # not offset 3 yet
    assert cluster.consume("orders", 0, 0).high_watermark == 4  # the leader already serves it


def test_the_rack_aware_selector_follows_kafkas_order():
    leader = ReplicaView(1, "a", 100, 0)
    behind, ahead, fresher = ReplicaView(2, "b", 90, 0), ReplicaView(3, "b", 100, 500), ReplicaView(4, "b", 100, 10)
    assert rack_aware("b", [leader, behind, ahead, fresher], leader) == fresher  # highest LEO, then most recent
    assert rack_aware("b", [leader, behind], leader) == behind
    assert rack_aware("a", [leader, ahead], leader) == leader  # the leader's own rack
    assert rack_aware("z", [leader, ahead], leader) == leader and rack_aware("", [leader, ahead], leader) == leader


def test_only_in_sync_followers_holding_the_offset_are_offered():
    racks = {1: "a", 2: "b", 3: "b"}

    def choose(*followers: Candidate, offset: int = 50) -> int:
        return preferred_read_replica(rack_aware, "b", 1, 100, followers, racks, offset, now_ms=1_000)

    assert choose(Candidate(2, False, 0, 100, 0)) == -1  # out of the ISR
    assert choose(Candidate(2, True, 60, 100, 0)) == -1  # the offset is below its log start
    assert choose(Candidate(2, True, 0, 40, 0)) == -1  # the offset is beyond its log end
    assert choose(Candidate(2, True, 0, 100, 900), Candidate(3, True, 0, 100, 990)) == 3
    assert preferred_read_replica(rack_aware, "b", 1, 100, [Candidate(5, True, 0, 100, 0)], racks, 50, 0) == -1


def test_kafkalabs_consumer_follows_the_preferred_read_replica(cluster: SimCluster):
    leader = cluster.leader("orders", 0)
    follower = next(n for n in RACKS if n != leader)
    sent_to: list[int] = []
    consumer = cluster.add_consumer("near", ConsumerCore(ConsumerConfig(
        client_rack=RACKS[follower], auto_offset_reset="earliest", enable_auto_commit=False)))
    consumer.assign([("orders", 0)])
    poll_requests = consumer.poll_requests

    def noting_fetches(now_ms: int) -> list[Any]:
        requests = poll_requests(now_ms)
        sent_to.extend(r.destination for r in requests if r.api_key == ApiKey.FETCH)
        return requests

    consumer.poll_requests = noting_fetches  # type: ignore[method-assign]
    values: list[bytes] = []
    for _ in range(20):
        cluster.run_for(100)
        values += [r.value for r in consumer.take_records(cluster.clock.milliseconds())]
    assert values == [b"a", b"b", b"c"]
    assert sent_to[0] == leader and set(sent_to[1:]) == {follower}  # pointed once, then stays
    assert consumer.read_replicas[("orders", 0)][0] == follower
