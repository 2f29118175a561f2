"""A stateful property test: random joins, syncs, heartbeats, leaves, commits and clock ticks.

The model keeps only what a client could know -- which generation each member was last told,
and which assignment each member received in which generation -- and checks the coordinator
against the protocol's promises:

* the group's state and generation only change along the transition table, and the
  generation never goes back;
* in every generation, the assignments delivered to members are the leader's map, so no
  partition has two owners within one generation;
* a JoinGroup answered without error names a generation the member is part of;
* an offset commit with a generation other than the group's current one never succeeds;
* after a long enough quiet period every member has timed out and the group is Empty.
"""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kafkalab.errors import ErrorCode as E
from kafkalab.group.offsets import OffsetCommit
from kafkalab.group.state import TRANSITIONS
from kafkalab.group.state import GroupState as S
from tests.group._harness import REBALANCE_MS, SESSION_MS, Answers, Cluster

PARTITIONS = 6
LEGAL = {(source, target) for (source, _), target in TRANSITIONS.items()} | {(s, s) for s in S}


class GroupModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.c = Cluster(initial_rebalance_delay_ms=300)
        self.joins: dict[str, Answers] = {}  # member id -> its join answers
        self.sync_calls: list[tuple[str, int, Answers]] = []  # (member, generation sent, answers)
        self.state = S.EMPTY
        self.generation = 0

    @property
    def group(self):
        return self.c.coordinator.groups.get("g")

    def _told_generation(self, member: str) -> int:
        got = [r for r in self.joins[member].got if r.error_code == 0]
        return got[-1].generation_id if got else -1

    @rule()
    def new_member(self) -> None:
        first, _ = self.c.join("g", client="m")
        if first.error_code == E.MEMBER_ID_REQUIRED:
            result, answers = self.c.join("g", first.member_id)
            self.joins[first.member_id] = answers
            if result is not None:
                answers(result)

    @precondition(lambda self: self.joins)
    @rule(data=st.data())
    def rejoin(self, data) -> None:
        member = data.draw(st.sampled_from(sorted(self.joins)))
        result, _ = self.c.join("g", member, answers=self.joins[member])
        if result is not None:
            self.joins[member](result)

    def _sync(self, member: str) -> None:
        generation = self._told_generation(member)
        group = self.group
        plan = {}
        if group is not None and member == group.leader_id:
            members = sorted(group.members)
            plan = {m: bytes(p for p in range(PARTITIONS) if p % len(members) == i) for i, m in enumerate(members)}
        answers = Answers()
        self.sync_calls.append((member, generation, answers))
        result, _ = self.c.sync("g", generation, member, plan, answers=answers)
        if result is not None:
            answers(result)

    @precondition(lambda self: self.joins)
    @rule(data=st.data())
    def sync(self, data) -> None:
        self._sync(data.draw(st.sampled_from(sorted(self.joins))))

    @precondition(lambda self: self.group is not None and self.group.state is S.COMPLETING_REBALANCE)
    @rule()
    def everyone_syncs_leader_last(self) -> None:
        group = self.group
        for member in sorted(group.members, key=lambda m: m == group.leader_id):
            if member in self.joins:
                self._sync(member)

    @precondition(lambda self: self.joins)
    @rule(data=st.data())
    def heartbeat(self, data) -> None:
        member = data.draw(st.sampled_from(sorted(self.joins)))
        self.c.coordinator.heartbeat("g", self._told_generation(member), member, None, self.c.now_ms)

    @precondition(lambda self: self.joins)
    @rule(data=st.data())
    def leave(self, data) -> None:
        member = data.draw(st.sampled_from(sorted(self.joins)))
        self.c.coordinator.leave_group("g", [(member, None)], self.c.now_ms)

    @precondition(lambda self: self.joins)
    @rule(data=st.data(), stale=st.integers(-2, 2))
    def commit(self, data, stale: int) -> None:
        member = data.draw(st.sampled_from(sorted(self.joins)))
        generation = self._told_generation(member) + stale
        current = self.group.generation_id if self.group is not None else None
        [error] = self.c.coordinator.offsets.commit(
            "g", generation, member, None, [OffsetCommit("t", 0, 1, -1, "")], -1, 8, self.c.now_ms)
        if error == E.NONE:
            assert generation == current or (generation < 0 and self.group.state is S.EMPTY)

    @rule(ms=st.sampled_from([1, 100, 300, 300, 1000, 5000]))
    def tick(self, ms: int) -> None:
        self.c.advance(ms)

    @invariant()
    def transitions_are_legal(self) -> None:
        group = self.group
        if group is None:
            return
        assert (self.state, group.state) in LEGAL or group.generation_id > self.generation
        assert group.generation_id >= self.generation
        self.state, self.generation = group.state, group.generation_id
        if group.state in (S.STABLE, S.COMPLETING_REBALANCE):
            assert group.leader_id in group.members

    @property
    def delivered(self) -> dict[int, dict[str, bytes]]:
        """generation -> member -> the assignment a successful SyncGroup delivered."""
        out: dict[int, dict[str, bytes]] = {}
        for member, generation, answers in self.sync_calls:
            for result in answers.got:
                if result.error_code == 0:
                    previous = out.setdefault(generation, {}).setdefault(member, result.assignment)
                    assert previous == result.assignment, "one member, two assignments in one generation"
        return out

    @invariant()
    def one_owner_per_partition_per_generation(self) -> None:
        for generation, assignments in self.delivered.items():
            owned = [p for assignment in assignments.values() for p in assignment]
            assert len(owned) == len(set(owned)), (generation, assignments)

    @invariant()
    def successful_joins_name_the_members_generation(self) -> None:
        for member, answers in self.joins.items():
            for result in answers.got:
                if result.error_code == 0:
                    assert result.member_id == member and result.generation_id >= 1

    def teardown(self) -> None:
        # Nobody heartbeats any more: every session and the rebalance timeout run out.
        self.c.advance(SESSION_MS + REBALANCE_MS + 1000, step_ms=500)
        group = self.group
        if group is not None:
            assert group.state is S.EMPTY and not group.members and not group.pending_members


TestGroupModel = GroupModel.TestCase
TestGroupModel.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)
