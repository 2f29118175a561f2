"""Lab 07's data: transactions written through the broker, read back with kafka-python's reader."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatch

from kafkalab.spark.txn_story import TxnProducerSpec, TxnStory, write_txn_story
from kafkalab.storage.txn_index import TransactionIndex

SHORT = TxnStory(producers=(TxnProducerSpec("a", 8, 0.5), TxnProducerSpec("h", 3, 0.0)), partitions=2,
                 records_per_partition=(1, 4), plain_records_per_step=2, hanging_producer="h", seed=3)


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory):
    data_dir = tmp_path_factory.mktemp("txn") / "data"
    return data_dir, write_txn_story(data_dir, SHORT)


def batches(partition_dir: Path) -> list[DefaultRecordBatch]:
    data = b"".join(p.read_bytes() for p in sorted(partition_dir.glob("*.log")))
    out, position = [], 0
    while position + 12 <= len(data):
        size = struct.unpack_from(">i", data, position + 8)[0]
        out.append(DefaultRecordBatch(data[position:position + 12 + size]))
        position += 12 + size
    return out


def test_markers_close_each_transaction_and_the_txnindex_lists_the_aborts(story) -> None:
    data_dir, result = story
    for partition in range(SHORT.partitions):
        open_since: dict[int, int] = {}
        aborted = set()
        for batch in batches(data_dir / f"payments-{partition}"):
            if batch.is_control_batch:
                [marker] = list(batch)
                kind = struct.unpack(">hh", marker.key)[1]
                first = open_since.pop(batch.producer_id)
                if kind == 0:
                    aborted.add((batch.producer_id, first, batch.base_offset))
            elif batch.is_transactional:
                open_since.setdefault(batch.producer_id, batch.base_offset)
        files = {(e.producer_id, e.first_offset, e.last_offset)
                 for path in (data_dir / f"payments-{partition}").glob("*.txnindex")
                 for e in TransactionIndex(path, int(path.stem)).entries}
        assert files == aborted
        expected_lso = min(open_since.values(), default=result.high_watermark[partition])
        assert result.last_stable_offset[partition] == expected_lso


def test_outcomes_follow_the_story(story) -> None:
    _, result = story
    outcomes = [t.outcome for t in result.transactions]
    assert outcomes.count("open") == 1 and [t for t in result.transactions if t.outcome == "open"][0].transactional_id == "h"
    assert len(outcomes) == 11 and {"commit", "abort"} <= set(outcomes)
    assert any(result.last_stable_offset[p] < result.high_watermark[p] for p in range(SHORT.partitions))
