"""Kafka's partition-change rules as tables: elections (online, preferred, unclean), fencing,
and AlterPartition validation (``PartitionChangeBuilder`` / ``ReplicationControlManager``)."""

from __future__ import annotations

import pytest

from kafkalab.controller.partition_change import (
    RECOVERING,
    Election,
    change_partition,
    elect_leader,
    fence_broker,
    validate_alter_partition,
)
from kafkalab.errors import ErrorCode
from kafkalab.metadata.image import BrokerRegistration, PartitionRegistration

REG = PartitionRegistration(replicas=(1, 2, 3), isr=(1, 2, 3), leader=1, leader_epoch=4, partition_epoch=9)


def _live(*alive: int):  # type: ignore[no-untyped-def]
    return lambda replica: replica in alive


@pytest.mark.parametrize(("registration", "target", "alive", "election", "expected"), [
    (REG, (1, 2, 3), (1, 2, 3), Election.ONLINE, (1, False)),   # the leader stays while valid
    (REG, (2, 3), (2, 3), Election.ONLINE, (2, False)),         # first in assignment order
    (PartitionRegistration((3, 1, 2), (1, 2, 3), 1), (2, 3), (2, 3), Election.ONLINE, (3, False)),
    (REG, (3,), (2, 3), Election.ONLINE, (3, False)),           # 2 is alive but out of sync
    (REG, (1,), (2, 3), Election.ONLINE, (-1, False)),          # only the dead leader is in sync
    (REG, (1,), (2, 3), Election.UNCLEAN, (2, True)),           # unclean: a live out-of-sync replica
    (REG, (1,), (), Election.UNCLEAN, (-1, False)),             # nobody alive at all
    (PartitionRegistration((1, 2, 3), (1, 2, 3), 2), (1, 2, 3), (1, 2, 3), Election.PREFERRED, (1, False)),
    (PartitionRegistration((1, 2, 3), (2, 3), 2), (2, 3), (1, 2, 3), Election.PREFERRED, (2, False)),
])
def test_election_table(registration, target, alive, election, expected) -> None:  # type: ignore[no-untyped-def]
    assert elect_leader(registration, target, _live(*alive), election) == expected


def test_docstring_example_broker_fenced() -> None:
    (topic, index, changed), = fence_broker([("orders", 0, REG)], 1, _live(2, 3), lambda topic: False)
    assert (topic, index) == ("orders", 0)
    assert (changed.leader, changed.isr, changed.leader_epoch, changed.partition_epoch) == (2, (2, 3), 5, 10)


def test_follower_fenced_shrinks_the_isr_without_a_leader_epoch_bump() -> None:
    (_, _, changed), = fence_broker([("orders", 0, REG)], 3, _live(1, 2), lambda topic: False)
    assert (changed.leader, changed.isr, changed.leader_epoch, changed.partition_epoch) == (1, (1, 2), 4, 10)


def test_last_isr_member_fenced_stays_in_the_isr_and_the_partition_goes_offline() -> None:
    alone = PartitionRegistration((1, 2, 3), (1,), 1, 4, 9)
    (_, _, changed), = fence_broker([("orders", 0, alone)], 1, _live(2, 3), lambda topic: False)
    assert (changed.leader, changed.isr, changed.leader_epoch) == (-1, (1,), 5)
    back = change_partition(changed, (1,), _live(1, 2, 3))  # it returns: it leads again
    assert back is not None and (back.leader, back.isr, back.leader_epoch) == (1, (1,), 6)


def test_unclean_election_marks_recovering_and_resets_the_isr() -> None:
    alone = PartitionRegistration((1, 2, 3), (1,), 1, 4, 9)
    (_, _, changed), = fence_broker([("orders", 0, alone)], 1, _live(2, 3), lambda topic: topic == "orders")
    assert (changed.leader, changed.isr, changed.leader_recovery_state) == (2, (2,), RECOVERING)


