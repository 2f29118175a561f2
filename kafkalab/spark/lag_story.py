"""A consumer-lag story written by a real broker: the data behind lab 05.

Theory of operation
-------------------
Consumer lag is not stored anywhere in Kafka. A lag monitor computes it from two logs the broker
already keeps: the topic's log end offset over time (in its record batches) and each group's
committed offsets (records in ``__consumer_offsets``). Lab 05 recomputes lag that way with Spark,
so it needs both logs written exactly as Kafka writes them. :func:`write_lag_story` writes them
with kafkalab's broker, in this process, on a manual clock (:class:`~kafkalab.client.in_process.InProcessBroker`):

* every second of synthetic time, a producer sends each partition that second's records, with
  timestamps inside the second (Produce, acks=1; one request per batch of at most 2,000
  records, since a Produce request carries one batch per partition). The rate per partition is
  the base rate times the partition's weight, times the burst factor while a burst lasts;
* every group is modelled by its read position per partition: each second it reads at most its
  capacity (records per second per partition), never past the log end offset, and nothing while
  it is down (an outage);
* every ``commit_interval_s`` (as ``auto.commit.interval.ms``) a group that is up commits its
  positions with OffsetCommit, as a standalone consumer does (generation -1, no member id). The
  group coordinator writes each commit to the ``__consumer_offsets`` partition it owns, through
  the same path as a real client's commit.

Rates are whole records per second and nothing is random except keys, so the lag at any commit
follows from the story's numbers by hand; the lab's exercises ask for exactly that. The function
also returns the ground truth it knew at each commit (the position and the log end offset), which
the lab compares with what Spark recomputes from the files alone.

Worked example: a partition receives 40 records/s and a group reads up to 50/s, so it keeps up
and every commit shows lag 0. A burst triples the rate to 120/s for 10 s: the lag grows by
120 - 50 = 70 records each second, to 700 when the burst ends; then it shrinks by 10 a second and
is back to 0 70 s later.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kafkalab.client.in_process import InProcessBroker, InProcessBrokerError
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.records.model import Record
from kafkalab.records.v2 import build_v2_batch

PRODUCE_VERSION = 9
OFFSET_COMMIT_VERSION = 8
STANDALONE_GENERATION = -1  # a consumer that assigns partitions itself commits outside any generation
MS_PER_S = 1_000
MAX_BATCH_RECORDS = 2_000  # keeps every batch far below message.max.bytes at the full scale's rates


@dataclass(frozen=True)
class GroupSpec:
    """A consumer group: how fast it reads each partition, and when it is down."""

    name: str
    records_per_s: int  # capacity per partition
    outages: tuple[tuple[int, int], ...] = ()  # [start_s, end_s): neither reads nor commits

    def is_down(self, second: int) -> bool:
        return any(start <= second < end for start, end in self.outages)


@dataclass(frozen=True)
class Burst:
    """``factor`` times the base rate for seconds in [start_s, end_s)."""

    start_s: int
    end_s: int
    factor: int


@dataclass(frozen=True)
class LagStory:
    """What happens, second by second. Immutable; the defaults are lab 05's small scale."""

    topic: str = "orders"
    partition_weights: tuple[float, ...] = (1.0, 0.5, 1.5)
    seconds: int = 1_200
    records_per_s: int = 40  # per partition of weight 1, outside the burst
    burst: Burst = Burst(120, 240, 3)
    groups: tuple[GroupSpec, ...] = (GroupSpec("billing", 400), GroupSpec("analytics", 50, ((600, 720),)))
    commit_interval_s: int = 5
    value_bytes: int = 64
    keys: int = 1_000
    start_ms: int = 1_700_000_000_000
    seed: int = 5

    def __post_init__(self) -> None:
        if self.seconds < 1 or self.records_per_s < 0 or self.commit_interval_s < 1:
            raise ValueError("seconds and commit_interval_s must be >= 1, records_per_s >= 0")
        for weight in self.partition_weights:
            if (self.records_per_s * weight * self.burst.factor) % 1:
                raise ValueError(f"rate x weight x burst must be whole records per second, not with weight {weight}")

    @property
    def partitions(self) -> int:
        return len(self.partition_weights)

    def rate(self, partition: int, second: int) -> int:
        """Records that arrive in ``partition`` during ``second``."""
        factor = self.burst.factor if self.burst.start_s <= second < self.burst.end_s else 1
        return int(self.records_per_s * self.partition_weights[partition] * factor)

    def total_records(self) -> int:
        return sum(self.rate(p, s) for p in range(self.partitions) for s in range(self.seconds))


