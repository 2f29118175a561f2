"""Fuzz the decoders: mutated valid batches and random bytes may only raise CorruptRecordError.

CRC checking is switched off for most cases so that mutations reach the record parsers and
decompressors instead of being caught by the checksum. 11,000 derandomized cases in total.
"""

from __future__ import annotations

import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalab.errors import CorruptRecordError
from kafkalab.records import Header, Record, build_batch, iter_batches, iter_headers

LIMIT_BYTES = 1 << 20  # a small decompression limit keeps bomb-like mutations fast


def _corpus() -> list[bytes]:
    corpus = []
    for magic, codecs in ((0, (0, 1, 2, 3)), (1, (0, 1, 2, 3)), (2, (0, 1, 2, 3, 4))):
        for codec in codecs:
            records = [
                Record(i, 1_000 + i if magic else -1, b"key%d" % i if i % 3 else None,
                       b"value-%d-" % i * 3, (Header("h", b"x"), Header("n", None)) if magic == 2 else ())
                for i in range(4)
            ]
            corpus.append(build_batch(records, magic=magic, compression=codec))
    return corpus


CORPUS = _corpus()


@st.composite
def mutated(draw) -> bytes:
    data = bytearray(draw(st.sampled_from(CORPUS)))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "truncate", "int32", "byte", "insert"]))
        position = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "flip" and data:
            data[position] ^= 1 << draw(st.integers(0, 7))
        elif kind == "truncate":
            del data[position:]
        elif kind == "int32" and position + 4 <= len(data):
            value = draw(st.sampled_from([-1, -2, 0, 1, 0x7FFFFFFF, -(2**31)]) | st.integers(-(2**31), 2**31 - 1))
            struct.pack_into(">i", data, position, value)
        elif kind == "byte" and data:
            data[position] = draw(st.sampled_from([0x00, 0x7F, 0x80, 0xFF]))
        elif kind == "insert":
            data[position:position] = draw(st.binary(min_size=1, max_size=8))
    return bytes(data)


def _decode_everything(data: bytes, check_crc: bool) -> None:
    try:
        walker = iter_batches(data, check_crc=check_crc, limit_bytes=LIMIT_BYTES)
        for batch in walker:
            for record in batch.records:
                assert record.key is None or isinstance(record.key, bytes)
        assert 0 <= walker.remaining_bytes <= len(data)
        list(iter_headers(data))
    except CorruptRecordError as exc:
        assert exc.reason and isinstance(exc.position, int)


FUZZ = dict(deadline=None, derandomize=True, database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@settings(max_examples=7_000, **FUZZ)
@given(mutated())
def test_mutated_batches_without_crc_check(data: bytes) -> None:
    _decode_everything(data, check_crc=False)


@settings(max_examples=2_000, **FUZZ)
@given(mutated())
def test_mutated_batches_with_crc_check(data: bytes) -> None:
    _decode_everything(data, check_crc=True)


@settings(max_examples=2_000, **FUZZ)
@given(st.binary(max_size=200) | st.binary(min_size=17, max_size=200).map(lambda b: b[:16] + b"\x02" + b[17:]))
def test_random_bytes(data: bytes) -> None:
    _decode_everything(data, check_crc=False)
