"""RaftNode rules one at a time: vote granting, elections, the commit rule, divergence, fencing,
resignation. Messages pass through a tiny in-memory router; time is a plain ``now_ms``."""

from __future__ import annotations

import random
from collections import deque
from pathlib import Path

import pytest

from kafkalab.clock import ManualClock
from kafkalab.controller.raft.leader import LeaderState
from kafkalab.controller.raft.messages import (
    BeginQuorumEpochRequest, EndQuorumEpochRequest, FetchRequest, FetchResponse, VoteRequest, VoteResponse,
)
from kafkalab.controller.raft.metadata_log import METADATA_DIR_NAME, StorageRaftLog
from kafkalab.controller.raft.node import NotLeaderError, Output, RaftConfig, RaftNode
from kafkalab.controller.raft.quorum_state_file import FILE_NAME, QuorumStateFile
from kafkalab.controller.raft.state import QuorumStateKind
from kafkalab.errors import ErrorCode
from kafkalab.records.v2 import decode_v2
from kafkalab.records.control import parse_control_record
from kafkalab.tools.decoders.metadata import control_record_text

K = QuorumStateKind
CONFIG = RaftConfig(request_timeout_ms=750)  # a cut here drops messages; retry sooner than 2 s


class Cluster:
    def __init__(self, root: Path, ids: tuple[int, ...] = (1, 2, 3)) -> None:
        self.root, self.ids, self.now = root, ids, 0
        self.clock = ManualClock(0)
        self.cut: set[int] = set()
        self.nodes = {i: self.boot(i) for i in ids}

    def boot(self, node_id: int) -> RaftNode:
        log = StorageRaftLog.open(self.root / f"n{node_id}", self.clock)
        return RaftNode(node_id, self.ids, log, QuorumStateFile(log.directory / FILE_NAME),
                        random.Random(node_id), self.now, CONFIG)

    def route(self, src: int, out: Output) -> None:
        queue = deque((src, send) for send in out.sends)
        while queue:
            sender, send = queue.popleft()
            if sender in self.cut or send.dst in self.cut:
                continue
            reply = self.nodes[send.dst].handle(sender, send.correlation_id, send.message, self.now)
            queue.extend((send.dst, s) for s in reply.sends)

    def advance(self, ms: int, step_ms: int = 10) -> None:
        for _ in range(ms // step_ms):
            self.now += step_ms
            self.clock.set_ms(self.now)
            for node_id, node in self.nodes.items():
                self.route(node_id, node.tick(self.now))

    def leader(self) -> RaftNode:
        leaders = [n for n in self.nodes.values() if n.kind is K.LEADER]
        assert len(leaders) == 1, [(n.local_id, n.kind) for n in self.nodes.values()]
        return leaders[0]

    def append(self, value: bytes) -> int:
        leader = self.leader()
        offset, out = leader.append([value], self.now)
        self.route(leader.local_id, out)
        return offset


def log_bytes(node: RaftNode) -> bytes:
    return node.log.read(0, 1 << 30)


@pytest.fixture
def node(tmp_path):
    log = StorageRaftLog.open(tmp_path, ManualClock(0))
    return RaftNode(1, (1, 2, 3), log, QuorumStateFile(log.directory / FILE_NAME), random.Random(0), 0)


def vote(node: RaftNode, candidate: int, epoch: int, last_epoch: int = 0, last_offset: int = 0) -> VoteResponse:
    out = node.handle(candidate, 9, VoteRequest(None, epoch, candidate, last_epoch, last_offset), 1)
    (send,) = out.sends
    assert send.dst == candidate and send.correlation_id == 9
    assert isinstance(send.message, VoteResponse)
    return send.message


def test_vote_is_granted_once_per_epoch_and_persisted_first(node, tmp_path):
    assert vote(node, 2, epoch=1).vote_granted
    assert node.kind is K.VOTED
    stored = QuorumStateFile(tmp_path / METADATA_DIR_NAME / FILE_NAME).read()
    assert stored is not None and (stored.election.epoch, stored.election.voted_id) == (1, 2)
    assert not vote(node, 3, epoch=1).vote_granted  # the epoch's one vote is spent
    assert vote(node, 2, epoch=1).vote_granted  # a retried request gets the same answer
    restarted = RaftNode(1, (1, 2, 3), node.log, QuorumStateFile(tmp_path / METADATA_DIR_NAME / FILE_NAME),
                         random.Random(1), 1)
    assert restarted.kind is K.VOTED
    assert not vote(restarted, 3, epoch=1).vote_granted  # the vote survives a restart
    assert vote(restarted, 3, epoch=2).vote_granted  # a new epoch brings a new vote


def test_vote_requires_an_up_to_date_log(node):
    node.log.append_as_follower(_batch_at(0, epoch=2))
    assert not vote(node, 2, epoch=3, last_epoch=1, last_offset=50).vote_granted  # older last epoch
    assert not vote(node, 3, epoch=4, last_epoch=2, last_offset=0).vote_granted  # shorter, same epoch
    assert vote(node, 2, epoch=5, last_epoch=2, last_offset=1).vote_granted  # as long: up to date


def test_stale_epoch_is_fenced(node):
    vote(node, 2, epoch=4)
    answer = vote(node, 3, epoch=3)
    assert not answer.vote_granted
    assert answer.partition_error_code == ErrorCode.FENCED_LEADER_EPOCH and answer.leader_epoch == 4
    out = node.handle(3, 1, BeginQuorumEpochRequest(None, 3, 2), 2)
    assert out.sends[0].message.partition_error_code == ErrorCode.FENCED_LEADER_EPOCH


def test_non_voter_cannot_ask_for_votes(node):
    assert vote(node, 9, epoch=1).partition_error_code == ErrorCode.INCONSISTENT_VOTER_SET


def _batch_at(offset: int, epoch: int) -> bytes:
    from kafkalab.records.model import Record
    from kafkalab.records.v2 import build_v2_batch
    return build_v2_batch([Record(offset, 0, None, b"x")], partition_leader_epoch=epoch)


def test_election_and_leader_change_record(tmp_path):
    cluster = Cluster(tmp_path)
    cluster.advance(2_100)
    leader = cluster.leader()
    assert leader.epoch == 1
    assert all(n.kind is K.FOLLOWER and n.leader_id == leader.local_id
               for n in cluster.nodes.values() if n is not leader)
    batch = decode_v2(log_bytes(leader))
    assert batch.header.is_control and batch.header.partition_leader_epoch == 1
    record = batch.records[0]
    assert parse_control_record(record).type.name == "LEADER_CHANGE"
    # Kafka's dump-log decoder (an independent reading of LeaderChangeMessage) agrees.
    text = control_record_text(2, record.value)
    assert text is not None and f'"leaderId":{leader.local_id}' in text
    assert '"voters":[{"voterId":1},{"voterId":2},{"voterId":3}]' in text
    cluster.advance(1_000)
    assert all(n.high_watermark == 1 for n in cluster.nodes.values())  # the LEADER_CHANGE committed


def test_commit_needs_a_majority(tmp_path):
    cluster = Cluster(tmp_path)
    cluster.advance(2_100)
    leader = cluster.leader()
    followers = [n for n in cluster.nodes.values() if n is not leader]
    cluster.cut = {f.local_id for f in followers}
    offset = cluster.append(b"a")
    cluster.advance(500)
    assert leader.high_watermark <= offset  # alone, the leader cannot commit
    cluster.cut = {followers[0].local_id}
    cluster.advance(1_000)
    assert leader.high_watermark == offset + 1  # itself and one follower: 2 of 3
    assert followers[1].high_watermark == offset + 1


def test_high_watermark_waits_for_the_current_epoch():
    # Raft's Figure 8: offsets 0..9 from older epochs on a majority do not commit until an
    # offset of the leader's own epoch (starting at 10) is on a majority too.
    state = LeaderState(1, 4, (1, 2, 3), epoch_start_offset=10, granting_voters=(1, 2), now_ms=0,
                        fetch_timeout_ms=2000)
    assert not state.update_end_offset(1, 13)
    assert not state.update_end_offset(2, 10)
    assert state.high_watermark is None
    assert state.update_end_offset(3, 12)
    assert state.high_watermark == 12
    assert not state.update_end_offset(3, 11)  # never backwards
    assert state.high_watermark == 12


def test_deposed_leader_truncates_its_uncommitted_tail(tmp_path):
    cluster = Cluster(tmp_path)
    cluster.advance(2_100)
    old = cluster.leader()
    cluster.append(b"committed")
    cluster.advance(1_000)
    committed_hw = old.high_watermark
    cluster.cut = {old.local_id}
    for i in range(3):
        old.append([f"lost-{i}".encode()], cluster.now)  # never reaches anyone
    cluster.advance(6_000)
    new = [n for n in cluster.nodes.values() if n.kind is K.LEADER and n is not old]
    assert len(new) == 1
    cluster.append(b"new-epoch")  # on the new leader
    cluster.cut = set()
    cluster.advance(8_000)
    leader = cluster.leader()
    assert leader is not old
    assert old.kind is K.FOLLOWER and old.high_watermark >= committed_hw
    assert log_bytes(old) == log_bytes(leader)  # same batches, offsets and leader epochs
    assert b"lost-0" not in log_bytes(old)
    assert old.log.epoch_cache.entries == leader.log.epoch_cache.entries


def test_fetch_with_a_stale_epoch_is_fenced(tmp_path):
    cluster = Cluster(tmp_path)
    cluster.advance(2_100)
    leader = cluster.leader()
    out = leader.handle(2, 77, FetchRequest(None, 2, 0, leader.epoch - 1, 0, 0), cluster.now)
    (send,) = out.sends
    assert isinstance(send.message, FetchResponse)
    assert send.message.partition_error_code == ErrorCode.FENCED_LEADER_EPOCH
    assert send.message.leader_epoch == leader.epoch and send.message.leader_id == leader.local_id


def test_append_on_a_follower_is_refused(tmp_path):
    cluster = Cluster(tmp_path)
    cluster.advance(2_100)
    follower = next(n for n in cluster.nodes.values() if n.kind is K.FOLLOWER)
    with pytest.raises(NotLeaderError) as info:
        follower.append([b"x"], cluster.now)
    assert info.value.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_resignation_hands_over_to_the_preferred_successor(tmp_path):
    cluster = Cluster(tmp_path)
    cluster.advance(2_100)
    old = cluster.leader()
    epoch = old.epoch
    out = old.resign(cluster.now)
    requests = [s.message for s in out.sends if isinstance(s.message, EndQuorumEpochRequest)]
    assert len(requests) == 2
    successor = requests[0].preferred_successors[0]
    cluster.route(old.local_id, out)
    cluster.advance(100)
    assert cluster.leader().local_id == successor and cluster.leader().epoch == epoch + 1


def test_leader_restarts_resigned(tmp_path):
    cluster = Cluster(tmp_path)
    cluster.advance(2_100)
    old = cluster.leader()
    old.log.close()
    reborn = cluster.boot(old.local_id)
    assert reborn.kind is K.RESIGNED and reborn.epoch == old.epoch


def test_describe_quorum_reports_each_voter(tmp_path):
    cluster = Cluster(tmp_path)
    cluster.advance(2_100)
    leader = cluster.leader()
    cluster.append(b"a")
    cluster.advance(1_000)
    described = leader.describe_quorum(cluster.now)
    assert (described.leader_id, described.leader_epoch) == (leader.local_id, leader.epoch)
    assert described.high_watermark == leader.high_watermark == leader.log.log_end_offset
    assert [r.replica_id for r in described.current_voters] == [1, 2, 3]
    for replica in described.current_voters:
        assert replica.log_end_offset == leader.log.log_end_offset
        assert 0 < replica.last_caught_up_timestamp <= replica.last_fetch_timestamp <= cluster.now
    follower = next(n for n in cluster.nodes.values() if n is not leader)
    with pytest.raises(NotLeaderError):
        follower.describe_quorum(cluster.now)
