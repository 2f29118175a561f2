"""Produce: validate each partition's record batch, append it, answer per ``acks``.

Checks before the log sees the bytes, each with Kafka's error code:
``acks`` in {-1, 0, 1} (INVALID_REQUIRED_ACKS, for the whole request); the partition exists
(UNKNOWN_TOPIC_OR_PARTITION: a produce never creates a topic, as in Kafka, where only Metadata
may, with ``auto.create.topics.enable``); this broker leads it (NOT_LEADER_OR_FOLLOWER); for
acks=all, the ISR is at least ``min.insync.replicas`` (NOT_ENOUGH_REPLICAS); the rules Kafka applies only to
what a *client* sends (``AppendOrigin.CLIENT``), each INVALID_RECORD: exactly one v2 batch per
partition, no control batch (markers are the transaction coordinator's), and no producer id
without a base sequence; zstd only from Produce v7 (UNSUPPORTED_COMPRESSION_TYPE). The log
itself checks CRCs (CORRUPT_MESSAGE), sizes (MESSAGE_TOO_LARGE), record counts and, on
compacted topics, keys; a partition in an offline log directory answers KAFKA_STORAGE_ERROR.
Idempotent producers' batches are checked by the log too
(:mod:`kafkalab.storage.producer_state`): a sequence gap is OUT_OF_ORDER_SEQUENCE_NUMBER, an
older epoch INVALID_PRODUCER_EPOCH at every Produce version, and a resent batch is answered
NONE with its original base offset, nothing appended. After each append the parked fetches
watching that partition are re-checked.

The partition stamps its leader epoch into the batch and moves the high watermark. ``acks=1``
is answered at once; ``acks=-1`` once the HW passes the batch, which on a lone broker is at once
and otherwise waits in the produce purgatory (:mod:`kafkalab.broker.delayed_produce`).

With ``acks=0`` there is no response; if any partition failed, the connection is closed so the
producer learns something went wrong (Kafka's ``closeConnection`` for acks=0 errors).

A transactional producer's first batch in a partition is appended only once the transaction
coordinator confirms the partition is in its transaction (KIP-890 part 1,
:mod:`kafkalab.broker.txn_verification`); an unverified one is answered INVALID_TXN_STATE and
never reaches the log. When the coordinator is on another broker the request waits for its answer.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING, Any

from kafkalab.broker.delayed_produce import DELAYED_PRODUCES_MAX, Check, DelayedProduce, PendingPartition
from kafkalab.broker.handlers.fetch import on_partition_appended
from kafkalab.broker.request import NO_RESPONSE, PENDING, Request
from kafkalab.broker.txn_verification import (
    VerificationResults,
    VerifyRequest,
    needs_verification,
    refused,
    verification_enabled,
)
from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.messages.produce import PRODUCE_RESPONSE
from kafkalab.records.header import BatchHeader, Compression, iter_headers

if TYPE_CHECKING:
    from kafkalab.broker.broker import Broker

_R = PRODUCE_RESPONSE.cls
_P = _R.TopicProduceResponse.PartitionProduceResponse
ZSTD_MIN_PRODUCE_VERSION = 7  # KIP-110


class CloseConnection(KafkaError):
    """acks=0 produce failed: the only way to tell the producer is to close the connection."""


def handle_produce(broker: Broker, request: Request) -> Any:
    body = request.body
    if body.acks not in (-1, 0, 1):
        code = ErrorCode.INVALID_REQUIRED_ACKS
        return _R(responses=tuple(
            _R.TopicProduceResponse(t.name, tuple(_P(index=p.index, error_code=code) for p in t.partition_data))
            for t in body.topic_data
        ))
    verify, refused_now = _to_verify(broker, body)
    if verify is None:
        return _append_all(broker, request, refused_now)
    # KIP-890: the transaction's first batch in a partition waits for the coordinator's word.
    answered: list[dict[tuple[str, int], int]] = []
    guards: dict[tuple[str, int], object] = {}  # made only if the answer does not come at once
    channel = broker.txn_verification

    def on_verified(results: VerificationResults) -> None:
        refused_later = {**refused_now, **refused(results, verify.partitions, request.header.api_version)}
        if not guards:
            answered.append(refused_later)
            return
        # The transaction may have ended while the question travelled: a marker voided the guard.
        refused_later.update({tp: ErrorCode.INVALID_TXN_STATE for tp, guard in guards.items()
                              if tp not in refused_later and not channel.guard_holds(tp, verify.producer_id, guard)
                              and needs_verification(broker, *tp, verify.producer_id)})
        channel.drop_guards(verify.producer_id, guards, refused_later)
        broker.dispatch_later(lambda b, r: _append_all(b, r, refused_later), request)

    channel.verify(verify, on_verified)
    if answered:  # the coordinator is on this broker: answered at once
        return _append_all(broker, request, answered[0])
    guards.update(channel.start_guards(verify))
    return PENDING


def _to_verify(broker: Broker, body: Any) -> tuple[VerifyRequest | None, dict[tuple[str, int], int]]:
    """What to ask the coordinator before appending (None: nothing), and partitions refused
    already: a request's transactional batches must all be one producer's, as in Kafka."""
    if not body.transactional_id:
        return None, {}
    wanted: list[tuple[str, int]] = []
    producers: set[tuple[int, int]] = set()
    for topic in body.topic_data:
        for partition in topic.partition_data:
            header = next(iter(iter_headers(partition.records)), None) if partition.records else None
            if header is None or not header.is_transactional or header.producer_id < 0 or header.is_control:
                continue
            producers.add((header.producer_id, header.producer_epoch))
            if needs_verification(broker, topic.name, partition.index, header.producer_id):
                wanted.append((topic.name, partition.index))
    if len(producers) > 1:
        return None, {tp: ErrorCode.INVALID_PRODUCER_ID_MAPPING for tp in wanted}
    if not wanted or not verification_enabled(broker):
        return None, {}
    ((producer_id, producer_epoch),) = producers
    return VerifyRequest(body.transactional_id, producer_id, producer_epoch, tuple(wanted)), {}


def _append_all(broker: Broker, request: Request, refused_partitions: dict[tuple[str, int], int]) -> Any:
    """Append every partition's batch but the refused ones; answer now, never, or later (acks)."""
    body = request.body
    version = request.header.api_version
    results: dict[tuple[str, int], Any] = {}
    waiting: dict[tuple[str, int], PendingPartition] = {}
    for topic in body.topic_data:
        for partition in topic.partition_data:
            key = (topic.name, partition.index)
            if key in refused_partitions:
                results[key] = _refused(broker, key, refused_partitions[key])
                continue
            results[key], check = _append(broker, key, partition.records, version, body.acks, request.now_ms)
            if check is not None:
                waiting[key] = PendingPartition(check)
    if body.acks == 0:
        if any(r.error_code != 0 for r in results.values()):
            raise CloseConnection("a Produce with acks=0 failed on at least one partition")
        return NO_RESPONSE
    if not waiting:
        return _response(body, results)
    return _park(broker, request, results, waiting)


