"""``kafkalab consumer-perf-test``: measure how fast a topic can be read (kafka-consumer-perf-test.sh).

Theory of operation
-------------------
The tool reads ``--messages`` records from every partition of ``--topic`` and reports the data
rate, as Kafka's ``ConsumerPerformance`` does. Kafka's tool joins a fresh consumer group, so its
first poll waits for a rebalance and ``rebalance.time.ms`` reports that wait; kafkalab assigns
all partitions manually, so the rebalance time is always 0 and ``fetch.time.ms`` is the whole
run. Start positions follow ``auto.offset.reset`` for a group with no committed offsets: the log
start offset, or the log end offset with ``--from-latest``.

A *poll* fetches each partition in turn without waiting (``max_wait_ms=0``); a poll that finds
nothing waits up to 100 ms on one partition, rotating, which plays the part of Kafka's
``poll(Duration.ofMillis(100))``. The run ends after ``--messages`` records, or when no record
has arrived for ``--timeout`` ms (then Kafka's ``WARNING: Exiting before consuming ...`` line is
printed). Bytes count key plus value, not batch overhead. kafkalab stops at exactly
``--messages`` records, where Kafka counts the whole last poll (up to ``max.poll.records`` more).

Output, one CSV-like line (numbers as Kafka's ``printf`` formats them)::

    start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
    2024-05-01 12:00:00:000, 2024-05-01 12:00:00:500, 0.9537, 1.9073, 10000, 20000.0000, 0, 500, 1.9073, 20000.0000

Worked example (the line above): 10,000 records of 100 bytes are 1,000,000 bytes = 0.9537 MiB;
read in 500 ms that is 1.9073 MB.sec and 20000.0000 nMsg.sec. With ``--show-detailed-stats`` a
``time, threadId, ...`` header is printed instead and a progress line follows every
``--reporting-interval`` ms, covering only that interval; the summary line is then left out.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TextIO

from kafkalab.client.connection import BrokerConnection, bootstrap, check_error
from kafkalab.client.data import fetch_records, list_offset
from kafkalab.protocol.messages.list_offsets import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from kafkalab.clock import Clock, SystemClock
from kafkalab.errors import BrokerResponseError, ConfigError, KafkaError
from kafkalab.records import Record

CLIENT_ID = "perf-consumer-client"  # ConsumerPerformance's client.id
FETCH_SIZE_DEFAULT = 1024 * 1024  # --fetch-size: max.partition.fetch.bytes per partition
FETCH_SIZE_MAX = 64 * 1024 * 1024  # the client's response limit
TIMEOUT_MS_DEFAULT = 10_000  # --timeout: the longest allowed gap between records
REPORTING_INTERVAL_MS_DEFAULT = 5_000
POLL_WAIT_MS = 100  # ConsumerPerformance polls with a 100 ms timeout
DATE_FORMAT_DEFAULT = "yyyy-MM-dd HH:mm:ss:SSS"
PATTERN_LETTERS_MAX = 64  # a date pattern is a handful of fields, not an essay
MIB = 1024 * 1024
HEADER_EXTRA = ", rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
SUMMARY_HEADER = "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec" + HEADER_EXTRA
DETAILED_HEADER = "time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec" + HEADER_EXTRA


# ----------------------------------------------------------------------------- dates


def _local_fields(now_ms: int) -> dict[str, int]:
    moment = time.localtime(now_ms // 1000)
    return {"y": moment.tm_year, "M": moment.tm_mon, "d": moment.tm_mday, "H": moment.tm_hour,
            "m": moment.tm_min, "s": moment.tm_sec, "S": now_ms % 1000}


DATE_LETTERS = frozenset("yMdHmsS")  # the SimpleDateFormat letters kafkalab understands


def date_formatter(pattern: str) -> Callable[[int], str]:
    """A ``java.text.SimpleDateFormat``-style formatter for the numeric fields y M d H m s S.

    Each run of one letter is a zero-padded field as wide as the run (``yy`` keeps two digits);
    any other character is copied. ``date_formatter("yyyy-MM-dd HH:mm:ss:SSS")(0)`` in UTC gives
    ``"1970-01-01 00:00:00:000"``.
    """
    if len(pattern) > PATTERN_LETTERS_MAX:
        raise ConfigError(f"--date-format is {len(pattern)} characters; the limit is {PATTERN_LETTERS_MAX}")
    runs: list[tuple[str, int]] = []
    for char in pattern:
        if char.isalpha() and char not in DATE_LETTERS:
            raise ConfigError(f"--date-format letter {char!r} is not supported; use y, M, d, H, m, s, S")
        if runs and runs[-1][0] == char and char in DATE_LETTERS:
            runs[-1] = (char, runs[-1][1] + 1)
        else:
            runs.append((char, 1))

    def format_ms(now_ms: int) -> str:
        fields = _local_fields(now_ms)
        parts = []
        for char, width in runs:
            if char not in DATE_LETTERS:
                parts.append(char * width)
            elif char == "y" and width == 2:
                parts.append(f"{fields['y'] % 100:02d}")
            else:
                parts.append(f"{fields[char]:0{width}d}")
        return "".join(parts)

    return format_ms


# ----------------------------------------------------------------------------- lines


def _per_second(amount: float, elapsed_ms: float) -> float:
    # Kafka's detailed lines print 0.0 for a zero-length interval; the summary would print
    # Infinity -- kafkalab prints 0.0 in both, so a too-fast run still parses as numbers.
    return 1000.0 * amount / elapsed_ms if elapsed_ms > 0 else 0.0


def summary_line(start_ms: int, end_ms: int, total_bytes: int, total_messages: int,
                 rebalance_ms: int, date_format: Callable[[int], str]) -> str:
    """``ConsumerPerformance``'s final line: totals over the whole run and over fetch time."""
    elapsed_ms = end_ms - start_ms
    fetch_ms = elapsed_ms - rebalance_ms
    mb = total_bytes / MIB
    return (f"{date_format(start_ms)}, {date_format(end_ms)}, {mb:.4f}, {_per_second(mb, elapsed_ms):.4f}, "
            f"{total_messages}, {_per_second(total_messages, elapsed_ms):.4f}, {rebalance_ms}, {fetch_ms}, "
            f"{_per_second(mb, fetch_ms):.4f}, {_per_second(total_messages, fetch_ms):.4f}")


