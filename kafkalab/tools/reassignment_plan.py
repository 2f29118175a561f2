"""The pure half of ``kafkalab reassign-partitions``: Kafka's JSON files, proposals and texts.

Theory of operation
-------------------
Mirrors the parts of Kafka's ``ReassignPartitionsCommand`` and ``AdminUtils`` that need no
broker, so they can be tested against Kafka's documented examples:

* the *topics-to-move* file of ``--generate``: ``{"version": 1, "topics": [{"topic": "foo"}]}``;
* the *reassignment* file of ``--execute``, ``--verify`` and ``--cancel``, and what ``--generate``
  prints: ``{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[5,6],
  "log_dirs":["any","any"]}]}`` -- sorted by topic then partition, written without spaces as
  Jackson writes it; ``log_dirs`` may be left out when read;
* ``--generate``'s proposal, Kafka's ``assignReplicasToBrokers``: partition ``p``'s first replica
  is broker ``(p + start) mod n`` of the list, and the others follow at a shift that grows by one
  after every ``n`` partitions, so followers spread too; with racks, the list alternates racks
  and a follower skips racks (and brokers) that already hold a replica while others do not;
* ``--throttle``'s configs: a partition's *sources* (its replicas before the move) are throttled
  on the leader side, its *destinations* (replicas being added) on the follower side, as
  ``leader.replication.throttled.replicas = "0:101,0:102"`` (``partition:broker``, sorted as
  text), and each broker involved gets ``leader.`` and ``follower.replication.throttled.rate``.

Worked example: moving ``foo``'s 2 partitions (replication factor 2) onto brokers [5, 6] with start
0 and shift 0 proposes partition 0 on [5, 6] and partition 1 on [6, 5]: ``p`` = 1 starts at
broker index 1 and its follower is ``(1 + 1 + (0 + 0) mod 1) mod 2`` = index 0.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafkalab.errors import ErrorCode, KafkaError

JSON_VERSION = 1  # the only version of both files Kafka defines
ANY_LOG_DIR = "any"
TopicPartition = tuple[str, int]


class ReassignmentFileError(KafkaError):
    """A topics or reassignment file Kafka's tool would refuse."""

    error_code = ErrorCode.INVALID_REQUEST


def _version(data: Any) -> int:
    if not isinstance(data, dict):
        raise ReassignmentFileError("The input string is not a valid JSON")
    version = data.get("version", JSON_VERSION)
    if version != JSON_VERSION:
        raise ReassignmentFileError(f"Not supported version field value {version}")
    return JSON_VERSION


