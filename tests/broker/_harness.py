"""A broker over a real data directory with a ManualClock, driven by framed requests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from kafkalab.broker.request import Outgoing
from kafkalab.broker.settings import BrokerSettings
from kafkalab.client.in_process import InProcessBroker
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.header import decode_response


class Harness(InProcessBroker):
    """An :class:`InProcessBroker` on connection 1 (or another) whose ``call`` asserts one
    response, with helpers the broker tests share.

    Every harness is listed in ``OPEN`` until closed, so the broker tests' autouse fixture can
    shut down what a test left open (each open broker holds a handful of segment and index
    descriptors)."""

    OPEN: list[Harness] = []

    def __init__(self, data_dir: Path, seed: int = 0, properties: dict[str, str] | None = None,
                 **settings: Any) -> None:
        super().__init__(data_dir, start_ms=1_000_000, seed=seed, properties=properties,
                         settings=BrokerSettings(**settings), client_id="test")
        self.data_dir = data_dir
        Harness.OPEN.append(self)
        self.config_store = self.broker.config_store
        self.log_store = self.broker.log_store

    def outgoing(self) -> list[Outgoing]:
        return self.responses()

    def call(self, api_key: int, version: int, body: Any, connection_id: int = 1) -> Any:
        return super().call(ApiKey(api_key), version, body, connection_id)

    def send(self, api_key: int, version: int, body: Any, connection_id: int = 1) -> int:
        return super().send(ApiKey(api_key), version, body, connection_id)

    @staticmethod
    def decode(out: Outgoing, api_key: int, version: int, correlation_id: int | None = None) -> Any:
        assert out.parts is not None
        data = b"".join(p if isinstance(p, bytes) else p.read_bytes() for p in out.parts)
        assert int.from_bytes(data[:4], "big") == len(data) - 4
        got_id, body = decode_response(api_key, version, data[4:])
        if correlation_id is not None:
            assert got_id == correlation_id
        return body

    def create_topic(self, name: str, partitions: int = 1, configs: dict[str, str] | None = None) -> Any:
        topic = {"name": name, "num_partitions": partitions, "replication_factor": 1,
                 "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}
        return self.call(19, 7, {"topics": [topic], "timeout_ms": 1000}).topics[0]

    def produce(self, topic: str, partition: int, records: bytes, version: int = 7, acks: int = -1) -> Any:
        body = {"acks": acks, "timeout_ms": 1000, "topic_data": [
            {"name": topic, "partition_data": [{"index": partition, "records": records}]}]}
        if acks == 0:
            self.send(0, version, body)
            return self.outgoing()
        return self.call(0, version, body).responses[0].partition_responses[0]

    def fetch_body(self, topic: str, partition: int, offset: int, *, max_wait_ms: int = 0,
                   min_bytes: int = 1, partition_max_bytes: int = 1 << 20, max_bytes: int = 50 << 20) -> dict:
        return {"max_wait_ms": max_wait_ms, "min_bytes": min_bytes, "max_bytes": max_bytes,
                "isolation_level": 0, "topics": [{"topic": topic, "partitions": [
                    {"partition": partition, "fetch_offset": offset,
                     "partition_max_bytes": partition_max_bytes}]}]}

    def close(self) -> None:
        """Shut the broker down (flush, checkpoints, release every file); idempotent."""
        if self in Harness.OPEN:
            Harness.OPEN.remove(self)
        super().close()


def close_harnesses_opened_since(count: int) -> None:
    """Close every harness opened after the first ``count`` (a test's leftovers)."""
    for harness in Harness.OPEN[count:]:
        harness.close()


def batch(values: list[bytes], *, key: bytes | None = b"k", timestamp_ms: int = 1_000,
          headers: list[tuple[str, bytes]] | None = None, compression: int = 0) -> bytes:
    """A v2 record batch built by kafka-python (an independent encoder)."""
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=compression, is_transactional=False, producer_id=-1,
        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20,
    )
    for index, value in enumerate(values):
        builder.append(index, timestamp=timestamp_ms + index, key=key, value=value, headers=headers or [])
    return bytes(builder.build())


def decode_records(data: bytes) -> list[tuple[int, bytes | None, bytes | None, list]]:
    """(offset, key, value, headers) of every record, decoded by kafka-python."""
    out = []
    records = MemoryRecords(data)
    while (batch_ := records.next_batch()) is not None:
        for record in batch_:
            out.append((record.offset, record.key, record.value, list(record.headers)))
    return out


def records_of(partition_data: Any) -> bytes:
    return partition_data.records or b""
