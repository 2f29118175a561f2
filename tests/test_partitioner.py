"""Kafka's murmur2 partitioner: Kafka's own test vectors and kafka-python as an independent oracle."""

from __future__ import annotations

import random

import numpy as np
import pytest
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from kafkalab.errors import InvalidPartitionsError, InvalidRecordError
from kafkalab.partitioner import (
    crc32_partition,
    murmur2,
    murmur2_array,
    partition_for_key,
    partitions_for_keys,
    to_positive,
)

# Kafka's UtilsTest.testMurmur2 vectors (signed int32), kafka-facts section F.
KAFKA_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"abc": 479470107,
    b"a-little-bit-long-string": -985981536,
}


def _signed(value: int) -> int:
    return value - (1 << 32) if value >= 1 << 31 else value


@pytest.mark.parametrize("key,expected", sorted(KAFKA_VECTORS.items()))
def test_murmur2_matches_kafka_vectors(key: bytes, expected: int) -> None:
    assert murmur2(key) == expected


def _random_keys(seed: int, count: int) -> list[bytes]:
    rng = random.Random(seed)
    return [rng.randbytes(rng.randrange(0, 40)) for _ in range(count)]


def test_murmur2_matches_kafka_python_on_random_keys() -> None:
    for key in _random_keys(seed=7, count=2000):
        assert murmur2(key) == _signed(kafka_python_murmur2(key)), key


def test_every_tail_length_is_covered() -> None:
    for length in range(0, 13):
        key = bytes(range(200, 200 + length))
        assert murmur2(key) == _signed(kafka_python_murmur2(key))


def test_partition_for_key_uses_sign_bit_mask_not_abs() -> None:
    # foobar hashes negative; Kafka clears the sign bit rather than negating.
    assert partition_for_key(b"foobar", 3) == (-790332482 & 0x7FFFFFFF) % 3 == 0
    assert to_positive(-(2**31)) == 0
    assert partition_for_key(b"foobar", 1000) != abs(-790332482) % 1000


def test_partition_for_key_rejects_zero_partitions() -> None:
    with pytest.raises(InvalidPartitionsError, match="num_partitions must be >= 1"):
        partition_for_key(b"k", 0)


def _pack(keys: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(keys) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(k) for k in keys])
    data = np.frombuffer(b"".join(keys), dtype=np.uint8)
    return data, offsets


def test_murmur2_array_equals_scalar() -> None:
    keys = _random_keys(seed=11, count=3000) + list(KAFKA_VECTORS)
    data, offsets = _pack(keys)
    hashes = murmur2_array(data, offsets)
    assert hashes.dtype == np.int32
    assert hashes.tolist() == [murmur2(k) for k in keys]
    for n in (1, 3, 7, 12):
        assert partitions_for_keys(data, offsets, n).tolist() == [partition_for_key(k, n) for k in keys]


def test_murmur2_array_empty_column() -> None:
    assert murmur2_array(np.zeros(0, np.uint8), np.zeros(1, np.int64)).tolist() == []


def test_murmur2_array_rejects_offsets_outside_buffer() -> None:
    with pytest.raises(InvalidRecordError, match="inside the 3-byte buffer"):
        murmur2_array(np.zeros(3, np.uint8), np.array([0, 5]))
    with pytest.raises(InvalidRecordError, match="non-decreasing"):
        murmur2_array(np.zeros(3, np.uint8), np.array([2, 1]))


def test_crc32_partition_is_the_ieee_crc_of_the_key_modulo_the_count() -> None:
    # librdkafka's rd_crc32 is the IEEE 802.3 CRC-32; its check value for "123456789" is
    # 0xCBF43926 (the catalogue value every CRC-32 implementation is tested against).
    assert crc32_partition(b"123456789", 0xFFFFFFFF) == 0xCBF43926
    assert crc32_partition(b"123456789", 7) == 0xCBF43926 % 7


def test_crc32_partition_rejects_zero_partitions() -> None:
    with pytest.raises(InvalidPartitionsError):
        crc32_partition(b"k", 0)
