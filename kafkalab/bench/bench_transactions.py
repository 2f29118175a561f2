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

Default size: 40,000 records of 1 KiB (40 transactions); ``--full``: 200,000. Both producers
run ``RUNS`` times side by side (which goes first alternates) on fresh topics of one server;
the run with the median ratio is reported with the spread.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from kafkalab.bench.report import Reporter

VALUE_BYTES = 1024
VALUE = bytes(range(256)) * (VALUE_BYTES // 256)
RECORDS_DEFAULT = 40_000
RECORDS_FULL = 200_000
TRANSACTION_RECORDS = 1_000  # the transaction size
RUNS = 3
TIMEOUT_S = 60.0  # each client call that waits on the broker gives up after this


def run(reporter: Reporter, full: bool = False) -> None:
    from kafkalab.client.launcher import start_server

    count = RECORDS_FULL if full else RECORDS_DEFAULT
    results: dict[str, list[float]] = {"idempotent": [], "transactional": []}
    with tempfile.TemporaryDirectory(prefix="kafkalab-bench-") as tmp:
        server = start_server(Path(tmp) / "data")
        try:
            for run_number in range(RUNS):
                order = ["idempotent", "transactional"][:: 1 if run_number % 2 == 0 else -1]
                for name in order:
                    topic = f"bench-{name}-{run_number}"
                    _create_topic(server.bootstrap, topic)
                    seconds = PRODUCERS[name](server.bootstrap, topic, count)
                    results[name].append(count * VALUE_BYTES / 1e6 / seconds)
        finally:
            server.stop()
    reporter.report_runs("transactions.produce", results["transactional"], "MB/s", results["idempotent"], ">=0.6")


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
