"""Segment files written by an independent encoder (kafka-python's MemoryRecordsBuilder).

The kafkalog reader is tested on logs kafkalab did not write, so a shared misunderstanding of the
format between kafkalab's writer and reader cannot hide.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

BATCH_BYTES = 16384  # the producer's batch.size default


@dataclass(frozen=True)
class Written:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


def write_partition(partition_dir: Path, *, records: int, records_per_segment: int, codec: int,
                    seed: int, start_ms: int = 1_700_000_000_000) -> list[Written]:
    """Write ``records`` records into segments of ``records_per_segment`` records each."""
    rng = random.Random(seed)
    partition_dir.mkdir(parents=True, exist_ok=True)
    written: list[Written] = []
    offset = 0
    while offset < records:
        base = offset
        segment = bytearray()
        while offset < min(records, base + records_per_segment):
            builder = MemoryRecordsBuilder(magic=2, compression_type=codec, batch_size=BATCH_BYTES,
                                           offset=offset)
            for _ in range(rng.randrange(1, 60)):
                if offset >= min(records, base + records_per_segment):
                    break
                key = None if rng.random() < 0.1 else f"key-{rng.randrange(50)}".encode()
                value = None if rng.random() < 0.05 else (f"v{rng.randrange(1000)}," * rng.randrange(0, 40)).encode()
                headers = [("h", b"x" * rng.randrange(3))] if rng.random() < 0.2 else []
                ts = start_ms + offset * 10 + rng.randrange(5)
                if builder.append(timestamp=ts, key=key, value=value, headers=headers) is None:
                    break
                written.append(Written(offset, ts, key, value, headers))
                offset += 1
            builder.close()
            segment += builder.buffer()
        (partition_dir / f"{base:020d}.log").write_bytes(bytes(segment))
    return written


def read_with_kafka_python(log_path: Path) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """(offset, timestamp, key, value) of every record, decoded by kafka-python."""
    out = []
    records = MemoryRecords(log_path.read_bytes())
    while records.has_next():
        batch = records.next_batch()
        for record in batch:
            out.append((record.offset, record.timestamp, record.key, record.value))
    return out
