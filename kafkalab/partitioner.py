"""Kafka's keyed partitioner: murmur2 over the key bytes, then modulo the partition count.

Theory of operation
-------------------
A Java producer that sends a record with a non-null key and no explicit partition picks

    partition = (murmur2(key_bytes) & 0x7fffffff) % num_partitions

(``BuiltInPartitioner.partitionForKey``, built on ``Utils.murmur2``). The same key therefore
always lands in the same partition -- *as long as the partition count does not change*. Adding
partitions changes the modulus, and most keys move: per-key ordering holds only within one
partition, so records written before and after the change can be read out of order.

murmur2 (Austin Appleby's MurmurHash2, 32-bit) as Kafka runs it::

    h = seed ^ len(data)                    seed = 0x9747b28c
    for each little-endian 4-byte block k:  m = 0x5bd1e995, r = 24
        k *= m; k ^= k >>> r; k *= m
        h *= m; h ^= k
    tail (1-3 bytes, falling through):  h ^= b2 << 16; h ^= b1 << 8; h ^= b0; h *= m
    h ^= h >>> 13; h *= m; h ^= h >>> 15    (all arithmetic wraps at 32 bits)

Java returns ``h`` as a signed ``int``; :func:`murmur2` does the same so its results match
Kafka's test vectors. Worked example: ``murmur2(b"foobar")`` is -790332482; ``& 0x7fffffff``
gives 1357151166, and with 3 partitions ``1357151166 % 3 == 0``, so the key ``foobar`` goes to
partition 0 of a three-partition topic.

Spark's own ``hash()`` is Murmur3 with a different seed: it does *not* say where Kafka put a key.
:func:`murmur2_array` hashes a whole column of keys at once (Arrow-style ``data`` + ``offsets``
buffers) with numpy, one pass per 4-byte block position, for the Spark labs.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from kafkalab.errors import InvalidPartitionsError, InvalidRecordError

SEED = 0x9747B28C
M = 0x5BD1E995
R = 24
MASK32 = 0xFFFFFFFF
POSITIVE_MASK = 0x7FFFFFFF  # Kafka's Utils.toPositive: clears the sign bit (not abs())
KEY_BYTES_MAX = 1 << 20  # message.max.bytes default (~1 MiB): no real key is longer


def _to_signed32(value: int) -> int:
    return value - (1 << 32) if value & 0x80000000 else value


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2``: the 32-bit MurmurHash2 of ``data`` as a signed int32."""
    length = len(data)
    h = (SEED ^ length) & MASK32
    full_blocks_end = length - length % 4
    for i in range(0, full_blocks_end, 4):
        k = data[i] | data[i + 1] << 8 | data[i + 2] << 16 | data[i + 3] << 24
        k = (k * M) & MASK32
        k ^= k >> R
        k = (k * M) & MASK32
        h = (h * M) & MASK32
        h ^= k
    tail = length % 4
    if tail == 3:
        h ^= data[full_blocks_end + 2] << 16
    if tail >= 2:
        h ^= data[full_blocks_end + 1] << 8
    if tail >= 1:
        h ^= data[full_blocks_end]
        h = (h * M) & MASK32
    h ^= h >> 13
    h = (h * M) & MASK32
    h ^= h >> 15
    return _to_signed32(h)


def to_positive(value: int) -> int:
    """Kafka's ``Utils.toPositive``: clear the sign bit, so ``MIN_VALUE`` maps to 0."""
    return value & POSITIVE_MASK


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The partition Kafka's default partitioner picks for a non-null ``key``."""
    if num_partitions <= 0:
        raise InvalidPartitionsError(f"num_partitions must be >= 1 to place key {key[:16]!r}, got {num_partitions}")
    return to_positive(murmur2(key)) % num_partitions


def crc32_partition(key: bytes, num_partitions: int) -> int:
    """The partition librdkafka's ``consistent`` partitioner picks for a non-null ``key``: the
    CRC-32 of the key modulo the partition count. It is also what librdkafka's default,
    ``consistent_random``, does with keyed records (confluent-kafka, kcat), so a Java producer
    and a librdkafka producer with default settings put most keys in different partitions;
    librdkafka's ``murmur2_random`` setting agrees with Java (:func:`partition_for_key`)."""
    if num_partitions <= 0:
        raise InvalidPartitionsError(f"num_partitions must be >= 1 to place key {key[:16]!r}, got {num_partitions}")
    return zlib.crc32(key) % num_partitions


