"""``kafkalab consumer-groups`` against a kafkalab server, with groups made by real clients.

The oracle is confluent-kafka (librdkafka): for every row the tool prints, CURRENT-OFFSET must
equal what ``Consumer.committed()`` reports, LOG-END-OFFSET the high watermark of
``get_watermark_offsets()``, and LAG their difference. Resets are read back through librdkafka
too, and ``--to-datetime`` is checked against records whose timestamps the producer chose.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer as CKConsumer
from confluent_kafka import TopicPartition as CKPartition
from kafka import KafkaProducer

from kafkalab.client.launcher import start_server
from kafkalab.tools.cli import main
from tests.interop.conftest import EXTERNAL_BOOTSTRAP
from tests.interop.support import create_topic

OVERRIDES = ["group.initial.rebalance.delay.ms=300", "group.min.session.timeout.ms=1000"]
RECORDS = (10, 11, 12)  # records per partition
STEP_MS = 1_000  # record i of every partition has timestamp BASE_MS + i * STEP_MS
BASE_MS = 1_700_000_000_000  # 2023-11-14T22:13:20.000Z
DEADLINE_S = 15.0

pytestmark = pytest.mark.skipif(bool(EXTERNAL_BOOTSTRAP), reason="starts its own servers")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    process = start_server(tmp_path_factory.mktemp("groups-tool") / "data", overrides=OVERRIDES)
    try:
        yield process.bootstrap
    finally:
        process.stop()


def tool(capsys: pytest.CaptureFixture[str], bootstrap: str, *args: str) -> tuple[int, str, str]:
    status = main(["consumer-groups", "--bootstrap-server", bootstrap, *args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def table(out: str) -> list[dict[str, str]]:
    """The rows of a Kafka-style table as dicts keyed by the header's column names."""
    lines = [line for line in out.splitlines() if line.strip()]
    header = lines[0].split()
    return [dict(zip(header, line.split())) for line in lines[1:]]


def produce(bootstrap: str, topic: str) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1)
    for partition, count in enumerate(RECORDS):
        for i in range(count):
            producer.send(topic, value=b"v", partition=partition, timestamp_ms=BASE_MS + i * STEP_MS)
    producer.flush(10)
    producer.close(5)


def ck_consumer(bootstrap: str, group: str) -> CKConsumer:
    return CKConsumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": "tool-test",
                       "auto.offset.reset": "earliest", "enable.auto.commit": False,
                       "session.timeout.ms": 6000, "heartbeat.interval.ms": 500})


def join(consumer: CKConsumer, topic: str) -> None:
    consumer.subscribe([topic])
    end = time.monotonic() + DEADLINE_S
    while not consumer.assignment() and time.monotonic() < end:
        consumer.poll(0.1)
    assert consumer.assignment(), "the consumer never got an assignment"


def librdkafka_view(bootstrap: str, group: str, topic: str) -> dict[int, tuple[str, str, str]]:
    """partition -> (CURRENT-OFFSET, LOG-END-OFFSET, LAG) as librdkafka sees the group."""
    reader = ck_consumer(bootstrap, group)
    try:
        committed = reader.committed([CKPartition(topic, p) for p in range(len(RECORDS))], timeout=10)
        view = {}
        for tp in committed:
            high = reader.get_watermark_offsets(CKPartition(topic, tp.partition), timeout=10)[1]
            if tp.offset < 0:  # OFFSET_INVALID: never committed
                view[tp.partition] = ("-", str(high), "-")
            else:
                view[tp.partition] = (str(tp.offset), str(high), str(high - tp.offset))
        return view
    finally:
        reader.close()


def tool_view(rows: list[dict[str, str]]) -> dict[int, tuple[str, str, str]]:
    return {int(r["PARTITION"]): (r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["LAG"]) for r in rows}


