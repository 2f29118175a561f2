"""Partition reassignment as tables: the replica arithmetic with the expectations of Kafka's
``PartitionReassignmentReplicasTest`` / ``PartitionReassignmentRevertTest``, and the controller's
decisions (start, complete, cancel, refuse) written as PartitionChangeRecords."""

from __future__ import annotations

import random

import pytest

from kafkalab.controller.local import LocalController
from kafkalab.controller.reassignment import Assignment, ReassignmentError, complete, plan, revert, validate_target
from kafkalab.errors import ErrorCode
from kafkalab.metadata import records as r
from kafkalab.metadata.delta import replay
from kafkalab.metadata.image import BrokerRegistration, MetadataImage, PartitionRegistration
from kafkalab.metadata.record_log import MemoryRecordLog
from kafkalab.metadata.records import decode_record


# (current, target) -> (replicas, adding, removing): Kafka's PartitionReassignmentReplicasTest.
@pytest.mark.parametrize(("current", "target", "expected"), [
    ((3, 2, 1), (3, 2, 1), ((3, 2, 1), (), ())),                        # testNoneAddedOrRemoved
    ((3, 2, 1), (3, 6, 2, 1, 5), ((3, 6, 2, 1, 5), (5, 6), ())),        # testAdditions
    ((3, 2, 1, 0), (3, 1), ((3, 1, 0, 2), (), (0, 2))),                 # testRemovals
    ((3, 2, 1, 0), (7, 3, 1, 9), ((7, 3, 1, 9, 0, 2), (7, 9), (0, 2))),  # testAdditionsAndRemovals
    ((3, 2, 1, 0), (0, 1, 3, 2), ((0, 1, 3, 2), (), ())),               # testRearrangement
])
def test_plan_table(current, target, expected) -> None:  # type: ignore[no-untyped-def]
    assert plan(current, target) == Assignment(*expected)


@pytest.mark.parametrize(("current", "target", "isr", "expected"), [
    ((0, 1, 2), (3, 4, 5), (0, 1, 2, 3, 4), None),                     # testDoesNotCompleteReassignment
    ((0, 1, 2), (0, 1, 2), (0, 1, 2), None),                           # ...IfNoneOngoing
    ((0, 1, 2), (3, 4, 5), (0, 1, 2, 3, 4, 5), ((3, 4, 5), (3, 4, 5))),  # ...AllNewReplicas
    ((0, 1, 2), (0, 1, 3), (0, 1, 2, 3), ((0, 1, 3), (0, 1, 3))),       # ...SomeNewReplicas
    ((0, 1, 2), (0, 1, 3), (0, 2, 3), None),                           # ...IsrDoesNotHaveAllTargetReplicas
])
def test_complete_table(current, target, isr, expected) -> None:  # type: ignore[no-untyped-def]
    done = complete(plan(current, target), isr)
    assert (None if done is None else (done[0].replicas, done[1])) == expected


# PartitionReassignmentRevertTest's registrations (the leader plays no part; -1 here).
@pytest.mark.parametrize(("registration", "expected"), [
    (PartitionRegistration((3, 2, 1), (3, 2), -1), ((3, 2, 1), (3, 2), False)),  # testNoneAddedOrRemoved
    (PartitionRegistration((3, 2, 1), (3, 2), -1, removing_replicas=(2, 1)), ((3, 2, 1), (3, 2), False)),
    (PartitionRegistration((4, 5, 3, 2, 1), (4, 5, 2), -1, adding_replicas=(4, 5)), ((3, 2, 1), (2,), False)),
    (PartitionRegistration((4, 5, 3, 2, 1), (4, 5, 2), -1, adding_replicas=(4, 5), removing_replicas=(2,)),
     ((3, 2, 1), (2,), False)),                                                 # testSomeRemovingAndAdding
    (PartitionRegistration((4, 5, 3, 2, 1), (4, 5), -1, adding_replicas=(4, 5), removing_replicas=(2,)),
     ((3, 2, 1), (3,), True)),                                                  # testIsrSpecialCase
])
def test_revert_table(registration, expected) -> None:  # type: ignore[no-untyped-def]
    back = revert(registration)
    assert (back.assignment.replicas, back.isr, back.unclean) == expected


