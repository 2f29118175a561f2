"""Checking a segment's batches after an unclean shutdown (the walk in ``LogSegment.recover``).

A segment written before a crash may end in a torn batch (the process died mid-write) or hold
a batch the disk corrupted. Recovery walks the ``.log`` file from byte 0 and stops at the first
entry that is not sound; everything before it is kept, it and everything after it are cut off.
An entry is sound when:

* its length prefix fits in the file and in ``max_batch_bytes`` (a wild length is corruption,
  not an instruction to read gigabytes), and its magic byte is one kafkalab reads;
* its CRC matches the bytes it covers;
* its last offset follows the previous entry's (offsets only grow within a log);
* its last offset fits the segment's base offset as an int32 delta, as the index stores it.

Worked example: a segment with base offset 0 holds batches 0..9 (CRC fine), 10..19 (CRC fine)
and 20..29 whose last 100 bytes never reached the disk. :func:`validate_entries` answers
``(end of batch 10..19, "... bytes of a partial entry at the end", [two headers])``; the
segment truncates its file to that position and rebuilds its indexes from the two headers.
"""

from __future__ import annotations

import mmap

from kafkalab.errors import CorruptRecordError
from kafkalab.records.header import BatchHeader, iter_headers, verify_crc
from kafkalab.storage.offset_index import RELATIVE_OFFSET_MAX


def validate_entries(fd: int, size_bytes: int, base_offset: int,
                     max_batch_bytes: int) -> tuple[int, str, list[BatchHeader]]:
    """``(valid bytes, why the rest is invalid or "", the sound entries' headers)`` of the
    segment file open as ``fd`` (``size_bytes`` long, starting at ``base_offset``)."""
    if size_bytes == 0:
        return 0, "", []
    headers: list[BatchHeader] = []
    with mmap.mmap(fd, size_bytes, access=mmap.ACCESS_READ) as view:
        walker = iter_headers(view, 0, max_batch_bytes=max_batch_bytes)
        previous_last = base_offset - 1
        try:
            for header in walker:
                problem = _problem_with(view, header, previous_last, base_offset)
                if problem:
                    return header.position, problem, headers
                headers.append(header)
                previous_last = header.last_offset
        except CorruptRecordError as exc:
            return exc.position, exc.reason, headers
        reason = f"{walker.remaining_bytes} bytes of a partial entry at the end" if walker.remaining_bytes else ""
        return walker.valid_end, reason, headers


def _problem_with(view: mmap.mmap, header: BatchHeader, previous_last: int, base_offset: int) -> str:
    """Why the entry ``header`` describes is not sound, or "" when it is."""
    if not verify_crc(view, header):
        return f"CRC mismatch in the entry at byte {header.position}"
    if header.last_offset <= previous_last:
        return f"offset {header.last_offset} at byte {header.position} does not follow {previous_last}"
    if not 0 <= header.last_offset - base_offset <= RELATIVE_OFFSET_MAX:
        return f"offset {header.last_offset} does not fit base offset {base_offset}"
    return ""
