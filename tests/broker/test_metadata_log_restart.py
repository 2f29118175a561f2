"""A single node's topics survive restarts through its metadata log and snapshots alone."""

from __future__ import annotations

import pytest

from kafkalab.metadata.records import MetadataRecordError
from kafkalab.metadata.snapshot import latest_snapshot, read_snapshot, snapshot_name
from kafkalab.records import ControlRecordType
from kafkalab.records.codec import iter_batches
from kafkalab.records.control import parse_control_record
from kafkalab.tools.decoders import control_record_text, parse_cluster_metadata
from tests.broker._harness import Harness


def _topics(h: Harness) -> dict:
    return {name: (t.topic_id, len(t.partitions)) for name, t in h.broker.controller.image.topics.items()}


def test_restart_rebuilds_topics_from_the_metadata_log(tmp_path):
    h = Harness(tmp_path)
    h.create_topic("orders", 3)
    h.create_topic("gone", 1)
    assert h.call(20, 4, {"topic_names": ["gone"], "timeout_ms": 1}).responses[0].error_code == 0
    before = _topics(h)
    h.close()
    for partition in range(3):  # the partition directories are not what brings the topic back
        (tmp_path / f"orders-{partition}" / "partition.metadata").unlink()
    h = Harness(tmp_path)
    assert _topics(h) == before and "gone" not in before
    image = h.broker.controller.image
    # dump-log reads kafkalab's metadata log as Kafka's JSON.
    log = (tmp_path / "__cluster_metadata-0" / "00000000000000000000.log").read_bytes()
    printed = [parse_cluster_metadata(rec)[1] for b in iter_batches(log) for rec in b.records]
    assert printed[0] == '{"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":"metadata.version","featureLevel":14}}'
    assert sum('"type":"PARTITION_RECORD"' in p for p in printed) == 4
    assert any('"type":"REMOVE_TOPIC_RECORD"' in p for p in printed)
    assert image.offset == len(printed) - 1
    h.close()


def test_snapshots_are_written_and_loaded(tmp_path):
    small = {"metadata.log.max.record.bytes.between.snapshots": "200"}
    h = Harness(tmp_path, properties=small)
    for name in ("a", "b", "c"):
        h.create_topic(name, 4)
    image = h.broker.controller.image
    h.close()
    newest = latest_snapshot(tmp_path / "__cluster_metadata-0")
    assert newest is not None
    snapshot = read_snapshot(newest)
    assert newest.name == snapshot_name(snapshot.offset + 1, 1)
    batches = list(iter_batches(newest.read_bytes()))
    header, footer = batches[0], batches[-1]
    assert parse_control_record(header.records[0]).type is ControlRecordType.SNAPSHOT_HEADER
    assert control_record_text(ControlRecordType.SNAPSHOT_FOOTER, footer.records[0].value) == (
        ' SnapshotFooter {"version":0}')
    # The snapshot alone holds the whole image up to its end offset.
    assert {n: t.topic_id for n, t in snapshot.topics.items()} == {n: t.topic_id for n, t in image.topics.items()}
    assert snapshot.brokers == image.brokers
    h = Harness(tmp_path, properties=small)
    assert {n: t.topic_id for n, t in h.broker.controller.image.topics.items()} == {
        n: t.topic_id for n, t in image.topics.items()}
    h.close()


def test_a_torn_snapshot_is_refused_with_a_typed_error(tmp_path):
    h = Harness(tmp_path, properties={"metadata.log.max.record.bytes.between.snapshots": "50"})
    h.create_topic("a", 2)
    h.close()
    newest = latest_snapshot(tmp_path / "__cluster_metadata-0")
    newest.write_bytes(newest.read_bytes()[:-10])  # the footer batch cut short, as by a crash
    with pytest.raises(MetadataRecordError, match="no SnapshotFooter"):
        read_snapshot(newest)


def test_producer_ids_come_in_controller_blocks_that_survive_restarts(tmp_path):
    def init_producer_id(h: Harness) -> int:
        body = h.call(22, 0, {"transactional_id": None, "transaction_timeout_ms": 60_000})
        assert body.error_code == 0
        return body.producer_id

    h = Harness(tmp_path)
    assert [init_producer_id(h) for _ in range(3)] == [0, 1, 2]  # Kafka's first block: 0-999
    h.close()
    h = Harness(tmp_path)
    assert init_producer_id(h) == 1000  # the replayed ProducerIdsRecord said: next block at 1000
    log = (tmp_path / "__cluster_metadata-0" / "00000000000000000000.log").read_bytes()
    printed = [parse_cluster_metadata(rec)[1] for b in iter_batches(log) for rec in b.records]
    assert [p for p in printed if "PRODUCER_IDS" in p] == [
        '{"type":"PRODUCER_IDS_RECORD","version":0,"data":{"brokerId":0,"brokerEpoch":0,"nextProducerId":1000}}',
        '{"type":"PRODUCER_IDS_RECORD","version":0,"data":{"brokerId":0,"brokerEpoch":0,"nextProducerId":2000}}']
    h.close()


def test_dump_log_prints_a_snapshot(tmp_path, capsys):
    from kafkalab.tools.cli import main

    h = Harness(tmp_path, properties={"metadata.log.max.record.bytes.between.snapshots": "50"})
    h.create_topic("a", 1)
    h.close()
    newest = latest_snapshot(tmp_path / "__cluster_metadata-0")
    assert main(["dump-log", "--files", str(newest), "--cluster-metadata-decoder"]) == 0
    out = capsys.readouterr().out
    assert ' SnapshotHeader {"version":0,"lastContainedLogTimestamp":' in out
    assert ' SnapshotFooter {"version":0}' in out
    assert '"type":"TOPIC_RECORD","version":0,"data":{"name":"a"' in out
    assert "isControl: true" in out
