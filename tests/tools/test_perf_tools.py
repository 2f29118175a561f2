"""``producer-perf-test`` and ``consumer-perf-test``: batching, stats and output lines on a manual
clock, then both tools against a live server, cross-checked with kafka-python."""

from __future__ import annotations

import argparse
import io
import itertools
import random
import re
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.record import MemoryRecords
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkalab.client.admin import create_topic
from kafkalab.client.connection import bootstrap
from kafkalab.client.launcher import ServerProcess, start_server
from kafkalab.clock import ManualClock
from kafkalab.errors import ConfigError, RecordTooLargeError
from kafkalab.protocol import SCHEMAS
from kafkalab.records import Record, build_batch
from kafkalab.tools import consumer_perf_test as cpt
from kafkalab.tools import producer_perf_test as ppt
from kafkalab.tools.cli import main

WINDOW_LINE = re.compile(r"\d+ records sent, \d+\.\d records/sec \(\d+\.\d\d MB/sec\), "
                         r"\d+\.\d ms avg latency, \d+\.\d ms max latency\.")
TOTAL_LINE = re.compile(r"(?P<count>\d+) records sent, \d+\.\d{6} records/sec \(\d+\.\d\d MB/sec\), "
                        r"\d+\.\d\d ms avg latency, \d+\.\d\d ms max latency, \d+ ms 50th, \d+ ms 95th, "
                        r"\d+ ms 99th, \d+ ms 99\.9th\.")
DATE = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}"
SUMMARY_LINE = re.compile(rf"(?P<start>{DATE}), (?P<end>{DATE}), (?P<mb>\d+\.\d{{4}}), \d+\.\d{{4}}, "
                          r"(?P<count>\d+), \d+\.\d{4}, 0, (?P<fetch_ms>\d+), \d+\.\d{4}, \d+\.\d{4}")


