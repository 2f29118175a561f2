"""kafkalab's consumer, sans I/O: requests out, answers in, time given, records handed over.

Theory of operation
-------------------
:class:`ConsumerCore` is Kafka's ``KafkaConsumer`` with the sockets taken out. Its owner -- the
socket adapter (:mod:`.network`) or the simulation (:class:`kafkalab.sim.cluster.SimCluster`) --
drives it with the calls :class:`~kafkalab.client.membership.GroupMember` taught::

    for request in core.poll_requests(now_ms):       # what is due, to which broker
        send(request)
    core.on_response(request.request_id, body, now_ms)   # or core.on_failure(request_id, now_ms)
    records = core.take_records()                     # what poll() returns

Five kinds of request leave it, each kept apart so one never waits behind another:

* **group membership** -- the :class:`GroupMember`'s FindCoordinator, JoinGroup, SyncGroup,
  Heartbeat, LeaveGroup, passed through untouched. While a rebalance listener call is pending
  (:meth:`take_rebalance_events` not yet called) the member is held, so an application can
  commit its revoked partitions before the member rejoins, as Kafka's ``onJoinPrepare`` allows;
* **Metadata** for the leaders of the partitions it reads;
* **OffsetFetch** for partitions the group just assigned (their committed offsets);
* **ListOffsets** per leader for partitions that need ``auto.offset.reset`` or a seek to the
  beginning or end (:mod:`.positions` holds each partition's state);
* **Fetch**, at most one in flight per broker (:mod:`.fetcher`), to the leader, or to the
  preferred read replica a leader named (KIP-392: with ``client.rack`` set and the brokers'
  ``replica.selector.class``), until ``metadata.max.age.ms`` passes or that replica answers an
  error; and **OffsetCommit** for
  ``commit_async``, ``commit_sync`` and ``enable.auto.commit`` every ``auto.commit.interval.ms``.

Manual assignment. ``assign()`` joins no group, but with a ``group.id`` the consumer still
uses the group's offsets, as Kafka's does: it finds the group coordinator itself
(FindCoordinator), starts each partition from the group's committed offset (OffsetFetch), and
commits as a consumer outside any generation -- generation -1, an empty member id and no
``group.instance.id``, which a coordinator accepts while no member of the group holds a
generation. Without a ``group.id`` a commit raises :class:`InvalidGroupIdError` (Kafka's
``InvalidGroupIdException``).

Worked example: ``subscribe(["orders"])`` on a group of one. The member finds the coordinator
and joins; SyncGroup assigns orders-0 and orders-1; the listener event ``assigned`` is queued.
OffsetFetch answers 7 for orders-0 and -1 (none) for orders-1, so orders-0 starts at 7 and
orders-1 asks ListOffsets for ``latest`` (say 12). Metadata says broker 2 leads both, so one
Fetch goes to broker 2 at ``{orders-0: 7, orders-1: 12}``; its answer is buffered and
``take_records()`` hands out up to ``max.poll.records`` of it, moving the positions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafkalab.client.consumer import requests as build
from kafkalab.client.consumer.config import ConsumerConfig
from kafkalab.client.consumer.fetcher import ConsumerRecord, fetch_request, partition_records
from kafkalab.client.fetch_session import FetchSessionHandler
from kafkalab.client.consumer.positions import EARLIEST, LATEST, PartitionState, SubscriptionState
from kafkalab.client.consumer_protocol import NO_GENERATION
from kafkalab.client.membership import Coordinator, GroupMember, MemberConfig, MemberState
from kafkalab.errors import ConfigError, ErrorCode, KafkaError, OffsetOutOfRangeError
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.storage.checkpoints import TopicPartition

CommitCallback = Callable[[dict[TopicPartition, int], KafkaError | None], None]
METADATA_ERRORS = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                             ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.FENCED_LEADER_EPOCH,
                             ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.KAFKA_STORAGE_ERROR})
COORDINATOR_ERRORS = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE})
NO_MEMBER_ID = ""  # OffsetCommit's member id from a consumer outside any generation
RETRIABLE_OFFSET_ERRORS = frozenset({ErrorCode.UNSTABLE_OFFSET_COMMIT, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                                     ErrorCode.OFFSET_NOT_AVAILABLE, *METADATA_ERRORS})


class InvalidGroupIdError(KafkaError):
    """Offsets committed, or a group joined, without a ``group.id`` (Kafka's ``InvalidGroupIdException``)."""

    error_code = ErrorCode.INVALID_GROUP_ID

    def __init__(self) -> None:
        super().__init__("To use the group management or offset commit APIs, you must provide a valid "
                         "group.id in the consumer configuration.")


@dataclass(frozen=True, slots=True)
class Request:
    """A request to send: ``destination`` is a broker's node id, or None for any broker."""

    request_id: int
    api_key: int
    version: int
    body: Any
    destination: int | None
    timeout_ms: int


@dataclass(frozen=True, slots=True)
class RebalanceEvent:
    """What a ``ConsumerRebalanceListener`` hears: ``revoked``, ``assigned`` or ``lost``.
    ``positions`` are a revoked partition's positions when it was taken away: what a listener
    commits so the next owner starts where this consumer stopped."""

    kind: str
    partitions: tuple[TopicPartition, ...]
    positions: Mapping[TopicPartition, int] = field(default_factory=dict)


class ConsumerCore:
    """One consumer's state and protocol logic. Not thread-safe; owned by one poll loop."""

    def __init__(self, config: ConsumerConfig) -> None:
        self.config = config
        self.subscriptions = SubscriptionState(config.auto_offset_reset)
        self.member: GroupMember | None = None
        self.brokers: dict[int, tuple[str, int]] = {}  # node id -> (host, port), from Metadata
        self.leaders: dict[TopicPartition, int] = {}
        self.read_replicas: dict[TopicPartition, tuple[int, int]] = {}  # KIP-392: (node, until_ms)
        self.error: KafkaError | None = None  # raised by the adapter's next poll()
        self._events: list[RebalanceEvent] = []
        self._notifications_seen = 0
        self._in_flight: dict[int, tuple[str, Any]] = {}  # kind is one of _RESPONSES' keys  # request id -> (kind, context)
        self._next_request_id = 0
        self._metadata_due_ms: int | None = 0
        self._fetching_from: set[int] = set()
        self._fetch_sessions: dict[int, FetchSessionHandler] = {}  # by broker (KIP-227)
        self._commits: list[tuple[dict[TopicPartition, int], CommitCallback | None]] = []
        self._next_auto_commit_ms: int | None = None
        self._assigned_coordinator: Coordinator | None = None  # the group's coordinator, after assign()
        self._find_coordinator_due_ms = 0

    # -- what the application calls -------------------------------------------------------------------

    def subscribe(self, topics: list[str], now_ms: int) -> None:
        """Join ``group.id`` and consume whatever its assignor gives this member."""
        c = self.config
        if c.group_id is None:
            raise InvalidGroupIdError()
        if self.member is not None or self.subscriptions.partitions:
            raise ConfigError("this consumer is already subscribed or assigned; create another")
        self.member = GroupMember(MemberConfig(
            c.group_id, tuple(topics), c.partition_assignment_strategy, c.session_timeout_ms,
            c.heartbeat_interval_ms, c.max_poll_interval_ms, c.retry_backoff_ms, c.request_timeout_ms,
            c.group_instance_id, c.client_rack))
        self.subscriptions.topics = tuple(topics)
        self.member.start(now_ms)
        if c.enable_auto_commit:
            self._next_auto_commit_ms = now_ms + c.auto_commit_interval_ms

    def assign(self, partitions: list[TopicPartition], now_ms: int = 0) -> None:
        """Consume exactly ``partitions``, no group membership (Kafka's ``assign``); with a
        ``group.id``, each starts from the group's committed offset, and positions are
        committed every ``auto.commit.interval.ms`` under ``enable.auto.commit``."""
        if self.member is not None:
            raise ConfigError("assign() after subscribe(): a consumer does one or the other")
        in_group = self.config.group_id is not None
        self.subscriptions.remove(tuple(self.subscriptions.partitions))
        self.subscriptions.add(tuple(partitions), in_group=in_group)
        if in_group and self.config.enable_auto_commit and self._next_auto_commit_ms is None:
            self._next_auto_commit_ms = now_ms + self.config.auto_commit_interval_ms
        self._metadata_due_ms = 0

    def assignment(self) -> list[TopicPartition]:
        return sorted(self.subscriptions.partitions)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._owned(tp)
        self.subscriptions.seek(tp, offset)

    def seek_to_beginning(self, tps: list[TopicPartition]) -> None:
        for tp in tps:
            self._owned(tp)
            self.subscriptions.seek_to(tp, EARLIEST)

    def seek_to_end(self, tps: list[TopicPartition]) -> None:
        for tp in tps:
            self._owned(tp)
            self.subscriptions.seek_to(tp, LATEST)

    def position(self, tp: TopicPartition) -> int | None:
        """The next offset ``poll`` returns for ``tp``; None until the offset is known."""
        return self._owned(tp).position

    def _owned(self, tp: TopicPartition) -> Any:
        if tp not in self.subscriptions.partitions:
            raise KafkaError(f"{tp[0]}-{tp[1]} is not assigned to this consumer",
                             error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return self.subscriptions.partitions[tp]

    def take_records(self, now_ms: int) -> list[ConsumerRecord]:
        """Up to ``max.poll.records`` fetched records; queues an auto commit when one is due."""
        if self.error is not None:
            error, self.error = self.error, None
            raise error
        if self._next_auto_commit_ms is not None and now_ms >= self._next_auto_commit_ms:
            self._next_auto_commit_ms = now_ms + self.config.auto_commit_interval_ms
            self.commit_async(None, None)
        return self.subscriptions.drain(self.config.max_poll_records)

    def take_rebalance_events(self) -> list[RebalanceEvent]:
        """Listener calls due, oldest first; taking them lets the member go on."""
        events, self._events = self._events, []
        return events

    def commit_async(self, offsets: Mapping[TopicPartition, int] | None,
                     callback: CommitCallback | None) -> None:
        """Queue an OffsetCommit of ``offsets`` (None: every position); ``callback`` hears the answer."""
        if self.config.group_id is None:
            raise InvalidGroupIdError()
        chosen = dict(self.subscriptions.consumed_offsets() if offsets is None else offsets)
        if chosen:
            self._commits.append((chosen, callback))
        elif callback is not None:
            callback({}, None)

    def close(self, now_ms: int) -> None:
        if self.member is not None:
            self.member.leave(now_ms)
        self._sync_membership()

    @property
    def coordinator(self) -> Coordinator | None:
        """The group coordinator: the member's, or after ``assign()`` the one found for commits."""
        return self.member.coordinator if self.member is not None else self._assigned_coordinator

    @property
    def closed(self) -> bool:
        """Done with the group: left it, or (after ``assign()``) no commit waits for an answer."""
        if self.member is None:
            return not self._commits and not self.in_flight("commit")
        return self.member.state in (MemberState.LEFT, MemberState.FATAL)

    # -- what the adapter calls -------------------------------------------------------------------------

    def poll_requests(self, now_ms: int) -> list[Request]:
        """Every request due now, commits first (so they precede the member's next JoinGroup)."""
        out: list[Request] = []
        self._commit_requests(out)
        if self.member is not None and not self._events:
            for item in self.member.poll(now_ms):
                version = min(item.version, build.VERSIONS[item.api_key])
                self._add(out, "member", item, item.api_key, item.body, item.destination, version)
            self._sync_membership()
        self._commit_requests(out)  # an eager revoke in the member's poll queues an auto commit
        self._find_coordinator_request(out, now_ms)
        self._metadata_request(out, now_ms)
        if self.leaders or not self.subscriptions.partitions:
            self._offset_fetch_request(out)
            self._list_offsets_requests(out)
            self._fetch_requests(out, now_ms)
        return out

    def on_response(self, request_id: int, body: Any, now_ms: int) -> None:
        entry = self._in_flight.pop(request_id, None)
        if entry is None:
            return  # an answer to a request given up on
        kind, context = entry
        self._RESPONSES[kind](self, context, body, now_ms)
        self._sync_membership()

    def on_failure(self, request_id: int, now_ms: int) -> None:
        """No answer (timeout, lost connection): retry the request's work after a fresh Metadata."""
        entry = self._in_flight.pop(request_id, None)
        if entry is None:
            return
        kind, context = entry
        if kind == "member":
            assert self.member is not None, "member requests come only from a subscribed consumer"
            self.member.on_failure(context.api_key, now_ms, context.request_id)
            self._sync_membership()
        elif kind == "fetch":
            self._fetching_from.discard(context[0])
            self._fetch_sessions[context[0]].handle_error()
        elif kind == "commit":
            self._commit_done(context, KafkaError("OffsetCommit got no answer", error_code=ErrorCode.REQUEST_TIMED_OUT))
        if kind in ("commit", "offset-fetch", "find-coordinator"):
            self._coordinator_unknown(now_ms)  # as Kafka's markCoordinatorUnknown
        if kind != "member":
            self._metadata_due_ms = now_ms + self.config.retry_backoff_ms

    def next_deadline_ms(self) -> int | None:
        """When :meth:`poll_requests` next has something to do without an answer arriving (auto
        commit is not among them: it happens in the application's poll, as in Kafka)."""
        # A request in flight is rescheduled by its answer or its failure, not by the clock.
        times = [] if self._metadata_due_ms is None or self.in_flight("metadata") else [self._metadata_due_ms]
        if self._needs_assigned_coordinator() and not self.in_flight("find-coordinator"):
            times.append(self._find_coordinator_due_ms)
        if self.member is not None and not self._events:
            member_due = self.member.next_deadline_ms()
            times += [member_due] if member_due is not None else []
        return min(times) if times else None

    def in_flight(self, kind: str) -> int:
        return sum(1 for k, _ in self._in_flight.values() if k == kind)

    # -- requests ---------------------------------------------------------------------------------------

    def _add(self, out: list[Request], kind: str, context: Any, api_key: int, body: Any,
             destination: int | None, version: int) -> None:
        self._next_request_id += 1
        self._in_flight[self._next_request_id] = (kind, context)
        timeout_ms = getattr(context, "timeout_ms", self.config.request_timeout_ms)
        if kind == "fetch":  # a fetch may be parked for fetch.max.wait.ms on top
            timeout_ms += self.config.fetch_max_wait_ms
        out.append(Request(self._next_request_id, api_key, version, body, destination, timeout_ms))

    def _coordinator(self) -> int | None:
        """The coordinator's node id once OffsetFetch and OffsetCommit may go to it."""
        member = self.member
        if member is None:
            return None if self._assigned_coordinator is None else self._assigned_coordinator.node_id
        if member.coordinator is None or member.state is not MemberState.STABLE:
            return None
        return member.coordinator.node_id

    def _needs_assigned_coordinator(self) -> bool:
        """After ``assign()`` with a group.id: commits or committed offsets wait for a coordinator."""
        if self.member is not None or self.config.group_id is None or self._assigned_coordinator is not None:
            return False
        return bool(self._commits) or bool(self.subscriptions.in_state(PartitionState.AWAITING_COMMITTED))

    def _find_coordinator_request(self, out: list[Request], now_ms: int) -> None:
        if (not self._needs_assigned_coordinator() or now_ms < self._find_coordinator_due_ms
                or self.in_flight("find-coordinator")):
            return
        assert self.config.group_id is not None, "only a consumer with a group.id looks for its coordinator"
        self._add(out, "find-coordinator", None, ApiKey.FIND_COORDINATOR,
                  build.find_coordinator(self.config.group_id), None, build.VERSIONS[ApiKey.FIND_COORDINATOR])

    def _coordinator_unknown(self, now_ms: int) -> None:
        """Forget the coordinator found after ``assign()``; look again after ``retry.backoff.ms``."""
        if self.member is None:
            self._assigned_coordinator = None
            self._find_coordinator_due_ms = now_ms + self.config.retry_backoff_ms

    def _metadata_request(self, out: list[Request], now_ms: int) -> None:
        if self._metadata_due_ms is None or now_ms < self._metadata_due_ms or self.in_flight("metadata"):
            return
        topics = sorted({tp[0] for tp in self.subscriptions.partitions})
        self._metadata_due_ms = None  # until the answer, or an assignment, asks again
        if not topics:
            return
        self._add(out, "metadata", now_ms, ApiKey.METADATA, build.metadata(topics), None,
                  build.VERSIONS[ApiKey.METADATA])

    def _offset_fetch_request(self, out: list[Request]) -> None:
        waiting = self.subscriptions.in_state(PartitionState.AWAITING_COMMITTED)
        coordinator = self._coordinator()
        if not waiting or coordinator is None or self.in_flight("offset-fetch"):
            return
        assert self.config.group_id is not None, "partitions await committed offsets only in a group"
        self._add(out, "offset-fetch", tuple(waiting), ApiKey.OFFSET_FETCH,
                  build.offset_fetch(self.config.group_id, waiting), coordinator, build.VERSIONS[ApiKey.OFFSET_FETCH])

    def _list_offsets_requests(self, out: list[Request]) -> None:
        asked = {tp for kind, context in self._in_flight.values() if kind == "list-offsets" for tp in context}
        by_leader: dict[int, dict[TopicPartition, int]] = {}
        for tp in self.subscriptions.in_state(PartitionState.AWAITING_RESET):
            if tp in asked or tp not in self.leaders:
                continue
            timestamp = self.subscriptions.partitions[tp].reset_timestamp
            if timestamp is None:  # Kafka's NoOffsetForPartitionException, here with its error code
                self.subscriptions.remove((tp,))
                self.error = OffsetOutOfRangeError(f"{tp[0]}-{tp[1]} has no valid offset and auto.offset.reset is none")
                continue
            by_leader.setdefault(self.leaders[tp], {})[tp] = timestamp
        for leader, timestamps in sorted(by_leader.items()):
            self._add(out, "list-offsets", tuple(timestamps), ApiKey.LIST_OFFSETS,
                      build.list_offsets(timestamps, self.config.isolation), leader,
                      build.VERSIONS[ApiKey.LIST_OFFSETS])

    def _fetch_requests(self, out: list[Request], now_ms: int) -> None:
        by_node: dict[int, list[tuple[TopicPartition, int]]] = {}
        for tp, position in self.subscriptions.fetchable():
            node = self._read_from(tp, now_ms)
            if node is not None and node not in self._fetching_from:
                by_node.setdefault(node, []).append((tp, position))
        for node, positions in sorted(by_node.items()):
            self._fetching_from.add(node)
            session = self._fetch_sessions.setdefault(node, FetchSessionHandler())
            self._add(out, "fetch", (node, dict(positions)), ApiKey.FETCH,
                      fetch_request(self.config, positions, session), node, build.VERSIONS[ApiKey.FETCH])

    def _read_from(self, tp: TopicPartition, now_ms: int) -> int | None:
        """The preferred read replica while it is fresh and known, else the leader (Kafka's
        ``Fetcher.selectReadReplica``)."""
        preferred = self.read_replicas.get(tp)
        if preferred is not None:
            node, until_ms = preferred
            if now_ms < until_ms and node in self.brokers:
                return node
            del self.read_replicas[tp]
        return self.leaders.get(tp)

    def _commit_requests(self, out: list[Request]) -> None:
        """Send queued commits once the coordinator is known: a member's under its generation,
        an ``assign()``-ing consumer's outside any (Kafka's ``Generation.NO_GENERATION``)."""
        coordinator = self._coordinator_for_commits()
        if coordinator is None:
            return
        assert self.config.group_id is not None, "commit_async() refuses a consumer without a group.id"
        member = self.member
        generation_id, member_id, instance_id = NO_GENERATION, NO_MEMBER_ID, None
        if member is not None:
            generation_id, member_id, instance_id = member.generation_id, member.member_id, self.config.group_instance_id
        for offsets, callback in self._commits:
            body = build.offset_commit(self.config.group_id, generation_id, member_id, instance_id, offsets)
            self._add(out, "commit", (offsets, callback), ApiKey.OFFSET_COMMIT, body, coordinator,
                      build.VERSIONS[ApiKey.OFFSET_COMMIT])
        self._commits = []

    def _coordinator_for_commits(self) -> int | None:
        if not self._commits:
            return None
        if self.member is None:
            return self._coordinator()
        coordinator = self.member.coordinator
        return None if coordinator is None or not self.member.member_id else coordinator.node_id

    # -- answers ----------------------------------------------------------------------------------------

    def _on_member(self, context: Any, body: Any, now_ms: int) -> None:
        assert self.member is not None, "member answers come only to a subscribed consumer"
        self.member.on_response(context.api_key, body, now_ms, context.request_id)

    def _on_find_coordinator(self, context: Any, body: Any, now_ms: int) -> None:
        node_id, host, port, error = build.find_coordinator_result(body)
        if error == ErrorCode.NONE:
            self._assigned_coordinator = Coordinator(node_id, host, port)
        else:  # e.g. COORDINATOR_NOT_AVAILABLE while __consumer_offsets is created
            self._coordinator_unknown(now_ms)

    def _on_metadata(self, context: Any, body: Any, now_ms: int) -> None:
        self.brokers.update({b.node_id: (b.host, b.port) for b in body.brokers})
        for topic in body.topics:
            for p in topic.partitions:
                if p.error_code == ErrorCode.NONE and p.leader_id >= 0:
                    self.leaders[(topic.name, p.partition_index)] = p.leader_id
        unknown = [tp for tp in self.subscriptions.partitions if tp not in self.leaders]
        retry_ms = self.config.retry_backoff_ms if unknown else self.config.metadata_max_age_ms
        self._metadata_due_ms = now_ms + retry_ms

    def _on_offset_fetch(self, context: Any, body: Any, now_ms: int) -> None:
        for tp, offset, error in build.offset_fetch_results(body):
            if tp not in context or tp not in self.subscriptions.partitions:
                continue
            if error == ErrorCode.NONE:
                self.subscriptions.committed_found(tp, offset)
            elif error in COORDINATOR_ERRORS:
                self._coordinator_unknown(now_ms)
            elif error not in RETRIABLE_OFFSET_ERRORS:
                self.error = KafkaError(f"OffsetFetch for {tp[0]}-{tp[1]} failed with {error.name}", error_code=error)

    def _on_list_offsets(self, context: Any, body: Any, now_ms: int) -> None:
        for tp, offset, error in build.list_offsets_results(body):
            entry = self.subscriptions.partitions.get(tp)
            if tp not in context or entry is None or entry.state is not PartitionState.AWAITING_RESET:
                continue
            if error == ErrorCode.NONE:
                self.subscriptions.reset_done(tp, offset)
            else:
                self._metadata_due_ms = now_ms + self.config.retry_backoff_ms

    def _on_fetch(self, context: Any, body: Any, now_ms: int) -> None:
        leader, positions = context
        self._fetching_from.discard(leader)
        if not self._fetch_sessions[leader].handle_response(body):
            return  # a session error: the next fetch is full again
        for tp, data in build.fetch_results(body):
            entry = self.subscriptions.partitions.get(tp)
            if entry is None or entry.state is not PartitionState.FETCHING or entry.position != positions.get(tp):
                continue  # revoked, or sought elsewhere while the fetch was out
            error = ErrorCode(data.error_code)
            if error == ErrorCode.NONE and data.preferred_read_replica >= 0:  # no records: read there
                self.read_replicas[tp] = (data.preferred_read_replica, now_ms + self.config.metadata_max_age_ms)
                continue
            if error != ErrorCode.NONE:
                self.read_replicas.pop(tp, None)  # back to the leader, as Kafka's consumer does
            if error == ErrorCode.NONE:
                self._store(tp, data)
            elif error == ErrorCode.OFFSET_OUT_OF_RANGE:
                self._out_of_range(tp)
            elif error in METADATA_ERRORS:
                self.leaders.pop(tp, None)
                self._metadata_due_ms = now_ms + self.config.retry_backoff_ms
            else:
                self.error = KafkaError(f"Fetch from {tp[0]}-{tp[1]} failed with {error.name}", error_code=error)

    def _store(self, tp: TopicPartition, data: Any) -> None:
        entry = self.subscriptions.partitions[tp]
        assert entry.position is not None, "a fetched partition has a position"
        fetched = partition_records(self.config, tp, entry.position, data)
        entry.high_watermark = fetched.high_watermark
        entry.buffered, entry.buffered_next_offset = list(fetched.records), fetched.next_offset
        if not fetched.records:
            entry.position = fetched.next_offset  # only markers or aborted batches: move past them

    def _out_of_range(self, tp: TopicPartition) -> None:
        """Kafka's rule: reset by ``auto.offset.reset``, or raise to the application under ``none``."""
        if self.subscriptions.reset_policy == "none":
            position = self.subscriptions.partitions[tp].position
            self.error = OffsetOutOfRangeError(f"{tp[0]}-{tp[1]}: offset {position} is out of range "
                                               f"and auto.offset.reset is none")
            return
        self.subscriptions.out_of_range(tp)

    def _on_commit(self, context: Any, body: Any, now_ms: int) -> None:
        errors = [error for _, error in build.offset_commit_results(body) if error != ErrorCode.NONE]
        error = None if not errors else KafkaError(f"OffsetCommit failed with {errors[0].name}", error_code=errors[0])
        if COORDINATOR_ERRORS.intersection(errors):
            self._coordinator_unknown(now_ms)
        self._commit_done(context, error)

    def _commit_done(self, commit: tuple[dict[TopicPartition, int], CommitCallback | None],
                     error: KafkaError | None) -> None:
        offsets, callback = commit
        if callback is not None:
            callback(offsets, error)

    _RESPONSES: dict[str, Callable[[ConsumerCore, Any, Any, int], None]] = {
        "member": _on_member, "find-coordinator": _on_find_coordinator, "metadata": _on_metadata,
        "offset-fetch": _on_offset_fetch,
        "list-offsets": _on_list_offsets, "fetch": _on_fetch, "commit": _on_commit,
    }

    # -- membership -------------------------------------------------------------------------------------

    def _sync_membership(self) -> None:
        """Turn the member's new notifications into partition changes and listener events."""
        member = self.member
        if member is None:
            return
        for note in member.notifications[self._notifications_seen:]:
            consumed = self.subscriptions.consumed_offsets()
            positions = {tp: consumed[tp] for tp in note.partitions if tp in consumed}
            if note.kind == "assigned":
                self.subscriptions.add(note.partitions, in_group=True)
                self._metadata_due_ms = 0
            else:
                if note.kind == "revoked" and self.config.enable_auto_commit:
                    self.commit_async(positions, None)
                self.subscriptions.remove(note.partitions)
            self._events.append(RebalanceEvent(note.kind, note.partitions, positions))
        self._notifications_seen = len(member.notifications)
        if member.error is not None and self.error is None:
            self.error, member.error = member.error, None
