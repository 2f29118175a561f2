"""Random assignment problems and a batch bridge to Kafka's Java assignors (tests/java)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from kafkalab.client.assignors import ASSIGNORS, Member
from kafkalab.client.consumer_protocol import NO_GENERATION, Subscription
from kafkalab.storage.checkpoints import TopicPartition

Result = dict[str, list[TopicPartition]]


@dataclass(frozen=True)
class Problem:
    assignor: str
    partitions_per_topic: dict[str, int]
    members: tuple[Member, ...]
    partition_racks: dict[TopicPartition, tuple[str, ...]] | None = None  # replica racks

    def run(self) -> Result:
        """kafkalab's answer."""
        return ASSIGNORS[self.assignor](self.partitions_per_topic, self.members, self.partition_racks)


def encode(problems: Sequence[Problem]) -> str:
    lines: list[str] = []
    for problem in problems:
        lines.append(f"CASE {problem.assignor}")
        for t, n in problem.partitions_per_topic.items():
            racks = ""
            if problem.partition_racks is not None and n > 0:
                racks = " " + "/".join("+".join(problem.partition_racks.get((t, p), ())) or "-" for p in range(n))
            lines.append(f"TOPIC {t} {n}{racks}")
        for m in problem.members:
            s = m.subscription
            topics = ",".join(s.topics) or "-"
            owned = ",".join(f"{t}:{p}" for t, p in s.owned_partitions) or "-"
            lines.append(f"MEMBER {m.member_id} {m.group_instance_id or '-'} {s.generation_id} {topics} {owned} "
                         f"{s.rack_id or '-'}")
        lines.append("END")
    return "\n".join(lines) + "\n"


def decode(text: str) -> tuple[list[Result | str], list[float]]:
    """Per problem, Java's assignment, or the name of the exception Java's assignor threw."""
    results: list[Result | str] = []
    seconds: list[float] = []
    for line in text.splitlines():
        parts = line.split(" ")
        if parts[0] == "CASE":
            results.append({})
        elif parts[0] == "ASSIGN":
            tps = [] if parts[2] == "-" else [(t, int(p)) for t, p in (x.rsplit(":", 1) for x in parts[2].split(","))]
            current = results[-1]
            assert isinstance(current, dict)
            current[parts[1]] = tps
        elif parts[0] == "ERROR":
            results[-1] = parts[1]
        elif parts[0] == "SECONDS":
            seconds.append(float(parts[1]))
    return results, seconds


def _member_id(rng: random.Random, index: int) -> str:
    return f"consumer-{index}-{rng.getrandbits(48):012x}"


def random_problem(rng: random.Random, assignor: str, scale: int = 1, racks_chance: float = 0.0) -> Problem:
    """Unequal or equal subscriptions, static members, and for the sticky assignors a previous
    generation's ownership with members that left, members that joined and stale claims.
    ``scale`` multiplies the partition counts and the largest group size; with probability
    ``racks_chance`` partitions get replica racks and members racks (KIP-881)."""
    topics = {f"topic-{i}": scale * rng.choice([0, 1, 2, 3, 5, 8, 13]) for i in range(rng.randint(1, 4))}
    names = list(topics)
    equal = rng.random() < 0.5
    count = rng.randint(1, 9 * scale)
    members: list[Member] = []
    for i in range(count):
        subscribed = names if equal else rng.sample(names, rng.randint(1, len(names)))
        instance = f"instance-{rng.randint(0, 99)}" if rng.random() < 0.2 else None
        members.append(Member(_member_id(rng, i), Subscription(tuple(subscribed)), instance))
    if instance_ids := [m.group_instance_id for m in members if m.group_instance_id]:
        if len(set(instance_ids)) != len(instance_ids):  # static ids are unique in a group
            members = [Member(m.member_id, m.subscription, None) for m in members]
    if assignor in ("sticky", "cooperative-sticky") and rng.random() < 0.8:
        members = _with_history(rng, topics, members)
    partition_racks = None
    if rng.random() < racks_chance:
        members, partition_racks = _with_racks(rng, topics, members)
    return Problem(assignor, topics, tuple(members), partition_racks)


RACKS = ("rack-a", "rack-b", "rack-c")


def _with_racks(rng: random.Random, topics: dict[str, int], members: list[Member]
                ) -> tuple[list[Member], dict[TopicPartition, tuple[str, ...]]]:
    """Replicas on 0-3 racks per partition, and most members in one of the racks."""
    replicas = {(t, p): tuple(rng.sample(RACKS, rng.choice([0, 1, 1, 2, 2, 3])))
                for t, n in topics.items() for p in range(n)}
    placed = []
    for m in members:
        s = m.subscription
        rack = rng.choice(RACKS + (None,))
        placed.append(Member(m.member_id, Subscription(s.topics, s.owned_partitions, s.generation_id, rack),
                             m.group_instance_id))
    return placed, replicas


def _with_history(rng: random.Random, topics: dict[str, int], members: list[Member]) -> list[Member]:
    """Deal all partitions over the members as a previous generation; then some leave, some
    join fresh, and some hold stale or conflicting claims."""
    generation = rng.randint(1, 20)
    everything = [(t, p) for t in sorted(topics) for p in range(topics[t])]
    rng.shuffle(everything)
    joined = set(rng.sample(range(len(members)), rng.randint(0, len(members) // 2)))
    holders = [i for i in range(len(members)) if i not in joined] or [0]
    owned: dict[int, list[TopicPartition]] = {i: [] for i in range(len(members))}
    for k, tp in enumerate(everything):
        if rng.random() < 0.85:  # the rest belonged to members that have left
            owned[holders[k % len(holders)]].append(tp)
    result = []
    for i, m in enumerate(members):
        mine = owned[i]
        gen = generation if mine else NO_GENERATION
        roll = rng.random()
        if mine and roll < 0.15:
            gen = generation - rng.randint(1, 3)  # a member that missed a rebalance
        elif roll < 0.25 and everything:
            mine = mine + [rng.choice(everything)]  # a stale or doubled claim
            gen = generation - rng.randint(0, 1)
        rng.shuffle(mine)
        subscription = Subscription(m.subscription.topics, tuple(dict.fromkeys(mine)), gen)
        result.append(Member(m.member_id, subscription, m.group_instance_id))
    return result