def progress_line(bytes_read: int, last_bytes: int, messages: int, last_messages: int,
                  start_ms: int, end_ms: int, rebalance_ms: int, date_format: Callable[[int], str]) -> str:
    """One ``--show-detailed-stats`` line: the interval from ``start_ms`` to ``end_ms``."""
    elapsed_ms = end_ms - start_ms
    fetch_ms = elapsed_ms - rebalance_ms
    interval_mb = (bytes_read - last_bytes) / MIB
    interval_messages = messages - last_messages
    return (f"{date_format(end_ms)}, 0, {bytes_read / MIB:.4f}, {_per_second(interval_mb, elapsed_ms):.4f}, "
            f"{messages}, {_per_second(interval_messages, elapsed_ms):.4f}, {rebalance_ms}, {fetch_ms}, "
            f"{_per_second(interval_mb, fetch_ms):.4f}, {_per_second(interval_messages, fetch_ms):.4f}")


# ----------------------------------------------------------------------------- consuming


@dataclass(frozen=True, slots=True)
class PerfOptions:
    """The flags that shape a run, validated."""

    topic: str
    messages: int
    timeout_ms: int = TIMEOUT_MS_DEFAULT
    fetch_size_bytes: int = FETCH_SIZE_DEFAULT
    from_latest: bool = False
    show_detailed_stats: bool = False
    reporting_interval_ms: int = REPORTING_INTERVAL_MS_DEFAULT

    def __post_init__(self) -> None:
        if self.messages <= 0:
            raise ConfigError(f"--messages must be greater than 0, got {self.messages}")
        if self.timeout_ms < 0:
            raise ConfigError(f"--timeout must be >= 0 ms, got {self.timeout_ms}")
        if not 1 <= self.fetch_size_bytes <= FETCH_SIZE_MAX:
            raise ConfigError(f"--fetch-size must be in 1-{FETCH_SIZE_MAX} bytes, got {self.fetch_size_bytes}")
        if self.reporting_interval_ms <= 0:
            raise ConfigError("Reporting interval must be greater than 0.")


Poll = Callable[[dict[int, int], int], list[tuple[int, Record]]]  # positions, wait ms -> (partition, record)


@dataclass(slots=True)
class Totals:
    """What one run read. ``start_ms``/``end_ms`` are wall-clock times for the report."""

    start_ms: int
    end_ms: int = 0
    messages: int = 0
    bytes: int = 0
    timed_out: bool = False


def consume(options: PerfOptions, positions: dict[int, int], poll: Poll, clock: Clock, out: TextIO,
            date_format: Callable[[int], str]) -> Totals:
    """Poll until ``options.messages`` records were read or ``options.timeout_ms`` passed without one.

    ``positions`` (partition -> next offset) advances as records are read.
    """
    totals = Totals(start_ms=clock.milliseconds())
    last_report_ms = last_consumed_ms = now_ms = totals.start_ms
    last_bytes = last_messages = 0
    while totals.messages < options.messages and now_ms - last_consumed_ms <= options.timeout_ms:
        records = poll(positions, POLL_WAIT_MS)
        now_ms = clock.milliseconds()
        if records:
            last_consumed_ms = now_ms
        for partition, record in records[: options.messages - totals.messages]:
            positions[partition] = record.offset + 1
            totals.messages += 1
            totals.bytes += len(record.key or b"") + len(record.value or b"")
            if now_ms - last_report_ms >= options.reporting_interval_ms:
                if options.show_detailed_stats:
                    print(progress_line(totals.bytes, last_bytes, totals.messages, last_messages,
                                        last_report_ms, now_ms, 0, date_format), file=out)
                last_report_ms, last_bytes, last_messages = now_ms, totals.bytes, totals.messages
    totals.end_ms = clock.milliseconds()
    totals.timed_out = totals.messages < options.messages
    return totals


