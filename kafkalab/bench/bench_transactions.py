"""Transactional produce against idempotent produce, on one kafkalab server (issue target).

A transaction costs more than its records: InitProducerId once, then per transaction an
AddPartitionsToTxn, an EndTxn, two ``__transaction_state`` appends on the coordinator side
(PrepareCommit, CompleteCommit) and a COMMIT marker in the partition -- and the producer waits
for EndTxn before it starts the next transaction. With 1,000-record transactions that overhead
is spread over a thousand records, so throughput should stay close to plain idempotent produce.

Figure (``python -m kafkalab.bench transactions``):

* ``transactions.produce`` -- MB/s of values acknowledged by confluent-kafka producing in
  transactions of ``TRANSACTION_RECORDS`` records, committed one after the other, against the
  same client producing the same records idempotently (``enable.idempotence=true``,
  ``acks=all``) without transactions; target ratio >= 0.6.

* ``transactions.read_committed`` -- MB/s of the log's values read from offset 0 to its end by
  kafkalab's consumer with ``isolation.level=read_committed`` against the same consumer with
  ``read_uncommitted``, on one log of transactions of ``READ_TRANSACTION_RECORDS`` records where
  every ``ABORT_EVERY``-th is aborted; target ratio >= 0.8. Both walk the same bytes: the broker
  sends the aborted batches to both (to read_committed only up to the last stable offset, here
  the log end, with the list of aborted transactions from each segment's ``.txnindex``), and the
  read_committed consumer drops them by Kafka's ``CompletedFetch`` rule. The read_committed
  side hands the application a third fewer records, which is part of what it is measured on:
  the rate at which a reader gets through the log.

Where a transaction's time goes (server-side request timestamps against confluent-kafka 2.16,
medians over 40 transactions of 1,000 records on a busy two-core machine): about 4.2 ms each,
of which the server's handlers take about 1.1 ms -- AddPartitionsToTxn 0.19, the 1 MB Produce
0.46 (0.32 of it the ``pwrite``), the Produce of the last 33 records 0.16, EndTxn 0.29 with its
marker and both ``__transaction_state`` records. The rest is the client's: its 1,000
``produce()`` calls (0.75 ms), then librdkafka registers the partition from a 1 ms timer started
by the transaction's first record (``rd_kafka_txn_schedule_register_partitions(rk, 1)``) and
AddPartitionsToTxn reaches the server 0.5-1.2 ms after the last ``produce()`` (the medians of
two runs), the 1 MB Produce another 0.5-1.0 ms after its answer. Every record waits for that
answer, so the 1 MB transfer and append, the last batch and EndTxn follow one after the
other, where idempotent produce overlaps them with five requests in flight. The same
client against librdkafka's mock cluster (``test.mock.num.brokers``, in the client's process)
took about 2.0 ms per transaction and 1.7-1.9 ms per 1,000 idempotent records, so the target is
not out of the protocol's reach; on two cores shared by client and server, most of kafkalab's
gap is waiting outside the broker. The figure is also load-sensitive: under load the
idempotent run, which keeps both processes busy at once, slows far more than the serial
transactional one, and the ratio rises.

Default size: 40,000 records of 1 KiB (40 transactions); ``--full``: 200,000. Both producers
run ``RUNS`` times side by side (which goes first alternates) on fresh topics of one server;
the run with the median ratio is reported with the spread. The read_committed figure reads a
log of the same size at each level, side by side, ``READS_PER_RUN`` times in each of ``READ_RUNS``
runs, after one warm-up.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkalab.bench.report import Reporter, alternate

VALUE_BYTES = 1024
VALUE = bytes(range(256)) * (VALUE_BYTES // 256)
RECORDS_DEFAULT = 40_000
RECORDS_FULL = 200_000
TRANSACTION_RECORDS = 1_000  # the transaction size
RUNS = 3
TIMEOUT_S = 60.0  # each client call that waits on the broker gives up after this
READ_TRANSACTION_RECORDS = 100  # small transactions: many markers and aborted-index entries
ABORT_EVERY = 3  # every third transaction of the read_committed log is aborted
READ_RUNS = 5
READS_PER_RUN = 3  # one read of the default log takes ~0.3 s, too short to time on a busy machine


def run(reporter: Reporter, full: bool = False) -> None:
    from kafkalab.client.launcher import start_server

    count = RECORDS_FULL if full else RECORDS_DEFAULT
    with tempfile.TemporaryDirectory(prefix="kafkalab-bench-") as tmp:
        server = start_server(Path(tmp) / "data")
        try:
            _produce_figure(reporter, server.bootstrap, count)
            _read_committed_figure(reporter, server.bootstrap, count)
        finally:
            server.stop()


def _produce_figure(reporter: Reporter, bootstrap_servers: str, count: int) -> None:
    results: dict[str, list[float]] = {"idempotent": [], "transactional": []}
    for run_number in range(RUNS):
        order = ["idempotent", "transactional"][:: 1 if run_number % 2 == 0 else -1]
        for name in order:
            topic = f"bench-{name}-{run_number}"
            _create_topic(bootstrap_servers, topic)
            seconds = PRODUCERS[name](bootstrap_servers, topic, count)
            results[name].append(count * VALUE_BYTES / 1e6 / seconds)
    reporter.report_runs("transactions.produce", results["transactional"], "MB/s", results["idempotent"], ">=0.6")


def _read_committed_figure(reporter: Reporter, bootstrap_servers: str, count: int) -> None:
    topic = "bench-read-committed"
    _create_topic(bootstrap_servers, topic)
    log = write_mixed_log(bootstrap_servers, topic, count)
    megabytes = count * VALUE_BYTES / 1e6

    def reader(isolation_level: str) -> Callable[[], float]:
        return lambda: READS_PER_RUN * megabytes / sum(
            read_to_end(bootstrap_servers, topic, log, isolation_level) for _ in range(READS_PER_RUN))

    steps = {"read_committed": reader("read_committed"), "read_uncommitted": reader("read_uncommitted")}
    for step in steps.values():  # warm up: connections, numba's compiled decoder, the page cache
        step()
    rates = alternate(steps, READ_RUNS)
    reporter.report_runs("transactions.read_committed", rates["read_committed"], "MB/s",
                         rates["read_uncommitted"], ">=0.8")


def _create_topic(bootstrap_servers: str, topic: str) -> None:
    from kafkalab.client import admin
    from kafkalab.client.connection import bootstrap

    with bootstrap(bootstrap_servers) as conn:
        admin.create_topic(conn, topic, partitions=1, replication_factor=1, configs={})


def _producer(bootstrap_servers: str, count: int, **extra: Any) -> Any:
    from confluent_kafka import Producer

    return Producer({"bootstrap.servers": bootstrap_servers, "acks": "all", "enable.idempotence": True,
                     "linger.ms": 5, "queue.buffering.max.messages": count + 1, "message.timeout.ms": 60_000,
                     **extra})


def _send(producer: Any, topic: str, count: int) -> None:
    for _ in range(count):
        producer.produce(topic, VALUE, partition=0)
        producer.poll(0)


def produce_idempotent(bootstrap_servers: str, topic: str, count: int) -> float:
    """Seconds to send ``count`` records idempotently and receive every acknowledgement."""
    producer = _producer(bootstrap_servers, count)
    _send(producer, topic, 1)
    producer.flush(TIMEOUT_S)  # warm up: connection, metadata, producer id
    start = time.perf_counter()
    _send(producer, topic, count)
    if producer.flush(TIMEOUT_S):
        raise RuntimeError("idempotent records left undelivered")
    return time.perf_counter() - start


def produce_transactional(bootstrap_servers: str, topic: str, count: int) -> float:
    """Seconds to send ``count`` records in committed transactions of TRANSACTION_RECORDS."""
    producer = _producer(bootstrap_servers, count, **{"transactional.id": f"bench-{topic}"})
    producer.init_transactions(TIMEOUT_S)
    start = time.perf_counter()
    for first in range(0, count, TRANSACTION_RECORDS):
        producer.begin_transaction()
        _send(producer, topic, min(TRANSACTION_RECORDS, count - first))
        producer.commit_transaction(TIMEOUT_S)  # flushes, then EndTxn
    return time.perf_counter() - start


PRODUCERS = {"idempotent": produce_idempotent, "transactional": produce_transactional}


@dataclass(frozen=True, slots=True)
class MixedLog:
    """What :func:`write_mixed_log` wrote: the log end offset and how many records each
    isolation level should deliver."""

    end_offset: int
    committed: int
    written: int


def write_mixed_log(bootstrap_servers: str, topic: str, count: int) -> MixedLog:
    """``count`` records in transactions of READ_TRANSACTION_RECORDS, every ABORT_EVERY-th aborted."""
    producer = _producer(bootstrap_servers, count, **{"transactional.id": f"bench-{topic}"})
    producer.init_transactions(TIMEOUT_S)
    committed = transactions = 0
    for first in range(0, count, READ_TRANSACTION_RECORDS):
        size = min(READ_TRANSACTION_RECORDS, count - first)
        producer.begin_transaction()
        _send(producer, topic, size)
        transactions += 1
        if transactions % ABORT_EVERY == 0:
            producer.flush(TIMEOUT_S)  # in the log before the abort, else the client drops them unsent
            producer.abort_transaction(TIMEOUT_S)
        else:
            producer.commit_transaction(TIMEOUT_S)
            committed += size
    return MixedLog(end_offset=count + transactions, committed=committed, written=count)


def read_to_end(bootstrap_servers: str, topic: str, log: MixedLog, isolation_level: str) -> float:
    """Seconds for kafkalab's consumer to move from offset 0 to the log end under
    ``isolation_level``; checks it delivered exactly the records that level should see."""
    from kafkalab.client.consumer.network import KafkaConsumer

    expected = log.committed if isolation_level == "read_committed" else log.written
    tp = (topic, 0)
    with KafkaConsumer({"bootstrap.servers": bootstrap_servers, "auto.offset.reset": "earliest",
                        "enable.auto.commit": False, "isolation.level": isolation_level}) as consumer:
        consumer.assign([tp])
        start = time.perf_counter()
        delivered, deadline = 0, start + TIMEOUT_S
        while consumer.position(tp) < log.end_offset and time.perf_counter() < deadline:
            delivered += len(consumer.poll(500))
        elapsed = time.perf_counter() - start
    if delivered != expected:
        raise RuntimeError(f"{isolation_level} delivered {delivered} records, expected {expected}")
    return elapsed
