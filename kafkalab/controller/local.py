"""The controller's decisions, written as metadata records and replayed into the images it publishes.

Theory of operation
-------------------
In KRaft every change to the cluster is decided by the active controller, appended to the
metadata log ``__cluster_metadata`` as records, and replayed by every node into a new
:class:`~kafkalab.metadata.image.MetadataImage`; brokers act on the image (become leader, become
follower, create or delete logs). :class:`LocalController` makes those decisions -- topic ids,
replica placement, partition leaders and ISRs (through :mod:`.partition_change`), fencing,
producer id blocks, leader elections, partition reassignments -- and for each one:

1. writes the records Kafka's controller writes for it (:mod:`.record_builders`);
2. appends them as one batch to its :class:`~kafkalab.metadata.record_log.RecordLog` (a list in
   the simulation, ``<data-dir>/__cluster_metadata-0`` for a single node);
3. replays them (:func:`kafkalab.metadata.delta.replay`) -- the image is never edited directly,
   so a node replaying the same log builds the same image;
4. publishes the image synchronously to its subscribers (a lone broker's replica manager).

It is the controller of a one-process cluster. In a KRaft quorum the same decisions are made by
:class:`~kafkalab.controller.quorum_controller.QuorumController`, which runs this class on the
Raft leader and publishes records only once the quorum commits them. In a simulated cluster the
brokers do not subscribe: they reach it through a
:class:`~kafkalab.controller.controller_node.ControllerNode` -- BrokerRegistration, BrokerHeartbeat
(:meth:`LocalController.register_fenced_broker`, :meth:`LocalController.unfence_broker`,
:meth:`LocalController.begin_controlled_shutdown`), AlterPartition -- and fetch its records.

Automatic leader balancing (``auto.leader.rebalance.enable``, default true): a partition whose
leader is not its preferred replica is *imbalanced*. Every ``leader.imbalance.check.interval.seconds``
(300) the runtime calls :meth:`LocalController.balance_partition_leaders`, which runs a
preferred election for up to 1,000 of them at once. KRaft's controller looks at nothing else:
``leader.imbalance.per.broker.percentage``, the ZooKeeper controller's per-broker threshold, is
accepted and ignored, as Kafka 3.x+ in KRaft mode ignores it.

Placement stripes a new topic's partitions over the sorted live brokers: partition ``p`` starts
at broker ``(start + p) mod n`` and its other replicas follow in order, with ``start`` drawn from
the injected ``random.Random`` so that topics spread their leaders (Kafka's placers also draw a
random start, and add rack awareness and shifted followers on top). The first replica is the
preferred leader, and leads at first.

Worked example: brokers [1, 2, 3], start 1, a topic of 3 partitions with replication factor 2
gets replicas [2, 3], [3, 1], [1, 2]; leaders 2, 3, 1; every ISR equals its replicas; leader
epoch 0, partition epoch 0.

Topic names are checked here, as Kafka's controller checks them (``Topic.validate``).
"""

from __future__ import annotations

import random
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from kafkalab.controller import record_builders as builders
from kafkalab.controller.partition_change import (
    RECOVERED, Election, change_partition, fence_broker, validate_alter_partition,
)
from kafkalab.controller.reassignment import Assignment, ReassignmentError, is_reassigning, plan, revert, validate_target
from kafkalab.controller.record_builders import Change
from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.metadata import records as r
from kafkalab.metadata.delta import replay
from kafkalab.metadata.image import NO_LEADER, BrokerRegistration, MetadataImage, PartitionRegistration, TopicImage
from kafkalab.metadata.record_log import SOLE_VOTER_EPOCH, MemoryRecordLog, RecordLog
from kafkalab.metadata.records import METADATA_VERSION_FEATURE, METADATA_VERSION_LEVEL, encode_record
from kafkalab.metadata.snapshot import SnapshotPolicy, register_broker_record

MAX_ELECTIONS_PER_IMBALANCE = 1_000  # Kafka's maxElectionsPerImbalance: one check's batch at most
TOPIC_NAME_CHARS_MAX = 249  # Kafka's Topic.MAX_NAME_LENGTH
PARTITIONS_MAX = 10_000  # a per-topic bound so one request cannot create millions of logs
_LEGAL_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")


class TopicError(KafkaError):
    """A topic operation refused with a specific Kafka error code."""


