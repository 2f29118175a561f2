"""Checks for the "change the engine" exercises that edit kafkalab's own code.

Some exercises ask the learner to edit the engine itself (a comparison in
``storage/segment.py``, the sign-bit rule in ``partitioner.py``, ...) and watch what changes.
Each has a check here that **fails on the unchanged engine and passes once the edit is made**.
The learner runs it from the exercise's cell (or ``python -m kafkalab.classroom check NAME``),
after restarting the kernel so the edited module is imported again.

Every check names the edit in :data:`ENGINE_CHANGES` as the exact text to find and its
replacement, so the tests (``tests/classroom/test_engine_changes.py``) can make the edit on a
copy of the package and prove both halves: the check fails before, and passes after. Example::

    >>> ENGINE_CHANGES["sign-bit-abs"].path
    'partitioner.py'

A check builds what it needs in a scratch directory and imports the engine only when it runs,
so it sees the edited code.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


class EngineUnchanged(AssertionError):
    """The engine still behaves as Kafka does: the exercise's edit has not been made."""


@dataclass(frozen=True, slots=True)
class EngineChange:
    """One exercise's edit (``old`` becomes ``new`` in ``kafkalab/<path>``) and its check."""

    path: str
    old: str
    new: str
    check: Callable[[], str]


def check(name: str) -> str:
    """Run the named exercise's check: a sentence on success, :class:`EngineUnchanged` if not."""
    return ENGINE_CHANGES[name].check()


def _check_index_interval_rule() -> str:
    from kafkalab.clock import ManualClock
    from kafkalab.records.model import Record
    from kafkalab.records.v2 import build_v2_batch
    from kafkalab.storage.log import Log
    from kafkalab.storage.log_config import LogConfig

    batch_bytes = len(build_v2_batch([Record(0, 0, None, b"x" * 100)]))
    interval = 2 * batch_bytes  # an exact multiple of the batch size: where > and >= differ
    with tempfile.TemporaryDirectory() as directory:
        clock = ManualClock(0)
        log = Log.open(Path(directory) / "t-0", LogConfig(index_interval_bytes=interval), clock)
        for _ in range(12):
            log.append_as_leader(build_v2_batch([Record(0, 0, None, b"x" * 100)]), leader_epoch=0)
        entries = log.active_segment.offset_index.entries
        log.close()
    kafka_entries = 3  # an entry before batches 3, 6 and 9: more than 2 batches' bytes since the last
    if entries == kafka_entries:
        raise EngineUnchanged(
            f"12 batches of {batch_bytes} bytes with index.interval.bytes={interval} got "
            f"{entries} index entries, as Kafka's strict `>` rule says: the comparison in "
            "LogSegment.append is unchanged (restart the kernel after editing segment.py)")
    return f"with `>=`, the segment got {entries} index entries where Kafka writes {kafka_entries}"


def _check_sign_bit_abs() -> str:
    from kafkalab import partitioner

    foobar_hash = -790332482  # murmur2(b"foobar"), Kafka's test vector
    kafka_partition = (foobar_hash & 0x7FFFFFFF) % 1000
    placed = partitioner.partition_for_key(b"foobar", 1000)
    if placed == kafka_partition:
        raise EngineUnchanged(
            f"`foobar` (negative hash) still goes to partition {placed} of 1000, as Kafka's "
            "sign-bit mask puts it: to_positive is unchanged (restart the kernel after editing)")
    return f"`foobar` now goes to partition {placed} of 1000; Kafka puts it in {kafka_partition}"


def _check_wheel_rule() -> str:
    from kafkalab.timer.task_list import TimerTask
    from kafkalab.timer.wheel import TimingWheel

    task = TimerTask(0)
    task.expiration_ms = 1  # exactly one tick after the wheel's time
    bucket = TimingWheel(1, 20, 0, [], []).add(task)
    if bucket is not None:
        raise EngineUnchanged(
            "a task due one tick from now still goes into a bucket: rule 1 of TimingWheel.add "
            "is unchanged (restart the kernel after editing wheel.py)")
    return "a task due one tick from now is reported due at once: it would run a tick early"


