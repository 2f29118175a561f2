"""A cluster of real processes: replication's cost, catch-up, failover and controlled shutdown.

Every figure runs on :class:`~kafkalab.tools.process_cluster.ProcessCluster`: three broker
processes and a controller process on this machine, configured and formatted as ``kafkalab
cluster-start --nodes 3`` configures them, with Kafka's default timeouts. The client is
confluent-kafka (librdkafka), as in the server benchmark.

* ``cluster.produce_rf3_acks_all`` -- MB/s of 1 KiB values acknowledged by a topic with
  replication factor 3, ``min.insync.replicas=2`` and acks=all, against the same client, settings
  and record count on one ``server-start --data-dir`` node with replication factor 1 and acks=1.
  Each run produces to both, one after the other (the order alternates); the median of ``RUNS``
  runs is reported with the spread. Target ratio >= 0.5.
* ``cluster.follower_catch_up`` -- a follower stopped while its partition grows by
  ``CATCH_UP_BYTES`` (256 MiB; 1 GiB with ``--full``) is started again. The figure is the bytes
  it copied divided by the time from its restart (its listener is up: recovery done) until the
  leader has it back in the ISR, against the rate at which a confluent-kafka consumer reads the
  same bytes from the leader. Target ratio >= 0.5.
* ``cluster.acks_all_resume_after_leader_sigkill`` -- an acks=all producer sends a record every
  10 ms; the partition leader's process is killed with SIGKILL. The figure is the time from the
  kill until the first record sent after it is acknowledged. Baseline ``broker.session.timeout.ms`` + 2 s
  = 11,000 ms; target ratio <= 1.
* ``cluster.controlled_shutdown_100_leaders`` -- broker 1 leads all 100 partitions of a topic
  (replication factor 3) and is stopped with SIGTERM. The figure is the time from the signal until
  Metadata names another leader for every partition. Baseline 1,000 ms; target ratio <= 1.

The last two run once per default-size run (they are dominated by timeouts, not by the
machine); the first two alternate cluster and baseline side by side.
"""

from __future__ import annotations

import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from kafkalab.bench.report import Reporter
from kafkalab.controller.heartbeats import BROKER_SESSION_TIMEOUT_MS

VALUE_BYTES = 1024
VALUE = bytes(range(256)) * (VALUE_BYTES // 256)
RECORDS = 50_000  # about 50 MB of values per produce run
RUNS = 3
CATCH_UP_BYTES = 256 * 1024 * 1024
CATCH_UP_BYTES_FULL = 1024 * 1024 * 1024
RESUME_BASELINE_MS = BROKER_SESSION_TIMEOUT_MS + 2_000
SHUTDOWN_BASELINE_MS = 1_000
SHUTDOWN_PARTITIONS = 100
SEND_EVERY_S = 0.01
POLL_S = 0.02
DEADLINE_S = 120.0
COMMON: dict[str, Any] = {"socket.timeout.ms": 10_000, "topic.metadata.refresh.interval.ms": 1000, "log_level": 3}


def run(reporter: Reporter, *, full: bool = False) -> None:
    from kafkalab.client.launcher import start_server
    from kafkalab.tools.process_cluster import ProcessCluster

    with tempfile.TemporaryDirectory(prefix="kafkalab-bench-cluster-") as tmp:
        single = start_server(Path(tmp) / "single")
        try:
            with ProcessCluster(Path(tmp) / "cluster", brokers=3, properties={"min.insync.replicas": "2"}) as cluster:
                cluster.start_all()
                _produce_figure(reporter, cluster.bootstrap, single.bootstrap)
                _catch_up_figure(reporter, cluster, single.bootstrap, CATCH_UP_BYTES_FULL if full else CATCH_UP_BYTES)
                _resume_figure(reporter, cluster)
                _shutdown_figure(reporter, cluster)
        finally:
            single.stop()


# --- produce ---------------------------------------------------------------------------------

def _produce_figure(reporter: Reporter, cluster: str, single: str) -> None:
    create_topic(cluster, "rf3", 1, 3)
    create_topic(single, "rf1", 1, 1)
    cluster_mb_s: list[float] = []
    single_mb_s: list[float] = []
    for run_number in range(RUNS):
        runs: list[tuple[str, str, int | str, list[float]]] = [
            (cluster, "rf3", "all", cluster_mb_s), (single, "rf1", 1, single_mb_s)]
        for bootstrap, topic, acks, out in (runs if run_number % 2 == 0 else runs[::-1]):
            out.append(RECORDS * VALUE_BYTES / 1e6 / produce(bootstrap, topic, acks, RECORDS))
    reporter.report_runs("cluster.produce_rf3_acks_all", cluster_mb_s, "MB/s", single_mb_s, ">=0.5")


def create_topic(bootstrap: str, topic: str, partitions: int, replication_factor: int,
                 assignment: list[list[int]] | None = None) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    new = (NewTopic(topic, num_partitions=len(assignment), replica_assignment=assignment) if assignment
           else NewTopic(topic, num_partitions=partitions, replication_factor=replication_factor))
    admin.create_topics([new])[topic].result(DEADLINE_S)
    _until(lambda: all(p.leader >= 0 and len(p.isrs) == replication_factor
                       for p in _partitions(admin, topic).values()) and len(_partitions(admin, topic)) == partitions,
           f"topic {topic} ready")


def _partitions(admin: Any, topic: str) -> dict[int, Any]:
    found = admin.list_topics(topic, timeout=10).topics.get(topic)
    return {} if found is None or found.error is not None else dict(found.partitions)


def produce(bootstrap: str, topic: str, acks: int | str, count: int) -> float:
    """Seconds to send ``count`` records to partition 0 and receive every acknowledgement."""
    from confluent_kafka import Producer

    producer = Producer({**COMMON, "bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5,
                         "enable.idempotence": False, "queue.buffering.max.messages": count + 1,
                         "message.timeout.ms": 60_000})
    _send(producer, topic, 1)  # connection and metadata
    start = time.perf_counter()
    _send(producer, topic, count)
    return time.perf_counter() - start


def _send(producer: Any, topic: str, count: int) -> None:
    failures: list[object] = []

    def on_delivery(error: object, _message: object) -> None:
        if error is not None:
            failures.append(error)

    for _ in range(count):
        producer.produce(topic, VALUE, partition=0, on_delivery=on_delivery)
        producer.poll(0)
    remaining = producer.flush(DEADLINE_S)
    if remaining or failures:
        raise RuntimeError(f"{remaining} records undelivered, {len(failures)} failed: {failures[:3]}")


# --- follower catch-up -----------------------------------------------------------------------

def _catch_up_figure(reporter: Reporter, cluster: Any, single: str, size_bytes: int) -> None:
    from confluent_kafka.admin import AdminClient

    count = size_bytes // VALUE_BYTES
    create_topic(cluster.bootstrap, "catch-up", 1, 3, assignment=[[1, 2, 3]])
    cluster.stop(3)  # a clean stop: the follower leaves the ISR at once
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 3})
    _until(lambda: 3 not in _partitions(admin, "catch-up")[0].isrs, "broker 3 out of the ISR")
    produce(cluster.bootstrap, "catch-up", 1, count)
    cluster.start(3)  # returns once it listens: recovery is done, fetching begins
    started = time.perf_counter()
    _until(lambda: 3 in _partitions(admin, "catch-up")[0].isrs, "broker 3 back in the ISR", poll_s=0.05)
    catch_up_mb_s = size_bytes / 1e6 / (time.perf_counter() - started)
    create_topic(single, "consume", 1, 1)
    produce(single, "consume", 1, count)
    consume_mb_s = size_bytes / 1e6 / consume(single, "consume", count)
    reporter.report("cluster.follower_catch_up", catch_up_mb_s, "MB/s", consume_mb_s, ">=0.5")


