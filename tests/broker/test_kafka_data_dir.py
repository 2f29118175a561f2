"""Opening a data directory laid out the way Apache Kafka (KRaft mode) writes it.

No Kafka binaries run in CI, so the directory is assembled with Kafka's file names and formats:
``meta.properties``, the KRaft metadata log ``__cluster_metadata-0``, checkpoint files, and a
partition whose segment was encoded by kafka-python (an independent encoder), with a
``partition.metadata`` topic id and the empty index files Kafka leaves for a small segment after
a clean shutdown.
"""

from __future__ import annotations

import base64
import uuid

from kafka.record.default_records import DefaultRecordBatchBuilder

from tests.broker._harness import Harness, decode_records, records_of

TOPIC_ID = uuid.UUID("8f3c1b2e-5d4a-4c3b-9a1e-2f6d7c8b9a01")


def _kafka_batch(base_offset: int, values: list[bytes]) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=False, producer_id=-1,
        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20,
    )
    for index, value in enumerate(values):
        builder.append(index, timestamp=1_700_000_000_000 + index, key=None, value=value, headers=[])
    data = bytearray(builder.build())
    data[0:8] = base_offset.to_bytes(8, "big")  # the broker assigns base offsets on append
    return bytes(data)


def _write_kafka_dir(root) -> None:
    root.mkdir()
    (root / "meta.properties").write_text(
        "#\n#Tue Nov 19 10:00:00 UTC 2024\nnode.id=1\ndirectory.id=AbCdEfGhIjKlMnOpQrStUw\n"
        "version=1\ncluster.id=Mk3OEYBSD34fcwNTJENDM2Qk\n")
    (root / "bootstrap.checkpoint").write_bytes(b"\x00" * 16)
    for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
        (root / name).write_text("0\n1\norders 0 5\n")
    (root / "log-start-offset-checkpoint").write_text("0\n0\n")  # Kafka omits logs starting at 0
    partition = root / "orders-0"
    partition.mkdir()
    segment = _kafka_batch(0, [b"a", b"b", b"c"]) + _kafka_batch(3, [b"d", b"e"])
    (partition / "00000000000000000000.log").write_bytes(segment)
    # A cleanly closed small segment: Kafka trims both indexes to their (zero) entries.
    (partition / "00000000000000000000.index").write_bytes(b"")
    (partition / "00000000000000000000.timeindex").write_bytes(b"")
    (root / ".kafka_cleanshutdown").write_bytes(b"")
    topic_id = base64.urlsafe_b64encode(TOPIC_ID.bytes).decode().rstrip("=")
    (partition / "partition.metadata").write_text(f"version: 0\ntopic_id: {topic_id}")
    (partition / "leader-epoch-checkpoint").write_text("0\n0\n")
    metadata = root / "__cluster_metadata-0"
    metadata.mkdir()
    (metadata / "00000000000000000000.log").write_bytes(_kafka_batch(0, [b"kraft"]))


def test_serves_partitions_of_a_kafka_written_directory(tmp_path):
    root = tmp_path / "kafka-logs"
    _write_kafka_dir(root)
    h = Harness(root)
    metadata = h.call(3, 12, {"topics": None})
    assert [(t.name, t.topic_id, len(t.partitions)) for t in metadata.topics] == [("orders", TOPIC_ID, 1)]
    data = h.call(1, 12, {**h.fetch_body("orders", 0, 0)}).responses[0].partitions[0]
    assert (data.error_code, data.high_watermark, data.log_start_offset) == (0, 5, 0)
    assert [(o, v) for o, _, v, _ in decode_records(records_of(data))] == [
        (0, b"a"), (1, b"b"), (2, b"c"), (3, b"d"), (4, b"e")]
    h.close()
