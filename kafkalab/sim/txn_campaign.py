"""A transaction fault campaign: producers commit across brokers while coordinators and leaders die.

Theory of operation
-------------------
One run is a function of its seed. A three-broker :class:`~kafkalab.sim.cluster.SimCluster`
hosts ``orders`` (6 partitions, RF 3, leaders spread over the brokers),
``__transaction_state`` and ``__consumer_offsets`` (5 partitions each, RF 3). Three transactional producers
(:class:`TxnProducer`, ids ``t0`` .. ``t2``) loop: InitProducerId, then transactions of 2 or 3
partitions -- AddPartitionsToTxn, one record per partition (value ``"t1/7"`` for t1's 7th
transaction), then sendOffsetsToTransaction (AddOffsetsToTxn, and TxnOffsetCommit of offset 7
of ``input-0`` for group ``g-t1``, as a consume-transform-produce loop does), EndTxn --
committing four times in five and aborting otherwise. They retry what
Kafka's producer retries, and on a fatal error start again with InitProducerId, which fences
their previous epoch. A read_committed consumer (:class:`Poller`) reads every partition
throughout. Meanwhile, ``steps`` times, the seed's generator picks a fault:

================  =====================================================================
action            what happens
================  =====================================================================
crash-coord       the broker coordinating a producer's transactional id dies
crash-on-commit   the same, the moment that producer's next EndTxn(commit) is answered:
                  PrepareCommit is on the ISR, its markers are on their way
crash-on-offsets  the group coordinator dies the moment a producer's TxnOffsetCommit is
                  answered
crash-leader      the leader of a partition of a transaction being ended dies
isolate           a broker is cut off from the other brokers (clients still reach it)
heal              every cut is healed
restart           a dead broker starts again on its directory
wait              100 ms to 5 s pass
================  =====================================================================

At the end the producers stop, the network heals, every broker runs again and the cluster
settles (every transaction ended, every log replicated and stable; at most a minute); then
every partition is read whole with read_committed. The history -- each
transaction's outcome as its producer saw it, the reads during the run and the final reads --
goes to :func:`kafkalab.sim.txn_checker.check`, which names every anomaly it finds (aborted
read, partial read, lost write, duplicate, read past the LSO, hanging transaction). Any anomaly
raises :class:`~kafkalab.sim.invariants.InvariantViolation` with a replay line::

    python -m kafkalab.sim.txn_campaign --seed 1234

Worked example: t1 commits ``t1/4`` over ``orders-0`` (led by broker 2) and ``orders-5`` (led by
broker 1); its coordinator, broker 3, is crashed the moment EndTxn is answered. The controller
fences broker 3 after 9 s and elects broker 1 for t1's ``__transaction_state`` partition; broker
1 loads PrepareCommit and writes both COMMIT markers with its coordinator epoch; the final
reads find ``t1/4`` in both partitions, as the checker requires of a COMMITTED transaction.
"""

from __future__ import annotations

import dataclasses
import functools
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkalab.client.consumer.config import ConsumerConfig
from kafkalab.client.consumer.fetcher import fetch_request, partition_records
from kafkalab.errors import ErrorCode
from kafkalab.group.partitioner import OFFSETS_TOPIC
from kafkalab.group.partitioner import partition_for as group_partition_for
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.records.model import Record
from kafkalab.records.v2 import build_v2_batch
from kafkalab.sim.campaign_cli import seeds_main
from kafkalab.sim.cluster import CLIENT, PRODUCE_VERSION, START_MS, SimCluster
from kafkalab.sim.invariants import InvariantViolation
from kafkalab.sim.network import LinkFaults
from kafkalab.sim.txn_checker import Outcome, Read, TxnWrite, check, summary
from kafkalab.txn.coordinator import TRANSACTION_STATE_TOPIC, partition_for
from kafkalab.txn.state import TransactionState