def consume(bootstrap: str, topic: str, count: int) -> float:
    """Seconds for a confluent-kafka consumer to read ``count`` records of partition 0."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({**COMMON, "bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        start, seen, deadline = time.perf_counter(), 0, time.monotonic() + DEADLINE_S
        while seen < count and time.monotonic() < deadline:
            seen += sum(1 for m in consumer.consume(10_000, 1.0) if m.error() is None)
        if seen < count:
            raise RuntimeError(f"read {seen} of {count} records")
        return time.perf_counter() - start
    finally:
        consumer.close()


# --- failover after SIGKILL ------------------------------------------------------------------

def _resume_figure(reporter: Reporter, cluster: Any) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient

    create_topic(cluster.bootstrap, "failover", 1, 3)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 3})
    leader = _partitions(admin, "failover")[0].leader
    acked: list[tuple[float, float]] = []  # (sent at, acknowledged at)
    producer = Producer({**COMMON, "bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 0,
                         "message.timeout.ms": 60_000, "enable.idempotence": True})
    stop = threading.Event()

    def send_steadily() -> None:
        while not stop.is_set():
            sent_at = time.perf_counter()

            def on_delivery(error: object, _message: object, sent_at: float = sent_at) -> None:
                if error is None:
                    acked.append((sent_at, time.perf_counter()))

            producer.produce("failover", b"x", partition=0, on_delivery=on_delivery)
            producer.poll(SEND_EVERY_S)

    sender = threading.Thread(target=send_steadily, daemon=True)
    sender.start()
    try:
        _until(lambda: len(acked) >= 50, "acknowledged records before the kill")
        killed_at = time.perf_counter()
        cluster.kill(leader)
        # An answer already on its way when the process died is no resumption: count the first
        # record sent after the kill (the producer sends one every SEND_EVERY_S).
        _until(lambda: any(sent > killed_at for sent, _ in acked), "a record sent after the kill acknowledged")
        resumed_ms = (min(done for sent, done in acked if sent > killed_at) - killed_at) * 1000
    finally:
        stop.set()
        sender.join(DEADLINE_S)
        producer.flush(10)
    cluster.start(leader)
    reporter.report("cluster.acks_all_resume_after_leader_sigkill", resumed_ms, "ms", RESUME_BASELINE_MS, "<=1.0")


# --- controlled shutdown ---------------------------------------------------------------------

def _shutdown_figure(reporter: Reporter, cluster: Any) -> None:
    from confluent_kafka.admin import AdminClient

    assignment = [[1, 2, 3]] * SHUTDOWN_PARTITIONS  # broker 1 is every partition's preferred leader
    create_topic(cluster.bootstrap, "led-by-1", SHUTDOWN_PARTITIONS, 3, assignment=assignment)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 3})
    _until(lambda: all(p.leader == 1 for p in _partitions(admin, "led-by-1").values()), "broker 1 leads all")
    process = cluster.processes[1].process
    signalled = time.perf_counter()
    process.terminate()
    _until(lambda: all(p.leader not in (1, -1) for p in _partitions(admin, "led-by-1").values()),
           "every partition led elsewhere", poll_s=POLL_S)
    moved_ms = (time.perf_counter() - signalled) * 1000
    cluster.processes.pop(1).stop()
    reporter.report("cluster.controlled_shutdown_100_leaders", moved_ms, "ms", SHUTDOWN_BASELINE_MS, "<=1.0")


def _until(condition: Any, what: str, poll_s: float = 0.1) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(poll_s)
    raise RuntimeError(f"timed out waiting for {what}")


__all__ = ["run"]