def validate_topic_name(name: str) -> None:
    """Kafka's ``Topic.validate``: 1-249 characters of ``[a-zA-Z0-9._-]``, not ``.`` or ``..``."""
    if not name or name in (".", ".."):
        raise TopicError(f"topic name {name!r} is illegal", error_code=ErrorCode.INVALID_TOPIC_EXCEPTION)
    if len(name) > TOPIC_NAME_CHARS_MAX:
        raise TopicError(
            f"topic name is {len(name)} characters, more than {TOPIC_NAME_CHARS_MAX}",
            error_code=ErrorCode.INVALID_TOPIC_EXCEPTION,
        )
    if not _LEGAL_NAME.match(name):
        raise TopicError(
            f"topic name {name!r} contains characters outside [a-zA-Z0-9._-]",
            error_code=ErrorCode.INVALID_TOPIC_EXCEPTION,
        )


def check_partition_count(partition_count: int) -> None:
    if not 1 <= partition_count <= PARTITIONS_MAX:
        raise TopicError(
            f"Number of partitions must be in [1, {PARTITIONS_MAX}], got {partition_count}",
            error_code=ErrorCode.INVALID_PARTITIONS,
        )


ImageListener = Callable[[MetadataImage], None]
ElectionResult = tuple[str, int, ErrorCode, str | None]  # (topic, partition, error, message)
ReassignmentResult = tuple[str, int, ErrorCode, str | None]  # (topic, partition, error, message)
OngoingReassignment = tuple[str, int, PartitionRegistration]  # a partition with adding/removing replicas
PRODUCER_ID_BLOCK_SIZE = 1000  # ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE
RECORDS_PER_USER_OP_MAX = 10_000  # QuorumController.MAX_RECORDS_PER_USER_OP: one request's batch


