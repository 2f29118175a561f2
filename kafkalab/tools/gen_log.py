"""``kafkalab gen-log``: write a large, realistic, reproducible topic through the storage engine.

Theory of operation
-------------------
Record ``i`` (0-based, across the whole topic) is defined by the arguments and the seed alone:

* its timestamp is ``start_ms + i * 1000 // rate`` -- a synthetic clock, no wall time;
* its key is ``user-<rank>``, where rank is drawn from Zipf(s) over ``--keys`` ranks (rank 0
  hottest) or uniformly; ``--tombstones F`` makes a fraction F of records null-valued;
* its value is ``--value-bytes`` of lowercase text cut from a seeded pool (text, so codecs have
  something to compress);
* its partition is Kafka's ``(murmur2(key) & 0x7fffffff) % partitions`` (:mod:`kafkalab.partitioner`).

Records are drawn in blocks of :data:`BLOCK_RECORDS`; block ``b`` uses the numpy generator seeded
with ``(seed, b)``, so any process can regenerate any block. Each worker process owns a group of
partitions (``partition % workers``), regenerates every block, keeps its partitions' records and
appends them in order, in producer-sized batches, through ``Log.append_as_leader`` on a
:class:`~kafkalab.clock.ManualClock` that follows the records' timestamps. Same arguments, same
bytes on disk -- whatever the number of workers.

``--data-dir`` may also be an object-store URL (``s3://bucket/logs``, ``gs://…``, ``hdfs://…``,
``abfs://…``). The storage engine writes segments with positional writes, which object stores do
not offer, so the topic is written to a local scratch directory first and then uploaded, file by
file, with a progress bar; the scratch directory is removed afterwards.

Worked example: ``--records 10000000 --partitions 6 --keys 100000 --key-skew zipf:1.1
--value-bytes 100`` writes ~1.2 GB; the hottest key alone holds ~8 % of all records, and its
partition is ~1.4x larger than the average one.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import crc32c
import numpy as np

from kafkalab.clock import ManualClock
from kafkalab.errors import ConfigError
from kafkalab.partitioner import partitions_for_keys
from kafkalab.records.columnar import ByteSpans, encode_spans
from kafkalab.records.compression import compress
from kafkalab.records.header import LOG_OVERHEAD, V2_HEADER_SIZE, Compression, iter_headers

BLOCK_RECORDS = 65_536  # records drawn per seeded block
VALUE_POOL_BYTES = 1 << 20  # values are cut from this much seeded text
APPEND_BYTES_MAX = 1024 * 1024  # one append ~ one produce request (max.request.size default)
BATCH_BYTES_DEFAULT = 16_384  # the producer's batch.size default
RECORDS_MAX = 10**10
KEYS_MAX = 100_000_000
PARTITIONS_MAX = 10_000
VALUE_BYTES_MAX = 1_000_000  # stays under max.message.bytes
PROGRESS_POLL_S = 0.2
CODECS = {c.name.lower(): c for c in Compression}


@dataclass(frozen=True, slots=True)
class GenSpec:
    """Everything that defines the generated topic. Immutable; picklable for worker processes."""

    data_dir: str
    topic: str
    partitions: int
    records: int
    keys: int
    key_skew: float  # Zipf exponent; 0.0 = uniform
    value_bytes: int
    compression: str
    seed: int
    start_ms: int
    rate: int  # records per second on the synthetic clock
    tombstones: float = 0.0
    batch_bytes: int = BATCH_BYTES_DEFAULT
    config: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        checks = [
            (1 <= self.partitions <= PARTITIONS_MAX, f"--partitions {self.partitions} not in [1, {PARTITIONS_MAX}]"),
            (0 <= self.records <= RECORDS_MAX, f"--records {self.records} not in [0, {RECORDS_MAX}]"),
            (1 <= self.keys <= KEYS_MAX, f"--keys {self.keys} not in [1, {KEYS_MAX}]"),
            (0 <= self.value_bytes <= VALUE_BYTES_MAX, f"--value-bytes {self.value_bytes} not in [0, {VALUE_BYTES_MAX}]"),
            (self.compression in CODECS, f"--compression {self.compression!r} not one of {sorted(CODECS)}"),
            (self.rate >= 1, f"--rate {self.rate} must be >= 1 record/s"),
            (0.0 <= self.tombstones <= 1.0, f"--tombstones {self.tombstones} not in [0, 1]"),
            (self.key_skew >= 0.0, f"key skew exponent {self.key_skew} must be >= 0"),
            (self.start_ms >= 0, f"--start-ms {self.start_ms} must be >= 0"),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(message)


def parse_key_skew(text: str) -> float:
    """``"uniform"`` -> 0.0, ``"zipf:1.1"`` -> 1.1."""
    if text == "uniform":
        return 0.0
    kind, _, exponent = text.partition(":")
    try:
        value = float(exponent)
    except ValueError:
        value = -1.0
    if kind != "zipf" or value < 0:
        raise ConfigError(f"--key-skew {text!r}: use 'uniform' or 'zipf:<exponent >= 0>'")
    return value


def key_table(keys: int) -> tuple[np.ndarray, np.ndarray]:
    """All key bytes as an Arrow-style (data, offsets) pair: ``user-0``, ``user-1``, ..."""
    encoded = [f"user-{rank}".encode() for rank in range(keys)]
    offsets = np.zeros(keys + 1, dtype=np.int64)
    np.cumsum([len(k) for k in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets


def zipf_cdf(keys: int, exponent: float) -> np.ndarray:
    weights = 1.0 / np.arange(1, keys + 1, dtype=np.float64) ** exponent
    cdf = np.cumsum(weights)
    return cdf / cdf[-1]


@dataclass(frozen=True, slots=True)
class Block:
    """The records of one block: global indexes, key ranks, value pool positions, tombstones."""

    index: np.ndarray
    rank: np.ndarray
    value_at: np.ndarray
    tombstone: np.ndarray


def draw_block(spec: GenSpec, block: int, cdf: np.ndarray) -> Block:
    """Block ``block``'s records; depends only on ``spec`` and ``block``."""
    first = block * BLOCK_RECORDS
    count = min(BLOCK_RECORDS, spec.records - first)
    rng = np.random.default_rng([spec.seed, block])
    rank = np.searchsorted(cdf, rng.random(count), side="right").clip(0, spec.keys - 1)
    value_at = rng.integers(0, VALUE_POOL_BYTES - spec.value_bytes + 1, count)
    tombstone = rng.random(count) < spec.tombstones
    return Block(np.arange(first, first + count, dtype=np.int64), rank, value_at, tombstone)


