"""The transaction APIs: decode, call the transaction (or group) coordinator, encode.

The handlers never touch transaction state; :class:`kafkalab.txn.coordinator.TransactionCoordinator`
owns it, and TxnOffsetCommit goes to the group coordinator, which owns the offsets. Each answers
once the coordinator's ``__transaction_state`` record is committed (at once on a lone broker).

FindCoordinator for a transactional id (key_type 1) names the leader of its
``__transaction_state`` partition; the first one creates the topic and, as in Kafka, answers
COORDINATOR_NOT_AVAILABLE (the client asks again). The coordinator answers NOT_COORDINATOR for
ids whose partition another broker leads. AddPartitionsToTxn checks the partitions exist first, as Kafka's ``KafkaApis`` does: if any is
unknown, those get UNKNOWN_TOPIC_OR_PARTITION, the others OPERATION_NOT_ATTEMPTED, and the
transaction is left as it was. AddOffsetsToTxn adds the group's ``__consumer_offsets``
partition, creating the topic first if no group has committed yet, so its marker has a place
to land. DescribeProducers reads each partition's producer state (Kafka's
``ReplicaManager.activeProducerState``).

Worked example: kafka-python's AddPartitionsToTxn v3 for ``app-1`` (producer 4000, epoch 0)
with ``orders-[0, 1]`` answers ``results_by_topic_v3_and_below=[orders: [0: 0, 1: 0]]`` and
the transaction is Ongoing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from kafkalab.broker.coordinator_partitions import CoordinatorAnswer, coordinator_of
from kafkalab.broker.request import PENDING, Request, answer_later
from kafkalab.broker.topics import TopicError
from kafkalab.errors import ErrorCode
from kafkalab.group.offsets import OffsetCommit
from kafkalab.group.partitioner import OFFSETS_TOPIC
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.messages.transactions import (
    ADD_OFFSETS_TO_TXN_RESPONSE,
    ADD_PARTITIONS_TO_TXN_RESPONSE,
    DESCRIBE_PRODUCERS_RESPONSE,
    DESCRIBE_TRANSACTIONS_RESPONSE,
    END_TXN_RESPONSE,
    LIST_TRANSACTIONS_RESPONSE,
    TXN_OFFSET_COMMIT_RESPONSE,
)
from kafkalab.txn.coordinator import TRANSACTION_STATE_TOPIC
from kafkalab.txn.records import TopicPartition

if TYPE_CHECKING:
    from kafkalab.broker.broker import Broker

BATCHED_ADD_PARTITIONS_VERSION = 4  # KIP-890: brokers' batched, verifying form


def transaction_coordinators(broker: Broker, transactional_ids: Sequence[str]) -> list[CoordinatorAnswer]:
    """FindCoordinator's answers for transactional ids: the live leader of each id's
    ``__transaction_state`` partition. As Kafka's ``KafkaApis.getCoordinator``, a request that
    finds the topic missing creates it and answers every id COORDINATOR_NOT_AVAILABLE, which
    clients retry; so does one arriving while the topic cannot be created (too few brokers for
    ``transaction.state.log.replication.factor``) or the id's partition has no live leader."""
    if transactional_ids and broker.topics.get(TRANSACTION_STATE_TOPIC) is None:
        try:
            broker.txn_log.ensure_topic()
        except TopicError:
            pass  # tried again at the client's retry: enough brokers may have registered by then
        return [CoordinatorAnswer(ErrorCode.COORDINATOR_NOT_AVAILABLE) for _ in transactional_ids]
    image, coordinator = broker.image, broker.txn_coordinator
    return [coordinator_of(image, TRANSACTION_STATE_TOPIC, coordinator.partition_of(t)) for t in transactional_ids]


_AP = ADD_PARTITIONS_TO_TXN_RESPONSE.cls
_TOPIC_RESULT = _AP.AddPartitionsToTxnTopicResult
_PARTITION_RESULT = _TOPIC_RESULT.AddPartitionsToTxnPartitionResult


