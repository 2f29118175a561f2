"""Fetch: read whole batches up to the high watermark, waiting for ``min_bytes`` if asked.

Size limits follow KIP-74: ``max_bytes`` bounds the response and ``partition_max_bytes`` each
partition, but the first batch found is returned whole even when it is larger than either
limit, so a consumer can always make progress. Reads stop at the high watermark (which is also
the last stable offset: kafkalab has no transactions yet, so read_committed and
read_uncommitted see the same records and ``aborted_transactions`` is empty).

If the partitions together hold fewer than ``min_bytes`` and ``max_wait_ms`` > 0, the request
is parked as a ``DelayedFetch`` in the broker's fetch purgatory (see
:mod:`kafkalab.broker.delayed_fetch`) and answered when a produce brings enough bytes
(``check_and_complete`` on the partition) or the timing wheel reaches ``max_wait_ms``. Fetch sessions (KIP-227) are not kept:
``session_id`` 0 in every response tells clients to send full fetch requests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkalab.broker.delayed_fetch import DELAYED_FETCHES_MAX, DelayedFetch
from kafkalab.broker.request import PENDING, Request
from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.messages.fetch import FETCH_RESPONSE
from kafkalab.protocol.types import RecordsParts

if TYPE_CHECKING:
    from kafkalab.broker.broker import Broker

_R = FETCH_RESPONSE.cls
_T = _R.FetchableTopicResponse
_P = _T.PartitionData


def handle_fetch(broker: Broker, request: Request) -> Any:
    body = request.body
    response, size_bytes, had_error = read_partitions(broker, body)
    enough = size_bytes >= body.min_bytes or had_error
    if enough or body.max_wait_ms <= 0 or len(broker.parked_fetches) >= DELAYED_FETCHES_MAX:
        return response
    header, connection_id = request.header, request.connection_id

    def respond(completed: Any) -> None:
        broker.parked_fetches.pop(connection_id, None)
        broker.respond(connection_id, ApiKey.FETCH, header.api_version, header.correlation_id, completed)

    operation = DelayedFetch(
        connection_id, body.max_wait_ms, body.min_bytes, lambda: read_partitions(broker, body), respond,
        name=f"fetch-{connection_id}-{header.correlation_id}",
    )
    keys = sorted({(t.topic, p.partition) for t in body.topics for p in t.partitions})
    broker.parked_fetches[connection_id] = operation
    # If a re-check completes it inside this call, its response is already in the outbox.
    broker.fetch_purgatory.try_complete_else_watch(operation, keys)
    return PENDING


def read_partitions(broker: Broker, body: Any) -> tuple[Any, int, bool]:
    """(response, record bytes found, whether any partition failed)."""
    remaining_bytes = max(body.max_bytes, 0)
    min_one_message = True
    size_total = 0
    had_error = False
    topics = []
    for topic in body.topics:
        partitions = []
        for wanted in topic.partitions:
            limit = min(wanted.partition_max_bytes, remaining_bytes)
            data, size_bytes = _read_one(broker, topic.topic, wanted, limit, min_one_message)
            had_error = had_error or data.error_code != 0
            if size_bytes:
                min_one_message = False
                remaining_bytes = max(remaining_bytes - size_bytes, 0)
                size_total += size_bytes
            partitions.append(data)
        topics.append(_T(topic=topic.topic, partitions=tuple(partitions)))
    return _R(error_code=0, session_id=0, responses=tuple(topics)), size_total, had_error


def _read_one(broker: Broker, topic: str, wanted: Any, limit: int, min_one_message: bool) -> tuple[Any, int]:
    log = broker.topics.log(topic, wanted.partition)
    if log is None:
        return _P(partition_index=wanted.partition, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                  high_watermark=-1, records=None), 0
    high_watermark = log.high_watermark
    log_start_offset = log.log_start_offset
    fetch_offset = wanted.fetch_offset
    if fetch_offset > high_watermark or fetch_offset < log_start_offset:
        return _partition(wanted, ErrorCode.OFFSET_OUT_OF_RANGE, high_watermark, log_start_offset, None), 0
    if limit <= 0 and not min_one_message:
        return _partition(wanted, 0, high_watermark, log_start_offset, b""), 0
    try:
        info = log.read(fetch_offset, max(limit, 1), max_offset=high_watermark, min_one_message=min_one_message)
    except KafkaError as error:
        return _partition(wanted, error.error_code, high_watermark, log_start_offset, None), 0
    slices = tuple(info.slices)  # the storage layer's file slices, sent as they are
    size_bytes = sum(s.size_bytes for s in slices)
    return _partition(wanted, 0, high_watermark, log_start_offset, RecordsParts(slices)), size_bytes


def _partition(wanted: Any, error_code: int, high_watermark: int, log_start_offset: int, records: Any) -> Any:
    """A partition's answer; failed reads carry no records and a null aborted_transactions,
    successful ones an empty list (kafkalab writes no transactions yet)."""
    return _P(partition_index=wanted.partition, error_code=error_code, high_watermark=high_watermark,
              last_stable_offset=high_watermark, log_start_offset=log_start_offset,
              aborted_transactions=None if records is None else (), records=records)


def on_partition_appended(broker: Broker, topic: str, partition: int) -> None:
    """Complete the parked fetches on this partition that now have ``min_bytes``."""
    broker.fetch_purgatory.check_and_complete((topic, partition))