def network_poll(conn: BrokerConnection, topic: str, fetch_size_bytes: int) -> Poll:
    """A poll over ``conn``: one Fetch per partition, waiting only when a whole round is empty."""
    turn = 0

    def poll(positions: dict[int, int], wait_ms: int) -> list[tuple[int, Record]]:
        nonlocal turn
        found = list(_fetch_round(conn, topic, positions, fetch_size_bytes, max_wait_ms=0))
        if found or not positions:
            return found
        partitions = sorted(positions)
        partition = partitions[turn % len(partitions)]
        turn += 1
        records, _ = fetch_records(conn, topic, partition, positions[partition], max_wait_ms=wait_ms,
                                   partition_max_bytes=fetch_size_bytes)
        return [(partition, record) for record in records]

    return poll


def _fetch_round(conn: BrokerConnection, topic: str, positions: dict[int, int], fetch_size_bytes: int,
                 *, max_wait_ms: int) -> Iterator[tuple[int, Record]]:
    for partition in sorted(positions):
        records, _ = fetch_records(conn, topic, partition, positions[partition], max_wait_ms=max_wait_ms,
                                   partition_max_bytes=fetch_size_bytes)
        for record in records:
            yield partition, record


def start_positions(conn: BrokerConnection, topic: str, from_latest: bool) -> dict[int, int]:
    """Every partition of ``topic`` at its log start offset (log end offset with ``from_latest``)."""
    (metadata,) = conn.metadata([topic]).topics
    check_error(metadata.error_code, f"look up topic {topic!r}")
    if not metadata.partitions:
        raise BrokerResponseError(f"topic {topic!r} has no partitions")
    timestamp = LATEST_TIMESTAMP if from_latest else EARLIEST_TIMESTAMP
    return {p.partition_index: list_offset(conn, topic, p.partition_index, timestamp)
            for p in metadata.partitions}


# ----------------------------------------------------------------------------- the tool


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT",
                        help="REQUIRED: The server(s) to connect to.")
    parser.add_argument("--topic", required=True, help="The topic to consume from.")
    parser.add_argument("--messages", required=True, type=int, metavar="COUNT",
                        help="REQUIRED: The number of messages to consume.")
    parser.add_argument("--timeout", type=int, default=TIMEOUT_MS_DEFAULT, metavar="MILLISECONDS",
                        help="The maximum allowed time in milliseconds between returned records.")
    parser.add_argument("--fetch-size", type=int, default=FETCH_SIZE_DEFAULT, metavar="SIZE",
                        help="The amount of data to fetch in a single request (per partition).")
    parser.add_argument("--from-latest", action="store_true",
                        help="Start with the latest message in the log rather than the earliest.")
    parser.add_argument("--show-detailed-stats", action="store_true",
                        help="Report stats for each reporting interval.")
    parser.add_argument("--reporting-interval", type=int, default=REPORTING_INTERVAL_MS_DEFAULT,
                        metavar="INTERVAL_MS", help="Interval in milliseconds at which to print progress info.")
    parser.add_argument("--date-format", default=DATE_FORMAT_DEFAULT,
                        help="SimpleDateFormat-style pattern with y, M, d, H, m, s, S.")
    parser.add_argument("--hide-header", action="store_true", help="Skip printing the header for the stats.")


def run(args: argparse.Namespace, *, out: TextIO | None = None, err: TextIO | None = None,
        clock: Clock | None = None) -> int:
    out, err, clock = out or sys.stdout, err or sys.stderr, clock or SystemClock()
    try:
        options = PerfOptions(args.topic, args.messages, args.timeout, args.fetch_size, args.from_latest,
                              args.show_detailed_stats, args.reporting_interval)
        date_format = date_formatter(args.date_format)
        if not args.hide_header:
            print(DETAILED_HEADER if options.show_detailed_stats else SUMMARY_HEADER, file=out)
        with bootstrap(args.bootstrap_server, client_id=CLIENT_ID) as conn:
            positions = start_positions(conn, options.topic, options.from_latest)
            totals = consume(options, positions, network_poll(conn, options.topic, options.fetch_size_bytes),
                             clock, out, date_format)
        if totals.timed_out:
            print(f"WARNING: Exiting before consuming the expected number of messages: timeout "
                  f"({options.timeout_ms} ms) exceeded. You can use the --timeout option to increase "
                  "the timeout.", file=out)
        if not options.show_detailed_stats:
            print(summary_line(totals.start_ms, totals.end_ms, totals.bytes, totals.messages, 0, date_format),
                  file=out)
        return 0
    except (KafkaError, ValueError) as error:
        print(f"ERROR {error}", file=err)
        return 1
