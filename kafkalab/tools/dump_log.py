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

Payloads are printed by a parser picked from :data:`DECODERS` (``--offsets-decoder``,
``--transaction-log-decoder``, ``--cluster-metadata-decoder``; each implies
``--print-data-log``) or, by default, as UTF-8 text; the parsers live in
:mod:`kafkalab.tools.decoders`. A record that does not decode prints one error line and the dump
goes on. KRaft control records print their message, e.g.
`` SnapshotHeader {"version":0,"lastContainedLogTimestamp":1234}``, and a KRaft snapshot file
(``<end offset>-<epoch>.checkpoint``) is dumped like a segment under the line
``Snapshot end offset: 100, epoch: 3``.
"""

from __future__ import annotations

import argparse
import importlib
import mmap
import re
import struct
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from kafkalab.errors import KafkaError
from kafkalab.records import (
    BatchHeader,
    Record,
    decode_batch,
    iter_headers,
    parse_control_record,
    verify_crc,
)
from kafkalab.records.control import ControlRecordType
from kafkalab.tools.decoders import (
    control_record_text,
    parse_cluster_metadata,
    parse_offsets,
    parse_transactions,
)

Dumper = Callable[[Path, argparse.Namespace, TextIO], None]
Parser = Callable[[Record], tuple[str | None, str | None]]
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
    parser.add_argument("--transaction-log-decoder", action="store_true",
                        help="Decode records as __transaction_state entries (implies --print-data-log).")
    parser.add_argument("--cluster-metadata-decoder", action="store_true",
                        help="Decode records as KRaft cluster metadata records (implies --print-data-log).")
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
    """What follows the metadata of a control record: the marker, or a KRaft message as JSON.

    A control record that does not decode prints its reason in place of the payload; the
    dump goes on with the next record.
    """
    try:
        control = parse_control_record(record)
        if control.is_end_txn_marker:
            return f" endTxnMarker: {control.type.name} coordinatorEpoch: {control.coordinator_epoch}"
        message = control_record_text(control.type_id, record.value)
    except KafkaError as exc:
        return f" controlType: invalid control record at offset {record.offset}: {exc}"
    if message is not None:
        return message
    if control.type is ControlRecordType.UNKNOWN:
        return f" controlType: UNKNOWN({control.type_id})"
    return f" controlType: {control.type.name}({control.type_id})"


def record_line(record: Record, header: BatchHeader, args: argparse.Namespace,
                parse: Parser) -> str:
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


# Decoder flag -> payload parser; the first flag set wins, in Kafka's order.
DECODERS: dict[str, Parser] = {
    "offsets_decoder": parse_offsets,
    "transaction_log_decoder": parse_transactions,
    "cluster_metadata_decoder": parse_cluster_metadata,
}


def _parser(args: argparse.Namespace) -> Parser:
    for flag, parse in DECODERS.items():
        if getattr(args, flag, False):
            return parse
    return parse_plain


def _prints_contents(args: argparse.Namespace) -> bool:
    """``--print-data-log`` or any decoder flag (each implies it, as in Kafka)."""
    return bool(args.print_data_log) or any(getattr(args, flag, False) for flag in DECODERS)


# ----------------------------------------------------------------------------- .log dumper


def _open(path: Path):
    """Map the file read-only (no copy); the map closes when the last view of it is dropped."""
    with open(path, "rb") as f:
        if f.seek(0, 2) == 0:
            return b""
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


BOOTSTRAP_CHECKPOINT_NAME = "bootstrap.checkpoint"  # BootstrapDirectory.BINARY_BOOTSTRAP_FILENAME
_SNAPSHOT_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")  # <end offset>-<epoch>.checkpoint


def _first_line(path: Path) -> str:
    """``Log starting offset`` for a segment; the snapshot id for a KRaft ``.checkpoint``."""
    if path.suffix == ".checkpoint":
        if path.name == BOOTSTRAP_CHECKPOINT_NAME:
            return "KRaft bootstrap snapshot"
        match = _SNAPSHOT_NAME.match(path.name)
        if match is None:
            raise KafkaError(f"{path.name} is not named <20-digit end offset>-<10-digit epoch>.checkpoint")
        return f"Snapshot end offset: {int(match[1])}, epoch: {int(match[2])}"
    stem = path.name.split(".")[0]
    return f"Log starting offset: {int(stem) if stem.isdigit() else 0}"


def dump_log_file(path: Path, args: argparse.Namespace, out: TextIO) -> None:
    """Print one ``.log`` segment or KRaft snapshot: batch lines, record lines when deep,
    trailing bytes."""
    out.write(_first_line(path) + "\n")
    data = _open(path)
    view = memoryview(data)[: min(len(data), args.max_bytes)]
    deep = args.deep_iteration or _prints_contents(args)
    parse = _parser(args)
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


DUMPERS: dict[str, Dumper] = {".log": dump_log_file, ".checkpoint": dump_log_file}


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


__all__ = ["DECODERS", "DUMPERS", "add_arguments", "all_dumpers", "batch_line", "dump_log_file",
           "parse_cluster_metadata", "parse_offsets", "parse_plain", "parse_transactions",
           "record_line", "run"]
