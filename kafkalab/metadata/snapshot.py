"""Metadata snapshots: the whole image as records, in a ``.checkpoint`` file beside the log.

Theory of operation
-------------------
Replaying a metadata log from offset 0 grows with the log's age, so a KRaft node periodically
writes the image it has as a *snapshot* (KIP-630): after
``metadata.log.max.record.bytes.between.snapshots`` bytes of records (default 20 MiB) since the
last one. A snapshot is a file of ordinary v2 batches, named by its snapshot id -- the end
offset (one past the last record it contains) and that record's epoch::

    __cluster_metadata-0/00000000000000004711-0000000001.checkpoint

    offset 0      control batch  SNAPSHOT_HEADER {version 0, lastContainedLogTimestamp}
    offset 1..n   data batches   FeatureLevelRecord, RegisterBrokerRecord, TopicRecord,
                                 PartitionRecord ..., ConfigRecord, ProducerIdsRecord
    offset n+1    control batch  SNAPSHOT_FOOTER {version 0}

The records are the image written out (Kafka's ``MetadataImage.write``): replaying them into an
empty image gives the image back. Start-up loads the newest snapshot and replays the log from
its end offset. The file is written as ``.checkpoint.part`` and renamed, as Kafka's
``FileRawSnapshotWriter`` does, so a crash leaves no half snapshot under the real name.

Worked example: an image at offset 4710 (one broker, ``orders`` with 3 partitions, epoch 1)
becomes ``00000000000000004711-0000000001.checkpoint`` holding 1 + 1 + 1 + 3 (+ 1 producer
id record, once one was allocated) records between header and footer.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkalab.metadata import records as r
from kafkalab.metadata.delta import MetadataDelta
from kafkalab.metadata.image import BrokerRegistration, MetadataImage, PartitionRegistration
from kafkalab.metadata.records import MetadataRecordError, decode_record, encode_record
from kafkalab.records.codec import iter_batches
from kafkalab.records.control import ControlRecordType, control_key
from kafkalab.records.kraft_control import (
    CONTROL_MESSAGE_VERSION, SNAPSHOT_FOOTER_RECORD, SNAPSHOT_HEADER_RECORD,
)
from kafkalab.records.model import Record
from kafkalab.records.v2 import build_v2_batch

SNAPSHOT_SUFFIX = ".checkpoint"
PART_SUFFIX = ".part"  # Snapshots.PARTIAL_SUFFIX
RECORDS_PER_BATCH = 1000  # a bound on one snapshot batch; Kafka caps by bytes (8 KiB batches)
_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
LISTENER_NAME = "PLAINTEXT"  # kafkalab brokers listen on one plaintext listener
SECURITY_PROTOCOL_PLAINTEXT = 0  # SecurityProtocol.PLAINTEXT.id
MIN_METADATA_VERSION_LEVEL = 1  # MetadataVersion.MINIMUM_KRAFT_VERSION (3.0-IV1)


def snapshot_name(end_offset: int, epoch: int) -> str:
    """Kafka's ``Snapshots.filenameFromSnapshotId``: 20-digit end offset, 10-digit epoch."""
    return f"{end_offset:020d}-{epoch:010d}{SNAPSHOT_SUFFIX}"


def register_broker_record(broker: BrokerRegistration, fenced: bool) -> Any:
    cls = r.REGISTER_BROKER_RECORD.cls
    return cls(
        broker_id=broker.broker_id, incarnation_id=broker.incarnation_id, broker_epoch=broker.broker_epoch,
        end_points=(cls.BrokerEndpoint(LISTENER_NAME, broker.host, broker.port, SECURITY_PROTOCOL_PLAINTEXT),),
        features=(cls.BrokerFeature(r.METADATA_VERSION_FEATURE, MIN_METADATA_VERSION_LEVEL,
                                    r.METADATA_VERSION_LEVEL),),
        rack=broker.rack, fenced=fenced, in_controlled_shutdown=broker.in_controlled_shutdown)


def partition_record(topic_id: uuid.UUID, index: int, p: PartitionRegistration) -> Any:
    return r.PARTITION_RECORD.cls(
        partition_id=index, topic_id=topic_id, replicas=p.replicas, isr=p.isr,
        removing_replicas=p.removing_replicas, adding_replicas=p.adding_replicas, leader=p.leader,
        leader_recovery_state=p.leader_recovery_state, leader_epoch=p.leader_epoch,
        partition_epoch=p.partition_epoch)


def image_records(image: MetadataImage) -> Iterator[Any]:
    """The records that rebuild ``image`` from nothing (Kafka's ``MetadataImage.write``)."""
    for name, level in sorted(image.features.items()):
        yield r.FEATURE_LEVEL_RECORD.cls(name=name, feature_level=level)
    for _, broker in sorted(image.brokers.items()):
        yield register_broker_record(broker, broker.fenced)
    for name, topic in sorted(image.topics.items()):
        yield r.TOPIC_RECORD.cls(name=name, topic_id=topic.topic_id)
        for index, registration in sorted(topic.partitions.items()):
            yield partition_record(topic.topic_id, index, registration)
    for (resource_type, resource_name), values in sorted(image.configs.items()):
        for key, value in sorted(values.items()):
            yield r.CONFIG_RECORD.cls(resource_type=resource_type, resource_name=resource_name,
                                      name=key, value=value)
    if image.next_producer_id > 0:
        yield r.PRODUCER_IDS_RECORD.cls(broker_id=-1, broker_epoch=-1, next_producer_id=image.next_producer_id)


