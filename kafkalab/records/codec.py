"""One entry point for every magic: :func:`build_batch`, :func:`decode_batch`, :func:`iter_batches`.

Theory of operation
-------------------
Decoding is two steps: walk the buffer shallowly (:class:`~kafkalab.records.header.HeaderWalker`)
and then decode each entry with the reader its magic selects -- a dict from magic to function,
so adding a format is one line. Nothing is copied until a record's key and value are sliced out.

Worked example::

    data = build_batch([Record(0, 1000, b"k", b"v")])           # 70 bytes, magic 2
    batches = iter_batches(data + data[:30])                    # second batch is cut short
    [b.last_offset for b in batches] == [0]; batches.remaining_bytes == 30
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from kafkalab.errors import InvalidRecordError
from kafkalab.records.compression import DECOMPRESSED_BYTES_MAX
from kafkalab.records.header import (
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    BatchHeader,
    Buffer,
    Compression,
    HeaderWalker,
    TimestampType,
)
from kafkalab.records.legacy import build_legacy, decode_legacy_entry
from kafkalab.records.model import Record, RecordBatch
from kafkalab.records.v2 import build_v2_batch, decode_v2_batch

_DECODERS: dict[int, Callable[..., RecordBatch]] = {
    0: decode_legacy_entry,
    1: decode_legacy_entry,
    2: decode_v2_batch,
}


def build_batch(
    records: Sequence[Record], *, magic: int = 2, base_offset: int | None = None,
    compression: Compression = Compression.NONE,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    log_append_time_ms: int | None = None, producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH, base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False, is_control: bool = False,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH, delete_horizon_ms: int | None = None,
) -> bytes:
    """Encode ``records`` in the given magic. v2 gives one batch; v0/v1 give one message per
    record, or one wrapper message when compressed. v2-only options are refused for v0/v1."""
    if magic == 2:
        return build_v2_batch(
            records, base_offset=base_offset, compression=compression,
            timestamp_type=timestamp_type, log_append_time_ms=log_append_time_ms,
            producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=base_sequence,
            is_transactional=is_transactional, is_control=is_control,
            partition_leader_epoch=partition_leader_epoch, delete_horizon_ms=delete_horizon_ms,
        )
    v2_only = (producer_id != NO_PRODUCER_ID or is_transactional or is_control
               or delete_horizon_ms is not None or base_sequence != NO_SEQUENCE)
    if v2_only:
        raise InvalidRecordError(
            f"producer ids, transactions, control records and delete horizons need magic 2, not {magic}"
        )
    return build_legacy(records, magic=magic, compression=compression,
                        timestamp_type=timestamp_type, log_append_time_ms=log_append_time_ms)


def decode_batch(buf: Buffer, header: BatchHeader, *, check_crc: bool = True,
                 limit_bytes: int = DECOMPRESSED_BYTES_MAX) -> RecordBatch:
    """Decode the records of one entry found by :func:`~kafkalab.records.header.read_header`."""
    return _DECODERS[header.magic](buf, header, check_crc=check_crc, limit_bytes=limit_bytes)


class BatchWalker:
    """Iterates decoded batches over a buffer; afterwards ``remaining_bytes`` says how many
    bytes of a partial trailing entry were left. Not thread-safe; owned by one reader."""

    __slots__ = ("_headers", "_check_crc", "_limit_bytes")

    def __init__(self, buf: Buffer, position: int = 0, *, check_crc: bool = True,
                 max_batch_bytes: int | None = None, limit_bytes: int = DECOMPRESSED_BYTES_MAX):
        self._headers = HeaderWalker(buf, position, max_batch_bytes=max_batch_bytes)
        self._check_crc = check_crc
        self._limit_bytes = limit_bytes

    @property
    def remaining_bytes(self) -> int:
        return self._headers.remaining_bytes

    @property
    def valid_end(self) -> int:
        return self._headers.valid_end

    def __iter__(self) -> Iterator[RecordBatch]:
        buf = self._headers._buf
        for header in self._headers:
            yield decode_batch(buf, header, check_crc=self._check_crc, limit_bytes=self._limit_bytes)


def iter_batches(buf: Buffer, position: int = 0, *, check_crc: bool = True,
                 max_batch_bytes: int | None = None,
                 limit_bytes: int = DECOMPRESSED_BYTES_MAX) -> BatchWalker:
    """Decode every complete entry from ``position``; see :class:`BatchWalker`."""
    return BatchWalker(buf, position, check_crc=check_crc, max_batch_bytes=max_batch_bytes,
                       limit_bytes=limit_bytes)


def decode_records(buf: Buffer) -> list[Record]:
    """Every record of every complete entry, flattened (handy in notebooks and tests)."""
    return [record for batch in iter_batches(buf) for record in batch.records]
