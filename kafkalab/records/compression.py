"""Compression codecs exactly as Kafka frames them: gzip, snappy, lz4 and zstd.

Theory of operation
-------------------
A producer compresses a whole batch: in v2 the records after the 61-byte header; in v0/v1 an
inner message set that becomes the value of one *wrapper* message. The codec id sits in the low
three attribute bits. Each codec has a framing detail a reader must match byte for byte:

* gzip (1): an ordinary gzip member (``java.util.zip.GZIPOutputStream``).
* snappy (2): the *xerial* stream of snappy-java, not the official snappy framing::

      82 'S' 'N' 'A' 'P' 'P' 'Y' 00 | version int32 = 1 | compatible int32 = 1 |
      (block length int32, raw snappy block)*

  snappy-java also reads a stream without that magic as one raw snappy block, and so do we.
* lz4 (3): the LZ4 *frame* format (magic ``04 22 4d 18``, FLG, BD, header checksum, blocks of
  ``uint32-le length`` + data, a zero end mark). Kafka 0.8/0.9 computed the header checksum
  over the magic too (KAFKA-3160); for magic 0 Kafka still writes that broken checksum and
  does not check it when reading, while magic 1 and 2 use the correct one.
* zstd (4): a plain zstd frame; v2 only (KIP-110).

Worked example: 100 records of ``b"x" * 100`` are 11,000 uncompressed record bytes; gzip makes
them about 150 bytes. A hostile batch can claim the reverse -- 150 bytes that inflate to
gigabytes -- so every decompressor here stops at ``limit_bytes`` (default
:data:`DECOMPRESSED_BYTES_MAX`) and raises :class:`CorruptRecordError` instead.
"""

from __future__ import annotations

import struct
import zlib

import cramjam

from kafkalab.errors import CorruptRecordError, UnsupportedCompressionError
from kafkalab.records.header import MAX_CODEC_FOR_MAGIC, Compression

# A decompressed batch larger than this is treated as a decompression bomb. Kafka's default
# message.max.bytes is ~1 MiB compressed; 64 MiB leaves room for very compressible data.
DECOMPRESSED_BYTES_MAX = 64 * 1024 * 1024
GZIP_CHUNK_BYTES = 64 * 1024
SNAPPY_BLOCK_BYTES = 32 * 1024  # snappy-java's default block size
LZ4_BLOCK_BYTES = 64 * 1024  # Kafka writes BD = 64 KiB blocks
LZ4_MAX_RATIO = 255  # an lz4 byte can expand to at most ~255 bytes
ZSTD_FIRST_GUESS_BYTES = 256 * 1024

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
LZ4_MAGIC = 0x184D2204
LZ4_FLG_VERSION = 0x40
LZ4_FLG_BLOCK_INDEPENDENT = 0x20
LZ4_FLG_BLOCK_CHECKSUM = 0x10
LZ4_FLG_CONTENT_SIZE = 0x08
LZ4_FLG_CONTENT_CHECKSUM = 0x04
LZ4_FLG_DICT_ID = 0x01
LZ4_BD_64KB = 4 << 4
LZ4_BLOCK_MAX = {4: 64 * 1024, 5: 256 * 1024, 6: 1024 * 1024, 7: 4 * 1024 * 1024}
LZ4_UNCOMPRESSED_BIT = 0x8000_0000

_PRIME32 = (2654435761, 2246822519, 3266489917, 668265263, 374761393)
_M32 = 0xFFFF_FFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """The 32-bit xxHash (used for the LZ4 frame header checksum). Pure Python; inputs are a
    few bytes long here."""
    p1, p2, p3, p4, p5 = _PRIME32
    n, i = len(data), 0
    if n >= 16:
        v = [(seed + p1 + p2) & _M32, (seed + p2) & _M32, seed & _M32, (seed - p1) & _M32]
        while i + 16 <= n:
            for k in range(4):
                lane = int.from_bytes(data[i : i + 4], "little")
                v[k] = (_rotl((v[k] + lane * p2) & _M32, 13) * p1) & _M32
                i += 4
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M32
    else:
        h = (seed + p5) & _M32
    h = (h + n) & _M32
    while i + 4 <= n:
        h = (_rotl((h + int.from_bytes(data[i : i + 4], "little") * p3) & _M32, 17) * p4) & _M32
        i += 4
    while i < n:
        h = (_rotl((h + data[i] * p5) & _M32, 11) * p1) & _M32
        i += 1
    h ^= h >> 15
    h = (h * p2) & _M32
    h ^= h >> 13
    h = (h * p3) & _M32
    return h ^ (h >> 16)


def _lz4_header_checksum(frame_start: bytes, descriptor: bytes, *, broken: bool) -> int:
    covered = frame_start + descriptor if broken else descriptor
    return (xxh32(covered) >> 8) & 0xFF


# ----------------------------------------------------------------------------- compress


def _gzip_compress(data: bytes, magic: int) -> bytes:
    return bytes(cramjam.gzip.compress(data))


