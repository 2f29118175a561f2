"""The readable cleaner: one Python object per record, Kafka's rules written out plainly.

This is the path the book shows. :mod:`.fast_path` does the same work over numpy columns and
is checked against this module byte for byte (``tests/storage/cleaner/test_fast_path.py``).

Map phase (Kafka's ``buildOffsetMapForSegment``), for each dirty batch in offset order::

    control or aborted batch  -> no keys mapped (aborted: :class:`~.rules.CleanedTransactions`)
    keyed record >= start     -> map[key] = offset, unless the map is full: then stop here
    after the batch           -> latest offset = the batch's last offset
    after the segment         -> latest offset = next segment's base - 1 (skips offset gaps)

Copy phase: :func:`filter_entry` applies :mod:`.rules` to one entry and returns the bytes to
keep. Worked example: a v2 batch ``a@0 b@1(null) a@2`` with map ``{a: 2, b: 1}`` at now 500,
``delete.retention.ms`` 100 and no horizon yet: ``a@0`` goes, ``b@1`` stays (the horizon has not
passed -- there is none), ``a@2`` stays; a record went and a tombstone stays, so the batch is
rebuilt as ``b@1(null) a@2`` with base offset 0, last offset 2 and delete horizon 600.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from kafkalab.records.codec import build_batch, decode_batch
from kafkalab.records.header import BatchHeader, Buffer, TimestampType
from kafkalab.records.model import Record, RecordBatch
from kafkalab.storage.cleaner.rules import (
    BatchRetention,
    CleanedTransactions,
    RetentionRule,
    batch_retention,
    empty_batch,
    override_last_offset,
    retains_deletes,
    skip_in_map,
)
from kafkalab.storage.cleaner.stats import CleanerStats


class KeyOffsetMap(Protocol):
    """What the cleaner needs of an offset map (:class:`OffsetMap` or :class:`FastOffsetMap`)."""

    latest_offset: int

    @property
    def is_full(self) -> bool: ...

    def try_put(self, key: bytes, offset: int) -> bool: ...

    def get(self, key: bytes) -> int: ...

    def update_latest_offset(self, offset: int) -> None: ...


def map_batch(batch_header: BatchHeader, data: Buffer, start_offset: int, offset_map: KeyOffsetMap,
              stats: CleanerStats, transactions: CleanedTransactions) -> bool:
    """Map one entry's keys; True when the map filled up (the build stops at this record)."""
    if not skip_in_map(batch_header, data, transactions):
        for record in decode_batch(data, batch_header).records:
            if record.key is None or record.offset < start_offset:
                continue
            if offset_map.is_full or not offset_map.try_put(record.key, record.offset):
                return True
            stats.map_records += 1
    if batch_header.last_offset >= start_offset:
        offset_map.update_latest_offset(batch_header.last_offset)
    return False


def keep_record(record: Record, retain_deletes: bool, offset_map: KeyOffsetMap, stats: CleanerStats) -> bool:
    """Kafka's ``shouldRetainRecord`` for a data record."""
    if record.offset > offset_map.latest_offset:
        return True  # the map never saw this record: it stays
    if record.key is None:
        stats.unkeyed_removed += 1
        return False
    if record.offset < offset_map.get(record.key):
        return False
    if record.value is None and not retain_deletes:
        stats.tombstones_removed += 1
        return False
    return True


def filter_entry(
    header: BatchHeader, data: Buffer, rule: RetentionRule, offset_map: KeyOffsetMap,
    retain_legacy_deletes: bool, stats: CleanerStats,
) -> bytes | None:
    """The bytes to keep for one entry: the original, a rebuilt batch, an empty batch, or None."""
    retention, discard, marker_may_go = batch_retention(header, rule, data)
    if retention is BatchRetention.DELETE:
        return None
    batch = decode_batch(data, header)
    retain_deletes = retains_deletes(header, rule.now_ms, retain_legacy_deletes)
    if discard:
        kept: list[Record] = []
    elif header.is_control:
        kept = list(batch.records)
    else:
        kept = [r for r in batch.records if keep_record(r, retain_deletes, offset_map, stats)]
    stats.records_read += len(batch.records)
    stats.records_kept += len(kept)
    if not kept:
        if retention is BatchRetention.RETAIN_EMPTY:
            stats.empty_batches_kept += 1
            return empty_batch(header)
        return None
    needs_horizon = header.magic >= 2 and header.delete_horizon_ms is None and (
        marker_may_go or any(r.value is None for r in kept))
    if len(kept) == len(batch.records) and not needs_horizon:
        return bytes(memoryview(data)[header.position : header.end_position])
    stats.batches_rewritten += 1
    horizon = rule.now_ms + rule.delete_retention_ms if needs_horizon else header.delete_horizon_ms
    return rebuild(batch, kept, horizon)


def rebuild(batch: RecordBatch, kept: Sequence[Record], delete_horizon_ms: int | None) -> bytes:
    """Re-encode the kept records in the batch's own format (Kafka's ``buildRetainedRecordsInto``)."""
    header = batch.header
    log_append = header.timestamp_type is TimestampType.LOG_APPEND_TIME
    if header.magic < 2:
        return build_batch(kept, magic=header.magic, compression=header.compression,
                           timestamp_type=header.timestamp_type,
                           log_append_time_ms=header.max_timestamp if log_append else None)
    built = build_batch(
        kept, magic=2, base_offset=header.base_offset, compression=header.compression,
        timestamp_type=header.timestamp_type,
        log_append_time_ms=header.max_timestamp if log_append else None,
        producer_id=header.producer_id, producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence, is_transactional=header.is_transactional,
        is_control=header.is_control, partition_leader_epoch=header.partition_leader_epoch,
        delete_horizon_ms=delete_horizon_ms,
    )
    return override_last_offset(built, header)
