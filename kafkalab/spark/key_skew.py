"""Key distributions and how murmur2 spreads them over partition counts: lab 08's engine.

Theory of operation
-------------------
Kafka's default partitioner sends a keyed record to ``(murmur2(key) & 0x7fffffff) % partitions``
(:func:`kafkalab.partitioner.partition_for_key`). How evenly that fills the partitions depends
less on the hash than on the keys: murmur2 spreads *distinct* keys close to uniformly, but every
record of one key lands in one partition. So the spread of records is bounded by the spread of
keys:

* many keys of similar weight (UUIDs, sequential order ids) fill partitions evenly, within a
  few standard deviations of the mean;
* a skewed distribution (Zipf: the key of rank ``k`` has weight ``1/k^s``) puts the hottest key's
  whole share in one partition; once that share exceeds ``1/P`` the largest partition is at
  least ``P`` times the hottest key's share of the mean, so adding partitions makes the
  imbalance *worse*, not better;
* fewer distinct keys than partitions leaves partitions empty, whatever the hash.

:func:`keys_frame` makes a Spark DataFrame of one binary ``key`` column, ``records`` rows long,
for one of the named distributions in :data:`DISTRIBUTIONS`. Keys are built as text, as
producers usually send them, in vectorised Arrow/numpy code inside the workers. Each Spark
partition seeds its own generator from ``seed`` and its first row id, so a run replays exactly
for the same ``records`` and ``slices``.

:func:`with_murmur2` adds ``murmur2_positive``, Kafka's hash with the sign bit cleared, once per
row; the partition for any count ``P`` is then the plain Spark expression ``murmur2_positive % P``.
:func:`partition_sizes` counts records per partition for several counts in one pass.

Worked example: key ``b"order-2"`` has murmur2 ``-1055499005``; cleared of its sign bit (not
negated: Kafka's ``Utils.toPositive``) that is ``1091984643``, so with 12 partitions it goes to
``1091984643 % 12 = 3``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from kafkalab.partitioner import POSITIVE_MASK, murmur2_array
from kafkalab.tools.gen_log import zipf_cdf

DISTRIBUTIONS = ("uuid", "sequential", "zipf", "regions")
REGIONS = (b"eu-west", b"eu-north", b"us-east", b"us-west", b"ap-south", b"ap-east", b"sa-east", b"af-south")
ZIPF_KEYS = 100_000
ZIPF_EXPONENT = 1.1
UUID_TEXT_BYTES = 36
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
_UUID_DASHES = (8, 13, 18, 23)


def keys_frame(spark: Any, distribution: str, records: int, seed: int = 8, slices: int = 8) -> Any:
    """A DataFrame of ``records`` rows with one binary ``key`` column drawn from ``distribution``."""
    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"distribution must be one of {DISTRIBUTIONS}, got {distribution!r}")
    ids = spark.range(0, records, numPartitions=slices)
    return ids.mapInArrow(lambda batches: _key_batches(batches, distribution, seed), "key binary")


def _key_batches(batches: Iterator[Any], distribution: str, seed: int) -> Iterator[Any]:
    import pyarrow as pa

    for batch in batches:
        ids = batch.column(0).to_numpy()
        if not len(ids):
            continue
        rng = np.random.default_rng([seed, int(ids[0])])
        yield pa.RecordBatch.from_arrays([make_keys(distribution, ids, rng)], names=["key"])


def make_keys(distribution: str, ids: np.ndarray, rng: np.random.Generator) -> Any:
    """An Arrow binary array with one key per id."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if distribution == "uuid":
        return _uuid4_text(rng, len(ids))
    if distribution == "sequential":
        return pc.binary_join_element_wise("order-", pc.cast(pa.array(ids), pa.string()), "").cast(pa.binary())
    if distribution == "zipf":
        ranks = np.searchsorted(zipf_cdf(ZIPF_KEYS, ZIPF_EXPONENT), rng.random(len(ids)))
        return pc.binary_join_element_wise("customer-", pc.cast(pa.array(ranks), pa.string()), "").cast(pa.binary())
    return pa.array(np.array(REGIONS, dtype=object)[rng.integers(0, len(REGIONS), len(ids))], type=pa.binary())


