"""The storage layer's FileSlice: the one byte range of a segment file that log reads return
and fetch responses carry to sendfile."""

from __future__ import annotations

import pytest

from kafkalab.errors import ErrorCode, StorageError
from kafkalab.protocol.types import RecordsParts, Writer
from kafkalab.storage.positions import FileSlice


def test_slice_reads_its_range_and_a_short_file_is_a_storage_error(tmp_path):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(bytes(range(10)))
    assert FileSlice(path, 2, 3).read_bytes() == b"\x02\x03\x04"
    with pytest.raises(StorageError) as caught:
        FileSlice(path, 8, 5).read_bytes()
    assert caught.value.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    with pytest.raises(ValueError):
        FileSlice(path, -1, 3)


def test_writer_keeps_storage_slices_as_parts(tmp_path):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"abcdef")
    piece = FileSlice(path, 1, 4)
    writer = Writer()
    writer.records(RecordsParts((b"<", piece, b">")), compact=False)
    assert writer.parts() == [b"\x00\x00\x00\x06<", piece, b">"]
    assert writer.to_bytes() == b"\x00\x00\x00\x06<bcde>"