@pytest.mark.timeout(90)
def test_describe_of_an_active_group_matches_librdkafka(server: str, topic_name: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    create_topic(server, topic_name, partitions=len(RECORDS))
    produce(server, topic_name)
    group = f"{topic_name}-g"
    consumer = ck_consumer(server, group)
    try:
        join(consumer, topic_name)
        consumer.commit(offsets=[CKPartition(topic_name, 0, 4), CKPartition(topic_name, 1, 7)], asynchronous=False)
        status, out, _ = tool(capsys, server, "--describe", "--group", group)
        rows = table(out)
        assert status == 0 and len(rows) == 3
        assert tool_view(rows) == librdkafka_view(server, group, topic_name)
        assert tool_view(rows) == {0: ("4", "10", "6"), 1: ("7", "11", "4"), 2: ("-", "12", "-")}
        assert {(r["CONSUMER-ID"], r["HOST"], r["CLIENT-ID"]) for r in rows} == {
            (consumer.memberid(), "/127.0.0.1", "tool-test")}

        status, out, _ = tool(capsys, server, "--describe", "--group", group, "--members", "--verbose")
        assert table(out) == [{"GROUP": group, "CONSUMER-ID": consumer.memberid(), "HOST": "/127.0.0.1",
                               "CLIENT-ID": "tool-test", "#PARTITIONS": "3",
                               "ASSIGNMENT": f"{topic_name}(0,1,2)"}]
        status, out, _ = tool(capsys, server, "--describe", "--group", group, "--state")
        (state,) = table(out.replace("COORDINATOR (ID)", "COORDINATOR").replace("  (", "-("))
        assert (state["STATE"], state["ASSIGNMENT-STRATEGY"], state["#MEMBERS"]) == ("Stable", "range", "1")
        assert group in tool(capsys, server, "--list")[1].splitlines()
        assert {"GROUP": group, "STATE": "Stable"} in table(tool(capsys, server, "--list", "--state")[1])

        status, out, _ = tool(capsys, server, "--reset-offsets", "--group", group, "--all-topics",
                              "--to-earliest", "--execute")
        assert status == 1 and (f"Assignments can only be reset if the group '{group}' is inactive, "
                                "but the current state is Stable.") in out
        status, out, _ = tool(capsys, server, "--delete", "--group", group)
        assert status == 1 and "NON_EMPTY_GROUP" in out
    finally:
        consumer.close()
    assert librdkafka_view(server, group, topic_name)[0] == ("4", "10", "6")  # the refused reset did nothing


@pytest.mark.timeout(90)
def test_resets_of_an_empty_group_read_back_through_librdkafka(server: str, topic_name: str,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    create_topic(server, topic_name, partitions=len(RECORDS))
    produce(server, topic_name)
    group = f"{topic_name}-g"
    consumer = ck_consumer(server, group)
    join(consumer, topic_name)
    consumer.commit(offsets=[CKPartition(topic_name, p, 3) for p in range(3)], asynchronous=False)
    consumer.close()

    def reset(*scenario: str, scope: tuple[str, ...] = ("--all-topics",)) -> dict[int, str]:
        status, out, err = tool(capsys, server, "--reset-offsets", "--group", group, *scope, *scenario)
        assert status == 0, out + err
        return {int(r["PARTITION"]): r["NEW-OFFSET"] for r in table(out)}

    def committed() -> list[str]:
        return [cur for cur, _, _ in (librdkafka_view(server, group, topic_name)[p] for p in range(3))]

    assert reset("--to-earliest", "--dry-run") == {0: "0", 1: "0", 2: "0"}
    assert committed() == ["3", "3", "3"]  # a dry run commits nothing
    assert reset("--to-latest", "--execute") == {0: "10", 1: "11", 2: "12"}
    assert committed() == ["10", "11", "12"]
    # The time index: record 5 is the first at or after BASE + 4.5 s in every partition.
    moment = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime((BASE_MS + 4 * STEP_MS) // 1000)) + ".500"
    assert reset("--to-datetime", moment, "--execute") == {0: "5", 1: "5", 2: "5"}
    assert committed() == ["5", "5", "5"]
    assert reset("--shift-by", "-2", "--execute", scope=("--topic", f"{topic_name}:1")) == {1: "3"}
    assert reset("--to-offset", "1000", "--execute", scope=("--topic", topic_name)) == {0: "10", 1: "11", 2: "12"}
    assert reset("--shift-by", "-100", "--execute") == {0: "0", 1: "0", 2: "0"}  # clamped to log start
    assert reset("--to-current", "--dry-run") == {0: "0", 1: "0", 2: "0"}
    # Every record is years old: "the last day" holds none, so each partition falls back to latest.
    status, out, _ = tool(capsys, server, "--reset-offsets", "--group", group, "--all-topics",
                          "--by-duration", "P1D", "--execute")
    assert f"Warn: Partition 0 from topic {topic_name} is empty. Falling back to latest known offset." in out
    assert committed() == ["10", "11", "12"]

    status, out, _ = tool(capsys, server, "--delete-offsets", "--group", group, "--topic", f"{topic_name}:2")
    assert status == 0 and f"{topic_name:<30} {2:<15} Successful" in out
    status, out, err = tool(capsys, server, "--describe", "--group", group)
    assert f"Consumer group '{group}' has no active members." in err
    assert tool_view(table(out)) == {p: v for p, v in librdkafka_view(server, group, topic_name).items() if p != 2}
    assert all(r["CONSUMER-ID"] == "-" for r in table(out))

    assert tool(capsys, server, "--delete", "--group", group)[1] == (
        f"Deletion of requested consumer groups ('{group}') was successful.\n")
    status, out, _ = tool(capsys, server, "--describe", "--group", group)
    assert status == 1 and out == f"\nError: Consumer group '{group}' does not exist.\n"
    assert committed() == ["-", "-", "-"]


@pytest.mark.timeout(90)
def test_lag_after_a_broker_restart_matches_librdkafka(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data_dir, topic, group = tmp_path / "data", "restart-lag", "restart-lag-g"
    process = start_server(data_dir, overrides=OVERRIDES)
    try:
        create_topic(process.bootstrap, topic, partitions=len(RECORDS))
        produce(process.bootstrap, topic)
        consumer = ck_consumer(process.bootstrap, group)
        join(consumer, topic)
        consumer.commit(offsets=[CKPartition(topic, p, 2 + p) for p in range(3)], asynchronous=False)
        consumer.close()
    finally:
        process.stop()
    process = start_server(data_dir, overrides=OVERRIDES)
    try:
        status, out, _ = tool(capsys, process.bootstrap, "--describe", "--group", group)
        assert status == 0
        assert tool_view(table(out)) == librdkafka_view(process.bootstrap, group, topic) == {
            0: ("2", "10", "8"), 1: ("3", "11", "8"), 2: ("4", "12", "8")}
    finally:
        process.stop()


@pytest.mark.timeout(90)
def test_members_of_a_kafka_python_group_and_a_static_librdkafka_member(server: str, topic_name: str,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    import threading

    from kafka import KafkaConsumer

    create_topic(server, topic_name, partitions=4)
    group = f"{topic_name}-kp"
    consumers = [KafkaConsumer(topic_name, bootstrap_servers=server, group_id=group, client_id=f"kp-{i}",
                               enable_auto_commit=False, session_timeout_ms=6000, heartbeat_interval_ms=300)
                 for i in range(2)]
    stop = threading.Event()

    def keep_polling(consumer: KafkaConsumer) -> None:
        while not stop.is_set():
            consumer.poll(timeout_ms=100)

    threads = [threading.Thread(target=keep_polling, args=(c,)) for c in consumers]
    for thread in threads:
        thread.start()
    try:
        end = time.monotonic() + DEADLINE_S
        while time.monotonic() < end and sorted(len(c.assignment()) for c in consumers) != [2, 2]:
            time.sleep(0.1)
        status, out, _ = tool(capsys, server, "--describe", "--group", group, "--members", "--verbose")
        rows = sorted(table(out), key=lambda r: r["CLIENT-ID"])
        assert [(r["CLIENT-ID"], r["#PARTITIONS"]) for r in rows] == [("kp-0", "2"), ("kp-1", "2")]
        owned = {r["CLIENT-ID"]: r["ASSIGNMENT"] for r in rows}
        assert owned == {f"kp-{i}": f"{topic_name}({','.join(str(tp.partition) for tp in sorted(c.assignment()))})"
                         for i, c in enumerate(consumers)}
    finally:
        stop.set()
        for thread in threads:
            thread.join(10)
        for consumer in consumers:
            consumer.close()

    static_group = f"{topic_name}-static"
    static = CKConsumer({"bootstrap.servers": server, "group.id": static_group, "group.instance.id": "pod-7",
                         "session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
    try:
        join(static, topic_name)
        status, out, _ = tool(capsys, server, "--describe", "--group", static_group, "--members")
        (row,) = table(out)
        assert (row["GROUP-INSTANCE-ID"], row["#PARTITIONS"]) == ("pod-7", "4")
    finally:
        static.close()