def _value_pool(seed: int) -> np.ndarray:
    rng = np.random.default_rng([seed, 2**32 - 1])  # a stream no block uses
    return rng.integers(0, 26, VALUE_POOL_BYTES, dtype=np.uint8) + ord("a")


def _encode_batches(spec: GenSpec, keys: ByteSpans, values: ByteSpans,
                    timestamps: np.ndarray) -> tuple[list[bytes], list[int]]:
    """Producer-sized v2 batches (offsets relative; the log assigns the real ones) and each
    batch's maxTimestamp. ``batch.size`` bounds the uncompressed records, as the columnar
    encoder packs them; a compressed batch is then the same records with its body compressed."""
    data = encode_spans(keys, values, timestamps, batch_bytes=spec.batch_bytes)
    codec = CODECS[spec.compression]
    batches, max_ts = [], []
    view = memoryview(data)
    for header in iter_headers(data):
        batch = view[header.position:header.end_position]
        batches.append(bytes(batch) if codec is Compression.NONE else _compressed(batch, codec))
        max_ts.append(header.max_timestamp)
    return batches, max_ts


def _compressed(batch: memoryview, codec: Compression) -> bytes:
    """The same batch with its records compressed: new batchLength, codec bits and CRC-32C."""
    body = compress(codec, bytes(batch[V2_HEADER_SIZE:]))
    header = bytearray(batch[:V2_HEADER_SIZE])
    header[8:12] = (V2_HEADER_SIZE - LOG_OVERHEAD + len(body)).to_bytes(4, "big")
    attributes = int.from_bytes(header[21:23], "big") | int(codec)
    header[21:23] = attributes.to_bytes(2, "big")
    crc = crc32c.crc32c(bytes(header[21:]) + body)
    header[17:21] = crc.to_bytes(4, "big")
    return bytes(header) + body


def _append_all(log, clock: ManualClock, batches: list[bytes], max_ts: list[int]) -> None:
    """Append batches in produce-request-sized groups (never larger than a segment), moving
    the clock with the data."""
    limit = min(APPEND_BYTES_MAX, log.config.segment_bytes)
    group: list[bytes] = []
    size = 0
    for batch, ts in zip(batches + [b""], max_ts + [0]):
        if group and (not batch or size + len(batch) > limit):
            log.append_as_leader(b"".join(group), leader_epoch=0)
            group, size = [], 0
        if batch:
            clock.set_ms(max(clock.milliseconds(), ts))
            group.append(batch)
            size += len(batch)


