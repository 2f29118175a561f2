"""Dumpers for the storage engine's files: ``.index``, ``.timeindex``, ``.txnindex``, ``.snapshot``.

``kafkalab dump-log`` chooses a dumper by file suffix; ``.log`` is handled in
:mod:`kafkalab.tools.dump_log`, and the suffixes below are merged into its registry.
A dumper has the signature ``dump(path: Path, args: argparse.Namespace, out: TextIO) -> None``.

The output mirrors Kafka's ``DumpLogSegments``: one ``offset: O position: P`` line per
offset-index entry, ``timestamp: T offset: O`` per time-index entry, and the same checks
against the segment's ``.log``::

    $ kafkalab dump-log --files 00000000000000000000.index
    Dumping 00000000000000000000.index
    offset: 20 position: 320
    offset: 43 position: 1220

An index entry must point at a batch whose last offset is the indexed offset; otherwise the
pair is reported on stderr as ``Mismatches in :<path>`` / ``  Index offset: I, log offset: L``
(Kafka prints these after all files; kafkalab after each file). A preallocated index left by a
crash ends in zero entries; like Kafka the dump stops at the first entry that repeats the base
offset. Files are opened read-only: dumping never changes them.
"""

from __future__ import annotations

import argparse
import bisect
import mmap
import struct
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from kafkalab.errors import CorruptIndexError, CorruptRecordError
from kafkalab.records.header import decrement_sequence, iter_headers, read_header
from kafkalab.storage import producer_snapshot
from kafkalab.storage.log_files import INDEX_SUFFIX, LOG_SUFFIX, PRODUCER_SNAPSHOT_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX
from kafkalab.storage.offset_index import ENTRY as OFFSET_ENTRY
from kafkalab.storage.time_index import ENTRY as TIME_ENTRY
from kafkalab.storage.txn_index import ENTRY as TXN_ENTRY

Dumper = Callable[[Path, argparse.Namespace, TextIO], None]

NO_TIMESTAMP = -1


def _flag(args: argparse.Namespace, name: str) -> bool:
    return bool(getattr(args, name, False))


def _base_offset(path: Path) -> int:
    stem = path.name.split(".")[0]
    if not stem.isdigit():
        raise CorruptIndexError(f"{path.name} is not named <20-digit base offset>{path.suffix}")
    return int(stem)


def _read_entries(path: Path, entry: struct.Struct) -> tuple[list[tuple[int, ...]], int]:
    data = path.read_bytes()
    whole = len(data) - len(data) % entry.size
    return [e for e in entry.iter_unpack(data[:whole])], len(data) - whole


def _log_view(path: Path) -> bytes | mmap.mmap:
    log_path = path.with_name(path.name.split(".")[0] + LOG_SUFFIX)
    if not log_path.exists() or log_path.stat().st_size == 0:
        return b""
    with open(log_path, "rb") as file:
        return mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)


def _last_offset_at(log: bytes | mmap.mmap, position: int) -> int:
    try:
        return read_header(log, position).last_offset
    except CorruptRecordError:
        return -1


def _report_invalid(path: Path, invalid: int, out: TextIO) -> None:
    if invalid:
        out.write(f"Found {invalid} invalid bytes at the end of {path.name}\n")


def _offset_entries(path: Path, base: int) -> tuple[list[tuple[int, int]], int]:
    raw, invalid = _read_entries(path, OFFSET_ENTRY)
    return [(base + rel, pos) for rel, pos in raw], invalid


def _sanity_check_offsets(path: Path, base: int, entries: list[tuple[int, int]], invalid: int) -> None:
    if invalid:
        raise CorruptIndexError(f"index file {path} is corrupt: {invalid} bytes past the last whole entry")
    if entries and entries[-1][0] < base:
        raise CorruptIndexError(
            f"corrupt index found, index file ({path}) has non-zero size but the last offset is "
            f"{entries[-1][0]} which is less than the base offset {base}"
        )


def dump_offset_index(path: Path, args: argparse.Namespace, out: TextIO) -> None:
    """``.index``: ``offset: O position: P`` per entry, checked against the ``.log``."""
    base = _base_offset(path)
    entries, invalid = _offset_entries(path, base)
    if not entries:
        out.write(f"{path} is empty.\n")
        return
    if _flag(args, "index_sanity_check"):
        _sanity_check_offsets(path, base, entries, invalid)
        out.write(f"{path} passed sanity check.\n")
        return
    log = _log_view(path)
    mismatches: list[tuple[int, int]] = []
    for slot, (offset, position) in enumerate(entries):
        if offset == base and slot > 0:
            break  # zero-filled tail of a preallocated index
        found = _last_offset_at(log, position)
        if found != offset:
            mismatches.append((offset, found))
        if not _flag(args, "verify_index_only"):
            out.write(f"offset: {offset} position: {position}\n")
    _report_invalid(path, invalid, out)
    if mismatches:
        sys.stderr.write(f"Mismatches in :{path.resolve()}\n")
        for index_offset, log_offset in reversed(mismatches):  # Kafka prepends to its list
            sys.stderr.write(f"  Index offset: {index_offset}, log offset: {log_offset}\n")