class LocalController:
    """Decides, writes records, replays them and publishes the image. Not thread-safe; owned by
    one process. ``image`` is where a restarted node's log replay left off (empty: a new cluster)."""

    def __init__(
        self, brokers: Sequence[BrokerRegistration], rng: random.Random, log: RecordLog | None = None,
        image: MetadataImage | None = None, clock_ms: Callable[[], int] = lambda: 0,
        snapshots: SnapshotPolicy | None = None,
    ) -> None:
        self._rng = rng
        self.log: RecordLog = MemoryRecordLog() if log is None else log
        self.snapshots = snapshots
        self._clock_ms = clock_ms
        self.image = MetadataImage() if image is None else image
        self._listeners: list[ImageListener] = []
        if METADATA_VERSION_FEATURE not in self.image.features:  # bootstrap, as bootstrap.checkpoint
            self._commit([r.FEATURE_LEVEL_RECORD.cls(name=METADATA_VERSION_FEATURE,
                                                     feature_level=METADATA_VERSION_LEVEL)], publish=False)
        for broker in brokers:
            self._commit(builders.register_broker(broker), publish=False)

    def subscribe(self, listener: ImageListener) -> Callable[[], None]:
        """Receive every image published from now on (call :meth:`publish` to send the current);
        returns a function that stops it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def publish(self) -> None:
        """Send the current image to every subscriber."""
        for listener in self._listeners:
            listener(self.image)

    def _commit(self, records: Sequence[Any], publish: bool = True) -> None:
        """Append a decision's records as one batch, replay them into the next image (Kafka's
        ``QuorumController`` replays what it appends), and publish it."""
        if not records:
            return
        values = [encode_record(record) for record in records]
        now_ms = self._clock_ms()
        last_offset = self.log.append(values, now_ms)
        self.image = replay(self.image, records, last_offset)
        if self.snapshots is not None:
            self.snapshots.appended(sum(map(len, values)), self.image, SOLE_VOTER_EPOCH, now_ms)
        if publish:
            self.publish()

    def register_broker(self, broker: BrokerRegistration) -> None:
        """A broker joins or rejoins (BrokerRegistration), unfenced. A registration of a broker
        the controller still has unfenced is a new incarnation -- the process restarted, its
        memory is gone -- so the old one is fenced first: it leaves every ISR and gives up its
        leaderships, and no leader epoch survives a restart. Partitions that lost every leader
        may then elect the returning broker again (an ISR member coming back)."""
        known = self.image.brokers.get(broker.broker_id)
        if known is not None and not known.fenced:
            self.fence_broker(broker.broker_id)
        records = builders.register_broker(broker)
        brokers = {**self.image.brokers, broker.broker_id: replace(broker, fenced=False)}
        records += builders.partition_changes(self.image, self._reelect(
            self.image, lambda b: b in brokers and not brokers[b].fenced))
        self._commit(records)

    def register_fenced_broker(self, broker: BrokerRegistration) -> int:
        """A broker's BrokerRegistration request, as Kafka's ``ClusterControlManager.registerBroker``
        handles it: a RegisterBrokerRecord with the broker fenced, whose offset becomes the
        broker epoch (returned). An earlier incarnation still unfenced is fenced first, so its
        leaderships and ISR memberships end; the broker is unfenced later by a heartbeat that
        shows it has replayed the log up to its own registration (:meth:`unfence_broker`)."""
        known = self.image.brokers.get(broker.broker_id)
        if known is not None and not known.fenced:
            self.fence_broker(broker.broker_id)
        epoch = self.image.offset + 1  # the offset the RegisterBrokerRecord lands at
        self._commit([register_broker_record(replace(broker, broker_epoch=epoch, fenced=True), fenced=True)])
        return epoch

    def unfence_broker(self, broker_id: int) -> None:
        """Kafka's ``handleBrokerUnfenced``: BrokerRegistrationChangeRecord (fenced -1), then
        partitions that have no leader may elect the broker again if it is in their ISR."""
        broker = self.image.brokers.get(broker_id)
        if broker is None or not broker.fenced:
            return
        records: list[Any] = [r.BROKER_REGISTRATION_CHANGE_RECORD.cls(
            broker_id=broker_id, broker_epoch=broker.broker_epoch, fenced=r.UNFENCE)]
        brokers = {**self.image.brokers, broker_id: replace(broker, fenced=False)}
        records += builders.partition_changes(self.image, self._reelect(
            self.image, lambda b: b in brokers and not brokers[b].fenced and not brokers[b].in_controlled_shutdown))
        self._commit(records)

    def begin_controlled_shutdown(self, broker_id: int, unclean_enabled: Callable[[str], bool] = lambda topic: False) -> None:
        """Kafka's ``handleBrokerInControlledShutdown``: the broker is marked in controlled
        shutdown (BrokerRegistrationChangeRecord, in_controlled_shutdown 1) and leaves every
        ISR it is in, so the partitions it leads elect another in-sync replica -- the same
        ISR and leader changes as fencing, but the broker stays registered and unfenced (its
        followers keep fetching, its clients get NOT_LEADER_OR_FOLLOWER and move on). A
        partition whose ISR is only this broker keeps it as the ISR and loses its leader."""
        broker = self.image.brokers.get(broker_id)
        if broker is None or broker.fenced:
            return
        brokers = self.image.brokers
        partitions = [(t.name, i, p) for t in self.image.topics.values() for i, p in t.partitions.items()]
        changes = fence_broker(partitions, broker_id, lambda b: b in brokers and not brokers[b].fenced
                               and not brokers[b].in_controlled_shutdown, unclean_enabled)
        records: list[Any] = []
        if not broker.in_controlled_shutdown:
            records.append(r.BROKER_REGISTRATION_CHANGE_RECORD.cls(
                broker_id=broker_id, broker_epoch=broker.broker_epoch, in_controlled_shutdown=r.IN_CONTROLLED_SHUTDOWN))
        self._commit(records + builders.partition_changes(self.image, changes))

    def has_leaderships(self, broker_id: int) -> bool:
        """Does ``broker_id`` lead any partition? (Kafka's ``BrokersToIsrs.hasLeaderships``.)"""
        return any(p.leader == broker_id for t in self.image.topics.values() for p in t.partitions.values())

    def fence_broker(self, broker_id: int, unclean_enabled: Callable[[str], bool] = lambda topic: False) -> None:
        """Kafka's ``handleBrokerFenced``, after ``broker.session.timeout.ms`` without a
        heartbeat: the broker leaves every ISR and its partitions elect other leaders; then the
        registration change (BrokerRegistrationChangeRecord, fenced 1)."""
        broker = self.image.brokers.get(broker_id)
        if broker is None or broker.fenced:
            return
        brokers = self.image.brokers
        partitions = [(t.name, i, p) for t in self.image.topics.values() for i, p in t.partitions.items()]
        changes = fence_broker(partitions, broker_id, lambda b: b in brokers and not brokers[b].fenced,
                               unclean_enabled)
        records = builders.partition_changes(self.image, changes)
        records.append(r.BROKER_REGISTRATION_CHANGE_RECORD.cls(
            broker_id=broker_id, broker_epoch=broker.broker_epoch, fenced=r.FENCE))
        self._commit(records)

    def _reelect(self, image: MetadataImage, acceptable: Callable[[int], bool]) -> list[Change]:
        changes = []
        for topic in image.topics.values():
            for index, registration in topic.partitions.items():
                if registration.leader == NO_LEADER:
                    changed = change_partition(registration, registration.isr, acceptable)
                    if changed is not None:
                        changes.append((topic.name, index, changed))
        return changes

    # --- topics --------------------------------------------------------------------------------

    def restore_topic(self, name: str, topic_id: uuid.UUID, partition_count: int, broker_id: int) -> None:
        """Adopt a topic found on disk (a data directory from before the controller kept
        records), led by ``broker_id``, the node that holds it; published with the next change
        or :meth:`publish`. A topic the metadata log already holds is left as the log says."""
        if name in self.image.topics:
            return
        partitions = {p: PartitionRegistration((broker_id,), (broker_id,), broker_id) for p in range(partition_count)}
        self._commit(builders.new_topic(TopicImage(name, topic_id, partitions)), publish=False)

    def create_topic(self, name: str, partition_count: int, replication_factor: int, *,
                     assignment: Sequence[Sequence[int]] | None = None,
                     configs: Mapping[str, str] | None = None, validate_only: bool = False) -> TopicImage:
        """Kafka's ``ReplicationControlManager.createTopic``: placed by the controller, or by
        the caller's ``assignment`` (the replicas of partitions 0, 1, ...); ``configs`` are
        written as ConfigRecords in the same batch as the TopicRecord and PartitionRecords.
        ``validate_only`` checks everything and writes nothing."""
        validate_topic_name(name)
        if name in self.image.topics:
            raise TopicError(f"Topic '{name}' already exists.", error_code=ErrorCode.TOPIC_ALREADY_EXISTS)
        check_partition_count(partition_count if assignment is None else len(assignment))
        topic_id = self.new_topic_id()
        if assignment is None:
            partitions = self._place(range(partition_count), replication_factor)
        else:
            partitions = self._assigned(0, assignment, None)
        topic = TopicImage(name, topic_id, partitions)
        if validate_only:
            return topic
        self._commit(builders.new_topic(topic) + builders.config_changes(r.CONFIG_RESOURCE_TOPIC, name, configs or {}))
        return self.image.topics[name]

    def _assigned(self, first: int, assignment: Sequence[Sequence[int]],
                  replication_factor: int | None) -> dict[int, PartitionRegistration]:
        """Registrations for a manual assignment, checked as Kafka's
        ``validateManualPartitionAssignment``: registered brokers, none twice, one replication
        factor; the ISR is the replicas that are unfenced."""
        brokers = self.image.brokers
        placed = {}
        for offset, replicas in enumerate(assignment):
            validate_target(replicas, brokers)
            if replication_factor is not None and len(replicas) != replication_factor:
                raise TopicError(
                    f"The manual partition assignment includes a partition with {len(replicas)} replica(s), but "
                    f"this is not consistent with previous partitions, which have {replication_factor} replica(s).",
                    error_code=ErrorCode.INVALID_REPLICA_ASSIGNMENT)
            replication_factor = len(replicas)
            isr = tuple(b for b in replicas if not brokers[b].fenced and not brokers[b].in_controlled_shutdown)
            if not isr:
                raise TopicError(
                    f"All brokers specified in the manual partition assignment for partition {first + offset} "
                    f"are fenced or in controlled shutdown.", error_code=ErrorCode.INVALID_REPLICA_ASSIGNMENT)
            placed[first + offset] = PartitionRegistration(tuple(replicas), isr, isr[0])
        return placed

    def new_topic_id(self) -> uuid.UUID:
        """A random (version 4) topic id from the injected generator."""
        return uuid.UUID(int=self._rng.getrandbits(128), version=4)

    def create_partitions(self, name: str, partition_count: int,
                          assignment: Sequence[Sequence[int]] | None = None, *,
                          validate_only: bool = False) -> TopicImage:
        """Kafka's ``createPartitions``: grow ``name`` to ``partition_count`` partitions, placed
        by the controller or by ``assignment`` (the replicas of each new partition)."""
        topic = self._topic(name)
        current = len(topic.partitions)
        if partition_count <= current:
            raise TopicError(
                f"Topic currently has {current} partitions, which is higher than or equal to the "
                f"requested {partition_count}.", error_code=ErrorCode.INVALID_PARTITIONS)
        check_partition_count(partition_count)
        replication_factor = len(topic.partitions[0].replicas)
        if assignment is None:
            added = self._place(range(current, partition_count), replication_factor)
        elif len(assignment) != partition_count - current:
            raise TopicError(f"Attempted to add {partition_count - current} additional partition(s), but only "
                             f"{len(assignment)} assignment(s) were specified.",
                             error_code=ErrorCode.INVALID_REPLICA_ASSIGNMENT)
        else:
            added = self._assigned(current, assignment, replication_factor)
        if not validate_only:
            self._commit([builders.partition_record(topic.topic_id, index, p) for index, p in added.items()])
        return self.image.topics[name]

    def alter_configs(self, resource_type: int, resource_name: str, add: Mapping[str, str],
                      delete: Sequence[str] = ()) -> None:
        """Kafka's ``ConfigurationControlManager``: one ConfigRecord per key set, and one with a
        null value per key removed, as one batch (already validated by the caller)."""
        changes: dict[str, str | None] = {**{key: None for key in delete}, **add}
        self._commit(builders.config_changes(resource_type, resource_name, changes))

    def delete_topic(self, name: str) -> None:
        topic = self._topic(name)
        self._commit([r.REMOVE_TOPIC_RECORD.cls(topic_id=topic.topic_id)])

    def _topic(self, name: str) -> TopicImage:
        topic = self.image.topics.get(name)
        if topic is None:
            raise TopicError(f"This server does not host this topic: {name}",
                             error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return topic

    def _place(self, indexes: range, replication_factor: int) -> Mapping[int, PartitionRegistration]:
        live = sorted(b for b, reg in self.image.brokers.items() if not reg.fenced)
        if not 1 <= replication_factor <= len(live):
            raise TopicError(
                f"Unable to replicate the partition {replication_factor} time(s): The target "
                f"replication factor of {replication_factor} cannot be reached because only "
                f"{len(live)} broker(s) are registered.", error_code=ErrorCode.INVALID_REPLICATION_FACTOR)
        start = self._rng.randrange(len(live)) if len(live) > 1 else 0  # one broker: nothing to draw
        placed = {}
        for p in indexes:
            replicas = tuple(live[(start + p + k) % len(live)] for k in range(replication_factor))
            placed[p] = PartitionRegistration(replicas, replicas, replicas[0])
        return placed

    # --- ISR changes ---------------------------------------------------------------------------

    def alter_partition(
        self, broker_id: int, topic: str, partition: int, leader_epoch: int, partition_epoch: int,
        new_isr: Sequence[tuple[int, int]], leader_recovery_state: int = RECOVERED,
    ) -> tuple[ErrorCode, PartitionRegistration | None]:
        """A leader's ISR proposal (AlterPartition): (NONE, the new registration) or (error, None).
        Its leader recovery state is written too: a leader elected uncleanly says RECOVERED."""
        current = self.image.partition(topic, partition)
        error = validate_alter_partition(current, broker_id, leader_epoch, partition_epoch, new_isr,
                                         self.image.brokers, leader_recovery_state=leader_recovery_state)
        if error != ErrorCode.NONE:
            return error, None
        assert current is not None
        brokers = self.image.brokers

        def acceptable(replica: int) -> bool:
            return replica in brokers and not brokers[replica].fenced
        changed = change_partition(current, [b for b, _ in new_isr], acceptable, target_recovery=leader_recovery_state)
        if changed is None:
            return ErrorCode.NONE, current
        self._commit(builders.partition_changes(self.image, [(topic, partition, changed)]))
        if changed.leader != current.leader:
            # Only completing a reassignment moves the leader here (the old one was removed):
            # the change is made, and the sender learns it no longer leads, as in Kafka.
            return ErrorCode.NEW_LEADER_ELECTED, None
        return ErrorCode.NONE, self.image.partition(topic, partition)

    # --- reassignments -------------------------------------------------------------------------

    def alter_partition_reassignments(
        self, targets: Sequence[tuple[str, int, Sequence[int] | None]],
        unclean_enabled: Callable[[str], bool] = lambda topic: False, *,
        allow_replication_factor_change: bool = True,
    ) -> list[ReassignmentResult]:
        """Kafka's ``alterPartitionReassignments`` (AlterPartitionReassignments, ``kafkalab
        reassign-partitions --execute``): start moving each partition to its target replicas,
        or cancel its reassignment (target None). Each partition succeeds or fails alone; the
        changes are one batch of PartitionChangeRecords (see :mod:`.reassignment`). Without
        ``allow_replication_factor_change`` (KIP-860) a target must keep the partition's
        replication factor."""
        changes: dict[tuple[str, int], Change] = {}
        results: list[ReassignmentResult] = []
        for topic, index, target in targets:
            try:
                changed = self._reassign_one(topic, index, target, unclean_enabled(topic),
                                             allow_replication_factor_change)
            except (TopicError, ReassignmentError) as error:
                results.append((topic, index, ErrorCode(error.error_code), str(error)))
                continue
            if changed is not None and (topic, index) not in changes and len(changes) >= RECORDS_PER_USER_OP_MAX:
                results.append((topic, index, ErrorCode.UNKNOWN_SERVER_ERROR,
                                f"The request changes more than {RECORDS_PER_USER_OP_MAX} partitions."))
                continue
            if changed is not None:
                changes[(topic, index)] = (topic, index, changed)
            results.append((topic, index, ErrorCode.NONE, None))
        self._commit(builders.partition_changes(self.image, list(changes.values())))
        return results

    def _reassign_one(self, topic: str, index: int, target: Sequence[int] | None,
                      unclean: bool, allow_factor_change: bool) -> PartitionRegistration | None:
        registration = self._topic_for_reassignment(topic).partitions.get(index)
        if registration is None:
            raise TopicError(f"Unable to find partition {topic}:{index}.", error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        brokers = self.image.brokers

        def acceptable(replica: int) -> bool:
            return replica in brokers and not brokers[replica].fenced
        if target is not None:
            validate_target(target, brokers)
            factor = len(Assignment.of(registration).original)
            if not allow_factor_change and len(target) != factor:
                raise ReassignmentError(
                    f"The replication factor of {topic}-{index} would change from {factor} to {len(target)}, "
                    f"which this request does not allow.", error_code=ErrorCode.INVALID_REPLICATION_FACTOR)
            return change_partition(registration, registration.isr, acceptable,
                                    assignment=plan(registration.replicas, target))
        if not is_reassigning(registration):
            raise ReassignmentError("No partition reassignment is in progress.",
                                    error_code=ErrorCode.NO_REASSIGNMENT_IN_PROGRESS)
        back = revert(registration)
        if back.unclean and not unclean:
            raise ReassignmentError(f"Unable to revert partition assignment for {topic}:{index} because it "
                                    f"would require an unclean leader election.",
                                    error_code=ErrorCode.INVALID_REPLICA_ASSIGNMENT)
        election = Election.UNCLEAN if unclean else Election.ONLINE
        return change_partition(registration, back.isr, acceptable, election, back.assignment)

    def _topic_for_reassignment(self, name: str) -> TopicImage:
        topic = self.image.topics.get(name)
        if topic is None:
            raise TopicError(f"Unable to find a topic named {name}.", error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return topic

    def list_partition_reassignments(
        self, wanted: Sequence[tuple[str, Sequence[int]]] | None = None,
    ) -> list[OngoingReassignment]:
        """Kafka's ``listPartitionReassignments``: the partitions asked for (None: all) that
        have a reassignment in progress; unknown topics and partitions are left out."""
        if wanted is None:
            wanted = [(name, sorted(topic.partitions)) for name, topic in sorted(self.image.topics.items())]
        ongoing = []
        for name, indexes in wanted:
            for index in indexes:
                registration = self.image.partition(name, index)
                if registration is not None and is_reassigning(registration):
                    ongoing.append((name, index, registration))
        return ongoing

    # --- leader elections ----------------------------------------------------------------------

    def elect_leaders(
        self, election: Election, partitions: Sequence[tuple[str, int]] | None,
    ) -> list[ElectionResult]:
        """Kafka's ``electLeaders`` (ElectLeaders, ``kafkalab leader-election``): PREFERRED moves
        leadership to the first assigned replica if it is alive and in sync; UNCLEAN elects a
        leader for a leaderless partition, out of sync if need be. ``None`` asks for every
        partition, and then those already led as asked are left out of the answer. All the
        changes are one batch of PartitionChangeRecords."""
        wanted = partitions if partitions is not None else [
            (name, index) for name, topic in sorted(self.image.topics.items()) for index in sorted(topic.partitions)]
        changes: dict[tuple[str, int], Change] = {}
        results: list[ElectionResult] = []
        for topic, index in wanted:
            error, message, changed = self._elect_one(topic, index, election)
            if changed is not None and (topic, index) not in changes:
                changes[(topic, index)] = (topic, index, changed)
            if partitions is not None or error != ErrorCode.ELECTION_NOT_NEEDED:
                results.append((topic, index, error, message))
        self._commit(builders.partition_changes(self.image, list(changes.values())))
        return results

    def imbalanced_partitions(self) -> list[tuple[str, int]]:
        """Partitions led by a replica other than the preferred one (the first assigned), in
        topic and partition order."""
        return [(name, index) for name, topic in sorted(self.image.topics.items())
                for index, registration in sorted(topic.partitions.items())
                if registration.replicas and registration.leader != registration.replicas[0]]

    def balance_partition_leaders(self, max_elections: int = MAX_ELECTIONS_PER_IMBALANCE) -> bool:
        """Kafka's ``maybeBalancePartitionLeaders``: a preferred election for up to
        ``max_elections`` imbalanced partitions whose preferred replica is alive and in sync, as
        one batch. Returns True when the batch was full, so more may be waiting."""
        changes: list[Change] = []
        for topic, index in self.imbalanced_partitions():
            if len(changes) >= max_elections:
                break
            _error, _message, changed = self._elect_one(topic, index, Election.PREFERRED)
            if changed is not None:
                changes.append((topic, index, changed))
        self._commit(builders.partition_changes(self.image, changes))
        return len(changes) >= max_elections

    def _elect_one(self, topic: str, index: int, election: Election) -> tuple[ErrorCode, str | None, PartitionRegistration | None]:
        registration = self.image.partition(topic, index)
        if registration is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {topic}-{index}", None
        preferred = registration.replicas[0] if registration.replicas else NO_LEADER
        if (election is Election.PREFERRED and registration.leader == preferred) or (
                election is Election.UNCLEAN and registration.leader != NO_LEADER):
            return ErrorCode.ELECTION_NOT_NEEDED, None, None
        brokers = self.image.brokers
        changed = change_partition(registration, registration.isr,
                                   lambda b: b in brokers and not brokers[b].fenced, election)
        if changed is None:
            unavailable = (ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE if election is Election.PREFERRED
                           else ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE)
            return unavailable, None, None
        return ErrorCode.NONE, None, changed

    # --- producer ids --------------------------------------------------------------------------

    def allocate_producer_ids(self, broker_id: int, broker_epoch: int) -> range:
        """Kafka's AllocateProducerIds: the next block of ids for a broker's InitProducerId,
        written as a ProducerIdsRecord so no id is handed out twice, across restarts too."""
        first = self.image.next_producer_id
        self._commit([r.PRODUCER_IDS_RECORD.cls(broker_id=broker_id, broker_epoch=broker_epoch,
                                                next_producer_id=first + PRODUCER_ID_BLOCK_SIZE)])
        return range(first, first + PRODUCER_ID_BLOCK_SIZE)


__all__ = [
    "PARTITIONS_MAX", "PRODUCER_ID_BLOCK_SIZE", "RECORDS_PER_USER_OP_MAX", "ElectionResult", "OngoingReassignment", "ReassignmentResult", "TOPIC_NAME_CHARS_MAX", "ImageListener", "LocalController",
    "TopicError",
    "check_partition_count", "validate_topic_name",
]
