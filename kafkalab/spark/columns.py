"""Columnar decoding of v2 record batches for the Spark reader: numpy arrays, not objects.

Theory of operation
-------------------
A per-record Python parser spends most of its time creating objects. Spark wants columns, so this
module turns a range of a segment into parallel numpy arrays in two steps:

1. :func:`walk_batches` follows the ``batchLength`` field from batch to batch (a sequential walk
   that only reads 12 + 5 bytes per batch) and returns every batch's position and size; the
   61-byte v2 headers are then decoded for all batches at once with one structured numpy view
   (:func:`decode_v2_headers`).
2. :func:`parse_records` walks the records of many batch *bodies* (the bytes after the 61-byte
   header, decompressed first when a codec is set) and emits, per record, its offset, timestamp,
   sequence and the *position and length* of its key and value inside the body buffer -- no
   bytes are copied. :func:`gather` then packs the keys (or values) into one contiguous buffer
   with Arrow-style offsets.

Record layout inside a body (all varints zigzag-encoded, kafka-facts section B)::

    length | attributes int8 | timestampDelta | offsetDelta | keyLength | key | valueLength |
    value | headersCount | (headerKeyLength | headerKey | headerValueLength | headerValue)*

Worked example: the 10-byte body ``12 00 00 00 02 6b 04 76 31 00`` is one record: length 9
(zigzag 0x12), attributes 0, timestampDelta 0, offsetDelta 0, key length 1 (zigzag 0x02) ``k``,
value length 2 (zigzag 0x04) ``v1``, no headers. It yields offset = the batch's base offset, the
key at body position 5 with length 1, and the value at position 7 with length 2.

The kernels are compiled with numba and never raise: they return a status and the position where
decoding stopped, and the Python caller raises :class:`CorruptRecordError` with that position.
"""

from __future__ import annotations

import numba
import numpy as np

V2_HEADER_BYTES = 61
LOG_OVERHEAD = 12
MAGIC_OFFSET = 16
V2_RECORD_BYTES_MIN = 7  # length, attributes, tsDelta, offsetDelta, keyLen, valueLen, headersCount
BATCHES_PER_WALK_MAX = 4_000_000  # ~64 GiB of 16 KiB batches: larger ranges are planned as splits
VARINT_BYTES_MAX = 10  # a 64-bit varint never needs more than 10 bytes
INT32_MAX = 2**31 - 1

OK = 0
ERR_TRUNCATED = 1
ERR_VARINT = 2
ERR_BAD_LENGTH = 3
ERR_COUNT = 4
ERR_TRAILING = 5
ERR_ENTRY_SIZE = 6
ERROR_TEXT = {
    ERR_TRUNCATED: "record runs past the end of its batch",
    ERR_VARINT: "varint longer than 10 bytes",
    ERR_BAD_LENGTH: "negative or oversized length field",
    ERR_COUNT: "batch holds fewer records than its recordsCount says",
    ERR_TRAILING: "bytes left over after the batch's last record",
    ERR_ENTRY_SIZE: "entry size field below the smallest legal entry",
}

# The v2 batch header as one big-endian structured type (kafka-facts section B).
V2_HEADER_DTYPE = np.dtype([
    ("base_offset", ">i8"), ("batch_length", ">i4"), ("partition_leader_epoch", ">i4"),
    ("magic", "i1"), ("crc", ">u4"), ("attributes", ">i2"), ("last_offset_delta", ">i4"),
    ("base_timestamp", ">i8"), ("max_timestamp", ">i8"), ("producer_id", ">i8"),
    ("producer_epoch", ">i2"), ("base_sequence", ">i4"), ("records_count", ">i4"),
])
assert V2_HEADER_DTYPE.itemsize == V2_HEADER_BYTES