def _check_retention_boundary() -> str:
    from kafkalab.clock import ManualClock
    from kafkalab.records.model import Record
    from kafkalab.records.v2 import build_v2_batch
    from kafkalab.storage.log import Log
    from kafkalab.storage.log_config import LogConfig
    from kafkalab.storage.retention import delete_old_segments

    retention_ms = 60_000
    with tempfile.TemporaryDirectory() as directory:
        clock = ManualClock(0)
        log = Log.open(Path(directory) / "t-0", LogConfig(retention_ms=retention_ms), clock)
        log.append_as_leader(build_v2_batch([Record(0, 1_000, None, b"old")]), leader_epoch=0)
        log.roll("manual")
        log.append_as_leader(build_v2_batch([Record(0, 90_000, None, b"new")]), leader_epoch=0)
        delete_old_segments(log, 1_000 + retention_ms)  # the first segment is exactly retention.ms old
        bases = [s.base_offset for s in log.segments]
        log.close()
    if bases[0] == 0:
        raise EngineUnchanged(
            "a segment whose newest record is exactly retention.ms old is still kept, as Kafka's "
            "strict `>` keeps it: the time rule in retention.py is unchanged")
    return "a segment exactly retention.ms old is now deleted: the boundary moved by 1 ms"


def _check_keyless_round_robin() -> str:
    import random

    from kafkalab.client.producer.partitioner import BuiltInPartitioner

    partitioner = BuiltInPartitioner(batch_size=16_384, rng=random.Random(7))
    chosen = []
    for _ in range(30):  # 30 keyless records of 100 bytes: far from filling one 16 KiB batch
        partition = partitioner.partition("clicks", None, None, 3, [0, 1, 2])
        partitioner.on_append("clicks", partition, 100, False, 3, [0, 1, 2])
        chosen.append(partition)
    spread = len(set(chosen))
    if spread == 1:
        raise EngineUnchanged(
            f"30 keyless records all went to partition {chosen[0]}: the sticky partition is kept until "
            "batch.size bytes went to it (KIP-794), so BuiltInPartitioner.partition is unchanged "
            "(restart the kernel after editing partitioner.py)")
    switches = sum(1 for a, b in zip(chosen, chosen[1:]) if a != b)
    return f"30 keyless records now went to {spread} partitions, switching {switches} times: one small batch each"


def _check_election_order() -> str:
    from kafkalab.controller.partition_change import elect_leader
    from kafkalab.metadata.image import PartitionRegistration

    # Broker 1 led; it is fenced and leaves the ISR, which lists 3 before 2.
    registration = PartitionRegistration(replicas=(1, 2, 3), isr=(1, 3, 2), leader=1)
    leader, _unclean = elect_leader(registration, (3, 2), lambda broker: broker != 1)
    if leader == 2:
        raise EngineUnchanged(
            "with replicas [1, 2, 3] and ISR [3, 2], broker 2 leads: the first live ISR member in "
            "*assignment* order, as Kafka elects. elect_leader is unchanged (restart the kernel "
            "after editing partition_change.py)")
    return f"broker {leader} now leads: the election follows the ISR's order, not the assignment's"


def _check_first_assignor_decides() -> str:
    from kafkalab.client.membership import MemberConfig

    config = MemberConfig("g", ("orders",), assignors=("cooperative-sticky", "range"))
    if not config.cooperative:
        raise EngineUnchanged(
            "a member listing [cooperative-sticky, range] still rebalances eagerly: every assignor "
            "must support cooperative rebalancing, as Kafka's ConsumerCoordinator requires. "
            "MemberConfig.cooperative is unchanged (restart the kernel after editing member.py)")
    return ("[cooperative-sticky, range] now rebalances cooperatively, although range (eager only) "
            "may be the protocol the group picks")