def handle_add_partitions_to_txn(broker: Broker, request: Request) -> Any:
    body = request.body
    if request.header.api_version < BATCHED_ADD_PARTITIONS_VERSION:
        _add_partitions(broker, body.v3_and_below_transactional_id, body.v3_and_below_producer_id,
                        body.v3_and_below_producer_epoch, body.v3_and_below_topics, False, request.now_ms,
                        answer_later(broker.respond, request,
                                     lambda results: _AP(results_by_topic_v3_and_below=_topic_results(results))))
        return PENDING
    transactions = list(body.transactions)
    answers: dict[int, dict[TopicPartition, int]] = {}
    respond = answer_later(broker.respond, request, lambda _: _AP(error_code=0, results_by_transaction=tuple(
        _AP.AddPartitionsToTxnResult(transactional_id=t.transactional_id, topic_results=_topic_results(answers[i]))
        for i, t in enumerate(transactions))))

    def answered(index: int, results: dict[TopicPartition, int]) -> None:
        answers[index] = results
        if len(answers) == len(transactions):
            respond(None)
    for index, t in enumerate(transactions):
        _add_partitions(broker, t.transactional_id, t.producer_id, t.producer_epoch, t.topics, t.verify_only,
                        request.now_ms, functools.partial(answered, index))
    if not transactions:
        respond(None)
    return PENDING


def _add_partitions(broker: Broker, transactional_id: str, producer_id: int, producer_epoch: int, topics: Any,
                    verify_only: bool, now_ms: int, done: Callable[[dict[TopicPartition, int]], None]) -> None:
    partitions = [(t.name, p) for t in topics for p in t.partitions]
    coordinator = broker.txn_coordinator
    if verify_only:
        return done(coordinator.verify_partitions(transactional_id, producer_id, producer_epoch, partitions))
    unknown = {tp for tp in partitions if broker.topics.partition(*tp) is None}
    if unknown:
        return done({tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else ErrorCode.OPERATION_NOT_ATTEMPTED
                     for tp in partitions})
    coordinator.add_partitions(transactional_id, producer_id, producer_epoch, partitions, now_ms,
                               lambda error: done({tp: error for tp in partitions}))


def _topic_results(results: dict[TopicPartition, int]) -> tuple[Any, ...]:
    by_topic: dict[str, list[Any]] = {}
    for (topic, partition), error in results.items():
        by_topic.setdefault(topic, []).append(_PARTITION_RESULT(partition_index=partition, partition_error_code=error))
    return tuple(_TOPIC_RESULT(name=topic, results_by_partition=tuple(parts)) for topic, parts in by_topic.items())


def handle_add_offsets_to_txn(broker: Broker, request: Request) -> Any:
    body = request.body
    try:
        broker.offsets_log.ensure_topic()
    except TopicError:
        pass  # a cluster's controller is creating it; the group's offset commit waits for it
    partition = (OFFSETS_TOPIC, broker.group_coordinator.partition_of(body.group_id))
    respond = answer_later(broker.respond, request, lambda error: ADD_OFFSETS_TO_TXN_RESPONSE.cls(error_code=error))
    broker.txn_coordinator.add_partitions(body.transactional_id, body.producer_id, body.producer_epoch, [partition],
                                          request.now_ms, respond)
    return PENDING


def handle_end_txn(broker: Broker, request: Request) -> Any:
    body = request.body
    broker.txn_coordinator.end_txn(body.transactional_id, body.producer_id, body.producer_epoch, body.committed,
                                   request.now_ms, answer_later(broker.respond, request,
                                                                lambda error: END_TXN_RESPONSE.cls(error_code=error)))
    return PENDING


def handle_txn_offset_commit(broker: Broker, request: Request) -> Any:
    body = request.body
    commits = [OffsetCommit(t.name, p.partition_index, p.committed_offset, p.committed_leader_epoch,
                            p.committed_metadata)
               for t in body.topics for p in t.partitions]
    _R = TXN_OFFSET_COMMIT_RESPONSE.cls

    def response(error_codes: list[int]) -> Any:
        errors = iter(error_codes)
        return _R(topics=tuple(
            _R.TxnOffsetCommitResponseTopic(name=t.name, partitions=tuple(
                _R.TxnOffsetCommitResponseTopic.TxnOffsetCommitResponsePartition(p.partition_index, next(errors))
                for p in t.partitions))
            for t in body.topics))
    errors = broker.group_coordinator.offsets.txn_commit(
        body.group_id, (body.producer_id, body.producer_epoch), body.generation_id, body.member_id,
        body.group_instance_id, commits, request.now_ms, answer_later(broker.respond, request, response))
    return PENDING if errors is None else response(errors)  # PENDING: answered once on the ISR