def _load(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as error:
        raise ReassignmentFileError(f"The input string is not a valid JSON: {error}") from None


def parse_topics(text: str) -> list[str]:
    """``--topics-to-move-json-file``: the topic names, refusing duplicates as Kafka does."""
    data = _load(text)
    _version(data)
    try:
        topics = [str(entry["topic"]) for entry in data.get("topics", [])]
    except (KeyError, TypeError) as error:
        raise ReassignmentFileError(f"Invalid topics file: missing {error}") from None
    duplicates = sorted({t for t in topics if topics.count(t) > 1})
    if duplicates:
        raise ReassignmentFileError(f"List of topics to reassign contains duplicate entries: {', '.join(duplicates)}")
    return topics


def parse_reassignment(text: str) -> list[tuple[TopicPartition, list[int]]]:
    """``--reassignment-json-file``: (partition, target replicas) in file order. A log
    directory other than ``any`` is refused: kafkalab's brokers have one log directory."""
    data = _load(text)
    _version(data)
    parsed = []
    try:
        for entry in data.get("partitions", []):
            part = (str(entry["topic"]), int(entry["partition"]))
            replicas = [int(r) for r in entry["replicas"]]
            log_dirs = entry.get("log_dirs", [ANY_LOG_DIR] * len(replicas))
            if len(log_dirs) != len(replicas):
                raise ReassignmentFileError(f"Size of replicas list {replicas} is different from size of log dirs "
                                            f"list {log_dirs} for partition {part[0]}-{part[1]}")
            if any(d != ANY_LOG_DIR for d in log_dirs):
                raise ReassignmentFileError(f"kafkalab brokers have one log directory; {part[0]}-{part[1]} asks "
                                            f"for {log_dirs}")
            parsed.append((part, replicas))
    except (KeyError, TypeError, ValueError) as error:
        if isinstance(error, ReassignmentFileError):
            raise
        raise ReassignmentFileError(f"Invalid reassignment file: {error!r}") from None
    return parsed


def check_execute(targets: Sequence[tuple[TopicPartition, list[int]]]) -> dict[TopicPartition, list[int]]:
    """Kafka's ``parseExecuteAssignmentArgs`` checks, in its order and words."""
    if not targets:
        raise ReassignmentFileError("Partition reassignment list cannot be empty")
    if any(not replicas for _, replicas in targets):
        raise ReassignmentFileError("Partition replica list cannot be empty")
    parts = [part for part, _ in targets]
    duplicated = sorted({p for p in parts if parts.count(p) > 1})
    if duplicated:
        raise ReassignmentFileError("Partition reassignment contains duplicate topic partitions: "
                                    + ",".join(f"{t}-{p}" for t, p in duplicated))
    repeats = [f"{t}-{p} contains multiple entries for {','.join(str(b) for b in sorted({b for b in r if r.count(b) > 1}))}"
               for (t, p), r in targets if len(set(r)) != len(r)]
    if repeats:
        raise ReassignmentFileError(f"Partition replica lists may not contain duplicate entries: {'. '.join(repeats)}")
    return dict(targets)


def format_reassignment(assignment: Mapping[TopicPartition, Sequence[int]]) -> str:
    """Kafka's ``formatAsReassignmentJson``: compact, sorted by topic then partition."""
    partitions = [{"topic": t, "partition": p, "replicas": list(assignment[(t, p)]),
                   "log_dirs": [ANY_LOG_DIR] * len(assignment[(t, p)])} for t, p in sorted(assignment)]
    return json.dumps({"version": JSON_VERSION, "partitions": partitions}, separators=(",", ":"))


def _replica_index(first: int, shift: int, index: int, brokers: int) -> int:
    return (first + 1 + (shift + index) % (brokers - 1)) % brokers


def assign_replicas_to_brokers(partitions: int, replication_factor: int, brokers: Mapping[int, str | None],
                               rng: random.Random, fixed_start_index: int | None = None) -> dict[int, list[int]]:
    """Kafka's ``AdminUtils.assignReplicasToBrokers`` over ``brokers`` (id -> rack, in the given
    order); rack-aware when any broker has a rack (then all must, which the caller checks). Start and shift are drawn from ``rng``
    unless ``fixed_start_index`` gives both, as Kafka's ``fixedStartIndex`` does."""
    if replication_factor > len(brokers):
        raise ReassignmentFileError(f"Replication factor: {replication_factor} larger than available brokers: "
                                    f"{len(brokers)}.", error_code=ErrorCode.INVALID_REPLICATION_FACTOR)
    racked = any(rack is not None for rack in brokers.values())
    ids = _rack_alternated(brokers) if racked else list(brokers)
    n = len(ids)
    if fixed_start_index is None:
        start, shift = rng.randrange(n), rng.randrange(n)
    else:
        start = shift = fixed_start_index
    placed = {}
    for p in range(partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        if racked:
            placed[p] = _rack_aware_replicas(ids, brokers, first, shift, replication_factor)
        else:
            placed[p] = [ids[first]] + [ids[_replica_index(first, shift, j, n)] for j in range(replication_factor - 1)]
    return placed


def _rack_alternated(brokers: Mapping[int, str | None]) -> list[int]:
    """Brokers taken one per rack in turn (racks and each rack's brokers sorted), as Kafka's ``getRackAlternatedBrokerList``."""
    by_rack: dict[str, list[int]] = {}
    for broker, rack in brokers.items():
        by_rack.setdefault(str(rack), []).append(broker)
    queues = [sorted(by_rack[rack]) for rack in sorted(by_rack)]
    ordered: list[int] = []
    for round_index in range(max(len(q) for q in queues)):
        ordered += [q[round_index] for q in queues if round_index < len(q)]
    return ordered


def _rack_aware_replicas(ids: list[int], racks: Mapping[int, str | None], first: int, shift: int,
                         replication_factor: int) -> list[int]:
    rack_count = len(set(racks.values()))
    replicas = [ids[first]]
    k = 0
    while len(replicas) < replication_factor:
        # Each pass over the other brokers places one more replica, so this never runs longer.
        assert k < replication_factor * len(ids), f"no broker found for replica {len(replicas)} of {ids}"
        broker = ids[_replica_index(first, shift * rack_count, k, len(ids))]
        used_racks = {racks[b] for b in replicas}
        if ((racks[broker] not in used_racks or len(used_racks) == rack_count)
                and (broker not in replicas or len(replicas) == len(ids))):
            replicas.append(broker)
        k += 1
    return replicas


@dataclass(frozen=True, slots=True)
class PartitionMove:
    """A partition's replicas before a move (sources) and the ones it gains (destinations)."""

    sources: frozenset[int]
    destinations: frozenset[int]


def move_map(ongoing: Mapping[TopicPartition, tuple[Sequence[int], Sequence[int]]],
             proposed: Mapping[TopicPartition, Sequence[int]],
             current: Mapping[TopicPartition, Sequence[int]]) -> dict[TopicPartition, PartitionMove]:
    """Kafka's ``calculateProposedMoveMap``. ``ongoing`` holds (replicas, adding) of the
    reassignments in progress, whose sources stay those of the first move."""
    moves = {part: PartitionMove(frozenset(r) - frozenset(a), frozenset(a)) for part, (r, a) in ongoing.items()}
    for part, replicas in proposed.items():
        sources = moves[part].sources if part in moves else frozenset(current[part])
        moves[part] = PartitionMove(sources, frozenset(replicas) - sources)
    return moves


def throttled_replicas(moves: Mapping[TopicPartition, PartitionMove]) -> dict[str, tuple[str, str]]:
    """topic -> (leader.replication.throttled.replicas, follower.replication.throttled.replicas)."""
    leader: dict[str, set[str]] = {}
    follower: dict[str, set[str]] = {}
    for (topic, partition), move in moves.items():
        leader.setdefault(topic, set()).update(f"{partition}:{b}" for b in move.sources)
        follower.setdefault(topic, set()).update(f"{partition}:{b}" for b in move.destinations - move.sources)
    return {topic: (",".join(sorted(leader[topic])), ",".join(sorted(follower[topic]))) for topic in leader}


def verify_lines(states: Mapping[TopicPartition, tuple[list[int], list[int], bool]]) -> list[str]:
    """Kafka's ``partitionReassignmentStatesToString``; ``states`` holds (current replicas,
    target replicas, done) per partition."""
    lines = ["Status of partition reassignment:"]
    for topic, partition in sorted(states):
        current, target, done = states[(topic, partition)]
        name = f"{topic}-{partition}"
        if not done:
            lines.append(f"Reassignment of partition {name} is still in progress.")
        elif current == target:
            lines.append(f"Reassignment of partition {name} is completed.")
        else:
            lines.append(f"There is no active reassignment of partition {name}, but replica set is "
                         f"{','.join(map(str, current))} rather than {','.join(map(str, target))}.")
    return lines


__all__ = [
    "ANY_LOG_DIR", "JSON_VERSION", "PartitionMove", "ReassignmentFileError", "TopicPartition",
    "assign_replicas_to_brokers", "check_execute", "format_reassignment", "move_map", "parse_reassignment",
    "parse_topics", "throttled_replicas", "verify_lines",
]
