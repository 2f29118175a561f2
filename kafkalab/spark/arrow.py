"""From segment bytes to Arrow record batches: the two schemas of the ``kafkalog`` source.

Theory of operation
-------------------
Spark's Python data sources are fastest when ``read()`` yields ``pyarrow.RecordBatch`` objects
built from numpy buffers (no Python object per row). A split of a segment is read in *chunks* of
consecutive Kafka batches holding about :data:`CHUNK_RECORDS` records each:

1. :func:`kafkalab.spark.columns.walk_batches` finds the batches, and their 61-byte headers are
   decoded all at once (:func:`decode_v2_headers`);
2. for the record level, each batch body is located in the segment buffer -- or decompressed into
   a side buffer when the batch carries a codec -- and the records of the whole chunk are parsed in
   one numba call;
3. keys, values and header strings are packed into contiguous buffers and wrapped as Arrow arrays
   with ``from_buffers``; per-batch fields (producer id, segment, compression...) are repeated per
   record with ``np.repeat``.

Worked example: a chunk of 32 batches of 4,096 records with 100-byte values becomes one Arrow
record batch of 131,072 rows whose ``value`` column is a single 13.1 MB buffer plus 131,073
offsets, and whose ``compression`` column is a dictionary of codec names cast to strings.

Only magic 2 batches are decoded at the record level; a v0/v1 entry raises
:class:`UnsupportedForMessageFormatError` naming its segment and position (the batch level reads
all three formats through :func:`kafkalab.records.header.read_header`).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

import cramjam
import numpy as np
import pyarrow as pa

from kafkalab.errors import CorruptRecordError, KafkaError, ErrorCode, UnsupportedCompressionError
from kafkalab.records.header import read_header
from kafkalab.spark import columns as col
from kafkalab.spark.schema import BATCH_FIELDS, RECORD_FIELDS

CHUNK_RECORDS = 131_072  # Arrow batch size that measured fastest through Spark (spark-notes)
CHUNK_BATCHES_MAX = 65_536  # bounds a chunk of tiny batches
DECOMPRESSED_BATCH_BYTES_MAX = 64 * 1024 * 1024  # no sane batch inflates beyond this
XERIAL_SNAPPY_MAGIC = b"\x82SNAPPY\x00"  # Kafka's Java client frames snappy with xerial's header
CODEC_NAMES = ["none", "gzip", "snappy", "lz4", "zstd"]
TIMESTAMP_TYPE_NAMES = ["CreateTime", "LogAppendTime"]
COMPRESSION_MASK, TIMESTAMP_TYPE_BIT, TRANSACTIONAL_BIT, CONTROL_BIT = 0x07, 0x08, 0x10, 0x20

_ARROW_TYPES = {
    "string": pa.string(), "int": pa.int32(), "long": pa.int64(), "short": pa.int16(),
    "byte": pa.int8(), "binary": pa.binary(), "boolean": pa.bool_(),
    "headers": pa.list_(pa.field("element", pa.struct([("key", pa.string()), ("value", pa.binary())]))),
}
RECORD_ARROW_SCHEMA = pa.schema([(name, _ARROW_TYPES[kind]) for name, kind in RECORD_FIELDS])
BATCH_ARROW_SCHEMA = pa.schema([(name, _ARROW_TYPES[kind]) for name, kind in BATCH_FIELDS])


class UnsupportedForMessageFormatError(KafkaError):
    """A record-level operation on a message format (v0/v1) that kafkalog reads only shallowly."""

    error_code = ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT


def decompress(codec: int, data: bytes | memoryview, where: str) -> bytes:
    """Inflate one batch body; ``where`` names segment and position for error messages."""
    try:
        if codec == 1:
            inflater = zlib.decompressobj(wbits=47)  # gzip or zlib header, auto-detected
            out = inflater.decompress(data, DECOMPRESSED_BATCH_BYTES_MAX)
            if inflater.unconsumed_tail:
                raise CorruptRecordError(
                    f"gzip body inflates past {DECOMPRESSED_BATCH_BYTES_MAX} bytes at {where}",
                    position=0)
        elif codec == 2:
            out = _snappy(bytes(data))
        elif codec == 3:
            out = bytes(cramjam.lz4.decompress(data))
        elif codec == 4:
            out = bytes(cramjam.zstd.decompress(data))
        else:
            raise UnsupportedCompressionError(f"compression codec id {codec} at {where}")
    except (zlib.error, cramjam.DecompressionError) as exc:
        raise CorruptRecordError(f"cannot decompress {CODEC_NAMES[codec]} body at {where}: {exc}",
                                 position=0) from None
    if len(out) > DECOMPRESSED_BATCH_BYTES_MAX:
        raise CorruptRecordError(
            f"{CODEC_NAMES[codec]} body at {where} inflates to {len(out)} bytes, "
            f"limit {DECOMPRESSED_BATCH_BYTES_MAX}", position=0)
    return out


def _snappy(data: bytes) -> bytes:
    """Kafka's Java producer writes xerial-framed snappy: magic, two versions, then
    (int32 length, raw snappy block)*; other clients write one raw block."""
    if not data.startswith(XERIAL_SNAPPY_MAGIC):
        return bytes(cramjam.snappy.decompress_raw(data))
    parts, pos = [], 16
    while pos + 4 <= len(data):
        size = int.from_bytes(data[pos:pos + 4], "big")
        if size < 0 or pos + 4 + size > len(data):
            raise CorruptRecordError(f"xerial snappy block of {size} bytes overruns", position=pos)
        parts.append(bytes(cramjam.snappy.decompress_raw(data[pos + 4:pos + 4 + size])))
        pos += 4 + size
    return b"".join(parts)


def _strings(values: np.ndarray, names: list[str]) -> pa.Array:
    return pa.DictionaryArray.from_arrays(
        pa.array(values.astype(np.int32)), pa.array(names)).cast(pa.string())


def _binary(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray, kind: pa.DataType) -> pa.Array:
    data, offsets = col.gather(buf, starts, lengths)
    valid = lengths >= 0
    null_count = int(len(valid) - np.count_nonzero(valid))
    validity = pa.py_buffer(np.packbits(valid, bitorder="little")) if null_count else None
    return pa.Array.from_buffers(
        kind, len(starts), [validity, pa.py_buffer(offsets), pa.py_buffer(data)], null_count)


def walk(buf: np.ndarray, start: int, end: int, where: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions, sizes and magics of the complete entries in ``buf[start:end]``."""
    positions, sizes, magics, count, status, stop = col.walk_batches(
        buf, start, end, col.BATCHES_PER_WALK_MAX)
    if status != col.OK:
        raise CorruptRecordError(f"{col.ERROR_TEXT[status]} in {where}", position=int(stop))
    return positions[:count], sizes[:count], magics[:count]