BROKERS = {b: BrokerRegistration(b, 10 + b, "127.0.0.1", 9090 + b) for b in (1, 2, 3, 4)}


@pytest.mark.parametrize(("target", "message"), [
    ((), "The manual partition assignment includes an empty replica list."),
    ((1, 7), "The manual partition assignment includes broker 7, but no such broker is registered."),
    ((2, 1, 2), "The manual partition assignment includes the broker 2 more than once."),
])
def test_invalid_targets_are_invalid_replica_assignment(target, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ReassignmentError, match=message) as raised:
        validate_target(target, BROKERS)
    assert raised.value.error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT


def _cluster() -> tuple[LocalController, MemoryRecordLog]:
    log = MemoryRecordLog()
    controller = LocalController(list(BROKERS.values()), random.Random(3), log)
    controller.create_topic("orders", 1, 3)
    return controller, log


def _move_to(controller: LocalController, target: tuple[int, ...]) -> PartitionRegistration:
    assert controller.alter_partition_reassignments([("orders", 0, target)]) == [("orders", 0, ErrorCode.NONE, None)]
    registration = controller.image.partition("orders", 0)
    assert registration is not None
    return registration


def _isr(controller: LocalController, isr: tuple[int, ...]) -> ErrorCode:
    p = controller.image.partition("orders", 0)
    assert p is not None
    return controller.alter_partition(p.leader, "orders", 0, p.leader_epoch, p.partition_epoch,
                                      [(b, -1) for b in isr])[0]


def test_move_adds_catches_up_then_removes_and_the_log_replays_it() -> None:
    controller, log = _cluster()
    old = controller.image.partition("orders", 0)
    assert old is not None
    leader, follower, gone = old.replicas
    (new,) = set(BROKERS) - set(old.replicas)
    target = (new, follower, gone)  # the leader's replica moves to the new broker
    started = _move_to(controller, target)
    assert (started.replicas, started.adding_replicas, started.removing_replicas) == (target + (leader,), (new,), (leader,))
    assert (started.leader, started.leader_epoch, started.isr) == (leader, old.leader_epoch, old.isr)
    record = decode_record(log.values[-1])
    assert (record.adding_replicas, record.removing_replicas, record.leader) == ((new,), (leader,), r.NO_LEADER_CHANGE)
    assert [entry[0] for entry in controller.list_partition_reassignments()] == ["orders"]
    # The new replica joins the ISR: the same change completes the move and elects a target replica.
    assert _isr(controller, tuple(sorted(old.isr + (new,)))) == ErrorCode.NEW_LEADER_ELECTED
    done = controller.image.partition("orders", 0)
    assert done is not None
    assert (done.replicas, done.adding_replicas, done.removing_replicas) == (target, (), ())
    assert (done.leader, set(done.isr), done.leader_epoch) == (new, set(target), old.leader_epoch + 1)
    assert controller.list_partition_reassignments() == []
    assert replay(MetadataImage(), [decode_record(v) for v in log.values]).partition("orders", 0) == done


def test_follower_only_move_keeps_the_leader_but_bumps_its_epoch() -> None:
    controller, _ = _cluster()
    old = controller.image.partition("orders", 0)
    assert old is not None
    leader, follower, gone = old.replicas
    (new,) = set(BROKERS) - set(old.replicas)
    _move_to(controller, (leader, follower, new))
    assert _isr(controller, tuple(sorted(old.isr + (new,)))) == ErrorCode.NONE
    done = controller.image.partition("orders", 0)
    assert done is not None
    assert (done.replicas, done.leader, done.leader_epoch) == ((leader, follower, new), leader, old.leader_epoch + 1)


