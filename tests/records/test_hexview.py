"""Annotated hexdumps: spans tile the entry exactly and carry the decoded values."""

from __future__ import annotations

import pytest

from kafkalab.hexview import annotated_hexdump, field_spans
from kafkalab.records import Header, Record, build_batch, read_header


@pytest.mark.parametrize("magic", [0, 1, 2])
def test_spans_tile_the_entry(magic: int) -> None:
    records = [Record(0, 1000 if magic else -1, b"k", b"v", (Header("h", b"x"),) if magic == 2 else ()),
               Record(1, 1001 if magic else -1, None, b"value")]
    data = build_batch(records[:1] if magic < 2 else records, magic=magic)
    spans = field_spans(data)
    assert spans[0][0] == 0 and spans[-1][1] == read_header(data, 0).size_bytes
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))  # contiguous, no gaps or overlaps


def test_v2_span_values() -> None:
    data = build_batch([Record(7, 1000, b"k", b"v", (Header("h", None),))], base_offset=7)
    named = {name: value for _, _, name, value in field_spans(data)}
    assert named["baseOffset"] == 7 and named["magic"] == 2 and named["recordsCount"] == 1
    assert named["records[0].key"] == b"k" and named["records[0].headers[0].valueLength"] == -1
    text = annotated_hexdump(data)
    assert "records[0].value" in text and "00000000: 00 00 00 00 00 00 00 07" in text


def test_compressed_batch_shows_one_records_span() -> None:
    data = build_batch([Record(0, 1, None, b"x" * 100)], compression=1)
    assert field_spans(data)[-1][2] == "records (gzip)"
