"""Helpers for the storage tests: batches built by kafka-python (an independent codec)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kafka.record.default_records import DefaultRecordBatchBuilder


BatchFactory = Callable[..., bytes]


def build_batch(
    count: int = 1, *, timestamp_ms: int = 1_000, value_bytes: int = 10, base_offset: int = 0,
    compression: int = 0, value: bytes | None = None, timestamps: list[int] | None = None,
) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=compression, is_transactional=False, producer_id=-1,
        producer_epoch=-1, base_sequence=-1, batch_size=1 << 24,
    )
    for i in range(count):
        ts = timestamps[i] if timestamps else timestamp_ms + i
        builder.append(i, timestamp=ts, key=None, value=value if value is not None else b"v" * value_bytes, headers=[])
    data = bytearray(builder.build())
    data[0:8] = base_offset.to_bytes(8, "big")
    return bytes(data)


def batch_of_size(total_bytes: int, *, timestamp_ms: int = 1_000) -> bytes:
    """A single-record batch of exactly ``total_bytes`` bytes (61-byte header + one record)."""
    for value_bytes in range(max(0, total_bytes - 90), total_bytes):
        data = build_batch(1, timestamp_ms=timestamp_ms, value_bytes=value_bytes)
        if len(data) == total_bytes:
            return data
    raise ValueError(f"cannot build a batch of exactly {total_bytes} bytes")


def exact_batch(count: int, total_bytes: int, *, timestamp_ms: int = 1_000) -> bytes:
    """A batch of ``count`` records of exactly ``total_bytes`` bytes (the last value is padded)."""
    for last_bytes in range(total_bytes):
        builder = DefaultRecordBatchBuilder(
            magic=2, compression_type=0, is_transactional=False, producer_id=-1,
            producer_epoch=-1, base_sequence=-1, batch_size=1 << 24,
        )
        for i in range(count):
            value = b"v" * (last_bytes if i == count - 1 else 1)
            builder.append(i, timestamp=timestamp_ms + i, key=None, value=value, headers=[])
        data = bytes(builder.build())
        if len(data) == total_bytes:
            return data
        if len(data) > total_bytes:
            break
    raise ValueError(f"cannot build {count} records in exactly {total_bytes} bytes")
