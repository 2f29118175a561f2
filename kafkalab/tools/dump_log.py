"""``kafkalab dump-log``: print a segment's batches and records the way ``kafka-dump-log.sh`` does.

Theory of operation
-------------------
The tool walks each file named by ``--files`` and picks a *dumper* by suffix from
:data:`DUMPERS`. This module owns ``.log``; the storage engine's ``.index``, ``.timeindex``,
``.txnindex`` and ``.snapshot`` dumpers live in :mod:`kafkalab.tools.dump_storage` and are merged
in when the command runs. A dumper is ``dump(path, args, out) -> None``.

For a ``.log`` file the output mirrors Kafka's ``DumpLogSegments`` (Kafka >= 3.3), e.g. for one
v2 batch of two records dumped with ``--print-data-log``::

    Dumping /data/t-0/00000000000000000000.log
    Log starting offset: 0
    baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1 \
producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false \
deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1001 size: 82 magic: 2 \
compresscodec: none crc: 123456789 isvalid: true
    | offset: 0 CreateTime: 1000 keySize: -1 valueSize: 1 sequence: -1 headerKeys: [] payload: a
    | offset: 1 CreateTime: 1001 keySize: -1 valueSize: 1 sequence: -1 headerKeys: [] payload: b

(each batch is one line; it is wrapped here). ``isvalid`` is the real CRC check. Bytes after
the last complete batch are reported as ``Found N invalid bytes at the end of <name>``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import mmap
import struct
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from kafkalab.errors import CorruptRecordError, KafkaError
from kafkalab.records import (
    BatchHeader,
    Record,
    decode_batch,
    iter_headers,
    parse_control_record,
    verify_crc,
)
from kafkalab.records.control import ControlRecordType

Dumper = Callable[[Path, argparse.Namespace, TextIO], None]
MAX_BYTES_DEFAULT = 2**31 - 1  # Kafka's Integer.MAX_VALUE: "no limit"
MAX_MESSAGE_SIZE_DEFAULT = 5 * 1024 * 1024  # kafka-dump-log's --max-message-size default
RECORD_INDENT = "|"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--files", required=True,
                        help="Comma-separated list of data and index files to be dumped.")
    parser.add_argument("--print-data-log", action="store_true",
                        help="Print the messages' content (implies --deep-iteration).")
    parser.add_argument("--deep-iteration", action="store_true",
                        help="Iterate over the records inside each batch.")
    parser.add_argument("--skip-record-metadata", action="store_true",
                        help="Omit the per-record metadata, print only the content.")
    parser.add_argument("--offsets-decoder", action="store_true",
                        help="Decode records as __consumer_offsets entries (implies --print-data-log).")
    parser.add_argument("--max-bytes", type=int, default=MAX_BYTES_DEFAULT,
                        help="Read at most this many bytes of each log file.")
    parser.add_argument("--index-sanity-check", action="store_true",
                        help="Only check that index files pass Kafka's sanity check.")
    parser.add_argument("--verify-index-only", action="store_true",
                        help="Only verify index entries against the log, print no entries.")
    parser.add_argument("--max-message-size", type=int, default=MAX_MESSAGE_SIZE_DEFAULT,
                        help="Size of the largest message.")


# ----------------------------------------------------------------------------- payload parsers


def _utf8(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def parse_plain(record: Record) -> tuple[str | None, str | None]:
    """Kafka's default: key and value as UTF-8 strings (``StringDecoder``)."""
    return (None if record.key is None else _utf8(record.key),
            None if record.value is None else _utf8(record.value))


class _Reader:
    """Big-endian reads over one key or value; any overrun is a CorruptRecordError."""

    __slots__ = ("data", "cursor")

    def __init__(self, data: bytes) -> None:
        self.data, self.cursor = data, 0

    def take(self, fmt: str):
        size = struct.calcsize(fmt)
        if self.cursor + size > len(self.data):
            raise CorruptRecordError(f"{fmt} field runs past {len(self.data)} bytes", position=self.cursor)
        (value,) = struct.unpack_from(fmt, self.data, self.cursor)
        self.cursor += size
        return value

    def string(self) -> str:
        length = self.take(">h")
        if length < 0 or self.cursor + length > len(self.data):
            raise CorruptRecordError(f"string length {length} invalid", position=self.cursor)
        text = self.data[self.cursor : self.cursor + length].decode("utf-8", errors="replace")
        self.cursor += length
        return text