def manual_sleep(clock: ManualClock):  # type: ignore[no-untyped-def]
    return lambda ns: clock.advance_ms(max(1, -(-ns // 1_000_000)))


def perf_producer(clock: ManualClock, partitions: int = 1, *, latency_ms: int = 2, **settings: int):  # type: ignore[no-untyped-def]
    """A PerfProducer whose transport records batches and takes ``latency_ms`` per request."""
    sent: list[tuple[int, list[Record]]] = []

    def transport(partition: int, records: list[Record]) -> None:
        sent.append((partition, records))
        clock.advance_ms(latency_ms)

    out = io.StringIO()
    producer = ppt.PerfProducer(ppt.ProducerSettings("unused:1", **settings), partitions, transport,
                                clock=clock, sleep_ns=manual_sleep(clock), rng=random.Random(0),
                                out=out, err=io.StringIO())
    return producer, sent, out


# ----------------------------------------------------------------------------- batching


@pytest.mark.parametrize(("offset_delta", "timestamp_delta", "key", "value"), [
    (0, 0, None, b"x" * 100), (63, 0, None, b"x" * 100), (64, 70, None, b"x" * 100),
    (5000, 123_456, b"k", b""), (0, 0, None, None), (1, -3, b"key" * 50, b"v" * 20_000)])
def test_record_size_matches_kafka_python(offset_delta, timestamp_delta, key, value) -> None:
    assert ppt.record_size_in_batch(offset_delta, timestamp_delta, key, value) == \
        DefaultRecordBatchBuilder.size_in_bytes(offset_delta, timestamp_delta, key, value, [])


def test_worked_example_batches_fill_to_batch_size() -> None:
    accumulator = ppt.Accumulator(batch_size_bytes=16_384, linger_ms=5)
    ready = []
    for _ in range(1000):
        ready += accumulator.append(0, b"A" * 100, 1_000, now_ns=0).ready
    ready += accumulator.drain()
    assert [len(b.records) for b in ready] == [148] * 6 + [112]
    for batch in ready:
        encoded = build_batch(batch.records)
        assert batch.size_bytes == len(encoded) <= 16_384
        (parsed,) = list(iter_kafka_python_batches(encoded))
        assert parsed.size_in_bytes == batch.size_bytes and len(list(parsed)) == len(batch.records)


def iter_kafka_python_batches(data: bytes) -> Iterator:  # type: ignore[type-arg]
    records = MemoryRecords(data)
    while (batch := records.next_batch()) is not None:
        yield batch


def test_batch_size_zero_sends_one_record_per_batch() -> None:
    accumulator = ppt.Accumulator(batch_size_bytes=0, linger_ms=0)
    result = accumulator.append(0, b"abc", 0, 0)
    assert [len(b.records) for b in result.ready] == [1] and result.all_batches_full
    assert accumulator.drain() == []


def test_a_record_bigger_than_batch_size_gets_a_batch_of_its_own() -> None:
    accumulator = ppt.Accumulator(batch_size_bytes=200, linger_ms=100)
    assert accumulator.append(0, b"s" * 10, 0, 0).ready == ()
    ready = accumulator.append(0, b"B" * 500, 0, 0).ready
    assert [len(b.records[0].value or b"") for b in ready] == [10, 500]


def test_linger_closes_a_batch_exactly_when_it_is_due() -> None:
    accumulator = ppt.Accumulator(batch_size_bytes=16_384, linger_ms=5)
    accumulator.append(1, b"a", 0, now_ns=1_000_000)
    accumulator.append(2, b"b", 0, now_ns=3_000_000)
    assert accumulator.next_expiry_ns() == 6_000_000
    assert accumulator.expired(5_999_999) == []
    assert [b.partition for b in accumulator.expired(6_000_000)] == [1]
    assert [b.partition for b in accumulator.expired(8_000_000)] == [2]
    assert accumulator.next_expiry_ns() is None


def sticky_run(batch_size_bytes: int, records: int) -> tuple[list[int], list[ppt.ProducerBatch]]:
    """Partitions visited and batches closed for ``records`` 100-byte values (109 bytes each in a batch)."""
    partitioner = ppt.StickyPartitioner(4, batch_size_bytes=batch_size_bytes, rng=random.Random(7))
    accumulator = ppt.Accumulator(batch_size_bytes=batch_size_bytes, linger_ms=1000)
    visits, batches = [], []
    for _ in range(records):
        visits.append(partitioner.current)
        result = accumulator.append(partitioner.current, b"x" * 100, 0, 0)
        partitioner.on_append(result.appended_bytes, result.all_batches_full)
        batches += result.ready
    return visits, batches + accumulator.drain()


def test_sticky_partitioner_moves_when_a_batch_closes_full() -> None:
    # 61 + 8 * 109 = 933 bytes: the 8th record fills the batch exactly, so it closes at once and
    # batch.size bytes have gone to the partition -- time to move on.
    visits, batches = sticky_run(933, 400)
    assert {len(b.records) for b in batches} == {8}
    assert all(len(list(run)) % 8 == 0 for _, run in itertools.groupby(visits))
    assert set(visits) == {0, 1, 2, 3}
    assert ppt.StickyPartitioner(4, batch_size_bytes=933, rng=random.Random(7)).current == visits[0]


def test_sticky_partitioner_moves_at_twice_batch_size_with_a_batch_open() -> None:
    # With batch.size 1000 a batch closes at 933 bytes, never full, so the partitioner moves once
    # 2000 bytes went to the partition: 3 batch headers + 17 records = 183 + 1853 = 2036.
    visits, batches = sticky_run(1000, 400)
    assert len(list(next(itertools.groupby(visits))[1])) == 17
    assert all(len(build_batch(b.records)) <= 1000 for b in batches) and set(visits) == {0, 1, 2, 3}
    assert sum(len(b.records) for b in batches) == 400


def test_sticky_partitioner_forced_move_ignores_open_batches() -> None:
    partitioner = ppt.StickyPartitioner(1000, batch_size_bytes=100, rng=random.Random(1))
    first = partitioner.current
    partitioner.on_append(150, all_batches_full=False)
    assert partitioner.current == first
    partitioner.on_append(50, all_batches_full=False)
    assert partitioner.current != first


# ----------------------------------------------------------------------------- payloads and throttling


def test_random_letters_are_seeded_uniform_capitals() -> None:
    first = ppt.random_letters(random.Random(0), 26_000)
    assert first == ppt.random_letters(random.Random(0), 26_000)
    assert first != ppt.random_letters(random.Random(1), 26_000)
    assert len(first) == 26_000 and set(first) <= set(range(65, 91))
    counts = Counter(first)
    assert len(counts) == 26 and max(counts.values()) < 1_250 and min(counts.values()) > 750
    assert ppt.random_letters(random.Random(0), 1) in {bytes([c]) for c in range(65, 91)}


def test_payload_file_entries_and_kafka_messages(tmp_path: Path) -> None:
    path = tmp_path / "payloads.txt"
    path.write_text("alpha|beta||gamma|", encoding="utf-8")
    out = io.StringIO()
    assert ppt.read_payload_file(path, "|", out) == [b"alpha", b"beta", b"", b"gamma"]
    assert out.getvalue() == f"Reading payloads from: {path.absolute()}\nNumber of messages read: 4\n"
    (tmp_path / "empty").write_text("")
    with pytest.raises(ConfigError, match="File does not exist or empty file provided."):
        ppt.read_payload_file(tmp_path / "empty", "\n", io.StringIO())
    with pytest.raises(ConfigError, match="File does not exist"):
        ppt.read_payload_file(tmp_path / "missing", "\n", io.StringIO())
    with pytest.raises(ConfigError, match="--payload-delimiter must not be empty"):
        ppt.read_payload_file(path, "", io.StringIO())


def test_throttler_mirrors_kafka() -> None:
    unlimited = ppt.ThroughputThrottler(-1, start_ns=0)
    assert not unlimited.should_throttle(10**9, send_start_ns=1)
    throttler = ppt.ThroughputThrottler(1000, start_ns=0)
    assert not throttler.should_throttle(5, send_start_ns=0)  # no time has passed yet
    assert throttler.should_throttle(11, send_start_ns=10_000_000)  # 1100/s > 1000/s
    assert not throttler.should_throttle(10, send_start_ns=10_000_000)
    assert [throttler.sleep_ns() for _ in range(4)] == [0, 2_000_000, 0, 2_000_000]
    with pytest.raises(ConfigError, match="--throughput 0 would never send"):
        ppt.ThroughputThrottler(0, start_ns=0)


# ----------------------------------------------------------------------------- stats


def test_percentiles_index_like_kafka() -> None:
    assert ppt.percentiles(list(range(1000, 0, -1))) == [501, 951, 991, 1000]
    assert ppt.percentiles([7]) == [7, 7, 7, 7]
    assert ppt.percentiles([]) == [0, 0, 0, 0]


def test_stats_window_and_total_lines() -> None:
    out = io.StringIO()
    stats = ppt.Stats(num_records=4, start_ns=0, out=out)
    stats.record(10, 1000, now_ns=1_000_000_000)
    stats.record(30, 1000, now_ns=2_000_000_000)
    assert out.getvalue() == ""
    stats.record(20, 1000, now_ns=5_000_000_000)
    assert out.getvalue() == ("3 records sent, 0.6 records/sec (0.00 MB/sec), 20.0 ms avg latency, "
                              "30.0 ms max latency.\n")
    stats.record(40, 1_048_576, now_ns=6_000_000_000)
    assert stats.total_line(8_000_000_000) == (
        "4 records sent, 0.500000 records/sec (0.13 MB/sec), 25.00 ms avg latency, 40.00 ms max latency, "
        "30 ms 50th, 40 ms 95th, 40 ms 99th, 40 ms 99.9th.")


def test_stats_sample_at_most_half_a_million_latencies() -> None:
    stats = ppt.Stats(num_records=1_500_000, start_ns=0, out=io.StringIO())
    assert stats.sampling == 3
    for i in range(9):
        stats.record(i, 1, now_ns=0)
    assert stats.latencies_ms == [0, 3, 6]


def test_metrics_table_uses_kafka_layout() -> None:
    metrics = ppt.SendMetrics()
    batch = ppt.ProducerBatch(0, 0, 0)
    batch.append(b"x" * 10, 0, 0, ppt.record_size_in_batch(0, 0, None, b"x" * 10))
    metrics.on_request(batch, 4.0, ok=True)
    lines = metrics.table("perf-producer-client")
    assert lines[0] == "" and re.fullmatch(r"Metric Name +   Value", lines[1])
    assert re.fullmatch(r"producer-metrics:batch-size-avg:\{client-id=perf-producer-client\} +: 78\.000", lines[2])
    assert lines[2:] == sorted(lines[2:]) and len({len(line.split(" : ")[0]) for line in lines[2:]}) == 1


def test_metrics_count_the_encoded_size_when_the_transport_reports_it() -> None:
    metrics = ppt.SendMetrics()
    batch = ppt.ProducerBatch(0, 0, 0)
    batch.append(b"x" * 10, 0, 0, ppt.record_size_in_batch(0, 0, None, b"x" * 10))  # 78 B uncompressed
    metrics.on_request(batch, 4.0, ok=True, batch_bytes=39)
    metrics.on_request(batch, 4.0, ok=True, batch_bytes=78)
    values = {line.split(":")[1]: float(line.rsplit(" : ", 1)[1]) for line in metrics.table("c")[2:]}
    assert values["batch-size-avg"] == 58.5 and values["batch-size-max"] == 78
    assert values["compression-rate-avg"] == 0.75  # (39/78 + 78/78) / 2, Kafka's per-batch average
    unmeasured = ppt.SendMetrics()
    unmeasured.on_request(batch, 4.0, ok=True)
    assert not any("compression-rate" in line for line in unmeasured.table("c"))


def test_send_batch_reports_the_encoded_size_it_sent(tmp_path: Path) -> None:
    from kafkalab.client.data import send_batch
    from kafkalab.records import Compression

    records = [Record(i, 1_000 + i, None, b"abc" * 50) for i in range(20)]
    server = start_server(tmp_path / "data")
    try:
        make_topic(server, "sizes", 1)
        with bootstrap(server.bootstrap) as conn:
            plain = send_batch(conn, "sizes", 0, records)
            packed = send_batch(conn, "sizes", 0, records, compression=Compression.GZIP)
            unacked = send_batch(conn, "sizes", 0, records, acks=0)
        # acks=0 gets no answer, so the batch may land after a read on another connection starts.
        deadline = time.monotonic() + 10
        while len(stored := [b.size_in_bytes for b in raw_batches(server, "sizes", 0)]) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        server.stop()
    assert (plain.base_offset, packed.base_offset, unacked.base_offset) == (0, 20, -1)
    assert plain.batch_bytes == len(build_batch(records)) == unacked.batch_bytes
    assert stored == [plain.batch_bytes, packed.batch_bytes, unacked.batch_bytes]
    assert packed.batch_bytes < plain.batch_bytes


# ----------------------------------------------------------------------------- a whole run on a manual clock


def test_unthrottled_run_sends_every_record_in_full_batches() -> None:
    clock = ManualClock(now_ms=1_000)
    producer, sent, out = perf_producer(clock, partitions=3, batch_size_bytes=1_000, linger_ms=5)
    stats = producer.run(500, lambda i: b"%05d" % i + b"x" * 95, throughput_per_s=-1)
    values = [r.value for _, records in sent for r in records]
    assert sorted(values) == [b"%05d" % i + b"x" * 95 for i in range(500)]
    assert stats.count == 500 and producer.metrics.record_send_total == 500
    assert all(len(build_batch(records)) <= 1_000 for _, records in sent)
    assert {p for p, _ in sent} == {0, 1, 2}
    assert TOTAL_LINE.fullmatch(stats.total_line(clock.nanoseconds()))
    assert out.getvalue() == ""  # the run took less than one 5 s reporting window


def test_throttled_run_paces_records_and_prints_windows() -> None:
    clock = ManualClock(now_ms=0)
    producer, sent, out = perf_producer(clock, batch_size_bytes=16_384, linger_ms=5, latency_ms=1)

    def payload(index: int) -> bytes:
        clock.advance_ms(1)  # making a record takes a moment, so the throttler sees a rate
        return b"v"

    stats = producer.run(1_200, payload, throughput_per_s=100)
    assert 11_900 <= clock.milliseconds() <= 12_100  # 1,200 records at 100 records/sec
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and all(WINDOW_LINE.fullmatch(line) for line in lines)
    # While throttled, batches leave when linger.ms (5 ms) runs out: a few records each.
    assert max(len(records) for _, records in sent) <= 2 and stats.count == 1_200
    assert stats.max_latency_ms <= 5 + 1 + 2


def test_broker_errors_are_reported_and_not_counted() -> None:
    from kafkalab.errors import BrokerResponseError

    clock = ManualClock()

    def failing(partition: int, records: list[Record]) -> None:
        raise BrokerResponseError("produce to t-0 failed with NOT_LEADER_OR_FOLLOWER (6)")

    err = io.StringIO()
    producer = ppt.PerfProducer(ppt.ProducerSettings("unused:1"), 1, failing, clock=clock,
                                sleep_ns=manual_sleep(clock), rng=random.Random(0), out=io.StringIO(), err=err)
    stats = producer.run(3, lambda i: b"v", throughput_per_s=-1)
    assert stats.count == 0 and producer.metrics.record_error_total == 3
    assert "NOT_LEADER_OR_FOLLOWER" in err.getvalue()


def test_payload_larger_than_max_request_size_is_refused() -> None:
    producer, _, _ = perf_producer(ManualClock(), max_request_size_bytes=10)
    with pytest.raises(RecordTooLargeError, match="record 0 is 11 bytes, larger than max.request.size 10"):
        producer.run(1, lambda i: b"x" * 11, throughput_per_s=-1)


# ----------------------------------------------------------------------------- producer settings


def producer_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    ppt.add_arguments(parser)
    return parser.parse_args(["--topic", "t", "--num-records", "10", "--throughput", "-1", *argv])


def test_settings_merge_config_file_under_props(tmp_path: Path) -> None:
    config = tmp_path / "producer.properties"
    config.write_text("bootstrap.servers=a:1\nlinger.ms=50\nacks=1\nbuffer.memory=1000\n")
    err = io.StringIO()
    settings = ppt.settings_from_args(producer_args("--record-size", "10", "--producer.config", str(config),
                                                    "--producer-props", "linger.ms=7", "compression.type=zstd"), err)
    assert (settings.bootstrap_servers, settings.linger_ms, settings.acks) == ("a:1", 7, 1)
    assert settings.compression.name == "ZSTD" and settings.batch_size_bytes == 16_384
    assert err.getvalue() == "WARNING kafkalab's perf producer ignores the config buffer.memory=1000\n"


@pytest.mark.parametrize(("argv", "message"), [
    (["--record-size", "10"], "Either --producer-props or --producer.config must be specified."),
    (["--record-size", "0", "--producer-props", "bootstrap.servers=a:1"], "--record-size should be greater than zero"),
    (["--record-size", "10", "--producer-props", "acks=2"], "Missing required configuration"),
    (["--record-size", "10", "--producer-props", "bootstrap.servers=a:1", "acks=2"], "acks must be one of"),
    (["--record-size", "10", "--producer-props", "bootstrap.servers=a:1", "batch.size=-5"],
     r"batch.size must be an integer in 0-67108864, got '-5'"),
    (["--record-size", "10", "--producer-props", "bootstrap.servers=a:1", "compression.type=brotli"],
     "compression.type must be one of"),
    (["--record-size", "2000000", "--producer-props", "bootstrap.servers=a:1"],
     "--record-size 2000000 is larger than max.request.size 1048576"),
])
def test_settings_refuse_bad_flags(argv: list[str], message: str) -> None:
    with pytest.raises((ConfigError, RecordTooLargeError), match=message):
        ppt.settings_from_args(producer_args(*argv), io.StringIO())


def test_run_reports_unreachable_broker_and_bad_flags() -> None:
    err = io.StringIO()
    args = producer_args("--record-size", "10", "--producer-props", "bootstrap.servers=127.0.0.1:1")
    assert ppt.run(args, out=io.StringIO(), err=err) == 1 and err.getvalue().startswith("ERROR ")
    args = producer_args("--record-size", "10", "--producer-props", "bootstrap.servers=127.0.0.1:1", "linger")
    assert ppt.run(args, out=io.StringIO(), err=(err := io.StringIO())) == 1 and "not KEY=VALUE" in err.getvalue()


# ----------------------------------------------------------------------------- consumer pieces


def test_summary_and_progress_lines_match_the_worked_example() -> None:
    fmt = str
    assert cpt.summary_line(0, 500, 1_000_000, 10_000, 0, fmt) == (
        "0, 500, 0.9537, 1.9073, 10000, 20000.0000, 0, 500, 1.9073, 20000.0000")
    assert cpt.summary_line(7, 7, 0, 0, 0, fmt) == "7, 7, 0.0000, 0.0000, 0, 0.0000, 0, 0, 0.0000, 0.0000"
    assert cpt.progress_line(2 * 1_048_576, 1_048_576, 300, 100, 1_000, 3_000, 0, fmt) == (
        "3000, 0, 2.0000, 0.5000, 300, 100.0000, 0, 2000, 0.5000, 100.0000")
    assert cpt.SUMMARY_HEADER == ("start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, "
                                  "nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")


def test_date_format_agrees_with_strftime() -> None:
    now_ms = 1_700_000_123_456
    expected = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now_ms // 1000)) + ":456"
    assert cpt.date_formatter(cpt.DATE_FORMAT_DEFAULT)(now_ms) == expected
    assert cpt.date_formatter("yy/M/d")(now_ms) == time.strftime("%y/", time.localtime(now_ms // 1000)) + \
        "/".join(str(int(x)) for x in time.strftime("%m %d", time.localtime(now_ms // 1000)).split())
    with pytest.raises(ConfigError, match="letter 'E' is not supported"):
        cpt.date_formatter("EEE yyyy")


def test_perf_options_validate() -> None:
    with pytest.raises(ConfigError, match="--messages must be greater than 0"):
        cpt.PerfOptions("t", 0)
    with pytest.raises(ConfigError, match="Reporting interval must be greater than 0."):
        cpt.PerfOptions("t", 1, reporting_interval_ms=0)
    with pytest.raises(ConfigError, match="--fetch-size must be in"):
        cpt.PerfOptions("t", 1, fetch_size_bytes=0)


def scripted_poll(clock: ManualClock, script: list[list[tuple[int, Record]]]):  # type: ignore[no-untyped-def]
    def poll(positions: dict[int, int], wait_ms: int) -> list[tuple[int, Record]]:
        clock.advance_ms(wait_ms if not script or not script[0] else 10)
        return script.pop(0) if script else []
    return poll


def test_consume_stops_at_exactly_the_requested_count() -> None:
    clock = ManualClock(now_ms=0)
    script = [[(p, Record(o, 0, b"k", b"v" * 9)) for o in range(5) for p in (0, 1)]]
    positions = {0: 0, 1: 0}
    totals = cpt.consume(cpt.PerfOptions("t", 7), positions, scripted_poll(clock, script), clock,
                         io.StringIO(), str)
    assert (totals.messages, totals.bytes, totals.timed_out) == (7, 70, False)
    assert positions == {0: 4, 1: 3}


def test_consume_times_out_and_reports_intervals() -> None:
    clock = ManualClock(now_ms=0)
    script = [[(0, Record(i, 0, None, b"x" * 100))] for i in range(3)]
    out = io.StringIO()
    totals = cpt.consume(cpt.PerfOptions("t", 10, timeout_ms=1_000, show_detailed_stats=True,
                                         reporting_interval_ms=20),
                         {0: 0}, scripted_poll(clock, script), clock, out, str)
    assert (totals.messages, totals.timed_out) == (3, True)
    assert 1_000 < totals.end_ms - 30 <= 1_100  # the last record, then a little over --timeout
    assert out.getvalue().splitlines() == ["20, 0, 0.0002, 0.0095, 2, 100.0000, 0, 20, 0.0095, 100.0000"]


# ----------------------------------------------------------------------------- against a live server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = start_server(tmp_path_factory.mktemp("perf") / "data")
    try:
        yield process
    finally:
        process.stop()


def make_topic(server: ServerProcess, name: str, partitions: int) -> None:
    with bootstrap(server.bootstrap) as conn:
        create_topic(conn, name, partitions=partitions, replication_factor=1, configs={})


def read_with_kafka_python(server: ServerProcess, topic: str, partitions: int, expected: int) -> list:  # type: ignore[type-arg]
    consumer = KafkaConsumer(bootstrap_servers=server.bootstrap, enable_auto_commit=False, group_id=None,
                             request_timeout_ms=10_000, consumer_timeout_ms=3_000)
    try:
        assigned = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(assigned)
        consumer.seek_to_beginning()
        messages = [m for _, m in zip(range(expected), consumer)]
        ends = consumer.end_offsets(assigned)
    finally:
        consumer.close()
    assert sum(ends.values()) == expected  # exactly ``expected`` records, no more
    return messages


def raw_batches(server: ServerProcess, topic: str, partition: int) -> list:  # type: ignore[type-arg]
    """Every batch of a partition as kafka-python parses the bytes the broker stored."""
    request = SCHEMAS[1][0].cls
    with bootstrap(server.bootstrap) as conn:
        body = request(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=50 << 20, isolation_level=0,
                       topics=(request.FetchTopic(topic=topic, partitions=(request.FetchTopic.FetchPartition(
                           partition=partition, fetch_offset=0, partition_max_bytes=50 << 20),)),))
        (result,) = conn.request(1, body).responses[0].partitions
    return list(iter_kafka_python_batches(result.records or b""))


@pytest.mark.timeout(60)
def test_produce_then_consume_cross_checked_with_kafka_python(server: ServerProcess,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    make_topic(server, "perf-a", 3)
    assert main(["producer-perf-test", "--topic", "perf-a", "--num-records", "3000", "--record-size", "100",
                 "--throughput", "-1", "--producer-props", f"bootstrap.servers={server.bootstrap}",
                 "batch.size=4096", "linger.ms=1000", "acks=all"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert TOTAL_LINE.fullmatch(out[-1]) and TOTAL_LINE.fullmatch(out[-1])["count"] == "3000"
    assert all(WINDOW_LINE.fullmatch(line) for line in out[:-1])
    messages = read_with_kafka_python(server, "perf-a", 3, 3000)
    assert len(messages) == 3000
    assert all(m.key is None and len(m.value) == 100 and m.value.isupper() and m.value.isalpha() for m in messages)
    batches = [b for p in range(3) for b in raw_batches(server, "perf-a", p)]
    assert sum(len(list(b)) for b in batches) == 3000
    assert all(b.size_in_bytes <= 4096 for b in batches)
    # Mostly full batches; the rest were left open when the sticky partitioner moved on.
    assert sorted(b.size_in_bytes for b in batches)[len(batches) // 2] > 4096 - 200

    assert main(["consumer-perf-test", "--bootstrap-server", server.bootstrap, "--topic", "perf-a",
                 "--messages", "3000", "--timeout", "5000", "--fetch-size", "10000"]) == 0
    header, line = capsys.readouterr().out.splitlines()
    assert header == cpt.SUMMARY_HEADER
    match = SUMMARY_LINE.fullmatch(line)
    assert match and match["count"] == "3000" and match["mb"] == f"{3000 * 100 / 1048576:.4f}"


@pytest.mark.timeout(60)
def test_compressed_payload_file_run_and_consumer_timeout(server: ServerProcess, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    make_topic(server, "perf-b", 1)
    (tmp_path / "payloads").write_text("red;green;blue", encoding="utf-8")
    (tmp_path / "producer.properties").write_text(f"bootstrap.servers={server.bootstrap}\nlinger.ms=0\n")
    assert main(["producer-perf-test", "--topic", "perf-b", "--num-records", "400", "--payload-file",
                 str(tmp_path / "payloads"), "--payload-delimiter", ";", "--throughput", "4000",
                 "--producer.config", str(tmp_path / "producer.properties"),
                 "--producer-props", "compression.type=lz4", "--print-metrics"]) == 0
    out = capsys.readouterr().out
    assert "Number of messages read: 3\n" in out and "400 records sent" in out
    assert re.search(r"producer-metrics:record-send-total:\{client-id=perf-producer-client\} +: 400\.000", out)
    messages = read_with_kafka_python(server, "perf-b", 1, 400)
    assert Counter(m.value for m in messages).keys() == {b"red", b"green", b"blue"}
    batches = raw_batches(server, "perf-b", 0)
    assert {b.compression_type for b in batches} == {3}  # lz4
    # batch-size-avg counts the encoded batches as sent, as the broker stored them
    average = sum(b.size_in_bytes for b in batches) / len(batches)
    reported = re.search(r"producer-metrics:batch-size-avg:\{client-id=perf-producer-client\} +: (\S+)", out)
    assert reported is not None and float(reported[1]) == pytest.approx(average, abs=0.001)
    # compression-rate-avg: per batch, stored (lz4) size over the uncompressed v2 size of its records
    rates = [b.size_in_bytes / (ppt.V2_HEADER_SIZE + sum(
        ppt.record_size_in_batch(r.offset - b.base_offset, r.timestamp - b.first_timestamp, r.key, r.value)
        for r in b)) for b in raw_batches(server, "perf-b", 0)]
    rate = re.search(r"producer-metrics:compression-rate-avg:\{client-id=perf-producer-client\} +: (\S+)", out)
    assert rate is not None and float(rate[1]) == pytest.approx(sum(rates) / len(rates), abs=0.001)

    assert main(["consumer-perf-test", "--bootstrap-server", server.bootstrap, "--topic", "perf-b",
                 "--messages", "5", "--from-latest", "--timeout", "200", "--hide-header"]) == 0
    warning, line = capsys.readouterr().out.splitlines()
    assert warning == ("WARNING: Exiting before consuming the expected number of messages: timeout (200 ms) "
                       "exceeded. You can use the --timeout option to increase the timeout.")
    assert SUMMARY_LINE.fullmatch(line)["count"] == "0"  # type: ignore[index]


@pytest.mark.timeout(30)
def test_consumer_on_unknown_topic_fails_cleanly(server: ServerProcess, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["consumer-perf-test", "--bootstrap-server", server.bootstrap, "--topic", "nope",
                 "--messages", "1", "--timeout", "100"]) == 1
    assert "UNKNOWN_TOPIC_OR_PARTITION" in capsys.readouterr().err