def _uuid4_text(rng: np.random.Generator, count: int) -> Any:
    """``count`` random version-4 UUIDs as 36-byte text (``8-4-4-4-12`` hex digits)."""
    import pyarrow as pa

    raw = rng.integers(0, 256, size=(count, 16), dtype=np.uint8)
    raw[:, 6] = (raw[:, 6] & 0x0F) | 0x40  # version 4
    raw[:, 8] = (raw[:, 8] & 0x3F) | 0x80  # RFC 4122 variant
    digits = np.empty((count, 32), dtype=np.uint8)
    digits[:, 0::2] = _HEX[raw >> 4]
    digits[:, 1::2] = _HEX[raw & 0x0F]
    text = np.insert(digits, [8, 12, 16, 20], ord("-"), axis=1)
    assert text.shape[1] == UUID_TEXT_BYTES and all((text[:, i] == ord("-")).all() for i in _UUID_DASHES)
    offsets = np.arange(0, (count + 1) * UUID_TEXT_BYTES, UUID_TEXT_BYTES, dtype=np.int32)
    return pa.Array.from_buffers(pa.binary(), count, [None, pa.py_buffer(offsets), pa.py_buffer(text.tobytes())])


def with_murmur2(df: Any) -> Any:
    """``df`` plus ``murmur2_positive``: murmur2 of ``key`` with the sign bit cleared (a bigint)."""
    from pyspark.sql.types import LongType, StructField, StructType

    schema = StructType(df.schema.fields + [StructField("murmur2_positive", LongType())])
    return df.mapInArrow(_murmur2_batches, schema)


def _murmur2_batches(batches: Iterator[Any]) -> Iterator[Any]:
    import pyarrow as pa

    for batch in batches:
        data, offsets = key_buffers(batch)
        positive = murmur2_array(data, offsets).view(np.uint32) & np.uint32(POSITIVE_MASK)
        yield batch.append_column("murmur2_positive", pa.array(positive.astype(np.int64)))


def key_buffers(batch: Any) -> tuple[np.ndarray, np.ndarray]:
    """The ``key`` column of an Arrow batch as (flat bytes, offsets), the layout
    :func:`~kafkalab.partitioner.murmur2_array` hashes without copying."""
    keys = batch.column(batch.schema.get_field_index("key"))
    if keys.null_count:
        raise ValueError("null keys have no murmur2 partition (Kafka uses the sticky partitioner)")
    offsets = np.frombuffer(keys.buffers()[1], dtype=np.int32)[keys.offset:keys.offset + len(keys) + 1]
    data = np.frombuffer(keys.buffers()[2], dtype=np.uint8) if keys.buffers()[2] else np.zeros(0, np.uint8)
    return data, offsets


def partition_sizes(hashed: Any, partition_counts: Sequence[int]) -> Any:
    """Records per partition for each count: a pandas frame (partitions, partition, records),
    with a row for every partition, empty ones included."""
    import pandas as pd
    from pyspark.sql import functions as F

    counts = (hashed.select(F.explode(F.array(*[F.lit(p) for p in partition_counts])).alias("partitions"),
                            "murmur2_positive")
              .groupBy("partitions", (F.col("murmur2_positive") % F.col("partitions")).cast("int").alias("partition"))
              .count().toPandas())
    grid = pd.DataFrame([(p, i) for p in partition_counts for i in range(p)], columns=["partitions", "partition"])
    sizes = grid.merge(counts, on=["partitions", "partition"], how="left").fillna({"count": 0})
    return sizes.rename(columns={"count": "records"}).astype({"records": "int64"})


def imbalance(sizes: Any) -> Any:
    """Per partition count: the largest partition over the mean, and the empty partitions."""
    grouped = sizes.groupby("partitions")["records"]
    return grouped.agg(max_over_mean=lambda r: r.max() / r.mean(), empty=lambda r: int((r == 0).sum())).reset_index()


def zipf_top_share(keys: int = ZIPF_KEYS, exponent: float = ZIPF_EXPONENT) -> float:
    """The hottest key's expected share of the records: ``1 / sum(1/k^s for k in 1..keys)``."""
    return float(zipf_cdf(keys, exponent)[0])


__all__ = ["DISTRIBUTIONS", "REGIONS", "imbalance", "key_buffers", "keys_frame", "make_keys", "partition_sizes",
           "with_murmur2", "zipf_top_share"]