@numba.njit(cache=True, nogil=True)
def walk_batches(buf, start, end, max_count):  # type: ignore[no-untyped-def]
    """Positions, sizes and magics of the complete entries in ``buf[start:end]``.

    Stops quietly at a partial trailing entry (an active segment may end mid-append). Returns
    ``(positions, sizes, magics, count, status, stop_position)``.
    """
    positions = np.empty(16, np.int64)
    sizes = np.empty(16, np.int64)
    magics = np.empty(16, np.int8)
    count = 0
    pos = start
    while end - pos > MAGIC_OFFSET and count < max_count:
        size = (np.int64(buf[pos + 8]) << 24) | (np.int64(buf[pos + 9]) << 16) | (
            np.int64(buf[pos + 10]) << 8) | np.int64(buf[pos + 11])
        if size >= 2**31:
            size -= 2**32
        if size < 14:  # LegacyRecord v0's minimum body
            return positions, sizes, magics, count, ERR_ENTRY_SIZE, pos
        if pos + LOG_OVERHEAD + size > end:
            break
        if count == len(positions):
            positions = np.concatenate((positions, np.empty(count, np.int64)))
            sizes = np.concatenate((sizes, np.empty(count, np.int64)))
            magics = np.concatenate((magics, np.empty(count, np.int8)))
        positions[count] = pos
        sizes[count] = LOG_OVERHEAD + size
        magics[count] = buf[pos + MAGIC_OFFSET]
        count += 1
        pos += LOG_OVERHEAD + size
    return positions, sizes, magics, count, OK, pos


