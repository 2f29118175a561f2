"""The marker channel of a cluster's broker (Kafka's TransactionMarkerChannelManager): markers
queued per destination broker from the metadata image, one WriteTxnMarkers in flight per
broker, a send completed once every partition has an answer, whichever broker gave it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from kafkalab.broker.txn_channel import TxnMarkerChannelManager
from kafkalab.errors import ErrorCode
from kafkalab.protocol.messages.txn_markers import WRITE_TXN_MARKERS_RESPONSE
from kafkalab.txn.markers import MarkerRequest

E = ErrorCode
LEADERS = {("orders", 0): 1, ("orders", 1): 2, ("orders", 2): 2, ("orders", 3): -1}  # 3: no leader
_R = WRITE_TXN_MARKERS_RESPONSE.cls


def _channel() -> TxnMarkerChannelManager:
    def partition(topic: str, index: int) -> Any:
        leader = LEADERS.get((topic, index))
        return None if leader is None else SimpleNamespace(leader=leader)
    brokers = {n: SimpleNamespace(broker_id=n, fenced=False) for n in (1, 2)}
    image = SimpleNamespace(partition=partition, brokers=brokers)
    broker = SimpleNamespace(image=image, settings=SimpleNamespace(node_id=1))  # the metadata it learned
    return TxnMarkerChannelManager(broker, lambda: 0)  # type: ignore[arg-type]


def _answer(body: dict, **errors: int) -> Any:
    """The response a leader gives to ``body``: NONE, or ``errors["orders_1"]`` for orders-1."""
    return _R(markers=tuple(_R.WritableTxnMarkerResult(producer_id=m["producer_id"], topics=tuple(
        _R.WritableTxnMarkerResult.WritableTxnMarkerTopicResult(name=t["name"], partitions=tuple(
            _R.WritableTxnMarkerResult.WritableTxnMarkerTopicResult.WritableTxnMarkerPartitionResult(
                partition_index=p, error_code=errors.get(f"{t['name']}_{p}", 0))
            for p in t["partition_indexes"]))
        for t in m["topics"])) for m in body["markers"]))


def test_markers_go_to_each_leader_and_complete_together() -> None:
    channel, results = _channel(), []
    channel.send(MarkerRequest(7, 0, 3, True, (("orders", 0), ("orders", 1), ("orders", 2))), results.append)
    channel.send(MarkerRequest(8, 1, 3, False, (("orders", 1),)), results.append)
    batches = {b.destination: b for b in channel.take_requests()}
    assert sorted(batches) == [1, 2] and not channel.take_requests()  # one in flight per broker
    to_two = batches[2].body["markers"]
    assert [(m["producer_id"], m["coordinator_epoch"], m["topics"]) for m in to_two] == [
        (7, 3, [{"name": "orders", "partition_indexes": [1, 2]}]),
        (8, 3, [{"name": "orders", "partition_indexes": [1]}])]
    channel.on_response(batches[2].request_id, _answer(batches[2].body, orders_2=E.NOT_LEADER_OR_FOLLOWER))
    assert results == [{("orders", 1): E.NONE}]  # producer 8 is done; producer 7 waits for broker 1
    channel.on_response(batches[1].request_id, _answer(batches[1].body))
    assert results[1] == {("orders", 0): E.NONE, ("orders", 1): E.NONE, ("orders", 2): E.NOT_LEADER_OR_FOLLOWER}


def test_lost_requests_deleted_topics_and_missing_leaders() -> None:
    channel, results = _channel(), []
    channel.send(MarkerRequest(7, 0, 0, True, (("orders", 0), ("orders", 3), ("gone", 0))), results.append)
    [batch] = channel.take_requests()
    channel.on_failure(batch.request_id)
    assert results == [{("gone", 0): E.NONE,  # deleted with its topic: no marker needed
                        ("orders", 3): E.NOT_LEADER_OR_FOLLOWER,  # retried once a leader is known
                        ("orders", 0): E.REQUEST_TIMED_OUT}]  # retried by the coordinator
    assert not channel.in_flight and not channel.take_requests()
