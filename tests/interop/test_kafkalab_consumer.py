"""kafkalab's consumer against brokers nobody here wrote (librdkafka's mock cluster), with data
produced by confluent-kafka and groups shared with confluent-kafka's consumer; and against
kafkalab's server over a read_committed log built from kafka-python's bytes."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kafkalab.client.consumer import ConsumerRecord
from kafkalab.client.consumer.core import RebalanceEvent
from kafkalab.client.consumer.network import KafkaConsumer
from kafkalab.errors import OffsetOutOfRangeError
from tests.interop.support import create_topic
from tests.interop.test_read_committed import COMMITTED, EVERYTHING, OPEN_TXN_OFFSET, _build_log

confluent_kafka = pytest.importorskip("confluent_kafka")

PARTITIONS = 4  # the mock cluster creates topics with 4 partitions unless told otherwise
DEADLINE_S = 30.0


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture(scope="module")
def mock_bootstrap() -> Iterator[str]:
    """A librdkafka mock cluster of 3 brokers; librdkafka logs its address at debug level."""
    lines = _Lines()
    logger = logging.getLogger("rdkafka-mock-consumer-tests")
    logger.addHandler(lines)
    logger.setLevel(logging.DEBUG)
    handle = confluent_kafka.Producer({"test.mock.num.brokers": 3, "debug": "mock", "logger": logger})
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        handle.poll(0.1)
        found = [line for line in lines.lines if "Mock cluster enabled" in line]
        if found:
            yield found[0].rsplit(" ", 1)[1]
            del handle
            return
    raise AssertionError(f"librdkafka logged no mock cluster address: {lines.lines[-5:]}")


def produce(bootstrap: str, topic: str, count: int, **settings: Any) -> dict[int, list[bytes]]:
    """Produce ``count`` keyed records with confluent-kafka; the values per partition, in offset order."""
    delivered: dict[int, list[tuple[int, bytes]]] = {}

    def on_delivery(error: Any, message: Any) -> None:
        assert error is None, error
        delivered.setdefault(message.partition(), []).append((message.offset(), message.value()))

    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **settings})
    for i in range(count):
        producer.produce(topic, value=b"value-%d" % i, key=b"key-%d" % (i % 37), on_delivery=on_delivery)
        producer.poll(0)
    assert producer.flush(30) == 0
    return {p: [v for _, v in sorted(rows)] for p, rows in delivered.items()}


def consume(consumers: list[Any], expected: int, deadline_s: float = DEADLINE_S) -> list[ConsumerRecord]:
    """Poll every consumer in turn (kafkalab's or confluent-kafka's) until ``expected`` records came."""
    got: list[ConsumerRecord] = []
    end = time.monotonic() + deadline_s
    while len(got) < expected and time.monotonic() < end:
        for consumer in consumers:
            if isinstance(consumer, KafkaConsumer):
                got.extend(consumer.poll(50))
            else:
                message = consumer.poll(0.05)
                if message is not None and not message.error():
                    got.append(ConsumerRecord(message.topic(), message.partition(), message.offset(),
                                              message.timestamp()[1], message.key(), message.value()))
    return got


def by_partition(records: list[ConsumerRecord]) -> dict[int, list[tuple[int, bytes | None]]]:
    out: dict[int, list[tuple[int, bytes | None]]] = {}
    for r in records:
        out.setdefault(r.partition, []).append((r.offset, r.value))
    return out


@pytest.mark.timeout(120)
@pytest.mark.parametrize("topic, settings", [
    ("plain", {}), ("lz4", {"compression.type": "lz4"}), ("zstd-small-fetches", {"compression.type": "zstd"}),
])
def test_every_record_once_in_order_from_the_mock_cluster(mock_bootstrap: str, topic: str,
                                                          settings: dict[str, Any]) -> None:
    produced = produce(mock_bootstrap, topic, 2_000, **settings)
    small = {"max.partition.fetch.bytes": 3_000, "max.poll.records": 7} if "small" in topic else {}
    consumer = KafkaConsumer({"bootstrap.servers": mock_bootstrap, "group.id": f"g-{topic}",
                              "auto.offset.reset": "earliest", **small})
    consumer.subscribe([topic])
    try:
        records = consume([consumer], 2_000)
        time.sleep(0.3)
        records += consumer.poll(200)  # nothing more: no duplicates
    finally:
        consumer.close()
    got = by_partition(records)
    assert sorted(got) == sorted(produced)
    for partition, values in produced.items():
        assert got[partition] == list(enumerate(values)), f"partition {partition}"


@pytest.mark.timeout(120)
def test_commits_are_what_confluent_kafka_reads_as_committed(mock_bootstrap: str) -> None:
    topic = "committed"
    produced = produce(mock_bootstrap, topic, 400)
    consumer = KafkaConsumer({"bootstrap.servers": mock_bootstrap, "group.id": "g-commit",
                              "auto.offset.reset": "earliest", "enable.auto.commit": False})
    answers: list[Any] = []
    consumer.subscribe([topic])
    try:
        records = consume([consumer], 400)
        assert len(records) == 400
        consumer.commit_sync({(topic, 0): 3})
        consumer.commit_async(None, lambda offsets, error: answers.append((offsets, error)))
        deadline = time.monotonic() + 10
        while not answers and time.monotonic() < deadline:
            consumer.poll(50)
    finally:
        consumer.close()
    assert answers and answers[0][1] is None
    assert answers[0][0] == {(topic, p): len(v) for p, v in produced.items()}
    reader = confluent_kafka.Consumer({"bootstrap.servers": mock_bootstrap, "group.id": "g-commit"})
    try:
        committed = reader.committed([confluent_kafka.TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)
    finally:
        reader.close()
    assert {c.partition: c.offset for c in committed} == {p: len(produced.get(p, [])) for p in range(PARTITIONS)}


# Some 40 s of the mock cluster's rebalancing, so it runs in make campaign; the default suite has
# kafkalab's member beside librdkafka's in test_membership_sockets.py.
@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_group_of_kafkalab_and_confluent_consumers_shares_partitions(mock_bootstrap: str) -> None:
    topic, group = "shared", "g-shared"
    create = confluent_kafka.Producer({"bootstrap.servers": mock_bootstrap})
    create.produce(topic, b"warm-up", partition=0)
    create.flush(10)
    events: list[RebalanceEvent] = []
    # A short max.poll.interval.ms bounds how long the mock coordinator waits for rejoins: members
    # joining one by one cause a few rebalances before all three are in.
    common = {"bootstrap.servers": mock_bootstrap, "group.id": group, "auto.offset.reset": "earliest",
              "partition.assignment.strategy": "range", "heartbeat.interval.ms": 500,
              "session.timeout.ms": 6_000, "max.poll.interval.ms": 10_000}
    ours = [KafkaConsumer(common) for _ in range(2)]
    theirs = confluent_kafka.Consumer(common)
    for consumer in ours:
        consumer.subscribe([topic], listener=events.append)
    try:
        # Ours settle first, then confluent-kafka's joins: one rebalance at a time. (The mock
        # coordinator answers some SyncGroups with a null assignment, which Kafka's schema does
        # not allow; the member treats that as a lost coordinator and rejoins, and overlapping
        # joins then take many rounds to settle.)
        consumed = consume(ours, 10**9, deadline_s=5)
        theirs.subscribe([topic])
        end = time.monotonic() + 90
        while time.monotonic() < end and not _balanced(ours, theirs):
            consumed += consume([*ours, theirs], 10**9, deadline_s=0.2)
        assert _balanced(ours, theirs), [c.assignment() for c in ours]
        produced = produce(mock_bootstrap, topic, 1_000)
        consumed += consume([*ours, theirs], 1_000)
        consumed += consume([*ours, theirs], 10**9, deadline_s=2)  # stragglers, and any duplicate
    finally:
        for consumer in ours:
            consumer.close()
        theirs.close()
    assert any(e.kind == "assigned" for e in events)
    # Before the group settled the warm-up record may be read twice (at least once); after it,
    # every record exactly once, in order per partition, whichever client owned the partition.
    got = by_partition([r for r in consumed if r.value != b"warm-up"])
    for partition, values in produced.items():
        assert [v for _, v in got[partition]] == values, f"partition {partition}"
        offsets = [o for o, _ in got[partition]]
        assert offsets == sorted(set(offsets)), f"partition {partition}"


def _balanced(ours: list[KafkaConsumer], theirs: Any) -> bool:
    mine = [set(c.assignment()) for c in ours]
    their = {(tp.topic, tp.partition) for tp in theirs.assignment()}
    every = [*mine, their]
    return all(every) and sum(len(s) for s in every) == PARTITIONS and len(set().union(*every)) == PARTITIONS


@pytest.mark.timeout(120)
@pytest.mark.parametrize("isolation, expected", [("read_committed", COMMITTED), ("read_uncommitted", EVERYTHING)])
def test_read_committed_over_a_log_kafka_python_wrote(bootstrap: str, topic_name: str, isolation: str,
                                                      expected: list[bytes]) -> None:
    _build_log(bootstrap, topic_name)
    consumer = KafkaConsumer({"bootstrap.servers": bootstrap, "isolation.level": isolation,
                              "auto.offset.reset": "earliest", "fetch.max.wait.ms": 100})
    tp = (topic_name, 0)
    consumer.assign([tp])
    try:
        values = [r.value for r in consume([consumer], len(expected), deadline_s=15)]
        time.sleep(0.5)
        values += [r.value for r in consumer.poll(300)]
        position = consumer.position(tp)
    finally:
        consumer.close()
    assert values == expected
    assert position == (OPEN_TXN_OFFSET if isolation == "read_committed" else OPEN_TXN_OFFSET + 1)


@pytest.mark.timeout(120)
def test_positions_seeks_and_offset_reset_against_kafkalab_server(bootstrap: str, topic_name: str) -> None:
    create_topic(bootstrap, topic_name, partitions=1)
    produce(bootstrap, topic_name, 50)
    tp = (topic_name, 0)
    with KafkaConsumer({"bootstrap.servers": bootstrap}) as latest:  # auto.offset.reset=latest
        latest.assign([tp])
        assert latest.position(tp) == 50
        latest.seek_to_beginning([tp])
        assert latest.position(tp) == 0
        latest.seek(tp, 45)
        assert [r.offset for r in consume([latest], 5, deadline_s=10)] == [45, 46, 47, 48, 49]
        latest.seek(tp, 10_000)  # out of range: reset to latest again
        consume([latest], 1, deadline_s=2)
        assert latest.position(tp) == 50
    with KafkaConsumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"}) as earliest:
        earliest.assign([tp])
        earliest.seek(tp, 10_000)
        assert [r.offset for r in consume([earliest], 50, deadline_s=10)] == list(range(50))
    with KafkaConsumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "none"}) as strict:
        strict.assign([tp])
        strict.seek(tp, 10_000)
        with pytest.raises(OffsetOutOfRangeError) as raised:
            consume([strict], 1, deadline_s=10)
        assert raised.value.error_code == 1


@pytest.mark.timeout(120)
def test_a_listener_commits_revoked_partitions_before_the_next_owner_starts(bootstrap: str, topic_name: str) -> None:
    """On kafkalab's server: librdkafka's mock coordinator refuses every commit while a
    rebalance is in progress, where Kafka's accepts the current generation's."""
    topic, group = topic_name, f"g-{topic_name}"
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    produce(bootstrap, topic, 400)
    common = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
              "enable.auto.commit": False, "partition.assignment.strategy": "range",
              "heartbeat.interval.ms": 500, "session.timeout.ms": 6_000, "max.poll.interval.ms": 10_000}
    first, second = KafkaConsumer(common), KafkaConsumer(common)
    committed_in_listener: list[dict[Any, int]] = []

    def on_rebalance(event: RebalanceEvent) -> None:
        if event.kind == "revoked" and event.positions:
            first.commit_sync(event.positions)  # committed before the member rejoins
            committed_in_listener.append(dict(event.positions))

    first.subscribe([topic], listener=on_rebalance)
    try:
        records = consume([first], 400)
        assert len(records) == 400
        second.subscribe([topic])
        end = time.monotonic() + 60
        while time.monotonic() < end and not (first.assignment() and second.assignment()):
            records += consume([first, second], 10**9, deadline_s=0.2)
    finally:
        first.close()
        second.close()
    assert committed_in_listener, "the first consumer heard no revocation"
    # Every record once: the second consumer started where the listener's commit said.
    assert sorted((r.partition, r.offset) for r in records) == sorted({(r.partition, r.offset) for r in records})
    assert len(records) == 400


@pytest.mark.timeout(120)
@pytest.mark.parametrize("broker", ["librdkafka-mock", "kafkalab-server"])
def test_commits_after_assign_without_a_subscription(request: pytest.FixtureRequest, broker: str) -> None:
    """assign() with a group.id commits outside any generation (-1, member id ""); what it
    commits is what confluent-kafka (and kafka-python's admin) read as the group's offsets, and
    where a later assign()-ing consumer of the group starts."""
    topic, group = f"manual-{broker}", f"g-manual-{broker}"
    if broker == "kafkalab-server":
        bootstrap = request.getfixturevalue("bootstrap")
        create_topic(bootstrap, topic, partitions=PARTITIONS)
    else:
        bootstrap = request.getfixturevalue("mock_bootstrap")
    produced = produce(bootstrap, topic, 200)
    tps = [(topic, p) for p in sorted(produced)]
    settings = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                "enable.auto.commit": False, "fetch.max.wait.ms": 100}
    answers: list[Any] = []
    with KafkaConsumer(settings) as consumer:
        consumer.assign(tps)
        assert len(consume([consumer], 200, deadline_s=15)) == 200
        consumer.commit_sync({tps[0]: 3})
        consumer.commit_async({tp: consumer.position(tp) for tp in tps[1:]},
                              lambda offsets, error: answers.append(error))
        deadline = time.monotonic() + 10
        while not answers and time.monotonic() < deadline:
            consumer.poll(50)
    assert answers == [None]
    expected = {tps[0][1]: 3, **{p: len(produced[p]) for _, p in tps[1:]}}
    reader = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        committed = reader.committed([confluent_kafka.TopicPartition(topic, p) for _, p in tps], timeout=10)
    finally:
        reader.close()
    assert {c.partition: c.offset for c in committed} == expected
    if broker == "kafkalab-server":
        from kafka.admin import KafkaAdminClient

        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
        try:
            offsets = admin.list_group_offsets({group: None})[group]
        finally:
            admin.close()
        assert {tp.partition: meta.offset for tp, meta in offsets.items()} == expected
    with KafkaConsumer({**settings, "enable.auto.commit": True}) as resumed:
        resumed.assign([tps[0]])
        assert resumed.position(tps[0], timeout_ms=10_000) == 3  # the group's committed offset
        records = consume([resumed], len(produced[tps[0][1]]) - 3, deadline_s=10)
        assert [r.offset for r in records] == list(range(3, len(produced[tps[0][1]])))
    # close() committed the position under enable.auto.commit
    reader = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        [after] = reader.committed([confluent_kafka.TopicPartition(topic, tps[0][1])], timeout=10)
    finally:
        reader.close()
    assert after.offset == len(produced[tps[0][1]])


def test_commits_without_a_group_id_raise_invalid_group_id(bootstrap: str) -> None:
    from kafkalab.client.consumer.core import InvalidGroupIdError

    with KafkaConsumer({"bootstrap.servers": bootstrap}) as consumer:
        consumer.assign([("anything", 0)])
        with pytest.raises(InvalidGroupIdError) as raised:
            consumer.commit_sync({("anything", 0): 1})
    assert raised.value.error_code == 24  # INVALID_GROUP_ID
