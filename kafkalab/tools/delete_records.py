"""``kafkalab delete-records``: move partitions' log start offsets, like ``kafka-delete-records.sh``.

The offsets come from a JSON file in Kafka's format (``offset`` -1 means "up to the high
watermark")::

    {"partitions": [{"topic": "t", "partition": 0, "offset": 5}], "version": 1}

    $ kafkalab delete-records --data-dir D --offset-json-file offsets.json
    Executing records delete operation
    Records delete operation completed:
    partition: t-0	low_watermark: 5

As in Kafka, DeleteRecords only moves the log start offset (the partition's *low watermark*)
and persists it in ``log-start-offset-checkpoint``; records below it become invisible at once,
and the segments wholly below it are deleted by the next retention check
(:mod:`kafkalab.storage.retention`, the "next segment's base offset <= log start offset" rule).

The work goes through a :class:`DeleteRecordsTarget`: :class:`LocalDeleteRecordsTarget` opens
the data directory with the storage engine's ``LogManager`` (for a stopped broker);
:class:`NetworkDeleteRecordsTarget` (``--bootstrap-server``) sends one DeleteRecords request to a
running broker, which moves the log start offsets itself. Both print the same lines.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TextIO

from kafkalab.client.connection import bootstrap
from kafkalab.clock import SystemClock
from kafkalab.config.store import DynamicConfigStore
from kafkalab.errors import ErrorCode, InvalidRequestError, KafkaError, OffsetOutOfRangeError
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.storage.log_manager import LogManager

OFFSET_FILE_BYTES_MAX = 16 * 1024 * 1024  # far beyond a file naming every partition of a cluster
HIGH_WATERMARK = -1  # DeleteRecordsRequest.HIGH_WATERMARK

TopicPartition = tuple[str, int]


class DeleteRecordsTarget(Protocol):
    def delete_records(self, offsets: dict[TopicPartition, int]) -> dict[TopicPartition, int | KafkaError]: ...


class LocalDeleteRecordsTarget:
    """Applies DeleteRecords to a data directory. Not thread-safe; one per invocation."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)

    def delete_records(self, offsets: dict[TopicPartition, int]) -> dict[TopicPartition, int | KafkaError]:
        store = DynamicConfigStore(self.data_dir)
        topics = {child.name.rpartition("-")[0] for child in self.data_dir.iterdir() if child.is_dir()}
        manager = LogManager(
            [self.data_dir], SystemClock(), store.log_config(""),
            topic_configs={topic: store.log_config(topic) for topic in topics},
        )
        results: dict[TopicPartition, int | KafkaError] = {}
        try:
            for tp, offset in offsets.items():
                results[tp] = _delete_one(manager, tp, offset)
        finally:
            manager.shutdown()
        return results