def test_no_change_is_a_no_op() -> None:
    assert change_partition(REG, (1, 2, 3), _live(1, 2, 3)) is None
    assert fence_broker([("t", 0, PartitionRegistration((1, 2), (1,), 1))], 2, _live(1), lambda t: False) == []


BROKERS = {b: BrokerRegistration(b, 100 + b, "h", 1) for b in (1, 2, 3)}


@pytest.mark.parametrize(("args", "expected"), [
    ((1, 4, 9, ((1, 101), (2, 102))), ErrorCode.NONE),
    ((1, 3, 9, ((1, 101),)), ErrorCode.FENCED_LEADER_EPOCH),
    ((1, 5, 9, ((1, 101),)), ErrorCode.NOT_CONTROLLER),
    ((2, 4, 9, ((2, 102),)), ErrorCode.INVALID_REQUEST),           # not the leader
    ((1, 4, 8, ((1, 101),)), ErrorCode.INVALID_UPDATE_VERSION),
    ((1, 4, 9, ((2, 102),)), ErrorCode.INVALID_REQUEST),           # an ISR without its leader
    ((1, 4, 9, ((1, 101), (4, -1))), ErrorCode.INVALID_REQUEST),   # not a replica
    ((1, 4, 9, ((1, 101), (3, 99))), ErrorCode.INELIGIBLE_REPLICA),  # epoch of an earlier life
    ((1, 4, 9, ((1, -1), (3, -1))), ErrorCode.NONE),               # -1 skips the epoch check
])
def test_alter_partition_validation(args, expected) -> None:  # type: ignore[no-untyped-def]
    broker, leader_epoch, partition_epoch, isr = args
    assert validate_alter_partition(REG, broker, leader_epoch, partition_epoch, isr, BROKERS) == expected


def test_alter_partition_refuses_fenced_and_shutting_down_replicas() -> None:
    fenced = {**BROKERS, 3: BrokerRegistration(3, 103, "h", 1, fenced=True)}
    assert validate_alter_partition(REG, 1, 4, 9, ((1, -1), (3, -1)), fenced) == ErrorCode.INELIGIBLE_REPLICA
    assert validate_alter_partition(REG, 1, 4, 9, ((1, -1), (3, -1)), fenced, request_version=1) == \
        ErrorCode.OPERATION_NOT_ATTEMPTED
    shutting = {**BROKERS, 2: BrokerRegistration(2, 102, "h", 1, in_controlled_shutdown=True)}
    assert validate_alter_partition(REG, 1, 4, 9, ((1, -1), (2, -1)), shutting) == ErrorCode.INELIGIBLE_REPLICA


def test_alter_partition_leader_recovery_rules() -> None:
    """KIP-704, Kafka's validateAlterPartitionData: a RECOVERING partition may not grow its ISR
    while still recovering, and RECOVERED never goes back to RECOVERING."""
    from kafkalab.controller.partition_change import RECOVERED, validate_alter_partition

    brokers = {b: BrokerRegistration(b, 10 + b, "h", 9000 + b) for b in (1, 2)}
    recovering = PartitionRegistration((1, 2), (1,), 1, 3, 5, leader_recovery_state=RECOVERING)
    recovered = PartitionRegistration((1, 2), (1,), 1, 3, 5)

    def check(registration: PartitionRegistration, isr: tuple[int, ...], state: int) -> ErrorCode:
        return validate_alter_partition(registration, 1, 3, 5, [(b, -1) for b in isr], brokers,
                                        leader_recovery_state=state)

    assert check(recovering, (1, 2), RECOVERING) == ErrorCode.INVALID_REQUEST
    assert check(recovering, (1,), RECOVERING) == ErrorCode.NONE
    assert check(recovering, (1, 2), RECOVERED) == ErrorCode.NONE
    assert check(recovered, (1,), RECOVERING) == ErrorCode.INVALID_REQUEST
    changed = change_partition(recovering, [1, 2], lambda b: True, target_recovery=RECOVERED)
    assert changed is not None and (changed.isr, changed.leader_recovery_state) == ((1, 2), RECOVERED)
