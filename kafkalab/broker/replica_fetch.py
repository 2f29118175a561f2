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

Kafka's followers fetch in incremental sessions (KIP-227): :class:`FollowerFetchSessions` keeps
one :class:`~kafkalab.client.fetch_session.FetchSessionHandler` per leader, so after the first
full request a follower names only the partitions whose fetch offset or epochs moved, and the
leader answers only the partitions with records or a new high watermark; the rest are implied.

A Fetch response does not carry the leader's log end offset, so a follower answered
OFFSET_OUT_OF_RANGE learns only the leader's log start offset here (enough for a new replica
to start at it); Kafka asks ListOffsets for the end as well.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import groupby
from typing import Any

from kafkalab.client.fetch_session import FetchSessionHandler
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
    """The sessionless Fetch request body for ``fetches``, grouped by topic in order."""
    topics = tuple(
        _TOPIC(topic=topic, partitions=tuple(_partition(f) for f in group))
        for topic, group in groupby(fetches, key=lambda f: f.topic)
    )
    return _REQ(replica_id=replica_id, max_wait_ms=REPLICA_FETCH_WAIT_MAX_MS, min_bytes=REPLICA_FETCH_MIN_BYTES,
                max_bytes=REPLICA_FETCH_RESPONSE_MAX_BYTES, isolation_level=0, topics=topics)


def _partition(f: PartitionFetch) -> Any:
    return _PARTITION(partition=f.partition, current_leader_epoch=f.current_leader_epoch,
                      fetch_offset=f.fetch_offset, last_fetched_epoch=f.last_fetched_epoch,
                      log_start_offset=f.log_start_offset, partition_max_bytes=f.partition_max_bytes)


class FollowerFetchSessions:
    """A follower's fetch sessions, one per leader it fetches from (Kafka keeps one in each
    ``ReplicaFetcherThread``). Not thread-safe; owned by one broker's fetch driver."""

    def __init__(self) -> None:
        self.handlers: dict[int, FetchSessionHandler] = {}

    def request(self, replica_id: int, leader_id: int, fetches: Iterable[PartitionFetch]) -> Any:
        """The next Fetch to ``leader_id``: full or incremental, as the session stands."""
        handler = self.handlers.setdefault(leader_id, FetchSessionHandler())
        data = handler.build(((f.topic, f.partition), _partition(f)) for f in fetches)
        return _REQ(replica_id=replica_id, max_wait_ms=REPLICA_FETCH_WAIT_MAX_MS, min_bytes=REPLICA_FETCH_MIN_BYTES,
                    max_bytes=REPLICA_FETCH_RESPONSE_MAX_BYTES, isolation_level=0,
                    session_id=data.metadata.session_id, session_epoch=data.metadata.epoch,
                    topics=data.topics(), forgotten_topics_data=data.forgotten_topics())

    def results(self, leader_id: int, response: Any) -> list[PartitionFetchResult]:
        """The leader's answer as the fetcher takes it; nothing if the session refused it
        (the next request is then full)."""
        handler = self.handlers.get(leader_id)
        if handler is not None and not handler.handle_response(response):
            return []
        return follower_fetch_results(response)

    def failed(self, leader_id: int) -> None:
        """No answer came: the next request to ``leader_id`` is full."""
        handler = self.handlers.get(leader_id)
        if handler is not None:
            handler.handle_error()


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
    "FETCH_VERSION", "FollowerFetchSessions", "REPLICA_FETCH_MIN_BYTES", "REPLICA_FETCH_RESPONSE_MAX_BYTES",
    "REPLICA_FETCH_WAIT_MAX_MS",
    "follower_fetch_request", "follower_fetch_results",
]