def _check_commit_acks_1() -> str:
    from kafkalab.errors import ErrorCode
    from kafkalab.group.partitioner import OFFSETS_TOPIC, partition_for
    from kafkalab.protocol.api_keys import ApiKey
    from kafkalab.sim.cluster import SimCluster

    def call(sim: SimCluster, node: int, api_key: int, version: int, body: dict) -> object:
        answers: list[object] = []
        sim.send_request(node, api_key, version, body, answers.append)
        sim.run_until(lambda: bool(answers), 60_000)
        return answers[0] if answers else None

    def commit(sim: SimCluster, node: int, offset: int) -> int:
        body = {"group_id": "g", "generation_id_or_member_epoch": -1, "member_id": "", "topics": [
            {"name": "orders", "partitions": [{"partition_index": 0, "committed_offset": offset}]}]}
        return call(sim, node, ApiKey.OFFSET_COMMIT, 8, body).topics[0].partitions[0].error_code  # type: ignore[attr-defined]

    def committed(sim: SimCluster, node: int) -> int:
        body = {"group_id": "g", "topics": [{"name": "orders", "partition_indexes": [0]}]}
        answer = call(sim, node, ApiKey.OFFSET_FETCH, 5, body)
        return answer.topics[0].partitions[0].committed_offset  # type: ignore[attr-defined]

    with tempfile.TemporaryDirectory() as directory:
        sim = SimCluster(Path(directory), nodes=3, seed=5)
        try:
            sim.create_topic("orders", 1, 3)
            sim.run_for(100)
            call(sim, 1, ApiKey.FIND_COORDINATOR, 3, {"key": "g", "key_type": 0})
            coordinator = sim.leader(OFFSETS_TOPIC, partition_for("g"))
            commit(sim, coordinator, 7)
            sim.run_for(1_000)  # the followers fetch the commit of 7 either way
            sim.network.isolate(coordinator, [n for n in sim.nodes if n != coordinator])
            answer = commit(sim, coordinator, 8)  # the followers cannot fetch this commit
            if answer != ErrorCode.NONE:
                raise EngineUnchanged(
                    f"a commit the followers cannot replicate was answered {ErrorCode(answer).name} "
                    "after offsets.commit.timeout.ms: commits wait for the high watermark "
                    "(acks=all). when_committed is unchanged (restart the kernel after editing group_log.py)")
            sim.crash(coordinator)
            sim.run_for(20_000)  # the controller fences the broker and elects another leader
            survivor = sim.leader(OFFSETS_TOPIC, partition_for("g"))
            offset = committed(sim, survivor)
        finally:
            sim.close()
    return f"the commit of 8 was acknowledged, yet broker {survivor}, the new coordinator, serves {offset}"


def _check_one_batch_retained() -> str:
    from kafkalab.client.in_process import InProcessBroker
    from kafkalab.client.in_process_txn import TxnProducer

    with tempfile.TemporaryDirectory() as directory:
        broker = InProcessBroker(Path(directory))
        try:
            broker.create_topic("orders", 1)
            producer = TxnProducer(broker, None)
            producer.init()
            first = [producer.produce("orders", 0, [f"order-{n}".encode()]) for n in range(3)]
            retry = producer.produce("orders", 0, [b"order-1"], sequence=1)  # the second batch, again
        finally:
            broker.close()
    if retry.error.name == "NONE":
        raise EngineUnchanged(
            f"a retry of the second of three batches was answered with its first offset "
            f"({retry.base_offset} = {first[1].base_offset}): the partition still remembers five batches. "
            "NUM_BATCHES_TO_RETAIN is unchanged (restart the kernel after editing producer_state.py)")
    return f"a retry of the second of three batches is now refused with {retry.error.name}"


def _check_static_over_dynamic_default() -> str:
    from kafkalab.config.resolve import ConfigLayers, describe_topic_config

    layers = ConfigLayers(static={"log.retention.ms": "3600000"}, dynamic_default={"log.retention.ms": "60000"})
    entry = describe_topic_config(layers, "orders", "retention.ms", broker_id="0")
    if entry.value == "60000":
        raise EngineUnchanged(
            "the cluster-wide dynamic default (60000) still beats server.properties (3600000), as in "
            "Kafka: ConfigLayers.broker_layers is unchanged (restart the kernel after editing resolve.py)")
    return f"server.properties now wins: retention.ms is {entry.value}, and kafka-configs --entity-default has no effect"