def dump_time_index(path: Path, args: argparse.Namespace, out: TextIO) -> None:
    """``.timeindex``: ``timestamp: T offset: O`` per entry, with Kafka's three checks."""
    base = _base_offset(path)
    raw, invalid = _read_entries(path, TIME_ENTRY)
    entries = [(ts, base + rel) for ts, rel in raw]
    if _flag(args, "index_sanity_check"):
        if invalid or (entries and (entries[-1][1] < base or entries[-1][0] < entries[0][0])):
            raise CorruptIndexError(f"time index file {path} fails the sanity check")
        out.write(f"{path} passed sanity check.\n")
        return
    index_path = path.with_name(path.name.split(".")[0] + INDEX_SUFFIX)
    offsets = _offset_entries(index_path, base)[0] if index_path.exists() else []
    index_keys = [o for o, _p in offsets]
    log = _log_view(path)
    errors: list[str] = []
    previous = NO_TIMESTAMP
    for slot, (timestamp, offset) in enumerate(entries):
        if offset == base and slot > 0:
            break
        floor = bisect.bisect_right(index_keys, offset) - 1
        position = offsets[floor][1] if floor >= 0 else 0
        errors += _check_time_entry(path, log, position, timestamp, offset, previous)
        if not _flag(args, "verify_index_only"):
            out.write(f"timestamp: {timestamp} offset: {offset}\n")
        previous = timestamp
    _report_invalid(path, invalid, out)
    for line in errors:
        sys.stderr.write(line + "\n")


def _check_time_entry(
    path: Path, log: bytes | mmap.mmap, position: int, timestamp: int, offset: int, previous: int
) -> list[str]:
    from kafkalab.records import decode_batch

    try:
        batch = next((h for h in iter_headers(log, position) if h.last_offset >= offset), None)
    except CorruptRecordError:
        batch = None
    if batch is None or batch.last_offset != offset:
        found = -1 if batch is None else batch.last_offset
        return ["The following indexed offsets are not found in the log.",
                f"Indexed offset: {offset}, found log offset: {found}"]
    errors = []
    records = decode_batch(log, batch, check_crc=False).records
    max_timestamp = max((r.timestamp for r in records), default=NO_TIMESTAMP)
    if max_timestamp != timestamp:
        errors += [f"Found timestamp mismatch in :{path.resolve()}",
                   f"  Index timestamp: {timestamp}, log timestamp: {max_timestamp}"]
    if previous >= timestamp:
        errors += [f"Found out of order timestamp in :{path.resolve()}",
                   f"  Index timestamp: {timestamp}, Previously indexed timestamp: {previous}"]
    return errors


def dump_txn_index(path: Path, args: argparse.Namespace, out: TextIO) -> None:
    """``.txnindex``: one line per aborted transaction."""
    raw, invalid = _read_entries(path, TXN_ENTRY)
    for version, producer_id, first, last, lso in raw:
        out.write(
            f"version: {version} producerId: {producer_id} firstOffset: {first} "
            f"lastOffset: {last} lastStableOffset: {lso}\n"
        )
    _report_invalid(path, invalid, out)


def dump_producer_snapshot(path: Path, args: argparse.Namespace, out: TextIO) -> None:
    """``.snapshot``: one line per producer, as ``DumpLogSegments.dumpProducerIdSnapshot``."""
    try:
        entries = producer_snapshot.read_snapshot(path)
    except CorruptRecordError as exc:
        sys.stderr.write(f"{exc}\n")
        return
    for e in entries:
        # Kafka prints the Java OptionalLong, and the batch fields only for a producer whose
        # last batch is known (lastOffset >= 0); the first sequence may wrap below 0 to INT32_MAX.
        txn_first = "OptionalLong.empty" if e.current_txn_first_offset < 0 else f"OptionalLong[{e.current_txn_first_offset}]"
        line = (
            f"producerId: {e.producer_id} producerEpoch: {e.producer_epoch} "
            f"coordinatorEpoch: {e.coordinator_epoch} currentTxnFirstOffset: {txn_first} "
            f"lastTimestamp: {e.timestamp_ms} "
        )
        if e.last_offset >= 0:
            line += (
                f"firstSequence: {decrement_sequence(e.last_sequence, e.offset_delta)} "
                f"lastSequence: {e.last_sequence} lastOffset: {e.last_offset} "
                f"offsetDelta: {e.offset_delta} timestamp: {e.timestamp_ms}"
            )
        out.write(line + "\n")


DUMPERS: dict[str, Dumper] = {
    INDEX_SUFFIX: dump_offset_index,
    TIME_INDEX_SUFFIX: dump_time_index,
    TXN_INDEX_SUFFIX: dump_txn_index,
    PRODUCER_SNAPSHOT_SUFFIX: dump_producer_snapshot,
}