def test_reordering_and_shrinking_complete_at_once() -> None:
    controller, _ = _cluster()
    old = controller.image.partition("orders", 0)
    assert old is not None
    reordered = _move_to(controller, tuple(reversed(old.replicas)))
    assert (reordered.replicas, reordered.adding_replicas, reordered.leader_epoch) == (
        tuple(reversed(old.replicas)), (), old.leader_epoch)  # same members: no epoch bump
    shrunk = _move_to(controller, reordered.replicas[:2])
    assert (shrunk.replicas, shrunk.removing_replicas, shrunk.leader_epoch) == (
        reordered.replicas[:2], (), old.leader_epoch + 1)


def test_cancel_returns_to_the_original_replicas() -> None:
    controller, _ = _cluster()
    old = controller.image.partition("orders", 0)
    assert old is not None
    (new,) = set(BROKERS) - set(old.replicas)
    _move_to(controller, (new,) + old.replicas[1:])
    assert controller.alter_partition_reassignments([("orders", 0, None)]) == [("orders", 0, ErrorCode.NONE, None)]
    back = controller.image.partition("orders", 0)
    assert back is not None
    # As Kafka's revert: the merged list without the added replicas, so the removed one comes last.
    assert (back.replicas, back.isr, back.adding_replicas, back.removing_replicas) == (
        old.replicas[1:] + old.replicas[:1], old.isr, (), ())
    assert back.leader == old.leader
    assert back.leader_epoch == old.leader_epoch + 1  # the added replica left the list
    assert controller.alter_partition_reassignments([("orders", 0, None)]) == [
        ("orders", 0, ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "No partition reassignment is in progress.")]


@pytest.mark.parametrize(("topic", "partition", "target", "error", "message"), [
    ("nope", 0, (1,), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "Unable to find a topic named nope."),
    ("orders", 5, (1,), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "Unable to find partition orders:5."),
    ("orders", 0, (1, 9), ErrorCode.INVALID_REPLICA_ASSIGNMENT,
     "The manual partition assignment includes broker 9, but no such broker is registered."),
])
def test_refusals_write_nothing(topic, partition, target, error, message) -> None:  # type: ignore[no-untyped-def]
    controller, log = _cluster()
    before = len(log.values)
    assert controller.alter_partition_reassignments([(topic, partition, target)]) == [(topic, partition, error, message)]
    assert len(log.values) == before


def test_a_request_that_forbids_changing_the_replication_factor() -> None:
    controller, log = _cluster()
    old = controller.image.partition("orders", 0)
    assert old is not None
    before = len(log.values)
    (error, message), = [(e, m) for _, _, e, m in controller.alter_partition_reassignments(
        [("orders", 0, old.replicas[:2])], allow_replication_factor_change=False)]
    assert (error, len(log.values)) == (ErrorCode.INVALID_REPLICATION_FACTOR, before)
    assert message == "The replication factor of orders-0 would change from 3 to 2, which this request does not allow."
    (_, _, error, _), = controller.alter_partition_reassignments(
        [("orders", 0, tuple(reversed(old.replicas)))], allow_replication_factor_change=False)
    assert error == ErrorCode.NONE


def test_one_request_changes_a_bounded_number_of_partitions(monkeypatch: pytest.MonkeyPatch) -> None:
    from kafkalab.controller import local
    monkeypatch.setattr(local, "RECORDS_PER_USER_OP_MAX", 2)
    controller = LocalController(list(BROKERS.values()), random.Random(3))
    controller.create_topic("wide", 3, 2)
    targets = [("wide", p, tuple(reversed(controller.image.partition("wide", p).replicas)))  # type: ignore[union-attr]
               for p in range(3)]
    assert [error for _, _, error, _ in controller.alter_partition_reassignments(targets)] == [
        ErrorCode.NONE, ErrorCode.NONE, ErrorCode.UNKNOWN_SERVER_ERROR]