def handle_describe_transactions(broker: Broker, request: Request) -> Any:
    _R = DESCRIBE_TRANSACTIONS_RESPONSE.cls
    return _R(transaction_states=tuple(_describe(broker, tid) for tid in request.body.transactional_ids))


def _describe(broker: Broker, transactional_id: str) -> Any:
    state_cls = DESCRIBE_TRANSACTIONS_RESPONSE.cls.TransactionState
    error, metadata = broker.txn_coordinator.describe(transactional_id)
    if metadata is None:
        return state_cls(error_code=error, transactional_id=transactional_id)
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(metadata.partitions):
        by_topic.setdefault(topic, []).append(partition)
    return state_cls(
        error_code=0, transactional_id=transactional_id, transaction_state=metadata.state.value,
        transaction_timeout_ms=metadata.timeout_ms, transaction_start_time_ms=metadata.start_ms,
        producer_id=metadata.producer_id, producer_epoch=metadata.producer_epoch,
        topics=tuple(state_cls.TopicData(topic=t, partitions=tuple(p)) for t, p in by_topic.items()))


def handle_list_transactions(broker: Broker, request: Request) -> Any:
    body = request.body
    _R = LIST_TRANSACTIONS_RESPONSE.cls
    found, unknown = broker.txn_coordinator.list_transactions(
        body.state_filters, body.producer_id_filters, body.duration_filter, request.now_ms)
    return _R(error_code=0, unknown_state_filters=tuple(unknown), transaction_states=tuple(
        _R.TransactionState(transactional_id=m.transactional_id, producer_id=m.producer_id,
                            transaction_state=m.state.value) for m in found))


def handle_describe_producers(broker: Broker, request: Request) -> Any:
    _R = DESCRIBE_PRODUCERS_RESPONSE.cls
    topic_cls = _R.TopicResponse
    return _R(topics=tuple(
        topic_cls(name=t.name, partitions=tuple(_producers(broker, t.name, p) for p in t.partition_indexes))
        for t in request.body.topics))


def _producers(broker: Broker, topic: str, index: int) -> Any:
    partition_cls = DESCRIBE_PRODUCERS_RESPONSE.cls.TopicResponse.PartitionResponse
    hosted = broker.topics.partition(topic, index)
    if hosted is None:
        return partition_cls(partition_index=index, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if not hosted.partition.is_leader:
        return partition_cls(partition_index=index, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER)
    return partition_cls(partition_index=index, error_code=0, active_producers=tuple(
        _producer_state(entry) for _, entry in sorted(hosted.log.producer_state.producers.items())))


def _producer_state(entry: Any) -> Any:
    state_cls = DESCRIBE_PRODUCERS_RESPONSE.cls.TopicResponse.PartitionResponse.ProducerState
    first = entry.current_txn_first_offset
    return state_cls(producer_id=entry.producer_id, producer_epoch=entry.producer_epoch, last_sequence=entry.last_seq,
                     last_timestamp=entry.last_timestamp_ms, coordinator_epoch=entry.coordinator_epoch,
                     current_txn_start_offset=-1 if first is None else first)


TXN_HANDLERS: dict[int, Callable[[Broker, Request], Any]] = {
    ApiKey.ADD_PARTITIONS_TO_TXN: handle_add_partitions_to_txn,
    ApiKey.ADD_OFFSETS_TO_TXN: handle_add_offsets_to_txn,
    ApiKey.END_TXN: handle_end_txn,
    ApiKey.TXN_OFFSET_COMMIT: handle_txn_offset_commit,
    ApiKey.DESCRIBE_TRANSACTIONS: handle_describe_transactions,
    ApiKey.LIST_TRANSACTIONS: handle_list_transactions,
    ApiKey.DESCRIBE_PRODUCERS: handle_describe_producers,
}
