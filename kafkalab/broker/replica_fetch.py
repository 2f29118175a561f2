"""Follower fetches on the wire: the replica manager's fetches as real Fetch requests, and back.

Theory of operation
-------------------
The replication layer speaks in plain values (:class:`~kafkalab.replication.fetcher.PartitionFetch`
out, :class:`~kafkalab.replication.fetcher.PartitionFetchResult` back); this module translates
them at the broker's edge into the Fetch messages Kafka's followers send (STYLE rule 4). A
follower's Fetch differs from a consumer's in three fields: ``replica_id`` is the follower's node
id, each partition names its ``last_fetched_epoch`` (v12, KIP-595), and the answer may carry
``diverging_epoch`` instead of records.

Kafka's replica fetcher waits ``replica.fetch.wait.max.ms`` (500) for at least
``replica.fetch.min.bytes`` (1), takes at most ``replica.fetch.response.max.bytes`` (10 MiB) in
all and ``replica.fetch.max.bytes`` (1 MiB) per partition. Worked example: a follower of
``orders-0`` whose log ends at 120 in epoch 4 sends ``Fetch v12 {replica_id: 2, max_wait_ms:
500, min_bytes: 1, topics: [orders: [partition 0, current_leader_epoch 5, fetch_offset 120,
last_fetched_epoch 4, log_start_offset 0, partition_max_bytes 1048576]]}``.

A Fetch response does not carry the leader's log end offset, so a follower answered
OFFSET_OUT_OF_RANGE learns only the leader's log start offset here (enough for a new replica
to start at it); Kafka asks ListOffsets for the end as well.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import groupby
from typing import Any

from kafkalab.protocol.messages.fetch import FETCH_REQUEST
from kafkalab.replication.fetcher import PartitionFetch, PartitionFetchResult
from kafkalab.replication.truncation import EpochEndOffset

FETCH_VERSION = 12  # the newest Fetch kafkalab speaks: last_fetched_epoch and diverging_epoch
REPLICA_FETCH_WAIT_MAX_MS = 500  # replica.fetch.wait.max.ms
REPLICA_FETCH_MIN_BYTES = 1  # replica.fetch.min.bytes
REPLICA_FETCH_RESPONSE_MAX_BYTES = 10 * 1024 * 1024  # replica.fetch.response.max.bytes

_REQ = FETCH_REQUEST.cls
_TOPIC = _REQ.FetchTopic
_PARTITION = _TOPIC.FetchPartition


def follower_fetch_request(replica_id: int, fetches: Iterable[PartitionFetch]) -> Any:
    """The Fetch request body for ``fetches``, grouped by topic in order."""
    topics = tuple(
        _TOPIC(topic=topic, partitions=tuple(
            _PARTITION(partition=f.partition, current_leader_epoch=f.current_leader_epoch,
                       fetch_offset=f.fetch_offset, last_fetched_epoch=f.last_fetched_epoch,
                       log_start_offset=f.log_start_offset, partition_max_bytes=f.partition_max_bytes)
            for f in group))
        for topic, group in groupby(fetches, key=lambda f: f.topic)
    )
    return _REQ(replica_id=replica_id, max_wait_ms=REPLICA_FETCH_WAIT_MAX_MS, min_bytes=REPLICA_FETCH_MIN_BYTES,
                max_bytes=REPLICA_FETCH_RESPONSE_MAX_BYTES, isolation_level=0, topics=topics)


def follower_fetch_results(response: Any) -> list[PartitionFetchResult]:
    """The leader's answer, partition by partition, as the follower's fetcher takes it."""
    results = []
    for topic in response.responses:
        for data in topic.partitions:
            diverging = data.diverging_epoch
            results.append(PartitionFetchResult(
                topic.topic, data.partition_index, data.error_code, data.high_watermark,
                data.log_start_offset, -1, bytes(data.records) if data.records else None,
                None if diverging is None else EpochEndOffset(diverging.epoch, diverging.end_offset)))
    return results


__all__ = [
    "FETCH_VERSION", "REPLICA_FETCH_MIN_BYTES", "REPLICA_FETCH_RESPONSE_MAX_BYTES", "REPLICA_FETCH_WAIT_MAX_MS",
    "follower_fetch_request", "follower_fetch_results",
]
