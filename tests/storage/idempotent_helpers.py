"""Idempotent batches built by kafka-python's codec (independent of kafkalab's)."""

from __future__ import annotations

from kafka.record.default_records import DefaultRecordBatchBuilder


def idempotent_batch(
    producer_id: int, epoch: int, base_sequence: int, count: int = 1, *, timestamp_ms: int = 1_000_000,
    transactional: bool = False,
) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=transactional, producer_id=producer_id,
        producer_epoch=epoch, base_sequence=base_sequence, batch_size=1 << 20,
    )
    for i in range(count):
        builder.append(i, timestamp=timestamp_ms + i, key=None, value=b"v%d" % i, headers=[])
    return bytes(builder.build())
