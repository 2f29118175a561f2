"""The leader's side of a follower's fetch: check, read up to the LEO, record the follower's state.

Theory of operation
-------------------
Mirrors the follower branch of Kafka's ``Partition.fetchRecords``. A consumer reads below the
high watermark; a follower reads up to the log end offset, because it *is* how the HW moves: the
follower's next fetch offset tells the leader what it now holds. In order:

1. fence the request's leader epoch and check the follower is a replica we know;
2. if the follower's last fetched epoch does not match our log at its fetch offset, answer the
   diverging epoch and read nothing (the follower truncates and asks again);
3. otherwise read from the fetch offset with no upper bound but the LEO;
4. record the follower's fetch against the LEO as it was *before* the read, so appends racing
   the fetch cannot keep a follower from counting as caught up -- which may move the HW and may
   propose adding the follower to the ISR (returned for the controller).

A fetch the leader cannot serve at that offset answers OFFSET_OUT_OF_RANGE with the leader's log
start and end, which is what the follower needs to reset (see :mod:`.fetcher`).
"""

from __future__ import annotations

from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.replication.fetcher import PartitionFetch, PartitionFetchResult
from kafkalab.replication.partition import AlterPartitionProposal, Partition
from kafkalab.storage import Log


def serve_follower_fetch(
    partition: Partition, log: Log, fetch: PartitionFetch, replica_id: int, broker_epoch: int, now_ms: int,
) -> tuple[PartitionFetchResult, AlterPartitionProposal | None]:
    """Answer one partition of a follower's Fetch; also returns an ISR proposal if one arose."""
    topic, index = fetch.topic, fetch.partition
    try:
        diverging = partition.check_follower_fetch(
            replica_id, fetch.current_leader_epoch, fetch.fetch_offset, fetch.last_fetched_epoch)
    except KafkaError as error:
        return _error(fetch, log, error.error_code), None
    if diverging is not None:
        return PartitionFetchResult(topic, index, ErrorCode.NONE, log.high_watermark, log.log_start_offset,
                                    log.log_end_offset, None, diverging), None
    leader_end_offset = log.log_end_offset
    if not log.log_start_offset <= fetch.fetch_offset <= leader_end_offset:
        return _error(fetch, log, ErrorCode.OFFSET_OUT_OF_RANGE), None
    data = log.read(fetch.fetch_offset, fetch.partition_max_bytes) if fetch.fetch_offset < leader_end_offset else None
    proposal = partition.update_follower_fetch_state(
        replica_id, fetch.fetch_offset, fetch.log_start_offset, now_ms, broker_epoch)
    records = data.read_bytes() if data is not None and data.slices else None
    return PartitionFetchResult(topic, index, ErrorCode.NONE, log.high_watermark, log.log_start_offset,
                                leader_end_offset, records), proposal


def _error(fetch: PartitionFetch, log: Log, code: int) -> PartitionFetchResult:
    return PartitionFetchResult(fetch.topic, fetch.partition, code, log.high_watermark, log.log_start_offset,
                                log.log_end_offset)


__all__ = ["serve_follower_fetch"]
