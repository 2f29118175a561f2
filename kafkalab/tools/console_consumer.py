"""``kafkalab console-consumer``: print the records of one partition (kafka-console-consumer.sh).

Flags follow Kafka's script; partitions are assigned manually (consumer groups come later)::

    $ kafkalab console-consumer --bootstrap-server 127.0.0.1:9092 --topic events \\
          --from-beginning --max-messages 2 --property print.key=true --property print.offset=true
    Offset:0	user-1	clicked
    Offset:1	user-2	paid
    Processed a total of 2 messages

Output mirrors Kafka's ``DefaultMessageFormatter``: optional ``CreateTime:<ms>``,
``Partition:<n>``, ``Offset:<n>``, headers and key, each followed by ``print.*`` separators (a tab
by default), then the value; null prints as ``null``. ``--offset`` takes ``earliest``,
``latest`` or a number; ``--from-beginning`` means earliest. The consumer stops after
``--max-messages`` records or when no record arrives for ``--timeout-ms``, and prints the
"Processed a total of N messages" line to stderr, as Kafka does.

``--isolation-level`` is Kafka's: ``read_uncommitted`` (the default) prints every record,
those of aborted and still open transactions included; ``read_committed`` reads up to the last
stable offset and drops the records of aborted transactions, by the same rule as the consumer
(:mod:`kafkalab.client.consumer.fetcher`), and ``latest`` means the last stable offset. On a
partition holding a committed transaction (offsets 0-1, marker 2) and an aborted one (3-4,
marker 5), read_committed prints offsets 0 and 1 and read_uncommitted 0, 1, 3 and 4; markers
are never printed.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from typing import TextIO

from kafkalab.client.connection import BrokerConnection, bootstrap, check_error
from kafkalab.client.consumer.config import ISOLATION_LEVELS, ConsumerConfig
from kafkalab.client.consumer.fetcher import ConsumerRecord, fetch_request, partition_records
from kafkalab.client.data import list_offset
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.records import Record
from kafkalab.protocol.messages.list_offsets import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from kafkalab.errors import KafkaError

FETCH_WAIT_MS = 200  # each Fetch waits at most this long for new data
FLAGS = ("print.timestamp", "print.partition", "print.offset", "print.headers", "print.key")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT")
    parser.add_argument("--topic", required=True)
    parser.add_argument("--partition", type=int, default=0)
    parser.add_argument("--offset", default=None, help="earliest, latest or an offset (default latest)")
    parser.add_argument("--from-beginning", action="store_true")
    parser.add_argument("--max-messages", type=int, default=None)
    parser.add_argument("--timeout-ms", type=int, default=None,
                        help="exit when no record arrives for this long")
    parser.add_argument("--property", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--request-timeout-ms", type=int, default=30_000)
    parser.add_argument("--isolation-level", choices=sorted(ISOLATION_LEVELS), default="read_uncommitted",
                        help="read_committed skips aborted transactions and stops at the last stable offset")


def run(args: argparse.Namespace, stdout: TextIO | None = None) -> int:
    out = stdout or sys.stdout
    count = 0
    try:
        properties = dict(p.partition("=")[::2] for p in args.property)
        with bootstrap(args.bootstrap_server, request_timeout_ms=args.request_timeout_ms) as conn:
            offset = start_offset(conn, args)
            for record in consume(conn, args, offset):
                out.write(format_record(record, args.partition, properties) + "\n")
                count += 1
        out.flush()
        print(f"Processed a total of {count} messages", file=sys.stderr)
        return 0
    except (KafkaError, ValueError) as error:
        print(f"ERROR {error}", file=sys.stderr)
        print(f"Processed a total of {count} messages", file=sys.stderr)
        return 1


def start_offset(conn: BrokerConnection, args: argparse.Namespace) -> int:
    spec = "earliest" if args.from_beginning else (args.offset or "latest")
    if spec in ("earliest", "latest"):
        timestamp = EARLIEST_TIMESTAMP if spec == "earliest" else LATEST_TIMESTAMP
        return list_offset(conn, args.topic, args.partition, timestamp,
                           isolation_level=ISOLATION_LEVELS[args.isolation_level])
    if not spec.lstrip("-").isdigit() or int(spec) < 0:
        raise ValueError(f"--offset must be earliest, latest or a non-negative offset, got {spec!r}")
    return int(spec)


def consume(conn: BrokerConnection, args: argparse.Namespace, offset: int) -> Iterator[ConsumerRecord]:
    """Yield records from ``offset`` until ``--max-messages`` or ``--timeout-ms`` of silence."""
    config = ConsumerConfig(fetch_max_wait_ms=FETCH_WAIT_MS, isolation_level=args.isolation_level)
    tp = (args.topic, args.partition)
    remaining = args.max_messages
    idle_since_s = time.monotonic()
    while remaining is None or remaining > 0:
        response = conn.request(ApiKey.FETCH, fetch_request(config, [(tp, offset)]))
        check_error(getattr(response, "error_code", 0), f"fetch from {args.topic}-{args.partition}")
        (data,) = response.responses[0].partitions
        check_error(data.error_code, f"fetch from {args.topic}-{args.partition} at offset {offset}")
        fetched = partition_records(config, tp, offset, data)
        if fetched.records:
            idle_since_s = time.monotonic()
        elif args.timeout_ms is not None and (time.monotonic() - idle_since_s) * 1000 >= args.timeout_ms:
            return
        offset = fetched.next_offset  # past skipped markers and aborted batches too
        for record in fetched.records[:remaining]:
            yield record
            if remaining is not None:
                remaining -= 1


def format_record(record: ConsumerRecord | Record, partition: int, properties: dict[str, str]) -> str:
    """Kafka's ``DefaultMessageFormatter`` layout for one record."""
    def on(flag: str) -> bool:
        return properties.get(flag, "false").lower() == "true"

    def text(data: bytes | None) -> str:
        return "null" if data is None else data.decode(errors="replace")

    separator = properties.get("key.separator", "\t")
    line_parts = []
    if on("print.timestamp"):
        line_parts.append(f"CreateTime:{record.timestamp}")
    if on("print.partition"):
        line_parts.append(f"Partition:{partition}")
    if on("print.offset"):
        line_parts.append(f"Offset:{record.offset}")
    if on("print.headers"):
        headers = ",".join(f"{h.key}:{text(h.value)}" for h in record.headers)
        line_parts.append(headers or "NO_HEADERS")
    if on("print.key"):
        line_parts.append(text(record.key))
    return "".join(part + separator for part in line_parts) + text(record.value)