def _control(type_id: ControlRecordType, value: bytes, offset: int, now_ms: int, epoch: int) -> bytes:
    return build_v2_batch([Record(offset, now_ms, control_key(type_id), value)], is_control=True,
                          partition_leader_epoch=epoch)


def snapshot_bytes(image: MetadataImage, epoch: int, now_ms: int) -> bytes:
    """The whole ``.checkpoint`` file for ``image``: header, record batches, footer."""
    header = SNAPSHOT_HEADER_RECORD.cls(Version=CONTROL_MESSAGE_VERSION, LastContainedLogTimestamp=now_ms)
    out = [_control(ControlRecordType.SNAPSHOT_HEADER,
                    SNAPSHOT_HEADER_RECORD.encode(header, CONTROL_MESSAGE_VERSION), 0, now_ms, epoch)]
    offset, pending = 1, []
    for record in image_records(image):
        pending.append(Record(offset, now_ms, None, encode_record(record)))
        offset += 1
        if len(pending) == RECORDS_PER_BATCH:
            out.append(build_v2_batch(pending, partition_leader_epoch=epoch))
            pending = []
    if pending:
        out.append(build_v2_batch(pending, partition_leader_epoch=epoch))
    footer = SNAPSHOT_FOOTER_RECORD.cls(Version=CONTROL_MESSAGE_VERSION)
    out.append(_control(ControlRecordType.SNAPSHOT_FOOTER,
                        SNAPSHOT_FOOTER_RECORD.encode(footer, CONTROL_MESSAGE_VERSION), offset, now_ms, epoch))
    return b"".join(out)


def write_snapshot(directory: Path, image: MetadataImage, epoch: int, now_ms: int) -> Path:
    """Write the snapshot of ``image`` (its id: end offset ``image.offset + 1``) atomically."""
    return write_snapshot_bytes(directory, image.offset + 1, epoch, snapshot_bytes(image, epoch, now_ms))


def write_snapshot_bytes(directory: Path, end_offset: int, epoch: int, data: bytes) -> Path:
    """Write a snapshot's bytes (built here or fetched from the leader) atomically."""
    path = Path(directory) / snapshot_name(end_offset, epoch)
    part = path.with_name(path.name + PART_SUFFIX)
    with open(part, "wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())
    os.replace(part, path)
    return path


def latest_snapshot(directory: Path) -> Path | None:
    """The snapshot with the largest end offset in ``directory``, or None."""
    found = [(int(m.group(1)), int(m.group(2)), p) for p in Path(directory).iterdir()
             if (m := _NAME.match(p.name))]
    return max(found)[2] if found else None


def snapshot_id(path: Path) -> tuple[int, int]:
    """A snapshot file's id, (end offset, epoch), from its name."""
    match = _NAME.match(path.name)
    assert match is not None, f"{path.name} is not a snapshot name"
    return int(match.group(1)), int(match.group(2))


def read_snapshot(path: Path) -> MetadataImage:
    """Replay a snapshot file into an empty image (its offset: the snapshot's end offset - 1).
    Raises MetadataRecordError for a snapshot without its footer (a torn file)."""
    return image_from_snapshot(path.read_bytes(), snapshot_id(path)[0], path.name)


def image_from_snapshot(data: bytes, end_offset: int, name: str = "snapshot") -> MetadataImage:
    """Replay a snapshot's bytes (fetched with FetchSnapshot, or read from its file)."""
    delta, footer_seen = MetadataDelta(MetadataImage()), False
    for batch in iter_batches(data):
        if batch.header.is_control:
            footer_seen = footer_seen or any(
                rec.key == control_key(ControlRecordType.SNAPSHOT_FOOTER) for rec in batch.records)
            continue
        for rec in batch.records:
            if rec.value is not None:
                delta.replay(decode_record(rec.value))
    if not footer_seen:
        raise MetadataRecordError(f"snapshot {name} has no SnapshotFooter: it is incomplete")
    delta.mark_offset(end_offset - 1)
    return delta.apply()


@dataclass
class SnapshotPolicy:
    """When to snapshot: after ``bytes_between`` bytes of record values since the last one
    (``metadata.log.max.record.bytes.between.snapshots``). Not thread-safe; owned by a controller."""

    directory: Path
    bytes_between: int
    bytes_since: int = 0

    def appended(self, value_bytes: int, image: MetadataImage, epoch: int, now_ms: int) -> Path | None:
        """Count an append; write a snapshot of ``image`` when the threshold is passed."""
        self.bytes_since += value_bytes
        if self.bytes_since < self.bytes_between:
            return None
        self.bytes_since = 0
        return write_snapshot(self.directory, image, epoch, now_ms)


__all__ = [
    "SnapshotPolicy", "image_from_snapshot", "image_records", "latest_snapshot", "partition_record", "read_snapshot",
    "register_broker_record", "snapshot_bytes", "snapshot_id", "snapshot_name", "write_snapshot",
    "write_snapshot_bytes",
]