# OffsetCommitValue fields per version (Kafka's OffsetCommitValue.json, non-flexible versions).
_OFFSET_COMMIT_VALUE_FIELDS = {
    0: (("offset", ">q"), ("metadata", "str"), ("commitTimestamp", ">q")),
    1: (("offset", ">q"), ("metadata", "str"), ("commitTimestamp", ">q"), ("expireTimestamp", ">q")),
    2: (("offset", ">q"), ("metadata", "str"), ("commitTimestamp", ">q")),
    3: (("offset", ">q"), ("leaderEpoch", ">i"), ("metadata", "str"), ("commitTimestamp", ">q")),
}


def _offset_commit_value(reader: _Reader, version: int) -> dict[str, object]:
    fields = _OFFSET_COMMIT_VALUE_FIELDS.get(version)
    if fields is None:
        raise CorruptRecordError(f"OffsetCommitValue version {version} is not decoded", position=0)
    return {name: reader.string() if fmt == "str" else reader.take(fmt) for name, fmt in fields}


def _json(obj: object) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def parse_offsets(record: Record) -> tuple[str | None, str | None]:
    """``--offsets-decoder``: __consumer_offsets keys and offset-commit values as Kafka's JSON.

    Key versions 0/1 are ``OffsetCommitKey`` (group, topic, partition) and 2 is
    ``GroupMetadataKey``; a null value is a tombstone, printed ``<DELETE>``.
    """
    if record.key is None:
        raise CorruptRecordError(
            f"Failed to decode message at offset {record.offset} using offset topic decoder "
            "(message had a missing key)", position=0)
    try:
        key = _Reader(record.key)
        key_version = key.take(">h")
        if key_version in (0, 1):
            data = {"group": key.string(), "topic": key.string(), "partition": key.take(">i")}
        elif key_version == 2:
            data = {"group": key.string()}
        else:
            return f"Unknown record type {key_version} at offset {record.offset}, skipping.", None
        key_text = _json({"type": str(key_version), "data": data})
        if record.value is None:
            return key_text, "<DELETE>"
        if key_version == 2:
            return key_text, f"Error at offset {record.offset}, skipping. GroupMetadataValue is not decoded by kafkalab"
        value = _Reader(record.value)
        value_version = value.take(">h")
        payload = _offset_commit_value(value, value_version)
        return key_text, _json({"version": str(value_version), "data": payload})
    except CorruptRecordError as exc:
        return f"Error at offset {record.offset}, skipping. {exc.reason}", None


# ----------------------------------------------------------------------------- lines


def _timestamp_label(header: BatchHeader) -> str:
    return header.timestamp_type.label


def batch_line(header: BatchHeader, buf) -> str:
    """One batch line, exactly as ``DumpLogSegments.printBatchLevel`` prints it."""
    if header.magic >= 2:
        horizon = header.delete_horizon_ms
        horizon_text = "OptionalLong.empty" if horizon is None else f"OptionalLong[{horizon}]"
        prefix = (
            f"baseOffset: {header.base_offset} lastOffset: {header.last_offset} "
            f"count: {header.records_count} baseSequence: {header.base_sequence} "
            f"lastSequence: {header.last_sequence} producerId: {header.producer_id} "
            f"producerEpoch: {header.producer_epoch} "
            f"partitionLeaderEpoch: {header.partition_leader_epoch} "
            f"isTransactional: {_bool(header.is_transactional)} isControl: {_bool(header.is_control)} "
            f"deleteHorizonMs: {horizon_text}"
        )
    else:
        prefix = f"offset: {header.last_offset}"
    return (
        f"{prefix} position: {header.position} {_timestamp_label(header)}: {header.max_timestamp} "
        f"size: {header.size_bytes} magic: {header.magic} "
        f"compresscodec: {header.compression.name.lower()} crc: {header.crc} "
        f"isvalid: {_bool(verify_crc(buf, header))}"
    )


def _bool(flag: bool) -> str:
    return "true" if flag else "false"


def _control_text(record: Record) -> str:
    control = parse_control_record(record)
    if control.is_end_txn_marker:
        return f" endTxnMarker: {control.type.name} coordinatorEpoch: {control.coordinator_epoch}"
    if control.type is ControlRecordType.UNKNOWN:
        return f" controlType: UNKNOWN({control.type_id})"
    return f" controlType: {control.type.name}({control.type_id})"