@dataclass(frozen=True)
class Commit:
    """What the story knew when a group committed: the ground truth for one partition."""

    group: str
    partition: int
    commit_timestamp_ms: int
    committed_offset: int
    log_end_offset: int

    @property
    def lag(self) -> int:
        return self.log_end_offset - self.committed_offset


@dataclass
class _Positions:
    log_end: list[int]
    read: dict[str, list[int]] = field(default_factory=dict)


def write_lag_story(data_dir: Path, story: LagStory = LagStory(),
                    progress: Callable[[int], None] | None = None) -> list[Commit]:
    """Write ``story`` into ``data_dir`` (created if missing) and return every commit's truth.

    ``progress`` is called with the number of records written after each second."""
    rng = random.Random(story.seed)
    keys = [f"customer-{i:05d}".encode() for i in range(story.keys)]
    value = bytes(rng.randrange(256) for _ in range(story.value_bytes))
    positions = _Positions(log_end=[0] * story.partitions,
                           read={g.name: [0] * story.partitions for g in story.groups})
    commits: list[Commit] = []
    with InProcessBroker(data_dir, start_ms=story.start_ms, seed=story.seed) as broker:
        broker.create_topic(story.topic, story.partitions)
        for second in range(story.seconds):
            broker.advance(MS_PER_S)  # the records produced below arrived during this second
            written = _produce_second(broker, story, second, rng, keys, value, positions)
            _consume_second(story, second, positions)
            if (second + 1) % story.commit_interval_s == 0:
                commits += _commit(broker, story, second, positions)
            if progress is not None:
                progress(written)
    return commits


def _produce_second(broker: InProcessBroker, story: LagStory, second: int, rng: random.Random,
                    keys: list[bytes], value: bytes, positions: _Positions) -> int:
    """One Produce request per batch: a request carries at most one batch per partition."""
    end_ms = broker.now_ms()
    written = 0
    for partition in range(story.partitions):
        count = story.rate(partition, second)
        records = [Record(i, end_ms - MS_PER_S + 1 + i * MS_PER_S // count, rng.choice(keys), value)
                   for i in range(count)]
        for start in range(0, count, MAX_BATCH_RECORDS):
            _produce(broker, story.topic, partition, build_v2_batch(records[start:start + MAX_BATCH_RECORDS]))
        positions.log_end[partition] += count
        written += count
    return written


def _produce(broker: InProcessBroker, topic: str, partition: int, batch: bytes) -> None:
    body = {"transactional_id": None, "acks": 1, "timeout_ms": 30_000,
            "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": batch}]}]}
    [answer] = broker.call(ApiKey.PRODUCE, PRODUCE_VERSION, body).responses[0].partition_responses
    if answer.error_code:
        raise InProcessBrokerError(f"produce to {topic}-{partition}: error {answer.error_code}")


def _consume_second(story: LagStory, second: int, positions: _Positions) -> None:
    for group in story.groups:
        if group.is_down(second):
            continue
        read = positions.read[group.name]
        for partition in range(story.partitions):
            read[partition] = min(positions.log_end[partition], read[partition] + group.records_per_s)


def _commit(broker: InProcessBroker, story: LagStory, second: int, positions: _Positions) -> list[Commit]:
    done = []
    for group in story.groups:
        if group.is_down(second):
            continue
        read = positions.read[group.name]
        body = {"group_id": group.name, "generation_id_or_member_epoch": STANDALONE_GENERATION,
                "member_id": "", "group_instance_id": None, "topics": [{"name": story.topic, "partitions": [
                    {"partition_index": p, "committed_offset": read[p], "committed_leader_epoch": -1,
                     "committed_metadata": ""} for p in range(story.partitions)]}]}
        answer = broker.call(ApiKey.OFFSET_COMMIT, OFFSET_COMMIT_VERSION, body)
        errors = [p.error_code for t in answer.topics for p in t.partitions if p.error_code]
        if errors:
            raise InProcessBrokerError(f"OffsetCommit for {group.name}: errors {errors}")
        done += [Commit(group.name, p, broker.now_ms(), read[p], positions.log_end[p]) for p in range(story.partitions)]
    return done


__all__ = ["Burst", "Commit", "GroupSpec", "LagStory", "write_lag_story"]