def chunks(magics: np.ndarray, counts: np.ndarray) -> Iterator[slice]:
    """Slices of consecutive batches holding about CHUNK_RECORDS records each."""
    start, total = 0, 0
    for i, count in enumerate(counts.tolist()):
        total += max(count, 1)
        if total >= CHUNK_RECORDS or i + 1 - start >= CHUNK_BATCHES_MAX:
            yield slice(start, i + 1)
            start, total = i + 1, 0
    if start < len(counts):
        yield slice(start, len(counts))


def batch_level(buf: np.ndarray, positions: np.ndarray, sizes: np.ndarray, magics: np.ndarray,
                topic: str, partition: int, segment: str) -> pa.RecordBatch:
    """One Arrow row per entry: the header fields plus segment, position and size."""
    if np.all(magics == 2):
        h = col.decode_v2_headers(buf, positions)
        fields = {name: h[name] for name in V2_HEADER_FIELDS}
        fields["last_offset"] = h["base_offset"] + h["last_offset_delta"]
    else:
        headers = [read_header(buf, int(p)) for p in positions]
        fields = {name: np.array([getattr(x, name) for x in headers]) for name in V2_HEADER_FIELDS
                  if name not in ("last_offset_delta", "batch_length")}
        fields["last_offset"] = np.array([x.last_offset for x in headers])
    attributes = fields["attributes"].astype(np.int16)
    n = len(positions)
    arrays = {
        "topic": pa.repeat(topic, n).cast(pa.string()), "partition": pa.repeat(partition, n).cast(pa.int32()),
        "compression": _strings(attributes & COMPRESSION_MASK, CODEC_NAMES),
        "timestamp_type": _strings((attributes & TIMESTAMP_TYPE_BIT) >> 3, TIMESTAMP_TYPE_NAMES),
        "is_transactional": pa.array((attributes & TRANSACTIONAL_BIT) != 0),
        "is_control": pa.array((attributes & CONTROL_BIT) != 0),
        "segment": pa.repeat(segment, n).cast(pa.string()), "position": pa.array(positions),
        "size": pa.array(sizes.astype(np.int32)), "attributes": pa.array(attributes),
    }
    for name, kind in BATCH_FIELDS:
        if name not in arrays:
            arrays[name] = pa.array(np.asarray(fields[name]).astype(_NUMPY[kind]))
    return pa.RecordBatch.from_arrays([arrays[n] for n, _ in BATCH_FIELDS], schema=BATCH_ARROW_SCHEMA)


V2_HEADER_FIELDS = [name for name in col.V2_HEADER_DTYPE.names or ()]
_NUMPY = {"long": np.int64, "int": np.int32, "short": np.int16, "byte": np.int8}