def _check_revoke_before_assign() -> str:
    import random
    import uuid

    from kafkalab.clock import ManualClock
    from kafkalab.group.consumer.coordinator import ConsumerGroupSettings, Heartbeat
    from kafkalab.group.coordinator import GroupCoordinator, GroupSettings
    from kafkalab.group.log import MemoryCoordinatorLog
    from kafkalab.timer import Timer

    topic_id = uuid.UUID(int=0x70)
    clock = ManualClock(1_000_000)
    groups = GroupCoordinator(GroupSettings(), MemoryCoordinatorLog(), Timer(clock), random.Random(7),
                              clock.milliseconds, topics={"t": (topic_id, 4)}.get,
                              consumer_settings=ConsumerGroupSettings()).consumer

    def join() -> tuple[str, int]:
        answer = groups.heartbeat(Heartbeat("g", "", 0, rebalance_timeout_ms=30_000, subscribed_topic_names=("t",),
                                            owned={}), clock.milliseconds())
        assert answer.member_id is not None, answer
        return answer.member_id, answer.member_epoch

    m1, m1_epoch = join()  # alone: all four partitions at epoch 1
    m2, m2_epoch = join()  # epoch 2, nothing yet: m1 still holds them
    still_owned = frozenset(range(4))  # m1 has not revoked anything yet, and says so
    groups.heartbeat(Heartbeat("g", m1, m1_epoch, owned={topic_id: still_owned}), clock.milliseconds())
    answer = groups.heartbeat(Heartbeat("g", m2, m2_epoch, owned={}), clock.milliseconds())
    given = (answer.assignment or {}).get(topic_id, frozenset())
    if not given & still_owned:
        raise EngineUnchanged(
            "m2 got nothing while m1 still reports owning all four partitions: the coordinator waits for "
            "m1 to confirm its revocation, as Kafka's does -- next_assignment in group/consumer/member.py is "
            "unchanged (restart the kernel after editing it)")
    return (f"m2 was given partitions {sorted(given & still_owned)} while m1 still reported owning them: "
            "two members of one group now consume the same partitions")


ENGINE_CHANGES: dict[str, EngineChange] = {
    "index-interval-ge": EngineChange(
        "storage/segment.py",
        "if self._bytes_since_last_index_entry > self.index_interval_bytes:",
        "if self._bytes_since_last_index_entry >= self.index_interval_bytes:",
        _check_index_interval_rule),
    "sign-bit-abs": EngineChange(
        "partitioner.py", "    return value & POSITIVE_MASK\n", "    return abs(value)\n",
        _check_sign_bit_abs),
    "retention-time-ge": EngineChange(
        "storage/retention.py",
        "return now_ms - largest_timestamp_ms(segment) > retention_ms",
        "return now_ms - largest_timestamp_ms(segment) >= retention_ms",
        _check_retention_boundary),
    "wheel-rule-le": EngineChange(
        "timer/wheel.py",
        "            if expiration_ms < current_ms + tick_ms:\n",
        "            if expiration_ms <= current_ms + tick_ms:\n",
        _check_wheel_rule),
    "keyless-round-robin": EngineChange(
        "client/producer/partitioner.py",
        "        if sticky is None or sticky.partition >= num_partitions:\n",
        "        if True:  # a partition drawn anew for every keyless record\n",
        _check_keyless_round_robin),
    "election-isr-order": EngineChange(
        "controller/partition_change.py",
        "    for replica in replicas:\n        if valid(replica):\n",
        "    for replica in target_isr:\n        if valid(replica):\n",
        _check_election_order),
    "first-assignor-decides": EngineChange(
        "client/membership/member.py",
        "        return all(name in COOPERATIVE for name in self.assignors)\n",
        "        return self.assignors[0] in COOPERATIVE\n",
        _check_first_assignor_decides),
    "commit-acks-1": EngineChange(
        "broker/group_log.py",
        "        if hosted is not None and hosted.log.high_watermark > offset:\n",
        "        if hosted is not None:  # answer once the leader has it, as acks=1\n",
        _check_commit_acks_1),
    "one-batch-retained": EngineChange(
        "storage/producer_state.py",
        "NUM_BATCHES_TO_RETAIN = 5 ",
        "NUM_BATCHES_TO_RETAIN = 1 ",
        _check_one_batch_retained),
    "static-over-dynamic-default": EngineChange(
        "config/resolve.py",
        "            (ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, self.dynamic_default),\n"
        "            (ConfigSource.STATIC_BROKER_CONFIG, self.static),\n",
        "            (ConfigSource.STATIC_BROKER_CONFIG, self.static),\n"
        "            (ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, self.dynamic_default),\n",
        _check_static_over_dynamic_default),
    "revoke-without-confirmation": EngineChange(
        "group/consumer/member.py",
        "    if revoke and _owns_any(owned, revoke):\n",
        "    if False:  # trust that the member dropped what it was told to revoke\n",
        _check_revoke_before_assign),
}
