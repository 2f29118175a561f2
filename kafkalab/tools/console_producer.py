"""``kafkalab console-producer``: send each line of stdin as one record (kafka-console-producer.sh).

Flags follow Kafka's script::

    $ printf 'user-1:clicked\\nuser-2:paid\\n' | kafkalab console-producer \\
          --bootstrap-server 127.0.0.1:9092 --topic events \\
          --property parse.key=true --property key.separator=: --compression-codec gzip

With ``parse.key=true`` each line splits at the first ``key.separator`` (default a tab) into key
and value; a line without the separator is an error, as in Kafka's ``LineMessageReader``.
``--producer-property acks=all`` (or ``--request-required-acks``) sets acks. Lines are sent in
batches of at most ``--batch-size`` records, each batch stamped with the current time.

Partitions are chosen as Kafka's default partitioner chooses them: a keyed record goes to
``murmur2(key) & 0x7fffffff % partitions`` (so ``user-1`` always lands in the same partition,
whichever Java or kafkalab producer sent it), and records without a key stick to one
partition for a whole batch before moving on (the sticky partitioner of KIP-480).
``--partition N`` overrides both and sends every record to partition N.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import sys
from typing import TextIO

from kafkalab.client.admin import describe_topics
from kafkalab.client.connection import BrokerConnection, bootstrap
from kafkalab.client.data import CODECS, produce_batch
from kafkalab.clock import Clock, SystemClock
from kafkalab.errors import KafkaError
from kafkalab.partitioner import partition_for_key
from kafkalab.records import Record

ACKS = {"all": -1, "-1": -1, "1": 1, "0": 0}
BATCH_RECORDS_DEFAULT = 200  # records per Produce request (Kafka's script defaults to 200 too)
LINE_BYTES_MAX = 1024 * 1024  # max.request.size's default bounds one record


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT")
    parser.add_argument("--topic", required=True)
    parser.add_argument("--partition", type=int, default=None,
                        help="send every record to this partition (default: Kafka's partitioner)")
    parser.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                        help="parse.key, key.separator, ignore.error")
    parser.add_argument("--producer-property", action="append", default=[], metavar="KEY=VALUE",
                        help="acks is honoured; other producer settings are accepted and ignored")
    parser.add_argument("--request-required-acks", default=None)
    parser.add_argument("--compression-codec", nargs="?", const="gzip", default="none", choices=sorted(CODECS))
    parser.add_argument("--batch-size", type=int, default=BATCH_RECORDS_DEFAULT)
    parser.add_argument("--request-timeout-ms", type=int, default=30_000)


def run(args: argparse.Namespace, stdin: TextIO | None = None, clock: Clock | None = None) -> int:
    try:
        properties = parse_properties(args.property)
        producer_properties = parse_properties(args.producer_property)
        acks_text = args.request_required_acks or producer_properties.get("acks", "1")
        if acks_text not in ACKS:
            raise ValueError(f"acks must be one of all, -1, 0, 1; got {acks_text!r}")
        if not 1 <= args.batch_size <= 100_000:
            raise ValueError(f"--batch-size must be in 1-100000, got {args.batch_size}")
        parse_key = properties.get("parse.key", "false").lower() == "true"
        separator = properties.get("key.separator", "\t")
        produce_lines(args, stdin or sys.stdin, clock or SystemClock(), ACKS[acks_text], parse_key, separator)
        return 0
    except (KafkaError, ValueError) as error:
        print(f"ERROR {error}", file=sys.stderr)
        return 1


def produce_lines(args: argparse.Namespace, stdin: TextIO, clock: Clock, acks: int,
                  parse_key: bool, separator: str) -> None:
    with bootstrap(args.bootstrap_server, request_timeout_ms=args.request_timeout_ms) as conn:
        choose = Partitioner(args.partition, _partition_count(conn, args.topic, args.partition))
        pending: list[Record] = []
        for line_number, line in enumerate(stdin, start=1):
            pending.append(line_to_record(line.rstrip("\n"), line_number, clock.milliseconds(),
                                          parse_key, separator))
            if len(pending) >= args.batch_size:
                _send(conn, args, pending, choose, acks)
                pending = []
        if pending:
            _send(conn, args, pending, choose, acks)


def _partition_count(conn: BrokerConnection, topic: str, fixed: int | None) -> int:
    if fixed is not None:
        return 0  # not needed: every record goes to the fixed partition
    (info,) = describe_topics(conn, [topic])
    return len(info.partitions)


class Partitioner:
    """Kafka's default partitioner for one topic. Not thread-safe; owned by one tool run.

    Keyed records: murmur2 of the key. Null keys: one partition per batch, chosen at random
    among all of them when a new batch starts (KIP-480's sticky partitioner).
    """

    def __init__(self, fixed: int | None, partitions: int, rng: random.Random | None = None) -> None:
        if fixed is None and partitions < 1:
            raise ValueError(f"topic has {partitions} partitions; need at least 1")
        self.fixed, self.partitions = fixed, partitions
        self._rng = rng or random.Random()  # a CLI run, not the deterministic core
        self._sticky = 0

    def new_batch(self) -> None:
        if self.fixed is None:
            self._sticky = self._rng.randrange(self.partitions)

    def partition(self, key: bytes | None) -> int:
        if self.fixed is not None:
            return self.fixed
        return self._sticky if key is None else partition_for_key(key, self.partitions)


def _send(conn: BrokerConnection, args: argparse.Namespace, records: list[Record],
          choose: Partitioner, acks: int) -> None:
    """One Produce request per partition the records map to, in first-seen order."""
    choose.new_batch()
    by_partition: dict[int, list[Record]] = {}
    for record in records:
        by_partition.setdefault(choose.partition(record.key), []).append(record)
    for partition, batch in by_partition.items():
        # Placeholder offsets must be contiguous within a batch (the broker checks that the
        # record count matches the offset range); it assigns the real ones on append.
        renumbered = [dataclasses.replace(record, offset=i) for i, record in enumerate(batch)]
        produce_batch(conn, args.topic, partition, renumbered, acks=acks,
                      compression=CODECS[args.compression_codec])


def line_to_record(line: str, line_number: int, now_ms: int, parse_key: bool, separator: str) -> Record:
    """One stdin line as a record; offsets are placeholders the broker overwrites."""
    data = line.encode()
    if len(data) > LINE_BYTES_MAX:
        raise ValueError(f"line {line_number} is {len(data)} bytes; the limit is {LINE_BYTES_MAX}")
    if not parse_key:
        return Record(line_number - 1, now_ms, None, data)
    key, sep, value = line.partition(separator)
    if not sep:
        raise ValueError(f"No key separator found on line number {line_number}: '{line}'")
    return Record(line_number - 1, now_ms, key.encode(), value.encode())


def parse_properties(pairs: list[str]) -> dict[str, str]:
    properties = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"property {pair!r} is not KEY=VALUE")
        properties[key] = value
    return properties
