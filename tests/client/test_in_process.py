"""The in-process broker: real request frames through a real broker, no sockets."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from kafkalab.client.in_process import InProcessBroker, InProcessBrokerError
from kafkalab.protocol.api_keys import ApiKey


def kafka_python_batch(values: list[bytes]) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i, value in enumerate(values):
        builder.append(i, timestamp=1_000 + i, key=None, value=value, headers=[])
    return bytes(builder.build())


def test_produce_then_fetch(tmp_path: Path) -> None:
    with InProcessBroker(tmp_path, start_ms=1_000) as broker:
        broker.create_topic("t", 1)
        body = {"transactional_id": None, "acks": 1, "timeout_ms": 1_000, "topic_data": [
            {"name": "t", "partition_data": [{"index": 0, "records": kafka_python_batch([b"a", b"b"])}]}]}
        [answer] = broker.call(ApiKey.PRODUCE, 9, body).responses[0].partition_responses
        assert (answer.error_code, answer.base_offset) == (0, 0)
        fetch = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
                 "topics": [{"topic": "t", "partitions": [{"partition": 0, "fetch_offset": 0,
                                                           "partition_max_bytes": 1 << 20}]}]}
        data = broker.call(ApiKey.FETCH, 4, fetch).responses[0].partitions[0]
        records = data.records if isinstance(data.records, bytes) else data.records.read_bytes()
        assert [r.value for r in DefaultRecordBatch(records)] == [b"a", b"b"]
    assert broker.closed


def test_a_refused_topic_raises_the_brokers_error(tmp_path: Path) -> None:
    with InProcessBroker(tmp_path) as broker:
        broker.create_topic("t", 1)
        with pytest.raises(InProcessBrokerError, match="error 36"):  # TOPIC_ALREADY_EXISTS
            broker.create_topic("t", 1)


def test_time_moves_only_when_told(tmp_path: Path) -> None:
    with InProcessBroker(tmp_path, start_ms=5_000) as broker:
        assert broker.now_ms() == 5_000
        broker.advance(1_500)
        assert broker.now_ms() == 6_500