def _snappy_compress(data: bytes, magic: int) -> bytes:
    out = bytearray(XERIAL_HEADER)
    for start in range(0, len(data), SNAPPY_BLOCK_BYTES):
        block = bytes(cramjam.snappy.compress_raw(data[start : start + SNAPPY_BLOCK_BYTES]))
        out += struct.pack(">i", len(block)) + block
    return bytes(out)


def _lz4_compress(data: bytes, magic: int) -> bytes:
    magic_bytes = struct.pack("<I", LZ4_MAGIC)
    descriptor = bytes([LZ4_FLG_VERSION | LZ4_FLG_BLOCK_INDEPENDENT, LZ4_BD_64KB])
    out = bytearray(magic_bytes + descriptor)
    out.append(_lz4_header_checksum(magic_bytes, descriptor, broken=magic == 0))
    for start in range(0, len(data), LZ4_BLOCK_BYTES):
        chunk = data[start : start + LZ4_BLOCK_BYTES]
        block = bytes(cramjam.lz4.compress_block(chunk, store_size=False))
        if len(block) >= len(chunk):  # incompressible: store it raw, flagged by the top bit
            out += struct.pack("<I", len(chunk) | LZ4_UNCOMPRESSED_BIT) + chunk
        else:
            out += struct.pack("<I", len(block)) + block
    out += b"\x00\x00\x00\x00"
    return bytes(out)


def _zstd_compress(data: bytes, magic: int) -> bytes:
    return bytes(cramjam.zstd.compress(data))


_COMPRESSORS = {
    Compression.GZIP: _gzip_compress,
    Compression.SNAPPY: _snappy_compress,
    Compression.LZ4: _lz4_compress,
    Compression.ZSTD: _zstd_compress,
}


def _check_codec(codec: int, magic: int) -> Compression:
    if not 0 <= codec <= MAX_CODEC_FOR_MAGIC.get(magic, -1):
        raise UnsupportedCompressionError(f"compression codec {codec} is not supported by magic {magic}")
    return Compression(codec)


def compress(codec: int, data: bytes, *, magic: int = 2) -> bytes:
    """Compress a record region (v2) or inner message set (v0/v1) with Kafka's framing."""
    codec = _check_codec(codec, magic)
    if codec is Compression.NONE:
        return bytes(data)
    return _COMPRESSORS[codec](bytes(data), magic)


# ----------------------------------------------------------------------------- decompress


def _bomb(limit_bytes: int, position: int) -> CorruptRecordError:
    return CorruptRecordError(
        f"decompressed size exceeds the limit of {limit_bytes} bytes", position=position
    )


def _gzip_decompress(data: bytes, magic: int, limit_bytes: int, position: int) -> bytes:
    inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
    out = bytearray()
    pending = data
    try:
        while pending and not inflater.eof:
            out += inflater.decompress(pending, GZIP_CHUNK_BYTES)
            if len(out) > limit_bytes:
                raise _bomb(limit_bytes, position)
            pending = inflater.unconsumed_tail
        if not inflater.eof:
            out += inflater.flush()
    except zlib.error as exc:
        raise CorruptRecordError(f"bad gzip payload: {exc}", position=position) from None
    if not inflater.eof:
        raise CorruptRecordError("gzip payload ends before its end marker", position=position)
    return bytes(out)


def _snappy_raw(block: bytes, budget: int, limit_bytes: int, position: int) -> bytes:
    try:
        claimed = cramjam.snappy.decompress_raw_len(block)
    except cramjam.DecompressionError as exc:
        raise CorruptRecordError(f"bad snappy block: {exc}", position=position) from None
    if claimed > budget:
        raise _bomb(limit_bytes, position)
    try:
        return bytes(cramjam.snappy.decompress_raw(block))
    except cramjam.DecompressionError as exc:
        raise CorruptRecordError(f"bad snappy block: {exc}", position=position) from None


def _snappy_decompress(data: bytes, magic: int, limit_bytes: int, position: int) -> bytes:
    if not data.startswith(XERIAL_MAGIC):
        return _snappy_raw(data, limit_bytes, limit_bytes, position)
    if len(data) < len(XERIAL_HEADER):
        raise CorruptRecordError("snappy xerial header is truncated", position=position)
    out = bytearray()
    cursor = len(XERIAL_HEADER)
    while cursor < len(data):
        if cursor + 4 > len(data):
            raise CorruptRecordError("snappy block length is truncated", position=position)
        (length,) = struct.unpack_from(">i", data, cursor)
        cursor += 4
        if length < 0 or cursor + length > len(data):
            raise CorruptRecordError(
                f"snappy block length {length} runs past the payload", position=position
            )
        out += _snappy_raw(data[cursor : cursor + length], limit_bytes - len(out), limit_bytes, position)
        cursor += length
    return bytes(out)