def _delete_one(manager: LogManager, tp: TopicPartition, offset: int) -> int | KafkaError:
    log = manager.get_log(*tp)
    if log is None:
        return KafkaError(f"This server does not host this topic-partition: {tp[0]}-{tp[1]}",
                          error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    target = log.high_watermark if offset == HIGH_WATERMARK else offset
    if target < 0 or target > log.high_watermark:
        return OffsetOutOfRangeError(
            f"Cannot increment the log start offset of {tp[0]}-{tp[1]} to {offset}: it must be between "
            f"the log start offset {log.log_start_offset} and the high watermark {log.high_watermark}"
        )
    log.increment_log_start_offset(target)
    return log.log_start_offset


DELETE_RECORDS_TIMEOUT_MS = 30_000  # kafka-delete-records' request.timeout.ms default
# Kafka's own messages for the errors a DeleteRecords partition result carries most often.
_ERROR_TEXT: dict[int, tuple[type[KafkaError], str]] = {
    ErrorCode.OFFSET_OUT_OF_RANGE: (
        OffsetOutOfRangeError, "The requested offset is not within the range of offsets maintained by the server."),
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: (KafkaError, "This server does not host this topic-partition"),
}


class NetworkDeleteRecordsTarget:
    """Sends one DeleteRecords request to a running broker (``--bootstrap-server``), as
    ``kafka-delete-records.sh`` does through the admin client. Not thread-safe; one per invocation."""

    def __init__(self, bootstrap_servers: str) -> None:
        self.bootstrap_servers = bootstrap_servers

    def delete_records(self, offsets: dict[TopicPartition, int]) -> dict[TopicPartition, int | KafkaError]:
        by_topic: dict[str, list[dict[str, int]]] = {}
        for (topic, partition), offset in offsets.items():
            by_topic.setdefault(topic, []).append({"partition_index": partition, "offset": offset})
        body = {"topics": [{"name": t, "partitions": p} for t, p in by_topic.items()],
                "timeout_ms": DELETE_RECORDS_TIMEOUT_MS}
        with bootstrap(self.bootstrap_servers) as connection:
            response = connection.request(ApiKey.DELETE_RECORDS, body)
        answered: dict[TopicPartition, int | KafkaError] = {}
        for topic in response.topics:
            for result in topic.partitions:
                answered[(topic.name, result.partition_index)] = _result(topic.name, result)
        missing = KafkaError("the broker's DeleteRecords response left this partition out",
                             error_code=ErrorCode.UNKNOWN_SERVER_ERROR)
        return {tp: answered.get(tp, missing) for tp in offsets}  # in the file's order


def _result(topic: str, result: Any) -> int | KafkaError:
    if result.error_code == 0:
        return int(result.low_watermark)
    try:
        code = ErrorCode(result.error_code)
    except ValueError:
        code = ErrorCode.UNKNOWN_SERVER_ERROR
    error_class, text = _ERROR_TEXT.get(code, (KafkaError, f"the broker answered {code.name} ({result.error_code})"))
    if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        text = f"{text}: {topic}-{result.partition_index}"
    return error_class(text, error_code=code)


TARGET_FACTORIES: dict[str, Callable[[argparse.Namespace], DeleteRecordsTarget]] = {
    "data-dir": lambda args: LocalDeleteRecordsTarget(Path(args.data_dir)),
    "bootstrap-server": lambda args: NetworkDeleteRecordsTarget(args.bootstrap_server),
}


def parse_offset_json(text: str) -> dict[TopicPartition, int]:
    """Kafka's ``--offset-json-file`` format; raises ``InvalidRequestError`` on anything else."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise InvalidRequestError(f"offset JSON file is not valid JSON: {error}") from None
    if not isinstance(document, dict) or document.get("version") != 1:
        raise InvalidRequestError("offset JSON file must be an object with \"version\": 1")
    partitions = document.get("partitions")
    if not isinstance(partitions, list):
        raise InvalidRequestError("offset JSON file needs a \"partitions\" list")
    result: dict[TopicPartition, int] = {}
    for entry in partitions:
        tp, offset = _parse_entry(entry)
        if tp in result:
            raise InvalidRequestError(f"Offset json file contains duplicate topic partitions: {tp[0]}-{tp[1]}")
        result[tp] = offset
    return result


def _parse_entry(entry: object) -> tuple[TopicPartition, int]:
    if not isinstance(entry, dict):
        raise InvalidRequestError(f"each partition must be an object, got {entry!r}")
    topic, partition, offset = entry.get("topic"), entry.get("partition"), entry.get("offset")
    if not isinstance(topic, str) or not topic:
        raise InvalidRequestError(f"\"topic\" must be a non-empty string in {entry}")
    for name, value in (("partition", partition), ("offset", offset)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise InvalidRequestError(f"\"{name}\" must be an integer in {entry}")
    assert isinstance(partition, int) and isinstance(offset, int)
    if partition < 0 or offset < HIGH_WATERMARK:
        raise InvalidRequestError(f"partition must be >= 0 and offset >= -1 in {entry}")
    return (topic, partition), offset


def add_arguments(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--data-dir", help="Data directory holding the partitions.")
    where.add_argument("--bootstrap-server", help="Broker to connect to (host:port).")
    parser.add_argument("--offset-json-file", required=True, help="JSON file with the partitions and offsets.")


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        path = Path(args.offset_json_file)
        if path.stat().st_size > OFFSET_FILE_BYTES_MAX:
            raise InvalidRequestError(f"{path} is larger than {OFFSET_FILE_BYTES_MAX} bytes")
        offsets = parse_offset_json(path.read_text(encoding="utf-8"))
        factory = TARGET_FACTORIES.get("data-dir" if args.data_dir else "bootstrap-server")
        if factory is None:
            raise InvalidRequestError("--bootstrap-server is not available yet in kafkalab; use --data-dir")
        print("Executing records delete operation", file=out)
        results = factory(args).delete_records(offsets)
    except (KafkaError, OSError) as error:
        print(f"Error: {error}", file=err)
        return 1
    print("Records delete operation completed:", file=out)
    for (topic, partition), result in results.items():
        if isinstance(result, KafkaError):
            print(f"partition: {topic}-{partition}\terror: {type(result).__name__}: {result}", file=out)
        else:
            print(f"partition: {topic}-{partition}\tlow_watermark: {result}", file=out)
    return 1 if any(isinstance(r, KafkaError) for r in results.values()) else 0
