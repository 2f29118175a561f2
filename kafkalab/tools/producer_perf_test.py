"""``kafkalab producer-perf-test``: measure produce throughput and latency (kafka-producer-perf-test.sh).

Theory of operation
-------------------
The tool measures what an application sees: for every record, the time from handing it to the
producer ("send") to the broker's acknowledgement (the callback), as Kafka's
``ProducerPerformance`` does. One run is a pipeline, on one thread::

    payload ──> sticky partitioner ──> accumulator (one open v2 batch per partition)
                                            │ full (batch.size) or old (linger.ms)
                                            v
                                  Produce request ──> ack: latency of every record in the batch

* **Payloads** come from a seeded ``random.Random`` (Kafka seeds ``SplittableRandom(0)``):
  ``--record-size N`` makes N random capital letters per record, ``--payload-file`` picks a random
  entry of the file split at ``--payload-delimiter``, ``--payload-monotonic`` sends "0", "1", ...
* **The sticky partitioner** (records have no key) stays on one partition until ``batch.size``
  bytes have gone to it and its batch is closed, then picks a partition at random (Kafka 3.3+'s
  ``BuiltInPartitioner`` without adaptive load statistics, KIP-794).
* **The accumulator** closes a partition's batch when the next record would push its estimated
  size past ``batch.size`` (the estimate is the exact uncompressed v2 size: a 61-byte header plus
  each record's varint-framed bytes), or when it has been open ``linger.ms``. Compressed batches
  are therefore never larger than ``batch.size``; Kafka instead guesses the compression ratio and
  may fit more records before compressing.
* **The throttler** mirrors Kafka's ``ThroughputThrottler``: when more than ``--throughput``
  records per second have been sent so far, it sleeps in slices of at least 2 ms. While it
  sleeps, batches whose ``linger.ms`` has passed are still sent.
* **Stats** mirror Kafka's ``Stats``: a progress line every 5,000 ms, then a summary with
  percentiles over at most 500,000 sampled latencies (every k-th record, k = n // min(n, 500000)).

Requests go out one at a time (the blocking client has one request in flight), so a batch's
latency includes the round trips of batches sent before it -- the same queueing a real producer
shows once ``max.in.flight.requests.per.connection`` is saturated.

Worked example: ``--num-records 1000 --record-size 100 --producer-props batch.size=16384``.
A 100-byte value with no key is 107 bytes of record body plus a 2-byte length: 109 bytes while
the offset delta fits one varint byte (< 64), 110 after. A batch fills at
61 + 64*109 + 84*110 = 16277 bytes with 148 records (a 149th would make 16387 > 16384), so 1000
records leave in 6 full batches and one of 112 records. The run ends with a line like::

    1000 records sent, 9523.809524 records/sec (0.91 MB/sec), 6.41 ms avg latency,
    12.00 ms max latency, 6 ms 50th, 11 ms 95th, 12 ms 99th, 12 ms 99.9th.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from kafkalab.client.connection import BrokerConnection, bootstrap, check_error
from kafkalab.client.data import CODECS, send_batch
from kafkalab.clock import Clock, SystemClock
from kafkalab.config.store import read_properties
from kafkalab.errors import BrokerResponseError, ConfigError, KafkaError, RecordTooLargeError
from kafkalab.records import V2_HEADER_SIZE, Compression, Record
from kafkalab.records.varint import size_of_varint
from kafkalab.tools.console_producer import ACKS, parse_properties

CLIENT_ID_DEFAULT = "perf-producer-client"  # ProducerPerformance's client.id when none is given
BATCH_SIZE_DEFAULT = 16_384  # batch.size
BATCH_SIZE_MAX = 64 * 1024 * 1024  # one batch stays well under the server's 100 MiB request limit
LINGER_MS_DEFAULT = 5  # linger.ms since Kafka 4.0 (KIP-1030)
LINGER_MS_MAX = 60 * 60 * 1000  # an hour: longer would only stall the run
MAX_REQUEST_SIZE_DEFAULT = 1_048_576  # max.request.size bounds one record
REQUEST_TIMEOUT_MS_DEFAULT = 30_000  # request.timeout.ms
REPORTING_INTERVAL_MS = 5_000  # Stats.reportingInterval
LATENCY_SAMPLES_MAX = 500_000  # Stats keeps at most this many latencies for the percentiles
PERCENTILES = (0.5, 0.95, 0.99, 0.999)
MIN_SLEEP_NS = 2_000_000  # ThroughputThrottler.MIN_SLEEP_NS: shorter sleeps are not worth a syscall
PAYLOAD_FILE_BYTES_MAX = 64 * 1024 * 1024  # every payload is held in memory, as in Kafka's tool
LETTER_ROUNDS_MAX = 64  # each round keeps ~91% of its random bytes; 64 rounds never run short
SEED_DEFAULT = 0  # ProducerPerformance seeds SplittableRandom(0)
MIB = 1024 * 1024

# Byte b < 234 maps to the letter 'A' + b % 26; 234 = 9 * 26, so every letter is equally likely.
_LETTERS = bytes(65 + b % 26 for b in range(256))
_NOT_LETTER = bytes(range(9 * 26, 256))

# Producer configs this tool acts on; any other key is reported and ignored.
HONOURED_CONFIGS = ("bootstrap.servers", "acks", "batch.size", "linger.ms", "compression.type",
                    "client.id", "max.request.size", "request.timeout.ms")


@dataclass(frozen=True, slots=True)
class ProducerSettings:
    """The producer configs a perf run honours, validated."""

    bootstrap_servers: str
    acks: int = -1  # acks=all is the default since Kafka 3.0
    batch_size_bytes: int = BATCH_SIZE_DEFAULT
    linger_ms: int = LINGER_MS_DEFAULT
    compression: Compression = Compression.NONE
    client_id: str = CLIENT_ID_DEFAULT
    max_request_size_bytes: int = MAX_REQUEST_SIZE_DEFAULT
    request_timeout_ms: int = REQUEST_TIMEOUT_MS_DEFAULT

    @classmethod
    def from_properties(cls, properties: dict[str, str]) -> ProducerSettings:
        if not properties.get("bootstrap.servers"):
            raise ConfigError('Missing required configuration "bootstrap.servers" which has no default value.')
        acks = properties.get("acks", "all")
        if acks not in ACKS:
            raise ConfigError(f"acks must be one of all, -1, 0, 1; got {acks!r}")
        codec = properties.get("compression.type", "none")
        if codec not in CODECS:
            raise ConfigError(f"compression.type must be one of {', '.join(CODECS)}; got {codec!r}")
        return cls(
            bootstrap_servers=properties["bootstrap.servers"], acks=ACKS[acks],
            batch_size_bytes=_int_config(properties, "batch.size", BATCH_SIZE_DEFAULT, 0, BATCH_SIZE_MAX),
            linger_ms=_int_config(properties, "linger.ms", LINGER_MS_DEFAULT, 0, LINGER_MS_MAX),
            compression=CODECS[codec], client_id=properties.get("client.id", CLIENT_ID_DEFAULT),
            max_request_size_bytes=_int_config(properties, "max.request.size", MAX_REQUEST_SIZE_DEFAULT,
                                               1, BATCH_SIZE_MAX),
            request_timeout_ms=_int_config(properties, "request.timeout.ms", REQUEST_TIMEOUT_MS_DEFAULT,
                                           1, 2**31 - 1),
        )


def _int_config(properties: dict[str, str], key: str, default: int, low: int, high: int) -> int:
    text = properties.get(key)
    if text is None:
        return default
    if not text.strip().lstrip("-").isdigit() or not low <= int(text) <= high:
        raise ConfigError(f"{key} must be an integer in {low}-{high}, got {text!r}")
    return int(text)


# ----------------------------------------------------------------------------- payloads


def random_letters(rng: random.Random, size_bytes: int) -> bytes:
    """``size_bytes`` random capital letters A-Z, each equally likely (Kafka's payload alphabet)."""
    letters = bytearray()
    for _ in range(LETTER_ROUNDS_MAX):
        if len(letters) >= size_bytes:
            return bytes(letters[:size_bytes])
        wanted = size_bytes - len(letters)
        letters += rng.randbytes(wanted + wanted // 8 + 8).translate(None, _NOT_LETTER).translate(_LETTERS)
    raise AssertionError(f"{LETTER_ROUNDS_MAX} rounds of random bytes made fewer than {size_bytes} letters")


def read_payload_file(path: Path, delimiter: str, out: TextIO) -> list[bytes]:
    """The file's entries split at ``delimiter`` (a literal string; Kafka's is a regex)."""
    print(f"Reading payloads from: {path.absolute()}", file=out)
    if not delimiter:
        raise ConfigError("--payload-delimiter must not be empty")
    if not path.is_file() or path.stat().st_size == 0:
        raise ConfigError("File does not exist or empty file provided.")
    if path.stat().st_size > PAYLOAD_FILE_BYTES_MAX:
        raise ConfigError(f"payload file {path} is {path.stat().st_size} bytes; the limit is {PAYLOAD_FILE_BYTES_MAX}")
    entries = path.read_text(encoding="utf-8").split(delimiter)
    if entries and entries[-1] == "":
        entries.pop()  # a trailing delimiter ends the last entry; it does not start an empty one
    print(f"Number of messages read: {len(entries)}", file=out)
    if not entries:
        raise ConfigError(f"payload file {path} holds no entries between delimiters {delimiter!r}")
    return [entry.encode() for entry in entries]


def payload_source(args: argparse.Namespace, rng: random.Random, out: TextIO) -> Callable[[int], bytes]:
    """A function from record index to payload, for whichever of the three payload flags was given."""
    if args.payload_file is not None:
        delimiter = "\n" if args.payload_delimiter == "\\n" else args.payload_delimiter
        entries = read_payload_file(Path(args.payload_file), delimiter, out)
        return lambda index: entries[rng.randrange(len(entries))]
    if args.payload_monotonic:
        return lambda index: str(index).encode()
    size_bytes = args.record_size
    return lambda index: random_letters(rng, size_bytes)


# ----------------------------------------------------------------------------- batching


def record_size_in_batch(offset_delta: int, timestamp_delta_ms: int, key: bytes | None, value: bytes | None) -> int:
    """Bytes one header-less record takes in a v2 batch (Kafka's ``DefaultRecord.sizeInBytes``)."""
    body = 1 + size_of_varint(timestamp_delta_ms) + size_of_varint(offset_delta)
    body += 1 if key is None else size_of_varint(len(key)) + len(key)
    body += 1 if value is None else size_of_varint(len(value)) + len(value)
    body += size_of_varint(0)  # header count
    return size_of_varint(body) + body


@dataclass(slots=True)
class ProducerBatch:
    """Records gathered for one partition; owned by the accumulator, then by the sender."""

    partition: int
    created_ns: int
    base_timestamp_ms: int
    records: list[Record] = field(default_factory=list)
    send_start_ns: list[int] = field(default_factory=list)
    size_bytes: int = V2_HEADER_SIZE  # the exact uncompressed size of the batch built so far

    def append(self, value: bytes, timestamp_ms: int, now_ns: int, record_bytes: int) -> None:
        # Offsets are deltas from 0; the broker assigns the real ones.
        self.records.append(Record(len(self.records), timestamp_ms, None, value))
        self.send_start_ns.append(now_ns)
        self.size_bytes += record_bytes


@dataclass(frozen=True, slots=True)
class AppendResult:
    """What one append did: the batches it closed, the bytes it added, whether the partition's
    batches are all full now (no batch left open)."""

    ready: tuple[ProducerBatch, ...]
    appended_bytes: int
    all_batches_full: bool


class Accumulator:
    """One open batch per partition (Kafka's ``RecordAccumulator`` without a memory pool).

    Not thread-safe; owned by one perf run.
    """

    def __init__(self, batch_size_bytes: int, linger_ms: int) -> None:
        self.batch_size_bytes = batch_size_bytes
        self.linger_ns = linger_ms * 1_000_000
        self._open: dict[int, ProducerBatch] = {}

    def append(self, partition: int, value: bytes, timestamp_ms: int, now_ns: int) -> AppendResult:
        """Add one record; return the batches now closed and ready to send."""
        ready = []
        batch = self._open.get(partition)
        if batch is not None:
            record_bytes = record_size_in_batch(len(batch.records), timestamp_ms - batch.base_timestamp_ms,
                                                None, value)
            if batch.size_bytes + record_bytes > self.batch_size_bytes:
                ready.append(self._open.pop(partition))
                batch = None
        appended_bytes = 0
        if batch is None:
            batch = self._open[partition] = ProducerBatch(partition, now_ns, timestamp_ms)
            record_bytes = record_size_in_batch(0, 0, None, value)
            appended_bytes = V2_HEADER_SIZE
        batch.append(value, timestamp_ms, now_ns, record_bytes)
        if batch.size_bytes >= self.batch_size_bytes:
            ready.append(self._open.pop(partition))
        return AppendResult(tuple(ready), appended_bytes + record_bytes, partition not in self._open)

    def expired(self, now_ns: int) -> list[ProducerBatch]:
        """Close and return every batch open for ``linger.ms`` or longer."""
        old = [p for p, batch in self._open.items() if now_ns - batch.created_ns >= self.linger_ns]
        return [self._open.pop(p) for p in old]

    def next_expiry_ns(self) -> int | None:
        return min((b.created_ns + self.linger_ns for b in self._open.values()), default=None)

    def drain(self) -> list[ProducerBatch]:
        """Close every open batch (``producer.close()`` flushes them)."""
        batches, self._open = list(self._open.values()), {}
        return batches


class StickyPartitioner:
    """Keyless records stick to one partition until ``batch.size`` bytes went there (KIP-794).

    Not thread-safe; owned by one perf run.
    """

    def __init__(self, partition_count: int, batch_size_bytes: int, rng: random.Random) -> None:
        self.partition_count = partition_count
        self.batch_size_bytes = max(batch_size_bytes, 1)
        self._rng = rng
        self.current = rng.randrange(partition_count)
        self._produced_bytes = 0

    def on_append(self, appended_bytes: int, all_batches_full: bool) -> None:
        """Count bytes added to the current partition; move on once ``batch.size`` bytes went there
        and its batch is closed, or unconditionally at twice that (``BuiltInPartitioner``)."""
        self._produced_bytes += appended_bytes
        if (self._produced_bytes >= self.batch_size_bytes and all_batches_full) or \
                self._produced_bytes >= 2 * self.batch_size_bytes:
            self.current = self._rng.randrange(self.partition_count)
            self._produced_bytes = 0


class ThroughputThrottler:
    """Kafka's ``ThroughputThrottler``, with the sleeping left to the caller.

    Not thread-safe; owned by one perf run.
    """

    def __init__(self, target_per_s: float, start_ns: int) -> None:
        if target_per_s == 0:
            raise ConfigError("--throughput 0 would never send a record; use -1 for no limit or a positive rate")
        self.target_per_s = target_per_s
        self.start_ns = start_ns
        self.sleep_per_record_ns = int(1e9 / target_per_s) if target_per_s > 0 else 0
        self._deficit_ns = 0

    def should_throttle(self, amount_so_far: int, send_start_ns: int) -> bool:
        """True when the rate so far is above the target (never for a negative target)."""
        if self.target_per_s < 0:
            return False
        elapsed_s = (send_start_ns - self.start_ns) / 1e9
        return elapsed_s > 0 and amount_so_far / elapsed_s > self.target_per_s

    def sleep_ns(self) -> int:
        """Add one record's worth of sleep; return the whole deficit once it reaches 2 ms, else 0."""
        self._deficit_ns += self.sleep_per_record_ns
        if self._deficit_ns < MIN_SLEEP_NS:
            return 0
        deficit, self._deficit_ns = self._deficit_ns, 0
        return deficit


# ----------------------------------------------------------------------------- stats


def percentiles(latencies_ms: list[int], fractions: tuple[float, ...] = PERCENTILES) -> list[int]:
    """Kafka's ``Stats.percentiles``: sort, then take the sample at index ``int(p * count)``."""
    ordered = sorted(latencies_ms)
    if not ordered:
        return [0] * len(fractions)
    return [ordered[int(p * len(ordered))] for p in fractions]


class Stats:
    """Kafka's ``ProducerPerformance.Stats``: totals, a reporting window, sampled latencies.

    Times are monotonic nanoseconds; latencies whole milliseconds. Not thread-safe; owned by one
    perf run. ``out`` receives the progress lines as windows close.
    """

    def __init__(self, num_records: int, start_ns: int, out: TextIO,
                 reporting_interval_ms: int = REPORTING_INTERVAL_MS) -> None:
        self.start_ns = self.window_start_ns = start_ns
        self.sampling = num_records // min(num_records, LATENCY_SAMPLES_MAX)
        self.latencies_ms: list[int] = []
        self.reporting_interval_ns = reporting_interval_ms * 1_000_000
        self.out = out
        self.iteration = self.count = self.bytes = self.total_latency_ms = self.max_latency_ms = 0
        self.window_count = self.window_bytes = self.window_total_latency_ms = self.window_max_latency_ms = 0

    def record(self, latency_ms: int, size_bytes: int, now_ns: int) -> None:
        self.count += 1
        self.bytes += size_bytes
        self.total_latency_ms += latency_ms
        self.max_latency_ms = max(self.max_latency_ms, latency_ms)
        self.window_count += 1
        self.window_bytes += size_bytes
        self.window_total_latency_ms += latency_ms
        self.window_max_latency_ms = max(self.window_max_latency_ms, latency_ms)
        if self.iteration % self.sampling == 0:
            self.latencies_ms.append(latency_ms)
        if now_ns - self.window_start_ns >= self.reporting_interval_ns:
            print(self.window_line(now_ns), file=self.out)
            self._new_window(now_ns)
        self.iteration += 1

    def window_line(self, now_ns: int) -> str:
        elapsed_ms = max(now_ns - self.window_start_ns, 1) / 1e6
        return (f"{self.window_count} records sent, {1000.0 * self.window_count / elapsed_ms:.1f} records/sec "
                f"({1000.0 * self.window_bytes / elapsed_ms / MIB:.2f} MB/sec), "
                f"{self.window_total_latency_ms / max(self.window_count, 1):.1f} ms avg latency, "
                f"{float(self.window_max_latency_ms):.1f} ms max latency.")

    def total_line(self, now_ns: int) -> str:
        elapsed_ms = max(now_ns - self.start_ns, 1) / 1e6
        p50, p95, p99, p999 = percentiles(self.latencies_ms)
        return (f"{self.count} records sent, {1000.0 * self.count / elapsed_ms:f} records/sec "
                f"({1000.0 * self.bytes / elapsed_ms / MIB:.2f} MB/sec), "
                f"{self.total_latency_ms / max(self.count, 1):.2f} ms avg latency, "
                f"{float(self.max_latency_ms):.2f} ms max latency, {p50} ms 50th, {p95} ms 95th, "
                f"{p99} ms 99th, {p999} ms 99.9th.")

    def _new_window(self, now_ns: int) -> None:
        self.window_start_ns = now_ns
        self.window_count = self.window_bytes = self.window_total_latency_ms = self.window_max_latency_ms = 0


@dataclass(slots=True)
class SendMetrics:
    """Counters behind ``--print-metrics`` (a few of the Java producer's ``producer-metrics``)."""

    request_total: int = 0
    record_send_total: int = 0
    record_error_total: int = 0
    record_bytes_total: int = 0
    batch_bytes_total: int = 0
    batch_bytes_max: int = 0
    request_latency_total_ms: float = 0.0
    request_latency_max_ms: float = 0.0
    compression_rate_total: float = 0.0  # sum of encoded / uncompressed size, per measured batch
    measured_batches: int = 0  # batches whose encoded size the transport reported

    def on_request(self, batch: ProducerBatch, latency_ms: float, ok: bool, batch_bytes: int | None = None) -> None:
        """Count one request. ``batch_bytes`` is the encoded batch as sent (compressed), when the
        transport knows it; without it the batch counts at its exact uncompressed size."""
        if batch_bytes is not None:
            self.compression_rate_total += batch_bytes / batch.size_bytes
            self.measured_batches += 1
        size_bytes = batch.size_bytes if batch_bytes is None else batch_bytes
        self.request_total += 1
        count = len(batch.records)
        if ok:
            self.record_send_total += count
        else:
            self.record_error_total += count
        self.record_bytes_total += sum(len(r.value or b"") for r in batch.records)
        self.batch_bytes_total += size_bytes
        self.batch_bytes_max = max(self.batch_bytes_max, size_bytes)
        self.request_latency_total_ms += latency_ms
        self.request_latency_max_ms = max(self.request_latency_max_ms, latency_ms)

    def table(self, client_id: str) -> list[str]:
        """Kafka's ``ToolsUtils.printMetrics`` layout: ``group:name:{tags}`` padded, `` : value``."""
        requests = max(self.request_total, 1)
        records = max(self.record_send_total + self.record_error_total, 1)
        values = {
            "batch-size-avg": self.batch_bytes_total / requests,  # encoded bytes, as Kafka's Sender
            "batch-size-max": float(self.batch_bytes_max),
            "record-error-total": float(self.record_error_total),
            "record-send-total": float(self.record_send_total),
            "record-size-avg": self.record_bytes_total / records,
            "records-per-request-avg": records / requests if self.request_total else 0.0,
            "request-latency-avg": self.request_latency_total_ms / requests,
            "request-latency-max": self.request_latency_max_ms,
            "request-total": float(self.request_total),
        }
        if self.measured_batches:  # Kafka's ratio of compressed to uncompressed batch size
            values["compression-rate-avg"] = self.compression_rate_total / self.measured_batches
        names = {f"producer-metrics:{name}:{{client-id={client_id}}}": value for name, value in values.items()}
        width = max(len(name) for name in names)
        return ["", f"{'Metric Name':<{width}}   Value"] + [
            f"{name:<{width}} : {value:.3f}" for name, value in sorted(names.items())]


# ----------------------------------------------------------------------------- the run

# Send one batch to a partition; raise on failure. Returns the encoded batch's size in bytes, or
# None when the transport cannot tell (the metrics then count the uncompressed size).
Transport = Callable[[int, list[Record]], "int | None"]


class PerfProducer:
    """One perf run: payloads -> partitioner -> accumulator -> ``transport``.

    ``clock`` times everything and ``sleep_ns`` waits (the real ones, or a ``ManualClock`` and a
    function advancing it). Not thread-safe; used once.
    """

    def __init__(self, settings: ProducerSettings, partition_count: int, transport: Transport, *,
                 clock: Clock, sleep_ns: Callable[[int], None], rng: random.Random,
                 out: TextIO, err: TextIO) -> None:
        self.settings = settings
        self.transport = transport
        self.clock, self.sleep_ns, self.out, self.err = clock, sleep_ns, out, err
        self.accumulator = Accumulator(settings.batch_size_bytes, settings.linger_ms)
        self.partitioner = StickyPartitioner(partition_count, settings.batch_size_bytes, rng)
        self.metrics = SendMetrics()

    def run(self, num_records: int, payload: Callable[[int], bytes], throughput_per_s: float) -> Stats:
        start_ns = self.clock.nanoseconds()
        stats = Stats(num_records, start_ns, self.out)
        throttler = ThroughputThrottler(throughput_per_s, start_ns)
        for index in range(num_records):
            value = payload(index)
            if len(value) > self.settings.max_request_size_bytes:
                raise RecordTooLargeError(
                    f"record {index} is {len(value)} bytes, larger than max.request.size "
                    f"{self.settings.max_request_size_bytes}")
            send_start_ns = self.clock.nanoseconds()
            appended = self.accumulator.append(self.partitioner.current, value, self.clock.milliseconds(),
                                               send_start_ns)
            self.partitioner.on_append(appended.appended_bytes, appended.all_batches_full)
            self._send(list(appended.ready), stats)
            self._send(self.accumulator.expired(self.clock.nanoseconds()), stats)
            if throttler.should_throttle(index, send_start_ns):
                self._wait(throttler.sleep_ns(), stats)
        self._send(self.accumulator.drain(), stats)
        return stats

    def _wait(self, duration_ns: int, stats: Stats) -> None:
        """Sleep ``duration_ns``, waking to send batches whose linger.ms runs out meanwhile."""
        deadline_ns = self.clock.nanoseconds() + duration_ns
        while (now_ns := self.clock.nanoseconds()) < deadline_ns:
            expiry_ns = self.accumulator.next_expiry_ns()
            self.sleep_ns(min(deadline_ns, expiry_ns if expiry_ns is not None else deadline_ns) - now_ns)
            self._send(self.accumulator.expired(self.clock.nanoseconds()), stats)

    def _send(self, batches: list[ProducerBatch], stats: Stats) -> None:
        for batch in batches:
            request_start_ns = self.clock.nanoseconds()
            batch_bytes: int | None = None
            try:
                batch_bytes = self.transport(batch.partition, batch.records)
                ok = True
            except BrokerResponseError as error:  # Kafka's callback prints the failure and goes on
                print(f"ERROR {error}", file=self.err)
                ok = False
            now_ns = self.clock.nanoseconds()
            self.metrics.on_request(batch, (now_ns - request_start_ns) / 1e6, ok, batch_bytes)
            if ok:
                for record, start_ns in zip(batch.records, batch.send_start_ns, strict=True):
                    stats.record((now_ns - start_ns) // 1_000_000, len(record.value or b""), now_ns)


# ----------------------------------------------------------------------------- the tool


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--topic", required=True, metavar="TOPIC", help="produce messages to this topic")
    parser.add_argument("--num-records", required=True, type=int, metavar="NUM-RECORDS")
    payload = parser.add_mutually_exclusive_group(required=True)
    payload.add_argument("--record-size", type=int, metavar="RECORD-SIZE", help="message size in bytes")
    payload.add_argument("--payload-file", metavar="PAYLOAD-FILE",
                         help="UTF-8 file whose entries are picked at random as payloads")
    payload.add_argument("--payload-monotonic", action="store_true", help="payloads 0, 1, 2, ...")
    parser.add_argument("--payload-delimiter", default="\\n", metavar="PAYLOAD-DELIMITER")
    parser.add_argument("--throughput", required=True, type=float, metavar="THROUGHPUT",
                        help="approximate records/sec; -1 disables throttling")
    parser.add_argument("--producer-props", nargs="+", metavar="PROP-NAME=PROP-VALUE",
                        help="producer configs (bootstrap.servers, acks, batch.size, linger.ms, ...); "
                             "they take precedence over --producer.config")
    parser.add_argument("--producer.config", dest="producer_config", metavar="CONFIG-FILE")
    parser.add_argument("--print-metrics", action="store_true")
    parser.add_argument("--seed", type=int, default=SEED_DEFAULT, help="seed of the payload generator")


def run(args: argparse.Namespace, *, out: TextIO | None = None, err: TextIO | None = None,
        clock: Clock | None = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    try:
        settings = settings_from_args(args, err)
        rng = random.Random(args.seed)
        payload = payload_source(args, rng, out)
        with bootstrap(settings.bootstrap_servers, request_timeout_ms=settings.request_timeout_ms,
                       client_id=settings.client_id) as conn:
            partition_count = topic_partition_count(conn, args.topic)

            def transport(partition: int, records: list[Record]) -> int:
                return send_batch(conn, args.topic, partition, records, acks=settings.acks,
                                  compression=settings.compression).batch_bytes

            producer = PerfProducer(settings, partition_count, transport, clock=clock or SystemClock(),
                                    sleep_ns=lambda ns: time.sleep(ns / 1e9), rng=rng, out=out, err=err)
            stats = producer.run(args.num_records, payload, args.throughput)
            print(stats.total_line(producer.clock.nanoseconds()), file=out)
        if args.print_metrics:
            print("\n".join(producer.metrics.table(settings.client_id)), file=out)
        return 0 if producer.metrics.record_error_total == 0 else 1
    except (KafkaError, ValueError, OSError) as error:
        print(f"ERROR {error}", file=err)
        return 1


def settings_from_args(args: argparse.Namespace, err: TextIO) -> ProducerSettings:
    """Validate the flags and merge ``--producer.config`` under ``--producer-props``."""
    if args.num_records <= 0:
        raise ConfigError("--num-records should be greater than zero")
    if args.record_size is not None and args.record_size <= 0:
        raise ConfigError("--record-size should be greater than zero")
    if args.producer_props is None and args.producer_config is None:
        raise ConfigError("Either --producer-props or --producer.config must be specified.")
    properties = read_properties(Path(args.producer_config)) if args.producer_config else {}
    properties.update(parse_properties(args.producer_props or []))
    for key in sorted(set(properties) - set(HONOURED_CONFIGS)):
        print(f"WARNING kafkalab's perf producer ignores the config {key}={properties[key]}", file=err)
    settings = ProducerSettings.from_properties(properties)
    if args.record_size is not None and args.record_size > settings.max_request_size_bytes:
        raise RecordTooLargeError(f"--record-size {args.record_size} is larger than max.request.size "
                                  f"{settings.max_request_size_bytes}")
    return settings


def topic_partition_count(conn: BrokerConnection, topic: str) -> int:
    """The topic's partition count, creating the topic if the broker auto-creates (as a producer's
    first Metadata request does)."""
    (metadata,) = conn.metadata([topic], allow_auto_topic_creation=True).topics
    check_error(metadata.error_code, f"look up topic {topic!r}")
    if not metadata.partitions:
        raise BrokerResponseError(f"topic {topic!r} has no partitions")
    return len(metadata.partitions)