def _lz4_read_header(data: bytes, magic: int, position: int) -> tuple[int, int, int]:
    """Validate an LZ4 frame header; return (flags, block_max_bytes, header_length)."""
    if len(data) < 7 or struct.unpack_from("<I", data)[0] != LZ4_MAGIC:
        raise CorruptRecordError("lz4 payload does not start with the frame magic", position=position)
    flg, bd = data[4], data[5]
    if flg >> 6 != 1 or flg & 0x02 or bd & 0x8F or (bd >> 4) & 0x7 not in LZ4_BLOCK_MAX:
        raise CorruptRecordError(f"unsupported lz4 frame flags {flg:#x}/{bd:#x}", position=position)
    if flg & LZ4_FLG_DICT_ID:
        raise CorruptRecordError("lz4 dictionary ids are not supported", position=position)
    header_length = 6 + (8 if flg & LZ4_FLG_CONTENT_SIZE else 0)
    if len(data) < header_length + 1:
        raise CorruptRecordError("lz4 frame header is truncated", position=position)
    # Kafka does not check the header checksum of magic 0 data: it was computed wrongly (KAFKA-3160).
    if magic != 0:
        expected = _lz4_header_checksum(data[:4], data[4:header_length], broken=False)
        if data[header_length] != expected:
            raise CorruptRecordError(
                f"lz4 header checksum {data[header_length]:#x} != {expected:#x}", position=position
            )
    return flg, LZ4_BLOCK_MAX[(bd >> 4) & 0x7], header_length + 1


def _lz4_decompress(data: bytes, magic: int, limit_bytes: int, position: int) -> bytes:
    flg, block_max, cursor = _lz4_read_header(data, magic, position)
    if not flg & LZ4_FLG_BLOCK_INDEPENDENT:
        return _lz4_linked(data, cursor, limit_bytes, position)
    out = bytearray()
    scratch = bytearray(block_max)
    while True:
        if cursor + 4 > len(data):
            raise CorruptRecordError("lz4 block length is truncated", position=position)
        (word,) = struct.unpack_from("<I", data, cursor)
        cursor += 4
        if word == 0:
            break
        length = word & ~LZ4_UNCOMPRESSED_BIT
        if length > block_max or cursor + length > len(data):
            raise CorruptRecordError(f"lz4 block length {length} is invalid", position=position)
        block = data[cursor : cursor + length]
        cursor += length + (4 if flg & LZ4_FLG_BLOCK_CHECKSUM else 0)
        if word & LZ4_UNCOMPRESSED_BIT:
            out += block
        else:
            try:
                n = cramjam.lz4.decompress_block_into(block, scratch)
            except cramjam.DecompressionError as exc:
                raise CorruptRecordError(f"bad lz4 block: {exc}", position=position) from None
            out += scratch[:n]
        if len(out) > limit_bytes:
            raise _bomb(limit_bytes, position)
    return bytes(out)


def _lz4_linked(data: bytes, cursor: int, limit_bytes: int, position: int) -> bytes:
    """Frames with linked blocks (python-lz4's default) go to the frame decoder whole; the
    lz4 expansion ratio bounds their output."""
    if len(data) * LZ4_MAX_RATIO > limit_bytes:
        raise _bomb(limit_bytes, position)
    fixed = bytearray(data)
    fixed[cursor - 1] = _lz4_header_checksum(bytes(data[:4]), bytes(data[4 : cursor - 1]), broken=False)
    try:
        return bytes(cramjam.lz4.decompress(bytes(fixed)))
    except cramjam.DecompressionError as exc:
        raise CorruptRecordError(f"bad lz4 frame: {exc}", position=position) from None


def _zstd_decompress(data: bytes, magic: int, limit_bytes: int, position: int) -> bytes:
    # Try growing output buffers: each attempt's work is bounded by its buffer size.
    size = min(limit_bytes, max(ZSTD_FIRST_GUESS_BYTES, 16 * len(data)))
    while True:
        out = bytearray(size)
        try:
            n = cramjam.zstd.decompress_into(data, out)
            return bytes(out[:n])
        except cramjam.DecompressionError as exc:
            if "whole buffer" not in str(exc) and "too small" not in str(exc):
                raise CorruptRecordError(f"bad zstd payload: {exc}", position=position) from None
        if size >= limit_bytes:
            raise _bomb(limit_bytes, position)
        size = min(limit_bytes, size * 4)


_DECOMPRESSORS = {
    Compression.GZIP: _gzip_decompress,
    Compression.SNAPPY: _snappy_decompress,
    Compression.LZ4: _lz4_decompress,
    Compression.ZSTD: _zstd_decompress,
}


def decompress(
    codec: int, data: bytes | memoryview, *, magic: int = 2, position: int = 0,
    limit_bytes: int = DECOMPRESSED_BYTES_MAX,
) -> bytes:
    """Undo :func:`compress`. ``position`` is only used in error messages; a payload that
    would inflate past ``limit_bytes`` raises :class:`CorruptRecordError`."""
    try:
        codec = _check_codec(codec, magic)
    except UnsupportedCompressionError as exc:
        raise CorruptRecordError(str(exc), position=position) from None
    if codec is Compression.NONE:
        return bytes(data)
    return _DECOMPRESSORS[codec](bytes(data), magic, limit_bytes, position)
