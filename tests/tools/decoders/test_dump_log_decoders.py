"""``kafkalab dump-log`` with the decoder flags, over segments and KRaft snapshot files."""

from __future__ import annotations

import argparse
import io
import struct
import uuid

from kafkalab.protocol.types import Writer
from kafkalab.records import Record, build_batch
from kafkalab.records.control import control_key
from kafkalab.tools import dump_log
from kafkalab.tools.cli import main

TOPIC_ID = uuid.UUID(int=0x0102030405060708090A0B0C0D0E0F10)


def _dump(path, *flags: str) -> list[str]:
    parser = argparse.ArgumentParser()
    dump_log.add_arguments(parser)
    out, err = io.StringIO(), io.StringIO()
    status = dump_log.run(parser.parse_args(["--files", str(path), *flags]), out, err)
    assert status == 0 and err.getvalue() == ""
    return out.getvalue().splitlines()


def _topic_record(name: str) -> bytes:
    w = Writer()
    for v in (1, 2, 0):  # frame version, api key (TopicRecord), version
        w.uvarint(v)
    w.string(name, compact=True)
    w.uuid(TOPIC_ID)
    w.uvarint(0)
    return w.to_bytes()


def test_cluster_metadata_segment_keeps_going_after_a_bad_record(tmp_path) -> None:
    good = _topic_record("orders")
    batch = build_batch([Record(0, 10, None, good), Record(1, 10, None, b"\x01\x63\x00"),
                         Record(2, 10, None, _topic_record("pay"))], partition_leader_epoch=1)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(batch)
    lines = _dump(path, "--cluster-metadata-decoder")
    assert lines[3] == (
        f"| offset: 0 CreateTime: 10 keySize: -1 valueSize: {len(good)} sequence: -1 headerKeys: [] "
        'payload: {"type":"TOPIC_RECORD","version":0,"data":{"name":"orders","topicId":"AQIDBAUGBwgJCgsMDQ4PEA"}}')
    assert lines[4].endswith("payload: Error at 1, skipping. Unknown metadata id 99")
    assert '"name":"pay"' in lines[5]


def test_snapshot_checkpoint_with_header_and_footer(tmp_path) -> None:
    header = build_batch([Record(0, 5, control_key(3), struct.pack(">hq", 0, 1234) + b"\x00")],
                         is_control=True)
    records = build_batch([Record(1, 5, None, _topic_record("orders"))], base_offset=1)
    footer = build_batch([Record(2, 5, control_key(4), b"\x00\x00\x00")], base_offset=2, is_control=True)
    path = tmp_path / "00000000000000000100-0000000003.checkpoint"
    path.write_bytes(header + records + footer)
    lines = _dump(path, "--cluster-metadata-decoder")
    assert lines[1] == "Snapshot end offset: 100, epoch: 3"
    assert lines[3].endswith(' SnapshotHeader {"version":0,"lastContainedLogTimestamp":1234}')
    assert "payload:" not in lines[3]  # control records print no payload
    assert '"type":"TOPIC_RECORD"' in lines[5]
    assert lines[7].endswith(' SnapshotFooter {"version":0}')


def test_bootstrap_checkpoint_and_bad_snapshot_name(tmp_path) -> None:
    boot = tmp_path / "bootstrap.checkpoint"
    boot.write_bytes(build_batch([Record(0, 1, None, _topic_record("t"))]))
    assert _dump(boot)[1] == "KRaft bootstrap snapshot"
    odd = tmp_path / "snapshot.checkpoint"
    odd.write_bytes(b"")
    out, err = io.StringIO(), io.StringIO()
    parser = argparse.ArgumentParser()
    dump_log.add_arguments(parser)
    assert dump_log.run(parser.parse_args(["--files", str(odd)]), out, err) == 1
    assert "is not named <20-digit end offset>-<10-digit epoch>.checkpoint" in err.getvalue()


def test_corrupt_control_record_prints_a_reason_and_continues(tmp_path) -> None:
    bad = build_batch([Record(0, 1, control_key(3), b"\x00")], is_control=True)
    good = build_batch([Record(1, 1, None, _topic_record("t"))], base_offset=1)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(bad + good)
    lines = _dump(path, "--cluster-metadata-decoder")
    assert "controlType: invalid control record at offset 0: truncated int16" in lines[3]
    assert '"type":"TOPIC_RECORD"' in lines[5]


def test_transaction_log_decoder_through_the_cli(tmp_path, capsys) -> None:
    key = struct.pack(">hh", 0, 5) + b"app-1"
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(build_batch([Record(0, 1, key, None)]))
    assert main(["dump-log", "--files", str(path), "--transaction-log-decoder"]) == 0
    assert capsys.readouterr().out.splitlines()[3].endswith(
        ' key: {"type":"0","data":{"transactionalId":"app-1"}} payload: <DELETE>')


def test_offsets_decoder_record_without_key_does_not_stop_the_dump(tmp_path) -> None:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(build_batch([Record(0, 1, None, b"x"), Record(1, 1, b"\x00\x63", None)]))
    lines = _dump(path, "--offsets-decoder")
    assert lines[3].endswith("(message had a missing key)")
    assert lines[4].endswith(" key: Unknown record type 99 at offset 1, skipping.")