TOPIC, PARTITIONS = "orders", 6
TXN_STATE_PARTITIONS = 5
OFFSETS_PARTITIONS = 5  # offsets.topic.num.partitions, small as __transaction_state's
PRODUCERS = 3
STEPS_DEFAULT = 20
TXN_TIMEOUT_MS = 10_000  # transaction.timeout.ms: an abandoned transaction aborts after it
CLIENT_TIMEOUT_MS = 10_000  # the clients' request.timeout.ms
BACKOFF_MS = 100  # retry.backoff.ms (default)
ATTEMPTS_MAX = 500  # retries of one step (about 50 s of backoff) before starting over
POLL_INTERVAL_MS = 500
SETTLE_MS = 60_000  # at most, at the end: fencing, elections, timeouts and lost marker requests resolved
FINAL_FETCHES_MAX = 100  # a bound on the fetches of one final read
FAULTS = LinkFaults(delay_min_ms=1, delay_max_ms=10)
# Small internal topics, and small indexes (as the replication campaign's) so a restart's
# recovery does not map 10 MiB per index.
PROPERTIES = {"transaction.state.log.num.partitions": str(TXN_STATE_PARTITIONS),
              "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS), "log.index.size.max.bytes": "65536"}
ACTIONS = ("crash-coord", "crash-on-commit", "crash-on-commit", "crash-on-offsets", "crash-leader", "isolate",
           "heal", "restart", "wait", "wait")
FETCH_VERSION = 11  # what kafkalab's consumer sends
INIT_VERSION, ADD_VERSION, END_VERSION, ADD_OFFSETS_VERSION, TXN_OFFSET_VERSION, OFFSET_FETCH_VERSION = 4, 3, 3, 0, 0, 7
INPUT = ("input", 0)  # the partition each producer "consumed": its offset is the transaction's number
READ_COMMITTED = ConsumerConfig(isolation_level="read_committed", fetch_max_wait_ms=0, fetch_min_bytes=0)
TopicPartition = tuple[str, int]
E = ErrorCode
NO_ANSWER = -1  # the request timed out
RETRIABLE = frozenset({
    E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE, E.COORDINATOR_LOAD_IN_PROGRESS, E.CONCURRENT_TRANSACTIONS,
    E.NOT_LEADER_OR_FOLLOWER, E.NOT_ENOUGH_REPLICAS, E.NOT_ENOUGH_REPLICAS_AFTER_APPEND, E.REQUEST_TIMED_OUT,
    E.UNKNOWN_TOPIC_OR_PARTITION, E.KAFKA_STORAGE_ERROR, NO_ANSWER,
})


class TxnProducer:
    """A transactional producer reduced to its protocol, as a simulation client. Records each
    transaction's outcome in ``history``. Not thread-safe; owned by one run."""

    def __init__(self, cluster: SimCluster, transactional_id: str, rng: random.Random,
                 history: list[TxnWrite]) -> None:
        self.cluster, self.transactional_id, self.rng, self.history = cluster, transactional_id, rng, history
        self.phase = "init"  # init -> add -> produce -> add-offsets -> txn-offsets -> end -> add ...
        self.group = f"g-{transactional_id}"  # sendOffsetsToTransaction's group
        self.wake_ms, self.in_flight, self.attempts, self.stopped = 0, 0, 0, False
        self.producer_id, self.epoch = -1, -1
        self.sequences: dict[TopicPartition, int] = {}
        self.number, self.commit, self.commit_sent = 0, True, False
        self.partitions: tuple[TopicPartition, ...] = ()
        self.open = False  # a transaction has begun and its outcome is not recorded yet
        self.abortable = False  # a write failed: abort without committing offsets
        self.unsent: set[TopicPartition] = set()
        self.on_committed: Callable[[int], None] | None = None  # called once with the coordinator
        self.on_offsets: Callable[[int], None] | None = None  # called once with the group coordinator

    def next_deadline_ms(self) -> int | None:
        return None if self.stopped or self.in_flight else self.wake_ms

    def on_tick(self, now_ms: int) -> None:
        if self.stopped or self.in_flight or now_ms < self.wake_ms:
            return
        self.wake_ms = now_ms + BACKOFF_MS  # unless an answer says otherwise
        {"init": self._init, "add": self._add, "produce": self._produce, "add-offsets": self._add_offsets,
         "txn-offsets": self._txn_offsets, "end": self._end}[self.phase]()

    def coordinator(self) -> int | None:
        """The transaction coordinator, as FindCoordinator would name it."""
        return _live_leader(self.cluster, TRANSACTION_STATE_TOPIC,
                            partition_for(self.transactional_id, TXN_STATE_PARTITIONS))

    def stop(self) -> None:
        """The producer's process stops: an unfinished transaction is recorded as it stands."""
        self._record(Outcome.UNKNOWN if self.commit_sent else Outcome.ABORTED)
        self.stopped = True

    # --- the steps ---------------------------------------------------------------------------

    def _init(self) -> None:
        self._call(self.coordinator(), ApiKey.INIT_PRODUCER_ID, INIT_VERSION, {
            "transactional_id": self.transactional_id, "transaction_timeout_ms": TXN_TIMEOUT_MS,
            "producer_id": -1, "producer_epoch": -1}, self._initialized)

    def _initialized(self, error: int, response: Any) -> None:
        if not error:
            self.producer_id, self.epoch, self.sequences = response.producer_id, response.producer_epoch, {}
            self._begin()

    def _begin(self) -> None:
        self.number += 1
        count = self.rng.choice((2, 3))
        self.partitions = tuple(sorted((TOPIC, p) for p in self.rng.sample(range(PARTITIONS), count)))
        self.commit, self.commit_sent, self.phase, self.open = self.rng.random() < 0.8, False, "add", True
        self.abortable = False
        self.wake_ms = self.cluster.clock.milliseconds()

    def _add(self) -> None:
        self._call(self.coordinator(), ApiKey.ADD_PARTITIONS_TO_TXN, ADD_VERSION, {
            "v3_and_below_transactional_id": self.transactional_id, "v3_and_below_producer_id": self.producer_id,
            "v3_and_below_producer_epoch": self.epoch,
            "v3_and_below_topics": [{"name": TOPIC, "partitions": [p for _, p in self.partitions]}]},
            self._added, error_of=lambda r: max(p.partition_error_code for t in r.results_by_topic_v3_and_below
                                                 for p in t.results_by_partition))

    def _added(self, error: int, response: Any) -> None:
        if not error:
            self.phase, self.unsent, self.wake_ms = "produce", set(self.partitions), self.cluster.clock.milliseconds()

    def _produce(self) -> None:
        for tp in sorted(self.unsent):
            value = f"{self.transactional_id}/{self.number}".encode()
            batch = build_v2_batch([Record(0, START_MS, None, value)], producer_id=self.producer_id,
                                   producer_epoch=self.epoch, base_sequence=self.sequences.get(tp, 0),
                                   is_transactional=True)
            body = {"transactional_id": self.transactional_id, "acks": -1, "timeout_ms": CLIENT_TIMEOUT_MS,
                    "topic_data": [{"name": tp[0], "partition_data": [{"index": tp[1], "records": batch}]}]}
            registration = self.cluster.controller.image.partition(*tp)
            self._call(None if registration is None else registration.leader, ApiKey.PRODUCE, PRODUCE_VERSION,
                       body, functools.partial(self._produced, tp),
                       error_of=lambda r: r.responses[0].partition_responses[0].error_code)

    def _produced(self, tp: TopicPartition, error: int, response: Any) -> None:
        if not error and tp in self.unsent:
            self.unsent.discard(tp)
            self.sequences[tp] = self.sequences.get(tp, 0) + 1
        if not self.unsent and not self.in_flight:
            self.phase = "end" if self.abortable else "add-offsets"
            self.wake_ms = self.cluster.clock.milliseconds()

    def _add_offsets(self) -> None:
        self._call(self.coordinator(), ApiKey.ADD_OFFSETS_TO_TXN, ADD_OFFSETS_VERSION, {
            "transactional_id": self.transactional_id, "producer_id": self.producer_id,
            "producer_epoch": self.epoch, "group_id": self.group}, self._next("txn-offsets"))

    def _txn_offsets(self) -> None:
        node = group_coordinator(self.cluster, self.group)
        self._call(node, ApiKey.TXN_OFFSET_COMMIT, TXN_OFFSET_VERSION, {
            "transactional_id": self.transactional_id, "producer_id": self.producer_id,
            "producer_epoch": self.epoch, "group_id": self.group, "topics": [{"name": INPUT[0], "partitions": [
                {"partition_index": INPUT[1], "committed_offset": self.number, "committed_metadata": ""}]}]},
            self._next("end", self._take_hook("on_offsets", node)),
            error_of=lambda r: r.topics[0].partitions[0].error_code)

    def _next(self, phase: str, hook: Callable[[], None] = lambda: None) -> Callable[[int, Any], None]:
        def then(error: int, response: Any) -> None:
            if not error:
                self.phase, self.wake_ms = phase, self.cluster.clock.milliseconds()
                hook()
        return then

    def _take_hook(self, name: str, node: int | None) -> Callable[[], None]:
        """A callable that runs (once) the hook ``name`` set by the campaign, with ``node``."""
        def run() -> None:
            hook = getattr(self, name)
            if hook is not None and node is not None:
                setattr(self, name, None)
                hook(node)
        return run

    def _end(self) -> None:
        coordinator = self.coordinator()
        self.commit_sent = self.commit_sent or (self.commit and coordinator is not None)
        self._call(coordinator, ApiKey.END_TXN, END_VERSION, {
            "transactional_id": self.transactional_id, "producer_id": self.producer_id,
            "producer_epoch": self.epoch, "committed": self.commit}, lambda error, _: self._ended(error, coordinator))

    def _ended(self, error: int, coordinator: int | None) -> None:
        if error:
            return
        self._record(Outcome.COMMITTED if self.commit else Outcome.ABORTED)
        if self.commit:
            self._take_hook("on_committed", coordinator)()
        self._begin()

    # --- requests, retries and giving up ---------------------------------------------------------

    def _call(self, node: int | None, api_key: int, version: int, body: dict[str, Any],
              then: Callable[[int, Any], None], error_of: Callable[[Any], int] = lambda r: r.error_code) -> None:
        if node is None or node < 0:
            self._failed(NO_ANSWER, then)  # no leader known: wait for the metadata to change
            return
        self.in_flight += 1

        def answered(response: Any) -> None:
            self.in_flight -= 1
            if not self.stopped:
                self._failed(error_of(response), then, response)

        def timed_out() -> None:
            self.in_flight -= 1
            if not self.stopped:
                self._failed(NO_ANSWER, then)
        self.cluster._send(CLIENT, node, api_key, version, body, answered, timeout_ms=CLIENT_TIMEOUT_MS,
                           on_timeout=timed_out)

    def _failed(self, error: int, then: Callable[[int, Any], None], response: Any = None) -> None:
        """Route an answer: NONE goes on; a retriable error retries after the backoff (up to
        ATTEMPTS_MAX times); anything else ends the transaction: aborted if the producer was
        still writing, otherwise the producer starts over."""
        if not error:
            self.attempts = 0
        elif error in RETRIABLE and self.attempts < ATTEMPTS_MAX:
            self.attempts += 1
        elif self.phase == "produce":
            self.commit, self.unsent, self.abortable = False, set(), True  # abort the transaction
        else:
            self._start_over()
            return
        then(error, response)

    def _start_over(self) -> None:
        self._record(Outcome.UNKNOWN if self.commit_sent else Outcome.ABORTED)
        self.phase, self.attempts = "init", 0

    def _record(self, outcome: Outcome) -> None:
        if self.open:
            self.history.append(TxnWrite(self.transactional_id, self.number, self.partitions, outcome))
            self.open = False


class Poller:
    """A read_committed consumer of every partition, recording each answer as a :class:`Read`.
    Not thread-safe; owned by one run."""

    def __init__(self, cluster: SimCluster) -> None:
        self.cluster = cluster
        self.positions = {(TOPIC, p): 0 for p in range(PARTITIONS)}
        self.in_flight: set[TopicPartition] = set()
        self.reads: list[Read] = []
        self.wake_ms, self.stopped = 0, False

    def next_deadline_ms(self) -> int | None:
        return None if self.stopped else self.wake_ms

    def on_tick(self, now_ms: int) -> None:
        if self.stopped or now_ms < self.wake_ms:
            return
        self.wake_ms = now_ms + POLL_INTERVAL_MS
        for tp in sorted(set(self.positions) - self.in_flight):
            leader = self.cluster.controller.image.partition(*tp)
            if leader is not None and leader.leader >= 0:
                self.in_flight.add(tp)
                fetch(self.cluster, leader.leader, tp, self.positions[tp], self._answered)

    def stop(self) -> None:
        self.stopped = True

    def _answered(self, tp: TopicPartition, read: Read | None, next_offset: int) -> None:
        self.in_flight.discard(tp)
        if read is not None and not self.stopped:
            self.positions[tp] = max(self.positions[tp], next_offset)
            if read.records:
                self.reads.append(read)


def fetch(cluster: SimCluster, node: int, tp: TopicPartition, position: int,
          then: Callable[[TopicPartition, Read | None, int], None]) -> None:
    """One read_committed Fetch of ``tp`` from ``position``; ``then(tp, read or None, next offset)``."""
    body = fetch_request(READ_COMMITTED, [(tp, position)])

    def answered(response: Any) -> None:
        data = response.responses[0].partitions[0]
        if data.error_code:
            return then(tp, None, position)
        fetched = partition_records(READ_COMMITTED, tp, position, data)
        records = tuple((r.offset, r.value or b"") for r in fetched.records)
        then(tp, Read(tp, fetched.last_stable_offset, fetched.high_watermark, records), fetched.next_offset)
    cluster._send(CLIENT, node, ApiKey.FETCH, FETCH_VERSION, body, answered, timeout_ms=CLIENT_TIMEOUT_MS,
                  on_timeout=lambda: then(tp, None, position))


@dataclass(frozen=True, slots=True)
class TxnRunResult:
    seed: int
    actions: Counter[str]  # drawn, and "crashed-on-commit" for each crash-on-commit that fired
    outcomes: Counter[str]  # transactions by outcome
    reads: int  # read_committed answers with records during the run
    records_read: int  # records in the final reads


def run(seed: int, data_dir: Path, steps: int = STEPS_DEFAULT) -> TxnRunResult:
    """One campaign run; raises :class:`InvariantViolation` naming every anomaly found."""
    rng = random.Random(seed)
    cluster = SimCluster(data_dir, nodes=3, seed=seed, faults=FAULTS,
                         properties=PROPERTIES)
    history: list[TxnWrite] = []
    actions: Counter[str] = Counter()
    try:
        cluster.create_topic(TRANSACTION_STATE_TOPIC, TXN_STATE_PARTITIONS, 3)
        cluster.create_topic(OFFSETS_TOPIC, OFFSETS_PARTITIONS, 3)
        cluster.create_topic(TOPIC, PARTITIONS, 3)
        cluster.run_for(2_000)
        producers = [TxnProducer(cluster, f"t{i}", random.Random(rng.getrandbits(64)), history)
                     for i in range(PRODUCERS)]
        poller = Poller(cluster)
        for producer in producers:
            cluster.add_client(producer)
        cluster.add_client(poller)
        cluster.run_for(3_000)
        for _ in range(steps):
            action = rng.choice(ACTIONS)
            actions[action] += 1
            _act(cluster, rng, action, producers, actions)
            cluster.run_for(rng.randint(100, 5_000) if action == "wait" else rng.randint(200, 3_000))
        for producer in producers:
            producer.stop()
        poller.stop()
        cluster.network.heal()
        for node_id, node in cluster.nodes.items():
            if not node.alive:
                cluster.restart(node_id)
        cluster.run_until(lambda: _quiet(cluster), SETTLE_MS)
        final = [_read_whole(cluster, (TOPIC, p)) for p in range(PARTITIONS)]
        offsets = {p.transactional_id: _committed_offset(cluster, p.group) for p in producers}
        anomalies = check(history, poller.reads, final, offsets)
        if anomalies:
            raise InvariantViolation(f"seed {seed}: {summary(anomalies)}; replay with "
                                     f"python -m kafkalab.sim.txn_campaign --seed {seed}")
        return TxnRunResult(seed, actions, Counter(w.outcome.value for w in history), len(poller.reads),
                            sum(len(r.records) for r in final))
    finally:
        cluster.close()


def _act(cluster: SimCluster, rng: random.Random, action: str, producers: list[TxnProducer],
         actions: Counter[str]) -> None:
    alive = sorted(n for n, node in cluster.nodes.items() if node.alive)
    everyone_up = len(alive) == len(cluster.nodes)
    producer = rng.choice(producers)
    if action == "crash-coord" and everyone_up:
        coordinator = producer.coordinator()
        if coordinator is not None:
            cluster.crash(coordinator)
    elif action == "crash-on-commit":
        producer.on_committed = lambda node: _crash_if_all_up(cluster, node, actions, "crashed-on-commit")
    elif action == "crash-on-offsets":
        producer.on_offsets = lambda node: _crash_if_all_up(cluster, node, actions, "crashed-on-offsets")
    elif action == "crash-leader" and everyone_up:
        ending = [p for p in producers if p.phase == "end"] or producers
        partitions = rng.choice(ending).partitions or ((TOPIC, rng.randrange(PARTITIONS)),)
        leader = cluster.controller.image.partition(*rng.choice(partitions))
        if leader is not None and leader.leader in alive:
            cluster.crash(leader.leader)
    elif action == "isolate":
        node = rng.choice(sorted(cluster.nodes))
        cluster.network.isolate(node, [n for n in cluster.nodes if n != node])
    elif action == "heal":
        cluster.network.heal()
    elif action == "restart" and not everyone_up:
        cluster.restart(rng.choice(sorted(set(cluster.nodes) - set(alive))))


def _crash_if_all_up(cluster: SimCluster, node: int, actions: Counter[str], fired: str) -> None:
    if all(n.alive for n in cluster.nodes.values()):
        cluster.crash(node)
        actions[fired] += 1  # the hook fired: a coordinator died mid-commit


def _live_leader(cluster: SimCluster, topic: str, partition: int) -> int | None:
    image = cluster.controller.image
    registration = image.partition(topic, partition)
    leader = None if registration is None else image.brokers.get(registration.leader)
    return None if leader is None or leader.fenced else leader.broker_id


def group_coordinator(cluster: SimCluster, group: str) -> int | None:
    """The group's coordinator, as FindCoordinator would name it."""
    return _live_leader(cluster, OFFSETS_TOPIC, group_partition_for(group, OFFSETS_PARTITIONS))


def _committed_offset(cluster: SimCluster, group: str) -> int | None:
    """The group's committed offset of INPUT, read with require_stable (-1: none; None: a
    transaction's offset commit is still pending, UNSTABLE_OFFSET_COMMIT)."""
    body = {"group_id": group, "require_stable": True,
            "topics": [{"name": INPUT[0], "partition_indexes": [INPUT[1]]}]}
    for _ in range(FINAL_FETCHES_MAX):
        answers: list[Any] = []
        node = group_coordinator(cluster, group)
        if node is not None:
            cluster._send(CLIENT, node, ApiKey.OFFSET_FETCH, OFFSET_FETCH_VERSION, body, answers.append,
                          timeout_ms=CLIENT_TIMEOUT_MS)
            cluster.run_until(lambda: bool(answers), CLIENT_TIMEOUT_MS)
        partition = answers[0].topics[0].partitions[0] if answers and not answers[0].error_code else None
        if partition is not None and not partition.error_code:
            return int(partition.committed_offset)
        if partition is not None and partition.error_code == E.UNSTABLE_OFFSET_COMMIT:
            return None  # the cluster has settled: no marker is coming
        cluster.run_for(BACKOFF_MS)
    raise InvariantViolation(f"seed {cluster.seed}: group {group} never answered OffsetFetch")


def _quiet(cluster: SimCluster) -> bool:
    """Has the cluster settled: no transaction open or being ended on any coordinator, and
    every leader's log replicated and stable (LSO = HW = log end offset)?"""
    open_states = (TransactionState.ONGOING, TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT,
                   TransactionState.PREPARE_EPOCH_FENCE)
    for node in cluster.nodes.values():
        if not node.alive or any(m.state in open_states or m.pending_write
                                 for m in node.broker.txn_coordinator.transactions.values()):
            return False
    for topic, count in ((TOPIC, PARTITIONS), (TRANSACTION_STATE_TOPIC, TXN_STATE_PARTITIONS)):
        for partition in range(count):
            leader = cluster.leader(topic, partition)
            if leader not in cluster.nodes:  # no leader right now (-1): an election is pending
                return False
            log = cluster.nodes[leader].broker.topics.log(topic, partition)
            if log is None or not log.last_stable_offset == log.high_watermark == log.log_end_offset:
                return False
    return True


def _read_whole(cluster: SimCluster, tp: TopicPartition) -> Read:
    """The partition read with read_committed from offset 0 up to its last stable offset."""
    records: list[tuple[int, bytes]] = []
    position, last = 0, Read(tp, -1, -1, ())
    for _ in range(FINAL_FETCHES_MAX):
        answers: list[tuple[Read | None, int]] = []
        fetch(cluster, cluster.leader(*tp), tp, position, lambda _, read, offset: answers.append((read, offset)))
        cluster.run_until(lambda: bool(answers), CLIENT_TIMEOUT_MS)
        read, next_offset = answers[0] if answers else (None, position)
        if read is None:
            cluster.run_for(BACKOFF_MS)
            continue
        records.extend(read.records)
        last, position = read, next_offset
        if position >= read.last_stable_offset:
            break
    return dataclasses.replace(last, records=tuple(records))


def main(argv: list[str] | None = None) -> int:
    return seeds_main("kafkalab.sim.txn_campaign", run, lambda result: (
        f"transactions {dict(result.outcomes)}, {result.reads} reads during the run, "
        f"{result.records_read} records at the end, {dict(result.actions)}"),
                      default_seeds=10, default_steps=STEPS_DEFAULT, argv=argv)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
