"""From segment bytes to Arrow record batches: the two schemas of the ``kafkalog`` source.

Theory of operation
-------------------
Spark's Python data sources are fastest when ``read()`` yields ``pyarrow.RecordBatch`` objects
built from numpy buffers (no Python object per row). The records package owns the decoding;
this module only turns its columns into Arrow. A split of a segment is read in *chunks* of
consecutive Kafka batches holding about :data:`CHUNK_RECORDS` records each:

1. :func:`kafkalab.records.columnar.scan_entries` finds the batches in one compiled walk and
   :func:`~kafkalab.records.columnar.decode_v2_headers` decodes their 61-byte headers at once;
   the batch level stops here;
2. for the record level, :func:`~kafkalab.records.columnar.decode_columns` decodes a chunk's
   bytes (decompressing batches that carry a codec) into per-record columns whose keys, values
   and headers are *spans* of the segment buffer;
3. :func:`gather` packs the spans of one column into a contiguous buffer with int32 offsets in
   one compiled pass (one C ``memcpy`` per value), wrapped with ``Array.from_buffers``;
   per-batch fields (producer id, compression...) are taken per record with ``batch_index``.

Why a copy in step 3: an Arrow binary column needs value ``i`` to end where value ``i + 1``
starts, and in a record batch a key and its value are separated by varints, so spans of the
segment cannot be used in place; one memcpy per value is the cheapest correct layout.

String columns: Spark checks the first batch's Arrow schema for *equality* with the declared
one, so a dictionary-encoded or run-end-encoded ``topic`` is rejected although it would be far
smaller. Columns that are constant in a chunk (topic, segment, and in practice compression and
timestamp type) are built by :func:`constant_strings` from repeated bytes and an arithmetic
offsets array; mixed codec names are gathered from a small name table by code.

Worked example: a chunk of 32 batches of 4,096 records with 100-byte values becomes one Arrow
record batch of 131,072 rows whose ``value`` column is a single 13.1 MB buffer plus 131,073
offsets, and whose ``segment`` column is 131,072 copies of ``00000000000000000000.log``
(3.1 MB: the price of plain strings).

Only magic 2 batches are decoded at the record level; a v0/v1 entry raises
:class:`UnsupportedForMessageFormatError` naming its segment and position (the batch level reads
all three formats through :func:`kafkalab.records.header.read_header`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numba
import numpy as np
import pyarrow as pa
from numba.core import cgutils, types
from numba.extending import intrinsic

from kafkalab.errors import CorruptRecordError, ErrorCode, KafkaError
from kafkalab.records import columnar as col
from kafkalab.records.header import read_header
from kafkalab.spark.schema import BATCH_FIELDS, RECORD_FIELDS

CHUNK_RECORDS = 131_072  # Arrow batch size that measured fastest through Spark (spark-notes)
CHUNK_BATCHES_MAX = 65_536  # bounds a chunk of tiny batches
COMPRESSION_MASK, TIMESTAMP_TYPE_BIT, TRANSACTIONAL_BIT, CONTROL_BIT = 0x07, 0x08, 0x10, 0x20
INT32_MAX = 2**31 - 1

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


def constant_strings(text: str, n: int) -> pa.Array:
    """``n`` copies of ``text`` as an Arrow string array built with two numpy calls.

    Spark's Arrow reader accepts only plain ``string`` for a string field (the data source
    checks the first batch's schema for equality), so a dictionary or run-end encoded column
    is not an option; repeated bytes plus an arithmetic offsets array is the cheapest legal form.
    """
    encoded = text.encode()
    offsets = np.arange(0, (n + 1) * len(encoded), len(encoded) or 1, dtype=np.int32)
    if not encoded:
        offsets = np.zeros(n + 1, np.int32)
    data = np.frombuffer(encoded * n, np.uint8) if encoded else np.zeros(0, np.uint8)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


class _NameTable:
    """A small list of names packed into one buffer, for building string columns by code."""

    __slots__ = ("names", "data", "starts", "lengths")

    def __init__(self, names: list[str]) -> None:
        encoded = [name.encode() for name in names]
        self.names = names
        self.data = np.frombuffer(b"".join(encoded), np.uint8)
        self.lengths = np.array([len(e) for e in encoded], np.int64)
        self.starts = np.concatenate(([0], np.cumsum(self.lengths)[:-1])).astype(np.int64)


CODEC_NAMES = _NameTable(["none", "gzip", "snappy", "lz4", "zstd"])  # by attributes & 0x07
TIMESTAMP_TYPE_NAMES = _NameTable(["CreateTime", "LogAppendTime"])  # by attribute bit 3


def _strings(codes: np.ndarray, table: _NameTable) -> pa.Array:
    """The string column ``table.names[codes[i]]``: a constant column when every code is the
    same (the usual case within one chunk), otherwise one compiled gather from the table."""
    if len(codes) and np.all(codes == codes[0]):
        return constant_strings(table.names[int(codes[0])], len(codes))
    return _binary(table.data, table.starts[codes], table.lengths[codes], pa.string())


@intrinsic
def _memcpy(typingctx, dst, dst_at, src, src_at, count):  # pragma: no cover - compiled
    """``dst[dst_at:dst_at+count] = src[src_at:src_at+count]`` as one C memcpy (numba's slice
    assignment costs ~50 ns per call, half of a 100-byte value's copy)."""
    def codegen(context, builder, signature, args):
        dst_array = context.make_array(signature.args[0])(context, builder, args[0])
        src_array = context.make_array(signature.args[2])(context, builder, args[2])
        to = builder.gep(dst_array.data, [args[1]])
        source = builder.gep(src_array.data, [args[3]])
        cgutils.raw_memcpy(builder, to, source, args[4], 1)
        return context.get_dummy_value()

    return types.void(dst, types.intp, src, types.intp, types.intp), codegen


@numba.njit(cache=True, nogil=True)
def gather(buf, starts, lengths):  # pragma: no cover - compiled
    """Pack ``buf[starts[i]:starts[i]+lengths[i]]`` (length -1 = null, stored empty) into one
    contiguous buffer; returns ``(data, offsets)`` with int32 Arrow offsets."""
    n = len(starts)
    offsets = np.empty(n + 1, np.int32)
    offsets[0] = 0
    total = 0
    for i in range(n):
        total += max(lengths[i], 0)
        offsets[i + 1] = total
    data = np.empty(total, np.uint8)
    for i in range(n):
        length = lengths[i]
        if length > 0:
            _memcpy(data, offsets[i], buf, starts[i], length)
    return data, offsets


def _binary(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray, kind: pa.DataType) -> pa.Array:
    data, offsets = gather(buf, starts, lengths)
    valid = lengths >= 0
    null_count = int(len(valid) - np.count_nonzero(valid))
    validity = pa.py_buffer(np.packbits(valid, bitorder="little")) if null_count else None
    return pa.Array.from_buffers(
        kind, len(starts), [validity, pa.py_buffer(offsets), pa.py_buffer(data)], null_count)


def walk(buf: np.ndarray, start: int, end: int, where: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions, sizes and magics of the complete entries in ``buf[start:end]``."""
    try:
        return col.scan_entries(buf, start, end)
    except CorruptRecordError as exc:
        raise CorruptRecordError(f"{exc.reason} in {where}", position=exc.position) from None


def chunks(positions: np.ndarray, sizes: np.ndarray, counts: np.ndarray) -> Iterator[slice]:
    """Slices of batches holding about CHUNK_RECORDS records each, every slice one contiguous
    byte range (batches skipped by pruning start a new slice)."""
    start, total = 0, 0
    ends = (positions + sizes).tolist()
    starts = positions.tolist()
    for i, count in enumerate(counts.tolist()):
        if i > start and starts[i] != ends[i - 1]:
            yield slice(start, i)
            start, total = i, 0
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
        view = buf.data
        headers = [read_header(view, int(p)) for p in positions]
        fields = {name: np.array([getattr(x, name) for x in headers]) for name in V2_HEADER_FIELDS
                  if name not in ("last_offset_delta", "batch_length")}
        fields["last_offset"] = np.array([x.last_offset for x in headers])
    attributes = fields["attributes"].astype(np.int16)
    n = len(positions)
    arrays = {
        "topic": constant_strings(topic, n), "partition": pa.array(np.full(n, partition, np.int32)),
        "compression": _strings(attributes & COMPRESSION_MASK, CODEC_NAMES),
        "timestamp_type": _strings((attributes & TIMESTAMP_TYPE_BIT) >> 3, TIMESTAMP_TYPE_NAMES),
        "is_transactional": pa.array((attributes & TRANSACTIONAL_BIT) != 0),
        "is_control": pa.array((attributes & CONTROL_BIT) != 0),
        "segment": constant_strings(segment, n), "position": pa.array(positions),
        "size": pa.array(sizes.astype(np.int32)), "attributes": pa.array(attributes),
    }
    for name, kind in BATCH_FIELDS:
        if name not in arrays:
            arrays[name] = pa.array(np.asarray(fields[name]).astype(_NUMPY[kind]))
    return pa.RecordBatch.from_arrays([arrays[n] for n, _ in BATCH_FIELDS], schema=BATCH_ARROW_SCHEMA)


V2_HEADER_FIELDS = [name for name in col.V2_HEADER_DTYPE.names or ()]
_NUMPY = {"long": np.int64, "int": np.int32, "short": np.int16, "byte": np.int8}


def _headers_column(columns: col.RecordColumns) -> pa.Array:
    spans = col.header_spans(columns)
    keys = _binary(columns.data, spans[:, 0], spans[:, 1], pa.string())
    values = _binary(columns.data, spans[:, 2], spans[:, 3], pa.binary())
    entries = pa.StructArray.from_arrays([keys, values], names=["key", "value"])
    offsets = np.zeros(len(columns) + 1, dtype=np.int32)
    np.cumsum(columns.headers_count, out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), entries, type=_ARROW_TYPES["headers"])


def _sequences(base_sequences: np.ndarray, batch: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """Each record's sequence: its batch's base sequence + offset delta, wrapping past INT32_MAX
    to 0 as Kafka's ``DefaultRecordBatch.incrementSequence`` does; -1 (no sequence) stays -1
    (all -1 without a per-record pass when no batch of the chunk is idempotent)."""
    if np.all(base_sequences < 0):
        return np.full(len(batch), -1, np.int32)
    base = base_sequences[batch].astype(np.int64)
    wrapped = np.where(base > INT32_MAX - delta, delta - (INT32_MAX - base) - 1, base + delta)
    return np.where(base >= 0, wrapped, base).astype(np.int32)


def _decode(buf: np.ndarray, positions: np.ndarray, sizes: np.ndarray, where: str,
            check_crcs: bool) -> col.RecordColumns:
    """The records of the contiguous batches at ``positions`` through the records decoder;
    error positions are translated back into the segment."""
    start = int(positions[0])
    end = int(positions[-1] + sizes[-1])
    try:
        return col.decode_columns(buf[start:end].data, check_crc=check_crcs)
    except CorruptRecordError as exc:
        raise CorruptRecordError(f"{exc.reason} in {where}", position=start + exc.position) from None


def _record_builders(columns: col.RecordColumns, h: np.ndarray, positions: np.ndarray,
                     topic: str, partition: int, segment: str) -> dict[str, Callable[[], pa.Array]]:
    """How to build each record-level column; only the columns a query asks for are built."""
    batch = columns.batch_index
    n = len(columns)
    attributes = h["attributes"].astype(np.int16)[batch]
    base_offsets = h["base_offset"][batch]
    return {
        "topic": lambda: constant_strings(topic, n), "partition": lambda: pa.array(np.full(n, partition, np.int32)),
        "offset": lambda: pa.array(columns.offset), "timestamp": lambda: pa.array(columns.timestamp),
        "timestamp_type": lambda: _strings((attributes & TIMESTAMP_TYPE_BIT) >> 3, TIMESTAMP_TYPE_NAMES),
        "key": lambda: _binary(columns.data, columns.key_start, columns.key_length, pa.binary()),
        "value": lambda: _binary(columns.data, columns.value_start, columns.value_length, pa.binary()),
        "headers": lambda: _headers_column(columns),
        "producer_id": lambda: pa.array(h["producer_id"][batch]),
        "producer_epoch": lambda: pa.array(h["producer_epoch"][batch].astype(np.int16)),
        "sequence": lambda: pa.array(_sequences(h["base_sequence"], batch, columns.offset - base_offsets)),
        "is_transactional": lambda: pa.array((attributes & TRANSACTIONAL_BIT) != 0),
        "is_control": lambda: pa.array((attributes & CONTROL_BIT) != 0),
        "batch_base_offset": lambda: pa.array(base_offsets),
        "batch_position": lambda: pa.array(positions[batch]), "segment": lambda: constant_strings(segment, n),
        "compression": lambda: _strings(attributes & COMPRESSION_MASK, CODEC_NAMES),
    }


def record_level(buf: np.ndarray, positions: np.ndarray, sizes: np.ndarray, magics: np.ndarray,
                 topic: str, partition: int, segment: str, check_crcs: bool = True,
                 schema: pa.Schema = RECORD_ARROW_SCHEMA) -> pa.RecordBatch:
    """One Arrow row per record of the contiguous batches at ``positions`` (all magic 2), with
    the columns of ``schema`` (a subset of :data:`RECORD_ARROW_SCHEMA`, in any order)."""
    where = f"{topic}-{partition}/{segment}"
    if not np.all(magics == 2):
        i = int(np.nonzero(magics != 2)[0][0])
        raise UnsupportedForMessageFormatError(
            f"record-level scan of a magic {magics[i]} entry at position {positions[i]} in {where}: "
            "only v2 batches are decoded per record; use option level=batches")
    columns = _decode(buf, positions, sizes, where, check_crcs)
    builders = _record_builders(columns, col.decode_v2_headers(buf, positions), positions,
                                topic, partition, segment)
    return pa.RecordBatch.from_arrays([builders[name]() for name in schema.names], schema=schema)


def project(full: pa.Schema, names: list[str]) -> pa.Schema:
    """The Arrow schema of a query that asked for ``names`` (e.g. a user-specified schema)."""
    return pa.schema([full.field(name) for name in names])
