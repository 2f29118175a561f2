"""Opening a data directory laid out the way Apache Kafka (KRaft mode) writes it.

No Kafka binaries run in CI, so the directory is assembled with Kafka's file names and formats:
``meta.properties``, the KRaft metadata log ``__cluster_metadata-0``, checkpoint files, and a
partition whose segment was encoded by kafka-python (an independent encoder), with a
``partition.metadata`` topic id and the empty index files Kafka leaves for a small segment after
a clean shutdown. The metadata log holds what a Kafka 3.7 combined node writes for it
(metadata.version 3.7-IV4, level 19): each record laid out byte by byte from Kafka's JSON specs
(metadata/src/main/resources/common/metadata), not by kafkalab's encoder, in kafka-python batches.
"""

from __future__ import annotations

import base64
import uuid

from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkalab.protocol.types import Writer
from tests.broker._harness import Harness, decode_records, records_of

TOPIC_ID = uuid.UUID("8f3c1b2e-5d4a-4c3b-9a1e-2f6d7c8b9a01")
DIRECTORY_ID = uuid.UUID(bytes=base64.urlsafe_b64decode("AbCdEfGhIjKlMnOpQrStUw=="))
NODE_ID = 1


def _frame(api_key: int, version: int) -> Writer:
    w = Writer()
    for v in (1, api_key, version):  # frame version 1, api key, record version (uvarints)
        w.uvarint(v)
    return w


def _int32s(w: Writer, values: list[int]) -> None:
    w.length(len(values), compact=True)
    for v in values:
        w.int32(v)


def _kafka_metadata_records() -> list[list[bytes]]:
    """The batches of a Kafka 3.7 node's metadata log for one topic ``orders`` of 1 partition."""
    feature = _frame(12, 0)                       # FeatureLevelRecord v0
    feature.string("metadata.version", compact=True)
    feature.int16(19)                             # 3.7-IV4
    feature.uvarint(0)
    broker = _frame(0, 3)                         # RegisterBrokerRecord v3
    broker.int32(NODE_ID)
    broker.boolean(False)                         # IsMigratingZkBroker
    broker.uuid(uuid.UUID(int=7))                 # IncarnationId
    broker.int64(1)                               # BrokerEpoch: the record's own offset
    broker.length(1, compact=True)                # EndPoints
    broker.string("PLAINTEXT", compact=True)
    broker.string("localhost", compact=True)
    broker.uint16(9092)
    broker.int16(0)                               # SecurityProtocol PLAINTEXT
    broker.uvarint(0)
    broker.length(1, compact=True)                # Features
    broker.string("metadata.version", compact=True)
    broker.int16(1)
    broker.int16(19)
    broker.uvarint(0)
    broker.string(None, compact=True)             # Rack
    broker.boolean(True)                          # Fenced: every broker registers fenced
    broker.boolean(False)                         # InControlledShutdown
    log_dirs = Writer()
    log_dirs.length(1, compact=True)
    log_dirs.uuid(DIRECTORY_ID)
    broker.uvarint(1)                             # one tagged field: LogDirs (tag 0)
    broker.uvarint(0)
    broker.uvarint(len(log_dirs.to_bytes()))
    broker.raw(log_dirs.to_bytes())
    unfence = _frame(17, 0)                       # BrokerRegistrationChangeRecord v0
    unfence.int32(NODE_ID)
    unfence.int64(1)
    unfence.uvarint(1)                            # tagged: Fenced (tag 0) = -1, unfenced
    unfence.uvarint(0)
    unfence.uvarint(1)
    unfence.int8(-1)
    topic = _frame(2, 0)                          # TopicRecord v0
    topic.string("orders", compact=True)
    topic.uuid(TOPIC_ID)
    topic.uvarint(0)
    partition = _frame(3, 1)                      # PartitionRecord v1
    partition.int32(0)
    partition.uuid(TOPIC_ID)
    _int32s(partition, [NODE_ID])                 # Replicas
    _int32s(partition, [NODE_ID])                 # Isr
    _int32s(partition, [])                        # RemovingReplicas
    _int32s(partition, [])                        # AddingReplicas
    partition.int32(NODE_ID)                      # Leader
    partition.int32(0)                            # LeaderEpoch
    partition.int32(0)                            # PartitionEpoch
    partition.length(1, compact=True)             # Directories
    partition.uuid(DIRECTORY_ID)
    partition.uvarint(0)
    no_op = _frame(20, 0)                         # NoOpRecord v0
    no_op.uvarint(0)
    return [[feature.to_bytes()], [broker.to_bytes(), unfence.to_bytes()],
            [topic.to_bytes(), partition.to_bytes()], [no_op.to_bytes()]]


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
    offset, log = 0, b""
    for values in _kafka_metadata_records():
        log += _kafka_batch(offset, values)
        offset += len(values)
    (metadata / "00000000000000000000.log").write_bytes(log)


def test_serves_partitions_of_a_kafka_written_directory(tmp_path):
    root = tmp_path / "kafka-logs"
    _write_kafka_dir(root)
    h = Harness(root, node_id=NODE_ID)
    metadata = h.call(3, 12, {"topics": None})
    assert [(t.name, t.topic_id, len(t.partitions)) for t in metadata.topics] == [("orders", TOPIC_ID, 1)]
    data = h.call(1, 12, {**h.fetch_body("orders", 0, 0)}).responses[0].partitions[0]
    assert (data.error_code, data.high_watermark, data.log_start_offset) == (0, 5, 0)
    assert [(o, v) for o, _, v, _ in decode_records(records_of(data))] == [
        (0, b"a"), (1, b"b"), (2, b"c"), (3, b"d"), (4, b"e")]
    h.close()


def test_the_topic_comes_from_the_metadata_log_when_its_directory_lacks_an_id(tmp_path):
    """The topic id is the metadata log's TopicRecord's, not read from the partition directory."""
    root = tmp_path / "kafka-logs"
    _write_kafka_dir(root)
    (root / "orders-0" / "partition.metadata").unlink()
    h = Harness(root, node_id=NODE_ID)
    image = h.broker.controller.image
    assert image.topics["orders"].topic_id == TOPIC_ID
    assert image.features["metadata.version"] == 19
    registration = image.partition("orders", 0)
    # The restarted node fenced its old incarnation and was elected again: leader epoch 0 + 2.
    assert (registration.leader, registration.isr, registration.leader_epoch) == (NODE_ID, (NODE_ID,), 2)
    h.close()
