"""A leader's ISR changes on their way to the controller: AlterPartition, answers and retries.

Theory of operation
-------------------
Mirrors Kafka's ``AlterPartitionManager``. A partition leader that wants to shrink or expand
its ISR does not change it itself: it proposes the new ISR (with each member's broker epoch,
KIP-903) and keeps acting on the *maximal* ISR until the controller answers
(:class:`~kafkalab.replication.partition.Partition` holds the proposal as pending). The manager
queues the proposals and sends them as one AlterPartition request at a time, topics named by
id (v3). Per partition, the answer either carries the committed ISR with its leader and
partition epochs -- applied through ``on_alter_partition_accepted`` -- or an error:

* OPERATION_NOT_ATTEMPTED, INELIGIBLE_REPLICA: not applied; the partition returns to its
  committed ISR and may propose again later;
* FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION, NEW_LEADER_ELECTED, UNKNOWN_TOPIC_ID, ...: our
  view is stale; the new metadata (a new leader epoch or partition epoch) settles it;
* anything else, a request-wide error (STALE_BROKER_EPOCH, NOT_CONTROLLER) or no answer at
  all: sent again after ``RETRY_BACKOFF_MS``, as long as the partition still waits for it.

Worked example: leader 1 of ``orders-0`` (leader epoch 3, partition epoch 7) proposes ISR
[1, 2]; the request carries ``new_isr_with_epochs [(1, 12), (2, 15)], partition_epoch 7``; the
controller answers ``isr [1, 2], leader_epoch 3, partition_epoch 8`` and the leader applies it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from kafkalab.broker.lifecycle import ControllerRequest
from kafkalab.errors import ErrorCode
from kafkalab.metadata.image import LEADER_RECOVERED, MetadataImage
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.messages.broker_lifecycle import ALTER_PARTITION_REQUEST, ALTER_PARTITION_VERSION
from kafkalab.replication.partition import AlterPartitionProposal
from kafkalab.replication.replica_manager import ReplicaManager

RETRY_BACKOFF_MS = 50  # AlterPartitionManager's retry after a failed request
ALTER_PARTITION_TIMEOUT_MS = 30_000  # controller.socket.timeout.ms
PENDING_MAX = 100_000  # one pending proposal per partition led; a bug guard beyond that

_REQ = ALTER_PARTITION_REQUEST.cls
_TOPIC = _REQ.TopicData
_PARTITION = _TOPIC.PartitionData


class AlterPartitionManager:
    """ISR proposals of one broker. Not thread-safe; owned by the broker."""

    def __init__(self, broker_id: int, replica_manager: ReplicaManager, image: Callable[[], MetadataImage],
                 broker_epoch: Callable[[], int]) -> None:
        self.broker_id = broker_id
        self.replica_manager = replica_manager
        self._image = image
        self._broker_epoch = broker_epoch
        self._queued: list[AlterPartitionProposal] = []
        self._in_flight: tuple[int, list[AlterPartitionProposal]] | None = None
        self._next_send_ms = 0
        self._ids = itertools.count(1)

    def poll(self, now_ms: int) -> ControllerRequest | None:
        """The next AlterPartition to send, if proposals wait and none is in flight."""
        if self.replica_manager.has_alter_partition_proposals():
            self._queued += self.replica_manager.take_alter_partition_proposals()
        assert len(self._queued) <= PENDING_MAX, f"{len(self._queued)} ISR proposals queued"
        if self._in_flight is not None or not self._queued or now_ms < self._next_send_ms:
            return None
        proposals, self._queued = self._queued, []
        topics: dict[str, list[Any]] = {}
        image = self._image()
        sendable = []
        for p in proposals:
            topic = image.topics.get(p.topic)
            if topic is None:
                self._failed(p, ErrorCode.UNKNOWN_TOPIC_ID, now_ms)
                continue
            sendable.append(p)
            topics.setdefault(p.topic, []).append(_PARTITION(
                partition_index=p.partition, leader_epoch=p.leader_epoch, partition_epoch=p.partition_epoch,
                # A leader has recovered its partition by the time it proposes an ISR: Kafka's
                # makeLeader marks one elected uncleanly (RECOVERING) RECOVERED at once (KIP-704).
                leader_recovery_state=LEADER_RECOVERED,
                new_isr_with_epochs=tuple(_PARTITION.BrokerState(b, e) for b, e in zip(p.new_isr, p.new_isr_broker_epochs, strict=True))))
        if not sendable:
            return None
        request_id = next(self._ids)
        self._in_flight = (request_id, sendable)
        body = _REQ(broker_id=self.broker_id, broker_epoch=self._broker_epoch(), topics=tuple(
            _TOPIC(topic_id=image.topics[name].topic_id, partitions=tuple(parts)) for name, parts in topics.items()))
        return ControllerRequest(request_id, ApiKey.ALTER_PARTITION, ALTER_PARTITION_VERSION, body,
                                 ALTER_PARTITION_TIMEOUT_MS)

    def next_deadline_ms(self) -> int | None:
        return self._next_send_ms if self._queued and self._in_flight is None else None

    def on_response(self, request_id: int, body: Any, now_ms: int) -> None:
        if self._in_flight is None or self._in_flight[0] != request_id:
            return
        _, sent = self._in_flight
        self._in_flight = None
        if body.error_code != ErrorCode.NONE:
            for proposal in sent:
                self._failed(proposal, ErrorCode(body.error_code), now_ms)
            return
        by_id = {t.topic_id: t.name for t in self._image().topics.values()}
        answers = {(by_id.get(t.topic_id), p.partition_index): p for t in body.topics for p in t.partitions}
        for proposal in sent:
            answer = answers.get((proposal.topic, proposal.partition))
            if answer is None:
                self._failed(proposal, ErrorCode.UNKNOWN_SERVER_ERROR, now_ms)
            elif answer.error_code != ErrorCode.NONE:
                self._failed(proposal, ErrorCode(answer.error_code), now_ms)
            else:
                hosted = self.replica_manager.partition(proposal.topic, proposal.partition)
                if hosted is not None:
                    hosted.partition.on_alter_partition_accepted(
                        proposal, tuple(answer.isr), answer.leader_epoch, answer.partition_epoch, now_ms)

    def on_failure(self, request_id: int, now_ms: int) -> None:
        """No answer in time: every proposal of the request is retried."""
        if self._in_flight is None or self._in_flight[0] != request_id:
            return
        _, sent = self._in_flight
        self._in_flight = None
        for proposal in sent:
            self._failed(proposal, ErrorCode.REQUEST_TIMED_OUT, now_ms)

    def _failed(self, proposal: AlterPartitionProposal, error: ErrorCode, now_ms: int) -> None:
        hosted = self.replica_manager.partition(proposal.topic, proposal.partition)
        if hosted is not None and hosted.partition.on_alter_partition_failed(proposal, error):
            self._queued.append(proposal)
            self._next_send_ms = now_ms + RETRY_BACKOFF_MS


__all__ = ["ALTER_PARTITION_TIMEOUT_MS", "AlterPartitionManager", "RETRY_BACKOFF_MS"]