def murmur2_array(data: npt.ArrayLike, offsets: npt.ArrayLike) -> npt.NDArray[np.int32]:
    """murmur2 of many keys at once: key ``i`` is ``data[offsets[i]:offsets[i + 1]]``.

    ``data`` is a flat uint8 buffer and ``offsets`` has one more entry than there are keys (the
    layout of an Arrow binary column). Returns signed int32 hashes equal to :func:`murmur2` of
    each key. The work is vectorised across keys: one numpy pass per 4-byte block position, so
    the number of passes is the longest key's length / 4, not the number of keys.
    """
    buf = np.ascontiguousarray(data, dtype=np.uint8)
    bounds = np.asarray(offsets, dtype=np.int64)
    if bounds.ndim != 1 or len(bounds) < 1:
        raise InvalidRecordError(f"key offsets must be a 1-d array of n + 1 positions, got shape {bounds.shape}")
    starts, ends = bounds[:-1], bounds[1:]
    lengths = ends - starts
    if len(lengths) and (lengths.min() < 0 or starts.min() < 0 or ends.max() > len(buf)):
        raise InvalidRecordError(f"key offsets must be non-decreasing and inside the {len(buf)}-byte buffer")
    if len(lengths) and lengths.max() > KEY_BYTES_MAX:
        raise InvalidRecordError(f"a key of {int(lengths.max())} bytes exceeds {KEY_BYTES_MAX} bytes")
    m = np.uint32(M)
    h = np.uint32(SEED) ^ lengths.astype(np.uint32)
    blocks = lengths // 4
    with np.errstate(over="ignore"):
        for block in range(int(blocks.max()) if len(blocks) else 0):
            rows = np.nonzero(blocks > block)[0]
            base = starts[rows] + 4 * block
            k = (buf[base].astype(np.uint32) | buf[base + 1].astype(np.uint32) << 8
                 | buf[base + 2].astype(np.uint32) << 16 | buf[base + 3].astype(np.uint32) << 24)
            k = k * m
            k ^= k >> np.uint32(R)
            k = k * m
            h[rows] = (h[rows] * m) ^ k
        tail = lengths % 4
        tail_start = starts + 4 * blocks
        for byte_index, shift in ((2, 16), (1, 8), (0, 0)):
            rows = np.nonzero(tail > byte_index)[0]
            h[rows] ^= buf[tail_start[rows] + byte_index].astype(np.uint32) << np.uint32(shift)
        rows = np.nonzero(tail > 0)[0]
        h[rows] = h[rows] * m
        h ^= h >> np.uint32(13)
        h = h * m
        h ^= h >> np.uint32(15)
    return h.view(np.int32)


def partitions_for_keys(
    data: npt.ArrayLike, offsets: npt.ArrayLike, num_partitions: int
) -> npt.NDArray[np.int32]:
    """Vectorised :func:`partition_for_key` over an Arrow-style key column."""
    if num_partitions <= 0:
        raise InvalidPartitionsError(f"num_partitions must be >= 1, got {num_partitions}")
    hashes = murmur2_array(data, offsets)
    positive = hashes.view(np.uint32) & np.uint32(POSITIVE_MASK)
    return (positive % np.uint32(num_partitions)).astype(np.int32)


# --- Java's String.hashCode, for the coordinators and the assignors ----------------------------

INT32_MIN = -(2**31)


def to_int32(value: int) -> int:
    """Wrap an integer to Java's signed 32-bit range."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: ``s[0]*31^(n-1) + ... + s[n-1]`` over the string's UTF-16 code
    units, as a signed int32. Kafka places a group (``__consumer_offsets``) and a transactional
    id (``__transaction_state``) by it, and its sticky assignors iterate hash maps ordered by it.
    ``"foobar"`` hashes to -1268878963."""
    if text.isascii():  # one UTF-16 code unit per byte: iterate the bytes directly
        units: Sequence[int] = text.encode("ascii")
    else:
        data = text.encode("utf-16-be")
        units = struct.unpack(f">{len(data) // 2}H", data)
    h = 0
    for unit in units:  # Python's integers do not overflow: wrap once at the end
        h = h * 31 + unit
    return to_int32(h)


def java_abs(value: int) -> int:
    """Kafka's ``Utils.abs``: ``abs``, except that ``Integer.MIN_VALUE`` maps to 0."""
    return 0 if value == INT32_MIN else abs(value)
