"""Transactional batches and WriteTxnMarkers requests built by kafka-python, not by kafkalab.

kafka-python's ``DefaultRecordBatchBuilder`` writes transactional data batches and its
generated ``WriteTxnMarkersRequest`` class encodes the request frame, so the broker is driven
with bytes nobody here wrote; kafka-python's ``MemoryRecords`` then reads back what was stored.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.producer import WriteTxnMarkersRequest, WriteTxnMarkersResponse
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from tests.broker._harness import Harness

TIMESTAMP_MS = 1_000_000  # the harness clock's start: inside message.timestamp.*.max.ms


def txn_batch(producer_id: int, epoch: int, sequence: int, values: list[bytes]) -> bytes:
    """A transactional data batch, as a transactional producer sends it."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=True,
                                        producer_id=producer_id, producer_epoch=epoch,
                                        base_sequence=sequence, batch_size=1 << 20)
    for i, value in enumerate(values):
        builder.append(i, timestamp=TIMESTAMP_MS + i, key=b"k", value=value, headers=[])
    return bytes(builder.build())


def marker_request(markers: list[tuple[int, int, bool, int, dict[str, list[int]]]]) -> Any:
    """(producer id, producer epoch, commit, coordinator epoch, {topic: [partitions]}) each."""
    W = WriteTxnMarkersRequest
    return W(version=1, markers=[
        W.WritableTxnMarker(
            producer_id=pid, producer_epoch=epoch, transaction_result=commit, coordinator_epoch=coordinator_epoch,
            topics=[W.WritableTxnMarker.WritableTxnMarkerTopic(name=name, partition_indexes=parts)
                    for name, parts in topics.items()])
        for pid, epoch, commit, coordinator_epoch, topics in markers])


def send_markers(h: Harness, markers: list[tuple[int, int, bool, int, dict[str, list[int]]]],
                 connection_id: int = 1) -> int:
    """Send a kafka-python-encoded WriteTxnMarkers v1 frame; returns its correlation id."""
    h._correlation_id += 1
    request = marker_request(markers)
    request.with_header(correlation_id=h._correlation_id, client_id="coordinator")
    h.broker.handle(connection_id, bytes(request.encode(header=True)), h.clock.milliseconds())
    return h._correlation_id


def decode_marker_response(out: Any) -> dict[tuple[int, str, int], int]:
    """{(producer id, topic, partition): error code}, decoded by kafka-python."""
    data = b"".join(p if isinstance(p, bytes) else p.read_bytes() for p in out.parts)
    body = data[4 + 4 + 1:]  # size, correlation id, the flexible header's empty tagged fields
    response = WriteTxnMarkersResponse.decode(body, version=1)
    return {(m.producer_id, t.name, p.partition_index): p.error_code
            for m in response.markers for t in m.topics for p in t.partitions}


def write_markers(h: Harness, markers: list[tuple[int, int, bool, int, dict[str, list[int]]]]) -> dict:
    """Send markers and return the (immediate) answer."""
    send_markers(h, markers)
    [out] = h.outgoing()
    assert out.parts is not None and not out.close, out
    return decode_marker_response(out)


def stored_batches(h: Harness, topic: str, partition: int) -> list[Any]:
    """Every batch of the partition's log from offset 0, decoded by kafka-python."""
    log = h.log_store.get_log(topic, partition)
    data = log.read(0, 1 << 24, max_offset=log.log_end_offset).read_bytes()
    records, batches = MemoryRecords(data), []
    while (batch := records.next_batch()) is not None:
        batches.append(batch)
    return batches


__all__ = ["decode_marker_response", "marker_request", "send_markers", "stored_batches",
           "txn_batch", "write_markers"]
