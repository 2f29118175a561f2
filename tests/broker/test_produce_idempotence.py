"""Produce answers for idempotent producers, at every Produce version that carries v2 batches
(3-9): a resent batch gets NONE and its original base offset, a gap OUT_OF_ORDER_SEQUENCE_NUMBER
(45), an older epoch INVALID_PRODUCER_EPOCH (47) -- never PRODUCER_FENCED (90), which is the
transaction coordinator's answer -- and a failed partition carries base offset -1 and the log
start offset, as Kafka's ReplicaManager answers."""

from __future__ import annotations

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkalab.errors import ErrorCode
from tests.broker._harness import Harness

TIMESTAMP_MS = 1_000_000  # the harness clock's start: inside message.timestamp.*.max.ms


def idempotent(producer_id: int, epoch: int, sequence: int, count: int = 2) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                        producer_id=producer_id, producer_epoch=epoch,
                                        base_sequence=sequence, batch_size=1 << 20)
    for i in range(count):
        builder.append(i, timestamp=TIMESTAMP_MS + i, key=None, value=b"v%d" % i, headers=[])
    return bytes(builder.build())


@pytest.mark.parametrize("version", range(3, 10))
def test_idempotent_produce_answers_at_every_version(tmp_path, version):
    h = Harness(tmp_path)
    h.create_topic("t")
    first = h.produce("t", 0, idempotent(5, 0, 0), version=version)
    assert (first.error_code, first.base_offset) == (0, 0)
    again = h.produce("t", 0, idempotent(5, 0, 0), version=version)
    assert (again.error_code, again.base_offset) == (0, 0)
    # Kafka sets logAppendTime to the remembered batch's timestamp for a duplicate.
    assert again.log_append_time_ms == TIMESTAMP_MS + 1
    gap = h.produce("t", 0, idempotent(5, 0, 3), version=version)
    assert (gap.error_code, gap.base_offset) == (ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, -1)
    if version >= 5:  # the field exists from Produce v5
        assert gap.log_start_offset == 0
    assert h.produce("t", 0, idempotent(5, 1, 0), version=version).error_code == 0
    zombie = h.produce("t", 0, idempotent(5, 0, 2), version=version)
    assert zombie.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert h.log_store.get_log("t", 0).log_end_offset == 4
    h.close()