def _refused(broker: Broker, key: tuple[str, int], error_code: int) -> Any:
    hosted = broker.topics.partition(*key)
    return _P(index=key[1], error_code=error_code, base_offset=-1,
              error_message="Partition was not added to the transaction"
              if error_code == ErrorCode.INVALID_TXN_STATE else None,
              log_start_offset=hosted.log.log_start_offset if hosted is not None else -1)


def _append(
    broker: Broker, key: tuple[str, int], records: bytes | memoryview | None, version: int, acks: int, now_ms: int,
) -> tuple[Any, Check | None]:
    """Append one partition's batch as leader: (its answer, how to check acks=all if it must wait)."""
    topic, index = key
    hosted = broker.topics.partition(topic, index)
    try:
        if hosted is None:  # produce never creates a topic; Metadata may (auto.create.topics.enable)
            raise KafkaError(f"This server does not host this topic-partition: {topic}-{index}",
                             error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        broker.check_online(hosted.log)
        header = _check_batches(records, version)
        assert records is not None
        info = hosted.partition.append_records_to_leader(records, acks, now_ms, in_place=True)  # the frame is ours
    except KafkaError as error:
        broker.on_storage_error(error)
        # As Kafka's ReplicaManager: no offset (-1), but the log start offset when the log exists.
        start = hosted.log.log_start_offset if hosted is not None else -1
        return _P(index=index, error_code=error.error_code, error_message=str(error), base_offset=-1,
                  log_start_offset=start), None
    on_partition_appended(broker, topic, index)
    if header is not None and header.is_transactional:
        broker.txn_verification.written(key, header.producer_id)
    answer = _P(index=index, error_code=0, base_offset=info.first_offset,
                log_append_time_ms=info.log_append_time_ms, log_start_offset=info.log_start_offset)
    if acks != -1:
        return answer, None
    required_offset = info.last_offset + 1
    check = functools.partial(hosted.partition.check_enough_replicas_reach_offset, required_offset)
    done, outcome = check()
    if done:
        return (answer if outcome == ErrorCode.NONE else dataclasses.replace(answer, error_code=outcome)), None
    return answer, check


def _park(broker: Broker, request: Request, results: dict[tuple[str, int], Any],
          waiting: dict[tuple[str, int], PendingPartition]) -> Any:
    """Wait in the produce purgatory until every waiting partition's HW passes its batch."""
    body, header, connection_id = request.body, request.header, request.connection_id
    if broker.produce_purgatory.watched() >= DELAYED_PRODUCES_MAX:
        for key in waiting:
            results[key] = dataclasses.replace(results[key], error_code=ErrorCode.REQUEST_TIMED_OUT)
        return _response(body, results)

    def respond(errors: dict[Any, ErrorCode]) -> None:
        for key, error in errors.items():
            if error != ErrorCode.NONE:
                results[key] = dataclasses.replace(results[key], error_code=error)
        broker.respond(connection_id, ApiKey.PRODUCE, header.api_version, header.correlation_id,
                       _response(body, results))

    operation = DelayedProduce(body.timeout_ms, waiting, respond,
                               name=f"produce-{connection_id}-{header.correlation_id}")
    broker.produce_purgatory.try_complete_else_watch(operation, sorted(waiting))
    return PENDING


def _response(body: Any, results: dict[tuple[str, int], Any]) -> Any:
    return _R(responses=tuple(
        _R.TopicProduceResponse(t.name, tuple(results[(t.name, p.index)] for p in t.partition_data))
        for t in body.topic_data
    ))


def _check_batches(records: bytes | memoryview | None, version: int) -> BatchHeader | None:
    """The batch's header once the client's rules are checked (None: no complete batch)."""
    if not records:
        raise KafkaError("Produce carries no record batch", error_code=ErrorCode.INVALID_RECORD)
    headers = iter(iter_headers(records))
    header = next(headers, None)
    if header is None:
        return None  # no complete batch: the log reports the torn bytes as CORRUPT_MESSAGE
    if header.magic != 2:
        raise KafkaError(
            f"Produce v{version} requires magic 2 record batches, got magic {header.magic}",
            error_code=ErrorCode.INVALID_RECORD,
        )
    if next(headers, None) is not None:
        raise KafkaError(  # a v2 producer sends one batch per partition per request
            "One and only one record batch is expected per partition; found more than one",
            error_code=ErrorCode.INVALID_RECORD,
        )
    if header.is_control:
        raise KafkaError("Clients are not allowed to write control records",
                         error_code=ErrorCode.INVALID_RECORD)
    if header.producer_id >= 0 and header.base_sequence < 0:
        raise KafkaError(
            f"Invalid sequence number {header.base_sequence} in record batch with producerId "
            f"{header.producer_id}", error_code=ErrorCode.INVALID_RECORD,
        )
    if header.compression == Compression.ZSTD and version < ZSTD_MIN_PRODUCE_VERSION:
        raise KafkaError(
            f"zstd batches need Produce v{ZSTD_MIN_PRODUCE_VERSION}+, got v{version}",
            error_code=ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
        )
    return header
