"""A KRaft voter as a sans-I/O state machine (Kafka's ``KafkaRaftClient`` with static voters).

Theory of operation
-------------------
A :class:`RaftNode` never touches a socket or a clock. The caller feeds it events --
``tick(now_ms)``, ``handle(src, correlation_id, message, now_ms)``, ``append(values, now_ms)``
on the leader, ``resign(now_ms)`` at shutdown -- and each call returns an :class:`Output`: the
messages to send (addressed to voter ids) and, when it moved, the new high watermark (every
offset below it is committed). Randomness (election timeout jitter, backoff) comes from the
injected ``random.Random``; the only things that survive a crash are the metadata log and the
``quorum-state`` file, both written before the node acts on them.

One round of the protocol (3 voters, defaults ``controller.quorum.election.timeout.ms`` 1000,
``fetch.timeout.ms`` 2000)::

    t=0     all UNATTACHED, epoch 0, election timers drawn in [1000, 2000) ms
    t=1137  voter 2 times out: CANDIDATE epoch 1, Vote(epoch 1, last epoch 0, offset 0) -> 1, 3
    t=1139  voter 1 grants (writes votedId=2 first); 2 is LEADER of epoch 1, writes its
            LEADER_CHANGE batch at offset 0 and sends BeginQuorumEpoch to 1 and 3
    t=1141  1 and 3 become FOLLOWERs and Fetch(offset 0, last fetched epoch 0)
    t=1143  the leader sends the LEADER_CHANGE batch; their next fetch at offset 1 tells it that
            a majority holds offset 0 of epoch 1: the high watermark is 1

Leader-only rules: :mod:`~kafkalab.controller.raft.leader`; the state table:
:mod:`~kafkalab.controller.raft.state`; divergence reuses :mod:`kafkalab.replication.truncation`;
a fetch below the log start goes to the snapshot (:mod:`~kafkalab.controller.raft.snapshot_fetch`).
Non-voters (brokers, :mod:`~kafkalab.controller.raft.observer`) get committed batches only.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from kafkalab.controller.raft import metadata_log
from kafkalab.controller.raft.api import (
    FETCH_MAX_BYTES, FETCH_MAX_WAIT_MS, NotLeaderError, Output, QuorumDescription, RaftConfig,
)
from kafkalab.controller.raft.leader import LeaderState, ParkedFetch, majority
from kafkalab.controller.raft.messages import (
    NO_ERROR, BeginQuorumEpochRequest, BeginQuorumEpochResponse, EndQuorumEpochRequest,
    EndQuorumEpochResponse, FetchRequest, FetchResponse, FetchSnapshotRequest, FetchSnapshotResponse,
    RaftMessage, Send, VoteRequest, VoteResponse,
)
from kafkalab.controller.raft.metadata_log import RaftLog
from kafkalab.controller.raft.quorum_state_file import QuorumStateFile, QuorumStateRecord
from kafkalab.controller.raft.snapshot_fetch import (
    SnapshotDownload, SnapshotFetchError, answer_fetch_snapshot, needs_snapshot,
)
from kafkalab.controller.raft.state import (
    NO_ID, ElectionState, QuorumEvent, QuorumStateKind, VoterTimers, initial_state, next_state,
)
from kafkalab.errors import ErrorCode
from kafkalab.metadata.records import MetadataRecordError
from kafkalab.replication.truncation import (
    EpochEndOffset, OffsetOutOfRangeError, diverging_epoch, truncation_for,
)

K, E = QuorumStateKind, QuorumEvent
RETRY_BACKOFF_BASE_MS = 100  # KafkaRaftClient's base for exponential election backoff
BACKOFF_DOUBLINGS_MAX = 10  # beyond this the window dwarfs election.backoff.max.ms anyway
APPEND_VALUES_MAX = 10_000  # records per leader append; a bound, far above a metadata batch



class RaftNode:
    """One voter of a static quorum. Not thread-safe; owned by one controller's event loop."""

    def __init__(
        self, local_id: int, voters: Sequence[int], log: RaftLog, state_file: QuorumStateFile,
        rng: random.Random, now_ms: int, config: RaftConfig | None = None, cluster_id: str | None = None,
    ) -> None:
        if local_id not in voters:
            raise ValueError(f"node {local_id} is not among the voters {sorted(voters)}")
        self.local_id = local_id
        self.voters = tuple(sorted(set(voters)))
        self.log = log
        self.state_file = state_file
        self.rng = rng
        self.config = config or RaftConfig()
        self.cluster_id = cluster_id
        self.now_ms = now_ms
        stored = state_file.read()
        self.election = stored.election if stored is not None else ElectionState(0)
        self.kind = initial_state(self.election, local_id)
        self.timers = VoterTimers()
        self.granted: set[int] = set()
        self.rejected: set[int] = set()
        self.leader: LeaderState | None = None
        self._correlation = 0
        self.candidacies = 0  # consecutive elections this node stood in without a leader emerging
        self._startup = Output()  # what entering the restored state sends; leaves on the first call
        self._enter(self._startup)
        if stored is None:
            self._persist()

    # -- public API ----------------------------------------------------------------------------

    @property
    def epoch(self) -> int:
        return self.election.epoch

    @property
    def leader_id(self) -> int:
        return self.election.leader_id if self.kind in (K.LEADER, K.FOLLOWER) else NO_ID

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    def describe_quorum(self, now_ms: int) -> QuorumDescription:
        """What the leader answers DescribeQuorum with (other nodes answer NOT_LEADER)."""
        if self.kind is not K.LEADER or self.leader is None:
            raise NotLeaderError(f"node {self.local_id} is not the leader of epoch {self.epoch}")
        hw = self.leader.high_watermark
        return QuorumDescription(self.local_id, self.epoch, -1 if hw is None else hw,
                                 self.leader.describe(now_ms), self.leader.describe_observers())

    def tick(self, now_ms: int) -> Output:
        """Fire whatever timer has expired by ``now_ms``."""
        self._advance(now_ms)
        out = self._take_startup()
        self._POLL[self.kind](self, out)
        return out

    def handle(self, src: int, correlation_id: int, message: RaftMessage, now_ms: int) -> Output:
        """Process one request or response from voter ``src``."""
        self._advance(now_ms)
        handler = self._HANDLERS.get(type(message))
        assert handler is not None, f"{type(message).__name__} is not a KRaft message"
        out = self._take_startup()
        handler(self, src, correlation_id, message, out)
        return out

    def append(self, values: Sequence[bytes], now_ms: int) -> tuple[int, Output]:
        """Leader only: append ``values`` as one batch in the current epoch; returns its base
        offset (committed once the high watermark passes it)."""
        self._advance(now_ms)
        if self.kind is not K.LEADER or self.leader is None:
            raise NotLeaderError(f"node {self.local_id} is {self.kind.name} in epoch {self.epoch}, "
                                 f"not the leader; leader is {self.leader_id}")
        if not 0 < len(values) <= APPEND_VALUES_MAX:
            raise ValueError(f"an append holds 1..{APPEND_VALUES_MAX} records, got {len(values)}")
        out = self._take_startup()
        base_offset = self.log.log_end_offset
        self._leader_append(metadata_log.data_batch(values, now_ms), out)
        return base_offset, out

    def resign(self, now_ms: int) -> Output:
        """Graceful shutdown of a leader: step down and ask the others to elect a successor at
        once (EndQuorumEpoch with PreferredSuccessors, most caught-up first)."""
        self._advance(now_ms)
        out = self._take_startup()
        if self.kind is K.LEADER and self.leader is not None:
            self._resign(self.leader.preferred_successors(), out)
        return out

    # -- transitions ---------------------------------------------------------------------------

    def _take_startup(self) -> Output:
        out, self._startup = self._startup, Output()
        return out

    def _resign(self, successors: tuple[int, ...], out: Output) -> None:
        self._transition(E.RESIGN, self.election, out)
        request = EndQuorumEpochRequest(self.cluster_id, self.local_id, self.epoch, successors)
        for voter in self.voters:
            if voter != self.local_id:
                self._request(voter, request, out)

    def _advance(self, now_ms: int) -> None:
        assert now_ms >= self.now_ms, f"time went back from {self.now_ms} to {now_ms} ms"
        self.now_ms = now_ms

    def _persist(self) -> None:
        self.state_file.write(QuorumStateRecord(self.election, self.voters))

    def _transition(self, event: QuorumEvent, election: ElectionState, out: Output) -> None:
        """Move by the table, persisting the election state before acting on it."""
        assert election.epoch >= self.election.epoch, "epochs never go back"
        target = next_state(self.kind, event, self.election.epoch)
        if self.kind is K.LEADER:
            self._release_parked(out, election)
        changed = election != self.election
        # A waiting node keeps its running election timer when a higher epoch arrives (Kafka's
        # transitionToUnattached): else a candidate that cannot win, asking again and again,
        # would keep resetting everyone's timer and no one else would ever stand.
        keep_deadline_ms = (self.timers.election_deadline_ms if target is K.UNATTACHED
                            and self.kind in (K.UNATTACHED, K.VOTED, K.CANDIDATE) else None)
        self.kind, self.election = target, election
        if changed:
            self._persist()
        self._enter(out)
        if keep_deadline_ms is not None:
            self.timers.election_deadline_ms = keep_deadline_ms

    def _enter(self, out: Output) -> None:
        self.timers = VoterTimers()
        self.granted, self.rejected, self.leader = set(), set(), None
        self._ENTER[self.kind](self, out)

    def _random_election_timeout_ms(self) -> int:
        timeout = self.config.election_timeout_ms
        return timeout + self.rng.randrange(timeout)

    def _enter_waiting(self, out: Output) -> None:
        self.timers.election_deadline_ms = self.now_ms + self._random_election_timeout_ms()

    def _enter_candidate(self, out: Output) -> None:
        assert self.election.voted_id == self.local_id
        self.candidacies += 1
        self.granted = {self.local_id}
        self.timers.election_deadline_ms = self.now_ms + self._random_election_timeout_ms()
        request = VoteRequest(self.cluster_id, self.epoch, self.local_id,
                              self.log.last_fetched_epoch, self.log.log_end_offset)
        for voter in self.voters:
            if voter != self.local_id:
                self._request(voter, request, out)
        self._maybe_win(out)

    def _enter_follower(self, out: Output) -> None:
        self.candidacies = 0
        self.timers.fetch_deadline_ms = self.now_ms + self.config.fetch_timeout_ms
        self._send_fetch(out)

    def _enter_leader(self, out: Output) -> None:
        self.candidacies = 0
        log = self.log
        log.initialize_leader_epoch(self.epoch)
        self.leader = LeaderState(self.local_id, self.epoch, self.voters, log.log_end_offset,
                                  sorted(self.granted), self.now_ms, self.config.fetch_timeout_ms)
        self.timers.begin_epoch_resend_ms = self.now_ms + self.config.fetch_timeout_ms // 2
        request = BeginQuorumEpochRequest(self.cluster_id, self.local_id, self.epoch)
        for voter in self.leader.unacknowledged():
            self._request(voter, request, out)
        batch = metadata_log.leader_change_batch(
            self.local_id, self.voters, self.leader.granting_voters, self.now_ms)
        self._leader_append(batch, out)

    def _start_candidacy(self, out: Output) -> None:
        event = E.FETCH_TIMEOUT if self.kind is K.FOLLOWER else E.ELECTION_TIMEOUT
        self._transition(event, ElectionState(self.epoch + 1, NO_ID, self.local_id), out)

    def _observe(self, epoch: int, leader_id: int, out: Output) -> bool:
        """React to an epoch and leader seen in any message (Kafka's ``maybeTransition``);
        returns True if the node moved."""
        if epoch > self.epoch:
            if leader_id not in (NO_ID, self.local_id) and leader_id in self.voters:
                self._transition(E.LEADER_FOUND, ElectionState(epoch, leader_id), out)
            else:
                self._transition(E.HIGHER_EPOCH, ElectionState(epoch), out)
            return True
        if (epoch == self.epoch and leader_id not in (NO_ID, self.local_id)
                and self.kind not in (K.LEADER, K.FOLLOWER, K.RESIGNED) and leader_id in self.voters):
            self._transition(E.LEADER_FOUND, ElectionState(epoch, leader_id, self.election.voted_id), out)
            return True
        return False

    # -- polling by state ----------------------------------------------------------------------

    def _poll_waiting(self, out: Output) -> None:
        if self.now_ms >= self.timers.election_deadline_ms:
            self._start_candidacy(out)

    def _poll_candidate(self, out: Output) -> None:
        backoff = self.timers.backoff_until_ms
        if (backoff is not None and self.now_ms >= backoff) or self.now_ms >= self.timers.election_deadline_ms:
            self._start_candidacy(out)

    def _poll_follower(self, out: Output) -> None:
        timers = self.timers
        if self.now_ms >= timers.fetch_deadline_ms:
            self._start_candidacy(out)
            return
        timed_out = self.now_ms - timers.fetch_sent_ms >= self.config.request_timeout_ms
        if (timers.fetch_in_flight is None or timed_out) and self.now_ms >= timers.fetch_retry_ms:
            self._send_fetch(out)

    def _poll_leader(self, out: Output) -> None:
        leader = self.leader
        assert leader is not None
        if self.now_ms >= leader.check_quorum_deadline_ms and len(self.voters) > 1:
            self._resign((), out)  # no successor hint: the quorum is unreachable
            return
        for parked in leader.take_expired(self.now_ms):
            self._answer_fetch(parked.src, parked.correlation_id, parked.request, out, park=False)
        if self.now_ms >= self.timers.begin_epoch_resend_ms:
            self.timers.begin_epoch_resend_ms = self.now_ms + self.config.fetch_timeout_ms // 2
            request = BeginQuorumEpochRequest(self.cluster_id, self.local_id, self.epoch)
            for voter in leader.unacknowledged():
                self._request(voter, request, out)

    # -- sending -------------------------------------------------------------------------------

    def _request(self, dst: int, message: RaftMessage, out: Output) -> int:
        self._correlation += 1
        out.sends.append(Send(dst, self._correlation, message))
        return self._correlation

    def _send_fetch(self, out: Output) -> None:
        self.timers.download = None
        request = FetchRequest(self.cluster_id, self.local_id, FETCH_MAX_WAIT_MS, self.epoch,
                               self.log.log_end_offset, self.log.last_fetched_epoch)
        self.timers.fetch_in_flight = self._request(self.election.leader_id, request, out)
        self.timers.fetch_sent_ms = self.now_ms

    # -- Vote ----------------------------------------------------------------------------------

    def _on_vote_request(self, src: int, correlation_id: int, request: VoteRequest, out: Output) -> None:
        error = self._check_voter_request(request.candidate_id, request.candidate_epoch)
        if error is None:
            self._observe(request.candidate_epoch, NO_ID, out)
            granted = self._can_grant(request)
            if granted and self.kind is K.UNATTACHED:
                self._transition(E.VOTE_GRANTED, ElectionState(self.epoch, NO_ID, request.candidate_id), out)
        else:
            granted = False
        response = VoteResponse(NO_ERROR, int(error or ErrorCode.NONE), self.leader_id, self.epoch, granted)
        out.sends.append(Send(src, correlation_id, response))

    def _check_voter_request(self, sender: int, epoch: int) -> ErrorCode | None:
        """Kafka's ``validateVoterOnlyRequest``."""
        if sender not in self.voters:
            return ErrorCode.INCONSISTENT_VOTER_SET
        if epoch < self.epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        return None

    def _can_grant(self, request: VoteRequest) -> bool:
        """One vote per epoch, and only for a log at least as up to date as ours."""
        if self.kind is K.VOTED:
            return self.election.voted_id == request.candidate_id
        if self.kind is K.CANDIDATE:
            return request.candidate_id == self.local_id
        if self.kind is not K.UNATTACHED:
            return False  # a leader is known for this epoch
        theirs = (request.last_offset_epoch, request.last_offset)
        return theirs >= (self.log.last_fetched_epoch, self.log.log_end_offset)

    def _on_vote_response(self, src: int, correlation_id: int, response: VoteResponse, out: Output) -> None:
        if self._observe(response.leader_epoch, response.leader_id, out):
            return
        if self.kind is not K.CANDIDATE or response.leader_epoch != self.epoch:
            return  # a late answer to an older candidacy
        if response.partition_error_code != NO_ERROR:
            return
        (self.granted if response.vote_granted else self.rejected).add(src)
        if self._maybe_win(out):
            return
        if len(self.rejected) >= majority(len(self.voters)) and self.timers.backoff_until_ms is None:
            # Kafka's binaryExponentialElectionBackoffMs: the window doubles with each failed try.
            window = 2 << min(self.candidacies - 1, BACKOFF_DOUBLINGS_MAX)
            backoff = RETRY_BACKOFF_BASE_MS * self.rng.randrange(window)
            self.timers.backoff_until_ms = self.now_ms + min(backoff, self.config.election_backoff_max_ms)

    def _maybe_win(self, out: Output) -> bool:
        if len(self.granted) < majority(len(self.voters)):
            return False
        self._transition(E.ELECTION_WON, ElectionState(self.epoch, self.local_id, self.local_id), out)
        return True

    # -- BeginQuorumEpoch / EndQuorumEpoch ------------------------------------------------------

    def _on_begin_epoch_request(
        self, src: int, correlation_id: int, request: BeginQuorumEpochRequest, out: Output,
    ) -> None:
        error = self._check_voter_request(request.leader_id, request.leader_epoch)
        if error is None:
            self._observe(request.leader_epoch, request.leader_id, out)
        response = BeginQuorumEpochResponse(NO_ERROR, int(error or ErrorCode.NONE), self.leader_id, self.epoch)
        out.sends.append(Send(src, correlation_id, response))

    def _on_begin_epoch_response(
        self, src: int, correlation_id: int, response: BeginQuorumEpochResponse, out: Output,
    ) -> None:
        if self._observe(response.leader_epoch, response.leader_id, out):
            return
        if self.leader is not None and response.leader_epoch == self.epoch and response.partition_error_code == NO_ERROR:
            self.leader.acknowledged.add(src)

    def _on_end_epoch_request(
        self, src: int, correlation_id: int, request: EndQuorumEpochRequest, out: Output,
    ) -> None:
        error = self._check_voter_request(request.leader_id, request.leader_epoch)
        if error is None:
            self._observe(request.leader_epoch, request.leader_id, out)
            if self.kind is K.FOLLOWER and self.election.leader_id == request.leader_id:
                delay_ms = self._end_epoch_backoff_ms(request.preferred_successors)
                self.timers.fetch_deadline_ms = min(self.timers.fetch_deadline_ms, self.now_ms + delay_ms)
        response = EndQuorumEpochResponse(NO_ERROR, int(error or ErrorCode.NONE), self.leader_id, self.epoch)
        out.sends.append(Send(src, correlation_id, response))

    def _end_epoch_backoff_ms(self, successors: tuple[int, ...]) -> int:
        """The first preferred successor runs at once; the others wait longer by position
        (Kafka's ``endQuorumEpochElectionBackoff``)."""
        if self.local_id not in successors:
            return self.config.election_backoff_max_ms
        position = successors.index(self.local_id)
        if position == 0:
            return 0
        return min(RETRY_BACKOFF_BASE_MS << (position - 1), self.config.election_backoff_max_ms)

    def _on_end_epoch_response(
        self, src: int, correlation_id: int, response: EndQuorumEpochResponse, out: Output,
    ) -> None:
        self._observe(response.leader_epoch, response.leader_id, out)

    # -- Fetch: the leader's side --------------------------------------------------------------

    def _on_fetch_request(self, src: int, correlation_id: int, request: FetchRequest, out: Output) -> None:
        error = self._check_leader_request(request.current_leader_epoch)
        if error is not None:
            response = FetchResponse(NO_ERROR, int(error), -1, self.leader_id, self.epoch)
            out.sends.append(Send(src, correlation_id, response))
            return
        self._answer_fetch(src, correlation_id, request, out, park=True)

    def _check_leader_request(self, epoch: int) -> ErrorCode | None:
        """Kafka's ``validateLeaderOnlyRequest``."""
        if epoch < self.epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        if epoch > self.epoch:
            return ErrorCode.UNKNOWN_LEADER_EPOCH
        if self.kind is not K.LEADER:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return None

    def _answer_fetch(self, src: int, correlation_id: int, request: FetchRequest, out: Output, *, park: bool) -> None:
        leader, log = self.leader, self.log
        assert leader is not None
        snapshot = log.latest_snapshot_id()
        if snapshot is not None and needs_snapshot(log, request.fetch_offset, request.last_fetched_epoch, snapshot):
            out.sends.append(Send(src, correlation_id, FetchResponse(
                NO_ERROR, NO_ERROR, self._leader_hw(), self.local_id, self.epoch, snapshot_end_offset=snapshot[0],
                snapshot_epoch=snapshot[1])))
            return
        try:
            diverging = self._diverging(request)
        except OffsetOutOfRangeError:
            response = FetchResponse(NO_ERROR, int(ErrorCode.OFFSET_OUT_OF_RANGE), self._leader_hw(),
                                     self.local_id, self.epoch)
            out.sends.append(Send(src, correlation_id, response))
            return
        leader.record_fetch(src, self.now_ms)
        if diverging is not None:
            response = FetchResponse(NO_ERROR, NO_ERROR, self._leader_hw(), self.local_id, self.epoch,
                                     diverging.epoch, diverging.end_offset)
            out.sends.append(Send(src, correlation_id, response))
            return
        leader.parked.pop(src, None)  # superseded by this fetch
        leader.record_fetch_times(src, request.fetch_offset, log.log_end_offset, self.now_ms)
        moved = leader.update_end_offset(src, request.fetch_offset)
        if moved:
            self._on_high_watermark(out)
        records = log.read(request.fetch_offset, FETCH_MAX_BYTES)
        if src not in self.voters:  # an observer (a broker) is sent committed batches only
            records = metadata_log.batches_below(records, max(self._leader_hw(), 0))
        if not records and park and not moved and request.max_wait_ms > 0:
            leader.parked[src] = ParkedFetch(src, correlation_id, request, self.now_ms + request.max_wait_ms)
            return
        response = FetchResponse(NO_ERROR, NO_ERROR, self._leader_hw(), self.local_id, self.epoch, records=records)
        out.sends.append(Send(src, correlation_id, response))

    def _diverging(self, request: FetchRequest) -> EpochEndOffset | None:
        if request.fetch_offset == 0 and request.last_fetched_epoch <= 0:
            return None  # an empty log matches any log
        log = self.log
        if (request.fetch_offset, request.last_fetched_epoch) == log.latest_snapshot_id():
            return None  # a fetcher that just loaded our snapshot continues right after it
        return diverging_epoch(log.epoch_cache, log.log_start_offset, log.log_end_offset,
                               request.last_fetched_epoch, request.fetch_offset)

    def _leader_hw(self) -> int:
        assert self.leader is not None
        return -1 if self.leader.high_watermark is None else self.leader.high_watermark

    def _leader_append(self, batch: bytes, out: Output) -> None:
        leader = self.leader
        assert leader is not None
        end_offset = self.log.append_as_leader(batch, self.epoch)
        if leader.update_end_offset(self.local_id, end_offset):
            self._on_high_watermark(out)
        self._complete_parked(out)

    def _on_high_watermark(self, out: Output) -> None:
        assert self.leader is not None and self.leader.high_watermark is not None
        self.log.update_high_watermark(self.leader.high_watermark)
        out.high_watermark = self.leader.high_watermark
        self._complete_parked(out)

    def _complete_parked(self, out: Output) -> None:
        assert self.leader is not None
        for parked in self.leader.take_parked():
            self._answer_fetch(parked.src, parked.correlation_id, parked.request, out, park=False)

    def _release_parked(self, out: Output, election: ElectionState) -> None:
        """A leader leaving its epoch answers its parked fetches, naming the new epoch."""
        assert self.leader is not None
        for parked in self.leader.take_parked():
            response = FetchResponse(NO_ERROR, int(ErrorCode.NOT_LEADER_OR_FOLLOWER), -1,
                                     election.leader_id, election.epoch)
            out.sends.append(Send(parked.src, parked.correlation_id, response))

    def _on_fetch_snapshot_request(self, src: int, correlation_id: int, request: FetchSnapshotRequest, out: Output) -> None:
        error = self._check_leader_request(request.current_leader_epoch)
        response = answer_fetch_snapshot(self.log, request, error, self.leader_id, self.epoch, FETCH_MAX_BYTES)
        out.sends.append(Send(src, correlation_id, response))

    def _send_fetch_snapshot(self, download: SnapshotDownload, out: Output) -> None:
        request = FetchSnapshotRequest(self.cluster_id, self.local_id, FETCH_MAX_BYTES, self.epoch,
                                       download.end_offset, download.epoch, len(download.data))
        self.timers.fetch_in_flight = self._request(self.election.leader_id, request, out)
        self.timers.fetch_sent_ms = self.now_ms

    def _on_fetch_snapshot_response(self, src: int, correlation_id: int, response: FetchSnapshotResponse, out: Output) -> None:
        timers = self.timers
        if self._observe(response.leader_epoch, response.leader_id, out) or self.kind is not K.FOLLOWER or (
                correlation_id != timers.fetch_in_flight or timers.download is None):
            return  # a late or duplicated answer
        download, timers.fetch_in_flight = timers.download, None
        try:
            if response.partition_error_code != NO_ERROR or response.error_code != NO_ERROR:
                raise SnapshotFetchError(f"FetchSnapshot error {response.partition_error_code or response.error_code}")
            if not download.add(response):
                timers.fetch_deadline_ms = self.now_ms + self.config.fetch_timeout_ms
                self._send_fetch_snapshot(download, out)
                return
            self.log.install_snapshot(download.end_offset, download.epoch, bytes(download.data))
        except (SnapshotFetchError, MetadataRecordError):  # start over with a fresh Fetch after the backoff
            timers.download, timers.fetch_retry_ms = None, self.now_ms + self.config.retry_backoff_ms
            return
        timers.fetch_deadline_ms = self.now_ms + self.config.fetch_timeout_ms
        self._follower_high_watermark(download.end_offset, out)
        self._send_fetch(out)

    # -- Fetch: the follower's side ------------------------------------------------------------

    def _on_fetch_response(self, src: int, correlation_id: int, response: FetchResponse, out: Output) -> None:
        if self._observe(response.leader_epoch, response.leader_id, out):
            return
        timers = self.timers
        if self.kind is not K.FOLLOWER or correlation_id != timers.fetch_in_flight:
            return  # a late or duplicated answer
        timers.fetch_in_flight = None
        if response.partition_error_code != NO_ERROR or response.error_code != NO_ERROR:
            timers.fetch_retry_ms = self.now_ms + self.config.retry_backoff_ms
            return
        timers.fetch_deadline_ms = self.now_ms + self.config.fetch_timeout_ms
        if response.snapshot_end_offset >= 0:  # below the leader's log start: load its snapshot
            timers.download = SnapshotDownload(response.snapshot_end_offset, response.snapshot_epoch)
            self._send_fetch_snapshot(timers.download, out)
            return
        if response.diverging_epoch >= 0 or response.diverging_end_offset >= 0:
            self._truncate(EpochEndOffset(response.diverging_epoch, response.diverging_end_offset))
        elif response.records:
            self.log.append_as_follower(response.records)
        self._follower_high_watermark(response.high_watermark, out)
        self._send_fetch(out)

    def _truncate(self, answer: EpochEndOffset) -> None:
        log = self.log
        cut = truncation_for(answer, log.epoch_cache, log.log_end_offset, log.log_end_offset)
        log.truncate_to(cut.offset)

    def _follower_high_watermark(self, leader_hw: int, out: Output) -> None:
        candidate = min(leader_hw, self.log.log_end_offset)
        if candidate > self.log.high_watermark:
            self.log.update_high_watermark(candidate)
            out.high_watermark = candidate

    # -- dispatch tables -----------------------------------------------------------------------

    _ENTER: dict[QuorumStateKind, Callable[[RaftNode, Output], None]] = {
        K.UNATTACHED: _enter_waiting, K.VOTED: _enter_waiting, K.RESIGNED: _enter_waiting,
        K.CANDIDATE: _enter_candidate, K.FOLLOWER: _enter_follower, K.LEADER: _enter_leader,
    }
    _POLL: dict[QuorumStateKind, Callable[[RaftNode, Output], None]] = {
        K.UNATTACHED: _poll_waiting, K.VOTED: _poll_waiting, K.RESIGNED: _poll_waiting,
        K.CANDIDATE: _poll_candidate, K.FOLLOWER: _poll_follower, K.LEADER: _poll_leader,
    }
    _HANDLERS: dict[type, Callable[[RaftNode, int, int, Any, Output], None]] = {
        VoteRequest: _on_vote_request, VoteResponse: _on_vote_response,
        BeginQuorumEpochRequest: _on_begin_epoch_request, BeginQuorumEpochResponse: _on_begin_epoch_response,
        EndQuorumEpochRequest: _on_end_epoch_request, EndQuorumEpochResponse: _on_end_epoch_response,
        FetchRequest: _on_fetch_request, FetchResponse: _on_fetch_response,
        FetchSnapshotRequest: _on_fetch_snapshot_request, FetchSnapshotResponse: _on_fetch_snapshot_response,
    }


__all__ = ["NotLeaderError", "Output", "QuorumDescription", "RaftConfig", "RaftNode"]
