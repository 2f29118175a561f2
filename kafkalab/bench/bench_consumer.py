"""Consumer rate: kafkalab's teaching consumer against confluent-kafka, on kafkalab's server.

One partition of 1 KiB values is produced once (with confluent-kafka); then, in each run, both
consumers read it from offset 0 to the end, assigned (no group), with their own default fetch
settings, timing from the first fetch to the last record in hand. The ratio says how much of
librdkafka's C consume rate a consumer written in Python (record decoding included) reaches on
the same server.

Figure (``python -m kafkalab.bench consumer``):

* ``consumer.rate`` -- MB/s of values consumed, kafkalab's consumer vs confluent-kafka's;
  target ratio >= 0.5.

Default size: 50,000 records (about 50 MB of values); ``--full``: 200,000. Each run times both
consumers side by side (which goes first alternates), and the run with the median ratio of
``RUNS`` is reported, as ``report_runs`` does for every benchmark.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from kafkalab.bench.bench_server import DEADLINE_S, TOPIC, VALUE_BYTES, create_topic
from kafkalab.bench.bench_server import produce as confluent_produce
from kafkalab.bench.report import Reporter

RECORDS_DEFAULT = 50_000
RECORDS_FULL = 200_000
RUNS = 5


def kafkalab_consume(bootstrap_servers: str, count: int) -> float:
    """Seconds for kafkalab's consumer to read offsets 0 .. count-1 of the benchmark partition."""
    from kafkalab.client.consumer.network import KafkaConsumer

    with KafkaConsumer({"bootstrap.servers": bootstrap_servers, "auto.offset.reset": "earliest"}) as consumer:
        consumer.assign([(TOPIC, 0)])
        start = time.perf_counter()
        next_offset, deadline = 0, start + DEADLINE_S
        while next_offset < count and time.perf_counter() < deadline:
            for record in consumer.poll(500):
                _check(record.offset, next_offset, record.value)
                next_offset += 1
        elapsed = time.perf_counter() - start
    _complete(next_offset, count)
    return elapsed


def confluent_consume(bootstrap_servers: str, count: int) -> float:
    """Seconds for confluent-kafka's consumer to read offsets 0 .. count-1 of the benchmark partition."""
    import confluent_kafka

    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap_servers, "group.id": "bench-unused",
                                         "enable.auto.commit": False})
    try:
        consumer.assign([confluent_kafka.TopicPartition(TOPIC, 0, 0)])
        start = time.perf_counter()
        next_offset, deadline = 0, start + DEADLINE_S
        while next_offset < count and time.perf_counter() < deadline:
            for message in consumer.consume(num_messages=min(count - next_offset, 10_000), timeout=0.5):
                if message.error() is None:
                    _check(message.offset(), next_offset, message.value())
                    next_offset += 1
        elapsed = time.perf_counter() - start
    finally:
        consumer.close()
    _complete(next_offset, count)
    return elapsed


def _check(offset: int | None, expected: int, value: bytes | None) -> None:
    if offset != expected or value is None or len(value) != VALUE_BYTES:
        raise RuntimeError(f"expected a {VALUE_BYTES}-byte value at offset {expected}, got offset {offset}")


def _complete(next_offset: int, count: int) -> None:
    if next_offset < count:
        raise RuntimeError(f"consumed {next_offset} of {count} records within {DEADLINE_S} s")


def run(reporter: Reporter, full: bool = False) -> None:
    from kafkalab.client.launcher import start_server

    count = RECORDS_FULL if full else RECORDS_DEFAULT
    rates: dict[str, list[float]] = {"kafkalab": [], "confluent": []}
    consumers = {"kafkalab": kafkalab_consume, "confluent": confluent_consume}
    with tempfile.TemporaryDirectory(prefix="kafkalab-bench-") as tmp:
        server = start_server(Path(tmp) / "data")
        try:
            create_topic(server.bootstrap)
            confluent_produce(server.bootstrap, count)
            for consume in consumers.values():  # warm up: connections, and numba's compiled decoder
                consume(server.bootstrap, 1)
            for run_number in range(RUNS):
                order = list(consumers) if run_number % 2 == 0 else list(reversed(consumers))
                for name in order:
                    rates[name].append(count * VALUE_BYTES / 1e6 / consumers[name](server.bootstrap, count))
        finally:
            server.stop()
    reporter.report_runs("consumer.rate", rates["kafkalab"], "MB/s", rates["confluent"], ">=0.5")
