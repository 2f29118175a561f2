"""Producer throughput: kafkalab's teaching producer against confluent-kafka, on kafkalab's server.

Both clients send the same records to the same kafkalab server (one partition, 1 KiB values,
``acks=1``, ``linger.ms=5``, idempotence off, as :mod:`kafkalab.bench.bench_server` sets up
confluent-kafka, and librdkafka's ``batch.size`` of 1,000,000 bytes) and wait for every
acknowledgement. The ratio says how much of the server's
produce rate a producer written in Python reaches next to librdkafka's C (its core runs on the
caller's thread; only socket writes have a thread of their own).

Figure (``python -m kafkalab.bench producer``):

* ``producer.throughput`` -- MB/s of values acknowledged, kafkalab's producer vs confluent-kafka;
  target ratio >= 0.5.

Default size: 50,000 records (about 50 MB of values); ``--full``: 200,000. Each run times both
producers side by side (which goes first alternates), and the run with the median ratio of
``RUNS`` is reported, as ``report_runs`` does for every benchmark.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from kafkalab.bench.bench_server import TOPIC, VALUE, VALUE_BYTES, create_topic
from kafkalab.bench.bench_server import produce as confluent_produce
from kafkalab.bench.report import Reporter

RECORDS_DEFAULT = 50_000
RECORDS_FULL = 200_000
RUNS = 5
# librdkafka's batch.size default is 1,000,000 bytes (Kafka's Java client: 16384); both clients
# get the same, so that the figure compares producers, not how many requests the server parses.
SETTINGS = {"acks": "1", "linger.ms": 5, "enable.idempotence": "false", "batch.size": 1_000_000,
            "send.buffer.bytes": -1, "receive.buffer.bytes": -1}  # librdkafka keeps the OS socket buffers


def kafkalab_produce(bootstrap_servers: str, count: int) -> float:
    """Seconds for kafkalab's producer to send ``count`` records and hear every answer."""
    from kafkalab.client.producer import ProducerRecord
    from kafkalab.client.producer.network import KafkaProducer

    failures: list[object] = []

    def on_completion(_metadata: object, error: object) -> None:
        if error is not None:
            failures.append(error)

    with KafkaProducer({"bootstrap.servers": bootstrap_servers, **SETTINGS}) as producer:
        producer.send(ProducerRecord(TOPIC, VALUE, partition=0)).get()  # warm up: connection and metadata
        start = time.perf_counter()
        for _ in range(count):
            producer.send(ProducerRecord(TOPIC, VALUE, partition=0), callback=on_completion)
        producer.flush()
        elapsed = time.perf_counter() - start
    if failures:
        raise RuntimeError(f"{len(failures)} records failed: {failures[:3]}")
    return elapsed


def run(reporter: Reporter, full: bool = False) -> None:
    from kafkalab.client.launcher import start_server

    count = RECORDS_FULL if full else RECORDS_DEFAULT
    rates: dict[str, list[float]] = {"kafkalab": [], "confluent": []}
    producers = {"kafkalab": kafkalab_produce, "confluent": confluent_produce}
    with tempfile.TemporaryDirectory(prefix="kafkalab-bench-") as tmp:
        server = start_server(Path(tmp) / "data")
        try:
            create_topic(server.bootstrap)
            for run_number in range(RUNS):
                order = list(producers) if run_number % 2 == 0 else list(reversed(producers))
                for name in order:
                    rates[name].append(count * VALUE_BYTES / 1e6 / producers[name](server.bootstrap, count))
        finally:
            server.stop()
    reporter.report_runs("producer.throughput", rates["kafkalab"], "MB/s", rates["confluent"], ">=0.5")
