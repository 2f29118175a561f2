"""Reconciliation as tables: one heartbeat's effect on a member, and the revoke-before-assign rule.

Each row is a member (state, epoch, assigned, revoking), a target at an epoch, which partitions
other members still hold, and what the member reported owning; the expected member after the
heartbeat is Kafka's ``CurrentAssignmentBuilder`` result for the same input.
"""

from __future__ import annotations

import uuid

import pytest

from kafkalab.group.consumer.member import (
    TRANSITIONS,
    ConsumerGroupMember,
    FencedMemberEpoch,
    MemberState,
    Outcome,
    reconcile,
)

T = uuid.UUID(int=1)
U = uuid.UUID(int=2)
S, UNREV, UNREL = MemberState.STABLE, MemberState.UNREVOKED_PARTITIONS, MemberState.UNRELEASED_PARTITIONS


def a(*partitions: int, topic: uuid.UUID = T) -> dict[uuid.UUID, frozenset[int]]:
    return {topic: frozenset(partitions)} if partitions else {}


def held(*partitions: int) -> object:
    """Partition epochs: the given partitions of T are held by another member at epoch 9."""
    return lambda topic_id, partition: 9 if topic_id == T and partition in partitions else -1


ROWS = [
    # name, (state, epoch, assigned, revoking), (target epoch, target), held by others, owned ->
    #       (state, epoch, assigned, revoking)
    ("reconciled: nothing to do", (S, 2, a(0, 1), {}), (2, a(0, 1)), held(), a(0, 1), (S, 2, a(0, 1), {})),
    ("new member, partitions free", (S, 0, {}, {}), (1, a(0, 1, 2)), held(), {}, (S, 1, a(0, 1, 2), {})),
    ("new member, partitions still held elsewhere", (S, 0, {}, {}), (2, a(2, 3)), held(2, 3), {},
     (UNREL, 2, {}, {})),
    ("some free, some held", (S, 0, {}, {}), (2, a(2, 3)), held(3), {}, (UNREL, 2, a(2), {})),
    ("must revoke first: keeps its epoch", (S, 1, a(0, 1, 2, 3), {}), (2, a(0, 1)), held(), a(0, 1, 2, 3),
     (UNREV, 1, a(0, 1), a(2, 3))),
    ("revoke and gain at once: revoke first, gain nothing yet", (S, 1, a(0, 1), {}), (2, a(1, 2)), held(),
     a(0, 1), (UNREV, 1, a(1), a(0))),
    ("still owns a revoked partition: holds", (UNREV, 1, a(0, 1), a(2, 3)), (2, a(0, 1)), held(),
     a(0, 1, 3), (UNREV, 1, a(0, 1), a(2, 3))),
    ("owned not reported: holds", (UNREV, 1, a(0, 1), a(2, 3)), (2, a(0, 1)), held(), None,
     (UNREV, 1, a(0, 1), a(2, 3))),
    ("revocation confirmed: next epoch", (UNREV, 1, a(0, 1), a(2, 3)), (2, a(0, 1)), held(), a(0, 1),
     (S, 2, a(0, 1), {})),
    ("revocation confirmed, then gains the free partition", (UNREV, 1, a(1), a(0)), (2, a(1, 2)), held(),
     a(1), (S, 2, a(1, 2), {})),
    ("waiting: the partition is released now", (UNREL, 2, a(2), {}), (2, a(2, 3)), held(), a(2),
     (S, 2, a(2, 3), {})),
    ("waiting: still held", (UNREL, 2, a(2), {}), (2, a(2, 3)), held(3), a(2), (UNREL, 2, a(2), {})),
    ("revoking already unowned partitions needs no round trip", (S, 1, a(0, 1), {}), (2, a(0)), held(),
     a(0), (S, 2, a(0), {})),
    ("a second topic", (S, 1, a(0), {}), (2, {**a(0), **a(0, topic=U)}), held(), a(0),
     (S, 2, {**a(0), **a(0, topic=U)}, {})),
]


@pytest.mark.parametrize("name,before,target,others,owned,after", ROWS, ids=[row[0] for row in ROWS])
def test_one_heartbeat(name, before, target, others, owned, after):
    state, epoch, assigned, revoking = before
    member = ConsumerGroupMember("m", state=state, member_epoch=epoch, assigned=assigned, pending_revocation=revoking)
    result = reconcile(member, target[0], target[1], others, owned)
    assert (result.state, result.member_epoch, dict(result.assigned), dict(result.pending_revocation)) == after


def test_unknown_state_must_come_back_empty_handed():
    member = ConsumerGroupMember("m", state=MemberState.UNKNOWN, member_epoch=3, assigned=a(0))
    with pytest.raises(FencedMemberEpoch):
        reconcile(member, 4, a(0), held(), a(0))
    assert reconcile(member, 4, a(0), held(), {}).state is S


def test_every_state_has_every_outcome():
    assert {(s, o) for s in MemberState for o in Outcome} == set(TRANSITIONS)


def test_worked_example_never_two_owners():
    """The docstring's example, played heartbeat by heartbeat with a shared partition-epoch map:
    at every step, no partition is held by both members."""
    epochs: dict[int, tuple[str, int]] = {}

    def lookup(name: str):
        return lambda topic_id, p: epochs[p][1] if p in epochs and epochs[p][0] != name else -1

    def store(member: ConsumerGroupMember) -> ConsumerGroupMember:
        for p in [p for p, (owner, _) in epochs.items() if owner == member.member_id]:
            del epochs[p]
        for p in member.assigned.get(T, frozenset()) | member.pending_revocation.get(T, frozenset()):
            assert p not in epochs, f"partition {p} would have two owners"
            epochs[p] = (member.member_id, member.member_epoch)
        return member

    m1 = store(ConsumerGroupMember("m1", member_epoch=1, assigned=a(0, 1, 2, 3)))
    m2 = ConsumerGroupMember("m2")
    targets = {"m1": a(0, 1), "m2": a(2, 3)}
    m2 = store(reconcile(m2, 2, targets["m2"], lookup("m2"), {}))
    assert (m2.state, m2.member_epoch, dict(m2.assigned)) == (UNREL, 2, {})
    m1 = store(reconcile(m1, 2, targets["m1"], lookup("m1"), a(0, 1, 2, 3)))
    assert (m1.state, m1.member_epoch) == (UNREV, 1)
    m2 = store(reconcile(m2, 2, targets["m2"], lookup("m2"), {}))
    assert dict(m2.assigned) == {}  # m1 has not confirmed yet
    m1 = store(reconcile(m1, 2, targets["m1"], lookup("m1"), a(0, 1)))
    assert (m1.state, m1.member_epoch, dict(m1.assigned)) == (S, 2, a(0, 1))
    m2 = store(reconcile(m2, 2, targets["m2"], lookup("m2"), {}))
    assert (m2.state, m2.member_epoch, dict(m2.assigned)) == (S, 2, a(2, 3))