def write_partitions(spec: GenSpec, owned: list[int], progress=None) -> dict[int, int]:
    """Write every record of the partitions in ``owned``; returns records per partition."""
    from kafkalab.storage.log import Log
    from kafkalab.storage.log_config import LogConfig

    config = LogConfig.from_properties(dict(spec.config))
    key_data, key_offsets = key_table(spec.keys)
    key_partition = partitions_for_keys(key_data, key_offsets, spec.partitions)
    cdf = zipf_cdf(spec.keys, spec.key_skew)
    pool = _value_pool(spec.seed)
    clocks = {p: ManualClock(spec.start_ms) for p in owned}
    logs = {p: Log.open(Path(spec.data_dir) / f"{spec.topic}-{p}", config, clocks[p]) for p in owned}
    written = dict.fromkeys(owned, 0)
    try:
        for block in range((spec.records + BLOCK_RECORDS - 1) // BLOCK_RECORDS):
            drawn = draw_block(spec, block, cdf)
            partition_of = key_partition[drawn.rank]
            for p in owned:
                rows = np.nonzero(partition_of == p)[0]
                if len(rows) == 0:
                    continue
                ranks = drawn.rank[rows]
                keys = ByteSpans(key_data, key_offsets[ranks], key_offsets[ranks + 1] - key_offsets[ranks])
                lengths = np.where(drawn.tombstone[rows], -1, spec.value_bytes)
                values = ByteSpans(pool, drawn.value_at[rows], lengths)
                timestamps = spec.start_ms + drawn.index[rows] * 1000 // spec.rate
                batches, max_ts = _encode_batches(spec, keys, values, timestamps)
                _append_all(logs[p], clocks[p], batches, max_ts)
                written[p] += len(rows)
            if progress is not None:
                with progress.get_lock():
                    progress.value += len(drawn.index)
    finally:
        for log in logs.values():
            log.close()
    return written


_PROGRESS = None


def _init_worker(progress) -> None:
    global _PROGRESS
    _PROGRESS = progress


def _pool_worker(args: tuple[GenSpec, list[int]]) -> dict[int, int]:
    return write_partitions(args[0], args[1], _PROGRESS)


def generate(spec: GenSpec, workers: int | None = None, show_progress: bool = True) -> dict[int, int]:
    """Write the topic with ``workers`` processes (default: one per core); returns records per
    partition. The bytes written do not depend on ``workers``."""
    from tqdm import tqdm

    workers = max(1, min(workers or os.cpu_count() or 1, spec.partitions))
    groups = [[p for p in range(spec.partitions) if p % workers == w] for w in range(workers)]
    if workers == 1:
        return write_partitions(spec, groups[0])
    context = multiprocessing.get_context("fork")
    progress = context.Value("q", 0)
    total_work = spec.records * workers  # every worker draws every block
    result: dict[int, int] = {}
    with context.Pool(workers, initializer=_init_worker, initargs=(progress,)) as pool, tqdm(
        total=spec.records, unit="rec", unit_scale=True, disable=not show_progress, desc=spec.topic
    ) as bar:
        pending = pool.map_async(_pool_worker, [(spec, g) for g in groups])
        while not pending.ready():
            pending.wait(PROGRESS_POLL_S)
            bar.n = progress.value * spec.records // max(total_work, 1)
            bar.refresh()
        for part in pending.get():
            result.update(part)
        bar.n = spec.records
        bar.refresh()
    return dict(sorted(result.items()))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", required=True,
                        help="log directory to write <topic>-<n> into, or an object-store URL (s3://bucket/logs)")
    parser.add_argument("--topic", required=True)
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=10_000, help="distinct keys")
    parser.add_argument("--key-skew", default="uniform", help="'uniform' or 'zipf:<exponent>'")
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--compression", default="none", choices=sorted(CODECS))
    parser.add_argument("--tombstones", type=float, default=0.0, help="fraction of null values")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start-ms", type=int, default=1_700_000_000_000)
    parser.add_argument("--rate", type=int, default=10_000, help="records per second (synthetic clock)")
    parser.add_argument("--batch-bytes", type=int, default=BATCH_BYTES_DEFAULT, help="the producer's batch.size")
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                        help="topic-level log config, e.g. segment.bytes=104857600 (repeatable)")
    parser.add_argument("--workers", type=int, default=None, help="processes (default: cores)")


def spec_from_args(args: argparse.Namespace) -> GenSpec:
    config = []
    for item in args.config:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--config {item!r} must be KEY=VALUE")
        config.append((key, value))
    return GenSpec(args.data_dir, args.topic, args.partitions, args.records, args.keys,
                   parse_key_skew(args.key_skew), args.value_bytes, args.compression, args.seed,
                   args.start_ms, args.rate, args.tombstones, args.batch_bytes, tuple(config))


def run(args: argparse.Namespace) -> int:
    from kafkalab.spark.files import Location, copy_tree, is_url

    target = args.data_dir
    staging = tempfile.mkdtemp(prefix="kafkalab-gen-log-") if is_url(target) else None
    if staging is not None:
        args.data_dir = staging
    spec = spec_from_args(args)
    started = time.perf_counter()
    try:
        written = generate(spec, args.workers)
        if staging is not None:
            copy_tree(Location.of(staging), Location.of(target))
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    elapsed = time.perf_counter() - started
    for partition, count in written.items():
        print(f"{spec.topic}-{partition}: {count} records")
    print(f"{sum(written.values())} records in {elapsed:.1f} s")
    return 0
