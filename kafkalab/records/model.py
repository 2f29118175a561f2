"""The decoded shapes shared by every magic: :class:`Header`, :class:`Record`, :class:`RecordBatch`.

A :class:`Record` carries absolute values -- its offset and timestamp already resolved against
the batch (base offset + offset delta, base timestamp + timestamp delta, or the batch's log
append time) -- so code above the codec never sees deltas. A :class:`RecordBatch` pairs the
shallow :class:`~kafkalab.records.header.BatchHeader` with its decoded records.

Example: ``Record(offset=7, timestamp=1_700_000_000_000, key=b"k", value=b"v")`` is one record
of any magic; in a v2 batch with base offset 5 it is written with offset delta 2.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from kafkalab.records.header import NO_SEQUENCE, BatchHeader, Compression, TimestampType


@dataclass(frozen=True, slots=True)
class Header:
    """One record header (v2 only): a UTF-8 key and an optional byte value."""

    key: str
    value: bytes | None

    def __post_init__(self) -> None:
        if not isinstance(self.key, str):
            raise TypeError(f"header key must be str, got {type(self.key).__name__}")
        if self.value is not None and not isinstance(self.value, bytes):
            raise TypeError(f"header value must be bytes or None, got {type(self.value).__name__}")


@dataclass(frozen=True, slots=True)
class Record:
    """One record with absolute offset and timestamp. Immutable; safe to share."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    sequence: int = NO_SEQUENCE

    def __post_init__(self) -> None:
        for name in ("key", "value"):
            field_value = getattr(self, name)
            if field_value is not None and not isinstance(field_value, bytes):
                raise TypeError(f"record {name} must be bytes or None, got {type(field_value).__name__}")
        if not isinstance(self.headers, tuple):
            object.__setattr__(self, "headers", tuple(self.headers))

    @property
    def key_size(self) -> int:
        return -1 if self.key is None else len(self.key)

    @property
    def value_size(self) -> int:
        return -1 if self.value is None else len(self.value)


@dataclass(frozen=True, slots=True)
class RecordBatch:
    """A decoded log entry: the shallow header and its records (a v0/v1 wrapper lists its
    inner records). ``records_bytes_size`` is the uncompressed size of the record region."""

    header: BatchHeader
    records: tuple[Record, ...]

    @property
    def magic(self) -> int:
        return self.header.magic

    @property
    def base_offset(self) -> int:
        return self.records[0].offset if self.header.magic < 2 and self.records else self.header.base_offset

    @property
    def last_offset(self) -> int:
        return self.header.last_offset

    @property
    def compression(self) -> Compression:
        return self.header.compression

    @property
    def timestamp_type(self) -> TimestampType:
        return self.header.timestamp_type

    @property
    def is_control(self) -> bool:
        return self.header.is_control

    @property
    def is_transactional(self) -> bool:
        return self.header.is_transactional

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)