def decode_v2_headers(buf: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The 61-byte headers at ``positions`` as a native-endian structured array."""
    rows = buf[positions[:, None] + np.arange(V2_HEADER_BYTES)]
    return rows.view(V2_HEADER_DTYPE).ravel().astype(V2_HEADER_DTYPE.newbyteorder("="))


@numba.njit(cache=True, inline="always")
def _varint(buf, pos, end):  # type: ignore[no-untyped-def]
    """Zigzag varint at ``pos``; returns (value, next position, status)."""
    raw = np.uint64(0)
    shift = 0
    while True:
        if pos >= end:
            return 0, pos, ERR_TRUNCATED
        b = buf[pos]
        pos += 1
        raw |= np.uint64(b & 0x7F) << np.uint64(shift)
        if b < 0x80:
            break
        shift += 7
        if shift >= 7 * VARINT_BYTES_MAX:
            return 0, pos, ERR_VARINT
    value = np.int64(raw >> np.uint64(1)) ^ -np.int64(raw & np.uint64(1))
    return value, pos, OK


@numba.njit(cache=True, nogil=True)
def parse_records(body, body_starts, body_ends, counts, base_offsets, base_timestamps,
                  base_sequences, log_append_times, total_records):  # type: ignore[no-untyped-def]
    """Decode every record of the batch bodies ``body[body_starts[i]:body_ends[i]]``.

    ``log_append_times[i]`` is the batch's maxTimestamp when its timestamp type is
    LogAppendTime (every record then carries it) and -2 otherwise. Returns a tuple of per-record
    arrays and per-header arrays plus ``(status, error_position)``; see the module docstring.
    """
    n = total_records
    offsets = np.empty(n, np.int64)
    timestamps = np.empty(n, np.int64)
    sequences = np.empty(n, np.int32)
    key_starts = np.empty(n, np.int64)
    key_lengths = np.empty(n, np.int64)
    value_starts = np.empty(n, np.int64)
    value_lengths = np.empty(n, np.int64)
    header_counts = np.zeros(n, np.int64)
    cap = max(n, 16)
    hdr = np.empty((cap, 4), np.int64)  # key start, key length, value start, value length
    n_headers = 0
    r = 0
    for b in range(len(body_starts)):
        pos = body_starts[b]
        end = body_ends[b]
        for _ in range(counts[b]):
            length, pos, st = _varint(body, pos, end)
            if st != OK:
                return (offsets, timestamps, sequences, key_starts, key_lengths, value_starts,
                        value_lengths, header_counts, hdr[:0], st, pos)
            if length < V2_RECORD_BYTES_MIN - 1 or pos + length > end:
                return (offsets, timestamps, sequences, key_starts, key_lengths, value_starts,
                        value_lengths, header_counts, hdr[:0], ERR_BAD_LENGTH, pos)
            record_end = pos + length
            pos += 1  # attributes (unused in v2)
            ts_delta, pos, st1 = _varint(body, pos, record_end)
            offset_delta, pos, st2 = _varint(body, pos, record_end)
            key_len, pos, st3 = _varint(body, pos, record_end)
            st = st1 | st2 | st3
            if st == OK and (key_len < -1 or pos + max(key_len, 0) > record_end):
                st = ERR_BAD_LENGTH
            if st != OK:
                return (offsets, timestamps, sequences, key_starts, key_lengths, value_starts,
                        value_lengths, header_counts, hdr[:0], st, pos)
            key_starts[r] = pos
            key_lengths[r] = key_len
            pos += max(key_len, 0)
            value_len, pos, st = _varint(body, pos, record_end)
            if st == OK and (value_len < -1 or pos + max(value_len, 0) > record_end):
                st = ERR_BAD_LENGTH
            if st != OK:
                return (offsets, timestamps, sequences, key_starts, key_lengths, value_starts,
                        value_lengths, header_counts, hdr[:0], st, pos)
            value_starts[r] = pos
            value_lengths[r] = value_len
            pos += max(value_len, 0)
            n_hdr, pos, st = _varint(body, pos, record_end)
            if st == OK and (n_hdr < 0 or n_hdr > record_end - pos):
                st = ERR_BAD_LENGTH
            for _h in range(n_hdr if st == OK else 0):
                if n_headers == len(hdr):
                    hdr = np.concatenate((hdr, np.empty((len(hdr), 4), np.int64)))
                hk_len, pos, st = _varint(body, pos, record_end)
                if st != OK or hk_len < 0 or pos + hk_len > record_end:
                    st = ERR_BAD_LENGTH if st == OK else st
                    break
                hdr[n_headers, 0] = pos
                hdr[n_headers, 1] = hk_len
                pos += hk_len
                hv_len, pos, st = _varint(body, pos, record_end)
                if st != OK or hv_len < -1 or pos + max(hv_len, 0) > record_end:
                    st = ERR_BAD_LENGTH if st == OK else st
                    break
                hdr[n_headers, 2] = pos
                hdr[n_headers, 3] = hv_len
                pos += max(hv_len, 0)
                n_headers += 1
            if st == OK and pos != record_end:
                st = ERR_TRAILING
            if st != OK:
                return (offsets, timestamps, sequences, key_starts, key_lengths, value_starts,
                        value_lengths, header_counts, hdr[:0], st, pos)
            header_counts[r] = n_hdr
            offsets[r] = base_offsets[b] + offset_delta
            lat = log_append_times[b]
            timestamps[r] = lat if lat != -2 else base_timestamps[b] + ts_delta
            seq = base_sequences[b]
            if seq >= 0:
                seq = seq + offset_delta if seq <= INT32_MAX - offset_delta else (
                    offset_delta - (INT32_MAX - seq) - 1)
            sequences[r] = seq
            r += 1
        if pos != end:
            return (offsets, timestamps, sequences, key_starts, key_lengths, value_starts,
                    value_lengths, header_counts, hdr[:0], ERR_TRAILING, pos)
    return (offsets, timestamps, sequences, key_starts, key_lengths, value_starts,
            value_lengths, header_counts, hdr[:n_headers], OK, 0)


@numba.njit(cache=True, nogil=True)
def gather(buf, starts, lengths):  # type: ignore[no-untyped-def]
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
            data[offsets[i]:offsets[i + 1]] = buf[starts[i]:starts[i] + length]
    return data, offsets
