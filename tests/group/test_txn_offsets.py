"""Transactional offset commits (TxnOffsetCommit): held pending until the transaction's marker."""

from __future__ import annotations

from kafkalab.errors import ErrorCode as E
from kafkalab.group.log import MemoryCoordinatorLog
from kafkalab.group.offsets import OffsetCommit
from kafkalab.group.records import OffsetCommitValue, offset_commit_key, offset_commit_value
from tests.group._harness import Cluster

PRODUCER = (4000, 0)


def _txn_commit(c: Cluster, group: str, offset: int, *, producer: tuple[int, int] = PRODUCER,
                generation: int = -1, member: str = "") -> list[int]:
    commits = [OffsetCommit("orders", 0, offset, -1, "")]
    return c.coordinator.offsets.txn_commit(group, producer, generation, member, None, commits, c.now_ms)


def _visible(c: Cluster, group: str) -> int | None:
    [(_, value)] = c.coordinator.offsets.fetch(group, [("orders", 0)])
    return None if value is None else value.offset


def test_pending_until_the_commit_marker():
    c = Cluster()
    assert _txn_commit(c, "g", 5) == [E.NONE]
    assert _visible(c, "g") is None and c.coordinator.offsets.has_pending("g", ("orders", 0))
    c.coordinator.offsets.complete_transaction(PRODUCER[0], True, [c.coordinator.partition_of("g")])
    assert _visible(c, "g") == 5 and not c.coordinator.offsets.has_pending("g", ("orders", 0))


def test_abort_drops_and_other_partitions_markers_do_not_touch():
    c = Cluster()
    _txn_commit(c, "g", 5)
    other = (c.coordinator.partition_of("g") + 1) % 50
    c.coordinator.offsets.complete_transaction(PRODUCER[0], True, [other])  # not g's partition
    assert c.coordinator.offsets.has_pending("g", ("orders", 0))
    c.coordinator.offsets.complete_transaction(PRODUCER[0], False, [c.coordinator.partition_of("g")])
    assert _visible(c, "g") is None and not c.coordinator.offsets.pending


def test_member_checks_as_kafka_classic_group():
    c = Cluster()
    a, _ = c.join_with_id("g")
    c.advance(3000)
    c.sync("g", 1, a, {a: b"A"})
    assert _txn_commit(c, "g", 1, generation=1, member="someone") == [E.UNKNOWN_MEMBER_ID]
    assert _txn_commit(c, "g", 1, generation=7, member=a) == [E.ILLEGAL_GENERATION]
    assert _txn_commit(c, "g", 1, generation=1, member=a) == [E.NONE]
    assert _txn_commit(c, "g", 1) == [E.NONE]  # a producer outside the group (generation -1)
    assert _txn_commit(c, "missing", 1, generation=3, member="m") == [E.ILLEGAL_GENERATION]


def test_writes_a_transactional_batch_of_the_producer():
    appended = []

    class Recording:
        def append(self, partition, records, now_ms, producer=None):
            appended.append((partition, records, producer))
            return 0

        def when_committed(self, partition, offset, callback):
            callback(0)

    c = Cluster()
    c.coordinator.log = Recording()
    _txn_commit(c, "g", 5)
    [(partition, records, producer)] = appended
    assert partition == c.coordinator.partition_of("g") and producer == PRODUCER
    assert records[0][0] == offset_commit_key("g", "orders", 0)


def test_load_pending_from_open_transactions():
    c = Cluster()
    value = OffsetCommitValue(offset=9, metadata="", commit_timestamp=c.now_ms)
    record = (c.coordinator.partition_of("g"), offset_commit_key("g", "orders", 0), offset_commit_value(value))
    c.coordinator.offsets.load_pending({4000: [record]})
    assert c.coordinator.offsets.has_pending("g", ("orders", 0)) and "g" in c.coordinator.groups
    c.coordinator.offsets.complete_transaction(4000, True, [record[0]])
    assert _visible(c, "g") == 9


def test_a_txn_offset_commit_is_answered_once_committed_and_dropped_if_it_never_is():
    """acks=all, as Kafka's storeOffsets: the answer waits for the ISR; an append that never
    gets there is answered with its error and the COMMIT marker does not make it visible."""
    waiting = []

    class Replicating(MemoryCoordinatorLog):
        def when_committed(self, partition, offset, callback):
            waiting.append(callback)

    c = Cluster()
    c.coordinator.log = Replicating()
    commits = [OffsetCommit("orders", 0, 5, -1, "")]
    answers = []
    c.coordinator.offsets.txn_commit("g", PRODUCER, -1, "", None, commits, c.now_ms, answers.append)
    assert not answers
    waiting.pop()(E.COORDINATOR_NOT_AVAILABLE)
    assert answers == [[E.COORDINATOR_NOT_AVAILABLE]]
    c.coordinator.offsets.complete_transaction(PRODUCER[0], True, [c.coordinator.partition_of("g")])
    assert "g" not in c.coordinator.offsets.offsets or ("orders", 0) not in c.coordinator.offsets.offsets["g"]