def _bodies(buf: np.ndarray, h: np.ndarray, positions: np.ndarray, sizes: np.ndarray,
            where: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The buffer holding every batch body of a chunk, with each body's [start, end).

    Without compression the bodies are read in place; otherwise every body is copied (and
    decompressed where needed) into one side buffer so a single parse call covers the chunk.
    """
    starts = positions + col.V2_HEADER_BYTES
    ends = positions + sizes
    codecs = h["attributes"] & COMPRESSION_MASK
    if not np.any(codecs):
        return buf, starts, ends
    parts = []
    for i, (start, end, codec) in enumerate(zip(starts.tolist(), ends.tolist(), codecs.tolist())):
        body = buf[start:end]
        parts.append(decompress(codec, body, f"{where} position {positions[i]}") if codec else body.tobytes())
    lengths = np.array([len(p) for p in parts], dtype=np.int64)
    new_ends = np.cumsum(lengths)
    return np.frombuffer(b"".join(parts), dtype=np.uint8), new_ends - lengths, new_ends


def _check_counts(h: np.ndarray, body_starts: np.ndarray, body_ends: np.ndarray,
                  positions: np.ndarray, where: str) -> np.ndarray:
    """recordsCount comes from the file: bound it by the body size before allocating for it."""
    counts = h["records_count"].astype(np.int64)
    bad = np.nonzero((counts < 0) | (counts * col.V2_RECORD_BYTES_MIN > body_ends - body_starts))[0]
    if len(bad):
        i = int(bad[0])
        raise CorruptRecordError(
            f"recordsCount {counts[i]} cannot fit in a {body_ends[i] - body_starts[i]}-byte body "
            f"(each record takes >= {col.V2_RECORD_BYTES_MIN} bytes) in {where}",
            position=int(positions[i]))
    return counts


def _headers_column(body: np.ndarray, hdr: np.ndarray, header_counts: np.ndarray) -> pa.Array:
    keys = _binary(body, hdr[:, 0], hdr[:, 1], pa.string())
    values = _binary(body, hdr[:, 2], hdr[:, 3], pa.binary())
    entries = pa.StructArray.from_arrays([keys, values], names=["key", "value"])
    offsets = np.zeros(len(header_counts) + 1, dtype=np.int32)
    np.cumsum(header_counts, out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), entries, type=_ARROW_TYPES["headers"])


def record_level(buf: np.ndarray, positions: np.ndarray, sizes: np.ndarray, magics: np.ndarray,
                 topic: str, partition: int, segment: str) -> pa.RecordBatch:
    """One Arrow row per record of the batches at ``positions`` (all magic 2)."""
    where = f"{topic}-{partition}/{segment}"
    if not np.all(magics == 2):
        i = int(np.nonzero(magics != 2)[0][0])
        raise UnsupportedForMessageFormatError(
            f"record-level scan of a magic {magics[i]} entry at position {positions[i]} in {where}: "
            "only v2 batches are decoded per record; use option level=batches")
    h = col.decode_v2_headers(buf, positions)
    body, body_starts, body_ends = _bodies(buf, h, positions, sizes, where)
    counts = _check_counts(h, body_starts, body_ends, positions, where)
    attributes = h["attributes"].astype(np.int16)
    log_append = np.where((attributes & TIMESTAMP_TYPE_BIT) != 0, h["max_timestamp"], -2)
    (offsets, timestamps, sequences, key_starts, key_lengths, value_starts, value_lengths,
     header_counts, hdr, status, stop) = col.parse_records(
        body, body_starts, body_ends, counts, h["base_offset"], h["base_timestamp"],
        h["base_sequence"].astype(np.int64), log_append.astype(np.int64), int(counts.sum()))
    if status != col.OK:
        raise CorruptRecordError(f"{col.ERROR_TEXT[status]} in {where}", position=int(stop))
    n = len(offsets)

    def per_record(values: np.ndarray) -> np.ndarray:
        return np.repeat(values, counts)

    rec_attributes = per_record(attributes)
    arrays = [
        pa.repeat(topic, n).cast(pa.string()), pa.repeat(partition, n).cast(pa.int32()),
        pa.array(offsets), pa.array(timestamps),
        _strings((rec_attributes & TIMESTAMP_TYPE_BIT) >> 3, TIMESTAMP_TYPE_NAMES),
        _binary(body, key_starts, key_lengths, pa.binary()),
        _binary(body, value_starts, value_lengths, pa.binary()),
        _headers_column(body, hdr, header_counts),
        pa.array(per_record(h["producer_id"])), pa.array(per_record(h["producer_epoch"]).astype(np.int16)),
        pa.array(sequences), pa.array((rec_attributes & TRANSACTIONAL_BIT) != 0),
        pa.array((rec_attributes & CONTROL_BIT) != 0), pa.array(per_record(h["base_offset"])),
        pa.array(per_record(positions)), pa.repeat(segment, n).cast(pa.string()),
        _strings(rec_attributes & COMPRESSION_MASK, CODEC_NAMES),
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=RECORD_ARROW_SCHEMA)
