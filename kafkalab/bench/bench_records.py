"""Records codec throughput: kafkalab's columnar fast path against kafka-python's codec.

Same data for both sides: N records with 100-byte values and keys drawn from 1,000 distinct
keys, in uncompressed v2 batches of at most 16 KiB, on one core. ``full=True`` uses the
documented 1,000,000 records; the default 200,000 keeps ``make bench`` well under a minute.
Each figure is the median of RUNS runs, each timing kafkalab and kafka-python side by side
(order swapped every run), with the lowest and highest single-run ratio.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from kafkalab.bench.report import Reporter, alternate
from kafkalab.records.columnar import decode_columns, encode_columns

RECORDS_FULL = 1_000_000
RECORDS_DEFAULT = 200_000
VALUE_BYTES = 100
DISTINCT_KEYS = 1_000
BATCH_BYTES = 16 * 1024
SEED = 20240611
RUNS = 5


def _data(count: int) -> tuple[list[bytes], list[bytes], list[int]]:
    rng = random.Random(SEED)
    key_pool = [b"key-%06d" % i for i in range(DISTINCT_KEYS)]
    keys = [key_pool[rng.randrange(DISTINCT_KEYS)] for _ in range(count)]
    values = [rng.randbytes(VALUE_BYTES) for _ in range(count)]
    timestamps = [1_700_000_000_000 + i for i in range(count)]
    return keys, values, timestamps


def _kafka_python_encode(keys, values, timestamps) -> bytes:
    out = []
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, BATCH_BYTES)
    delta = 0
    for key, value, ts in zip(keys, values, timestamps):
        if builder.append(delta, timestamp=ts, key=key, value=value, headers=[]) is None:
            out.append(bytes(builder.build()))
            builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, BATCH_BYTES)
            delta = 0
            builder.append(delta, timestamp=ts, key=key, value=value, headers=[])
        delta += 1
    out.append(bytes(builder.build()))
    return b"".join(out)


def _kafka_python_decode(data: bytes) -> int:
    count = 0
    records = MemoryRecords(data)
    while (batch := records.next_batch()) is not None:
        for record in batch:
            record.key, record.value  # noqa: B018 - touch the fields a consumer reads
            count += 1
    return count


def run(reporter: Reporter, full: bool = False) -> None:
    count = RECORDS_FULL if full else RECORDS_DEFAULT
    keys, values, timestamps = _data(count)
    encode_columns(keys[:10], values[:10], timestamps[:10])  # compile (cached on disk) before timing
    data = encode_columns(keys, values, timestamps)
    decode_columns(data[:BATCH_BYTES * 2])

    def ours_decode() -> int:
        return len(decode_columns(data))

    def theirs_decode() -> int:
        return _kafka_python_decode(data)

    def ours_encode() -> int:
        encode_columns(keys, values, timestamps)
        return count

    def theirs_encode() -> int:
        _kafka_python_encode(keys, values, timestamps)
        return count

    assert ours_decode() == theirs_decode() == count
    decode = alternate({"ours": _rate(ours_decode), "theirs": _rate(theirs_decode)}, RUNS)
    reporter.report_runs("records.decode", decode["ours"], "records/s", decode["theirs"], ">=3.0")
    encode = alternate({"ours": _rate(ours_encode), "theirs": _rate(theirs_encode)}, RUNS)
    reporter.report_runs("records.encode", encode["ours"], "records/s", encode["theirs"], ">=1.5")


def _rate(work: Callable[[], int]) -> Callable[[], float]:
    """Items per second of one call of ``work`` (which returns how many items it processed)."""
    def rate() -> float:
        start = time.perf_counter()
        items = work()
        return items / (time.perf_counter() - start)
    return rate
