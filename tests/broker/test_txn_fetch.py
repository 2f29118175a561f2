"""Fetch and ListOffsets for read_committed and read_uncommitted readers on a lone broker.

Transactional batches come from kafka-python's codec and the markers from kafka-python-encoded
WriteTxnMarkers requests; the consumers' side is checked against real clients in
tests/interop/test_read_committed.py. Log used below::

    0-1 producer 7 (aborted)   2 plain   3 ABORT(7)   4-5 producer 8 (open)   6 plain
"""

from __future__ import annotations

from typing import Any

import pytest

from kafkalab.protocol.api_keys import ApiKey
from tests.broker._harness import Harness, batch, decode_records, records_of
from tests.broker._txn import decode_marker_response, send_markers, txn_batch, write_markers

ABORTED, OPEN = 7, 8


@pytest.fixture
def h(tmp_path):
    harness = Harness(tmp_path)
    harness.create_topic("t")
    harness.produce("t", 0, txn_batch(ABORTED, 0, 0, [b"x1", b"x2"]))
    harness.produce("t", 0, batch([b"plain1"]))
    assert write_markers(harness, [(ABORTED, 0, False, 0, {"t": [0]})]) == {(ABORTED, "t", 0): 0}
    harness.produce("t", 0, txn_batch(OPEN, 0, 0, [b"o1", b"o2"]))
    harness.produce("t", 0, batch([b"plain2"]))
    yield harness
    harness.close()


def fetch(h: Harness, offset: int, isolation: int, version: int = 11, **kwargs: Any) -> Any:
    body = {**h.fetch_body("t", 0, offset, **kwargs), "isolation_level": isolation}
    return h.call(ApiKey.FETCH, version, body).responses[0].partitions[0]


def list_latest(h: Harness, isolation: int, version: int = 2) -> int:
    body = {"replica_id": -1, "isolation_level": isolation, "topics": [
        {"name": "t", "partitions": [{"partition_index": 0, "timestamp": -1}]}]}
    return h.call(ApiKey.LIST_OFFSETS, version, body).topics[0].partitions[0].offset


@pytest.mark.parametrize("version", [4, 11, 12])
def test_read_committed_stops_at_the_lso_and_names_the_aborted_transaction(h, version):
    p = fetch(h, 0, isolation=1, version=version)
    assert (p.error_code, p.high_watermark, p.last_stable_offset) == (0, 7, 4)
    assert [(t.producer_id, t.first_offset) for t in p.aborted_transactions] == [(ABORTED, 0)]
    assert [offset for offset, *_ in decode_records(records_of(p))] == [0, 1, 2, 3]


@pytest.mark.parametrize("version", [4, 12])
def test_read_uncommitted_reads_to_the_hw_with_null_aborted_transactions(h, version):
    p = fetch(h, 0, isolation=0, version=version)
    assert (p.high_watermark, p.last_stable_offset, p.aborted_transactions) == (7, 4, None)
    assert [offset for offset, *_ in decode_records(records_of(p))] == [0, 1, 2, 3, 4, 5, 6]


def test_aborted_transaction_is_listed_while_its_marker_is_fetched(h):
    p = fetch(h, 3, isolation=1)  # Kafka's rule: the entry's last offset >= the fetch offset
    assert [(t.producer_id, t.first_offset) for t in p.aborted_transactions] == [(ABORTED, 0)]
    at_lso = fetch(h, 4, isolation=1)  # nothing stable to read yet: empty, not an error
    assert (at_lso.error_code, records_of(at_lso), at_lso.aborted_transactions) == (0, b"", ())


def test_list_offsets_latest_is_the_lso_for_read_committed(h):
    assert list_latest(h, isolation=0) == 7
    assert list_latest(h, isolation=1) == 4
    write_markers(h, [(OPEN, 0, True, 0, {"t": [0]})])
    assert list_latest(h, isolation=1) == list_latest(h, isolation=0) == 8


def test_parked_read_committed_fetch_wakes_when_the_marker_moves_the_lso(h):
    h.send(ApiKey.FETCH, 11, {**h.fetch_body("t", 0, 4, max_wait_ms=5_000), "isolation_level": 1})
    assert h.outgoing() == []  # nothing stable past 4 yet: parked
    correlation_id = send_markers(h, [(OPEN, 0, True, 0, {"t": [0]})], connection_id=2)
    outs = {out.connection_id: out for out in h.outgoing()}
    assert decode_marker_response(outs[2]) == {(OPEN, "t", 0): 0}
    p = Harness.decode(outs[1], ApiKey.FETCH, 11).responses[0].partitions[0]
    assert p.last_stable_offset == 8 and p.aborted_transactions == ()
    assert [offset for offset, *_ in decode_records(records_of(p))] == [4, 5, 6, 7]
    assert correlation_id > 0