def record_line(record: Record, header: BatchHeader, args: argparse.Namespace,
                parse: Callable[[Record], tuple[str | None, str | None]]) -> str:
    """One ``| offset: ...`` line, as ``DumpLogSegments.dumpLog`` prints it."""
    parts: list[str] = []
    prefix = f"{RECORD_INDENT} "
    if not args.skip_record_metadata:
        parts.append(f"{prefix}offset: {record.offset} {_timestamp_label(header)}: {record.timestamp} "
                     f"keySize: {record.key_size} valueSize: {record.value_size}")
        prefix = " "
        if header.magic >= 2:
            keys = ",".join(h.key for h in record.headers)
            parts.append(f" sequence: {record.sequence} headerKeys: [{keys}]")
        else:
            # Kafka prints a stray closing brace here; kept so output matches byte for byte.
            parts.append(f" isValid: true crc: {_legacy_crc(record, header)}}}")
        if header.is_control:
            parts.append(_control_text(record))
    if _prints_contents(args) and not header.is_control:
        key, payload = parse(record)
        if key is not None:
            parts.append(f"{prefix}key: {key}")
            prefix = " "
        if payload is not None:
            parts.append(f" payload: {payload}")
    return "".join(parts)


def _legacy_crc(record: Record, header: BatchHeader) -> int:
    if header.compression.value == 0:
        return header.crc
    from kafkalab.records.legacy import encode_message

    # An inner message's CRC: re-encode it as stored (inner messages carry CreateTime).
    inner = encode_message(0, header.magic, 0, record.timestamp if header.magic else -1,
                           record.key, record.value)
    return struct.unpack_from(">I", inner, 12)[0]


def _prints_contents(args: argparse.Namespace) -> bool:
    return bool(args.print_data_log or args.offsets_decoder)


# ----------------------------------------------------------------------------- .log dumper


def _open(path: Path):
    """Map the file read-only (no copy); the map closes when the last view of it is dropped."""
    with open(path, "rb") as f:
        if f.seek(0, 2) == 0:
            return b""
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


def dump_log_file(path: Path, args: argparse.Namespace, out: TextIO) -> None:
    """Print one ``.log`` segment: batch lines, record lines when deep, trailing bytes."""
    start_offset = int(path.name.split(".")[0]) if path.name.split(".")[0].isdigit() else 0
    out.write(f"Log starting offset: {start_offset}\n")
    data = _open(path)
    view = memoryview(data)[: min(len(data), args.max_bytes)]
    deep = args.deep_iteration or _prints_contents(args)
    parse = parse_offsets if args.offsets_decoder else parse_plain
    walker = iter_headers(view)
    for header in walker:
        out.write(batch_line(header, view) + "\n")
        if deep:
            batch = decode_batch(view, header, check_crc=False)
            for record in batch.records:
                out.write(record_line(record, header, args, parse) + "\n")
    trailing = len(data) - walker.valid_end if args.max_bytes == MAX_BYTES_DEFAULT else 0
    if trailing > 0:
        out.write(f"Found {trailing} invalid bytes at the end of {path.name}\n")


DUMPERS: dict[str, Dumper] = {".log": dump_log_file}


def all_dumpers() -> dict[str, Dumper]:
    """``.log`` plus whatever the storage engine registered in ``dump_storage.DUMPERS``."""
    dumpers = dict(DUMPERS)
    try:
        storage = importlib.import_module("kafkalab.tools.dump_storage")
    except ImportError:
        return dumpers
    for suffix, dumper in getattr(storage, "DUMPERS", {}).items():
        dumpers.setdefault(suffix, dumper)
    return dumpers


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    dumpers = all_dumpers()
    status = 0
    for name in (f for f in args.files.split(",") if f):
        path = Path(name)
        out.write(f"Dumping {path}\n")
        dumper = dumpers.get(path.suffix)
        if dumper is None:
            err.write(f"Ignoring unknown file {path}\n")
            continue
        try:
            dumper(path, args, out)
        except (KafkaError, OSError) as exc:
            err.write(f"Error dumping {path}: {exc}\n")
            status = 1
    return status


__all__ = ["DUMPERS", "add_arguments", "all_dumpers", "batch_line", "dump_log_file",
           "parse_offsets", "parse_plain", "record_line", "run"]
