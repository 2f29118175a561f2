"""``kafkalab dump-log`` on .log files: lines spelled as Kafka's DumpLogSegments prints them."""

from __future__ import annotations

import io
import struct
import zlib

from kafka.record.default_records import DefaultRecordBatch

from kafkalab.records import Header, Record, build_batch, build_end_txn_marker
from kafkalab.tools import dump_log
from kafkalab.tools.cli import main


def _args(files: str, *extra: str):
    import argparse

    parser = argparse.ArgumentParser()
    dump_log.add_arguments(parser)
    return parser.parse_args(["--files", files, *extra])


def _dump(path, *extra: str) -> tuple[str, str, int]:
    out, err = io.StringIO(), io.StringIO()
    status = dump_log.run(_args(str(path), *extra), out, err)
    return out.getvalue(), err.getvalue(), status


def _segment(tmp_path, data: bytes, base_offset: int = 0):
    path = tmp_path / f"{base_offset:020d}.log"
    path.write_bytes(data)
    return path


def test_v2_batch_and_records_with_print_data_log(tmp_path) -> None:
    batch = build_batch([Record(0, 1000, None, b"a"),
                         Record(1, 1001, b"k", b"b", (Header("h1", b"x"), Header("h2", None)))],
                        partition_leader_epoch=0)
    crc = DefaultRecordBatch(batch).crc  # kafka-python's reading of the stored CRC
    path = _segment(tmp_path, batch)
    text, err, status = _dump(path, "--print-data-log")
    assert status == 0 and err == ""
    assert text.splitlines() == [
        f"Dumping {path}",
        "Log starting offset: 0",
        "baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1 "
        "producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false "
        f"deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1001 size: {len(batch)} magic: 2 "
        f"compresscodec: none crc: {crc} isvalid: true",
        "| offset: 0 CreateTime: 1000 keySize: -1 valueSize: 1 sequence: -1 headerKeys: [] payload: a",
        "| offset: 1 CreateTime: 1001 keySize: 1 valueSize: 1 sequence: -1 headerKeys: [h1,h2] key: k payload: b",
    ]


def test_shallow_dump_prints_only_batch_lines(tmp_path) -> None:
    data = build_batch([Record(5, 7, None, b"x")], base_offset=5, producer_id=9, producer_epoch=2,
                       base_sequence=3, compression=1)
    text, _, _ = _dump(_segment(tmp_path, data, 5))
    lines = text.splitlines()
    assert lines[1] == "Log starting offset: 5"
    assert len(lines) == 3
    assert "baseSequence: 3 lastSequence: 3 producerId: 9 producerEpoch: 2" in lines[2]
    assert "compresscodec: gzip" in lines[2]


def test_transaction_marker_line(tmp_path) -> None:
    marker = build_end_txn_marker(commit=True, offset=0, timestamp_ms=50, producer_id=11,
                                  producer_epoch=0, coordinator_epoch=4)
    text, _, _ = _dump(_segment(tmp_path, marker), "--print-data-log")
    lines = text.splitlines()
    assert "isTransactional: true isControl: true" in lines[2] and "size: 78" in lines[2]
    assert lines[3] == ("| offset: 0 CreateTime: 50 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
                        "endTxnMarker: COMMIT coordinatorEpoch: 4")


def test_crc_mismatch_prints_isvalid_false(tmp_path) -> None:
    data = bytearray(build_batch([Record(0, 1, None, b"abc")]))
    data[-2] ^= 0xFF
    text, _, _ = _dump(_segment(tmp_path, bytes(data)))
    assert text.splitlines()[2].endswith("isvalid: false")


def test_trailing_partial_batch_is_reported(tmp_path) -> None:
    one = build_batch([Record(0, 1, None, b"abc")])
    path = _segment(tmp_path, one + one[:25])
    text, _, _ = _dump(path)
    assert text.splitlines()[-1] == f"Found 25 invalid bytes at the end of {path.name}"


def test_legacy_lines(tmp_path) -> None:
    v1 = build_batch([Record(0, 1000, b"k", b"v")], magic=1)
    v0 = build_batch([Record(1, -1, None, b"w")], magic=0)
    crc1 = zlib.crc32(v1[16:])
    crc0 = zlib.crc32(v0[16:])
    text, _, _ = _dump(_segment(tmp_path, v1 + v0), "--print-data-log")
    assert text.splitlines()[2:] == [
        f"offset: 0 position: 0 CreateTime: 1000 size: {len(v1)} magic: 1 compresscodec: none crc: {crc1} isvalid: true",
        f"| offset: 0 CreateTime: 1000 keySize: 1 valueSize: 1 isValid: true crc: {crc1}}} key: k payload: v",
        f"offset: 1 position: {len(v1)} NoTimestampType: -1 size: {len(v0)} magic: 0 compresscodec: none crc: {crc0} isvalid: true",
        f"| offset: 1 NoTimestampType: -1 keySize: -1 valueSize: 1 isValid: true crc: {crc0}}} payload: w",
    ]


def _string(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


def test_offsets_decoder(tmp_path) -> None:
    key = struct.pack(">h", 1) + _string("g1") + _string("orders") + struct.pack(">i", 3)
    value = struct.pack(">hqi", 3, 42, 7) + _string("") + struct.pack(">q", 1_700_000_000_000)
    data = build_batch([Record(0, 5, key, value), Record(1, 6, key, None)])
    text, _, _ = _dump(_segment(tmp_path, data), "--offsets-decoder")
    lines = text.splitlines()
    assert lines[3].endswith(
        ' key: {"type":"1","data":{"group":"g1","topic":"orders","partition":3}}'
        ' payload: {"version":"3","data":{"offset":42,"leaderEpoch":7,"metadata":"",'
        '"commitTimestamp":1700000000000}}')
    assert lines[4].endswith(' payload: <DELETE>')


def test_cli_entry_point_and_unknown_suffix(tmp_path, capsys) -> None:
    path = _segment(tmp_path, build_batch([Record(0, 1, None, b"x")]))
    other = tmp_path / "notes.txt"
    other.write_text("hi")
    assert main(["dump-log", "--files", f"{path},{other}"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith(f"Dumping {path}\nLog starting offset: 0\nbaseOffset: 0")
    assert f"Ignoring unknown file {other}" in captured.err


def test_corrupt_prefix_is_reported_not_raised(tmp_path) -> None:
    data = bytearray(build_batch([Record(0, 1, None, b"x")]))
    data[16] = 9  # unknown magic
    text, err, status = _dump(_segment(tmp_path, bytes(data)))
    assert status == 1 and "unknown magic 9" in err


def test_empty_segment(tmp_path) -> None:
    text, _, status = _dump(_segment(tmp_path, b""))
    assert status == 0 and text.splitlines()[1:] == ["Log starting offset: 0"]
