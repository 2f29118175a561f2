"""What the producer knows of the cluster: brokers, and each partition's leader.

Theory of operation
-------------------
A producer learns the cluster from Metadata responses: the brokers (id, host, port) and, for
each topic it writes to, every partition with its leader (-1 while none). It asks again when a
topic is new to it, when a broker answers "not the leader" (the leader moved), and every
``metadata.max.age.ms`` (5 minutes) in any case. Worked example: after a response naming
``orders`` with partitions [0: leader 2, 1: leader 3], ``leader(("orders", 1))`` is 3 and
``available("orders")`` is [0, 1]; after a NOT_LEADER_OR_FOLLOWER answer the sender calls
:meth:`ClusterMetadata.request_update` and the next Metadata request refreshes both.
"""

from __future__ import annotations

from typing import Any

from kafkalab.errors import ErrorCode

TopicPartition = tuple[str, int]
NO_LEADER = -1


class ClusterMetadata:
    """The producer's view of brokers and leaders. Not thread-safe; owned by one producer."""

    def __init__(self, max_age_ms: int) -> None:
        self.max_age_ms = max_age_ms
        self.brokers: dict[int, tuple[str, int]] = {}
        self.leaders: dict[str, tuple[int, ...]] = {}  # leader per partition index
        self._available: dict[str, list[int]] = {}  # partitions with a leader, per topic
        self.topic_errors: dict[str, ErrorCode] = {}
        self.wanted: set[str] = set()
        self.updated_ms: int | None = None
        self.update_requested = True

    def want(self, topic: str) -> None:
        if topic not in self.wanted:
            self.wanted.add(topic)
            self.update_requested = True

    def request_update(self) -> None:
        self.update_requested = True

    def needs_update(self, now_ms: int) -> bool:
        if self.update_requested or self.updated_ms is None:
            return True
        return now_ms - self.updated_ms >= self.max_age_ms

    def partition_count(self, topic: str) -> int | None:
        leaders = self.leaders.get(topic)
        return None if leaders is None else len(leaders)

    def leader(self, tp: TopicPartition) -> int | None:
        leaders = self.leaders.get(tp[0])
        if leaders is None or not 0 <= tp[1] < len(leaders) or leaders[tp[1]] == NO_LEADER:
            return None
        return leaders[tp[1]]

    def available(self, topic: str) -> list[int]:
        """Partitions of ``topic`` that have a leader (computed once per Metadata response)."""
        available = self._available.get(topic)
        if available is None:
            available = self._available[topic] = [
                p for p, leader in enumerate(self.leaders.get(topic, ())) if leader != NO_LEADER]
        return available

    def request_body(self) -> dict[str, Any]:
        return {"topics": [{"name": t} for t in sorted(self.wanted)], "allow_auto_topic_creation": True}

    def update(self, body: Any, now_ms: int) -> None:
        """Take a Metadata response in: brokers, and the leaders of every topic it describes."""
        self.brokers = {b.node_id: (b.host, b.port) for b in body.brokers}
        self._available.clear()
        for topic in body.topics:
            code = ErrorCode(topic.error_code) if topic.error_code in ErrorCode._value2member_map_ \
                else ErrorCode.UNKNOWN_SERVER_ERROR
            if code is not ErrorCode.NONE or not topic.partitions:
                self.topic_errors[topic.name] = code
                self.leaders.pop(topic.name, None)
                continue
            self.topic_errors.pop(topic.name, None)
            count = max(p.partition_index for p in topic.partitions) + 1
            leaders = [NO_LEADER] * count
            for p in topic.partitions:
                leaders[p.partition_index] = p.leader_id if p.error_code == 0 else NO_LEADER
            self.leaders[topic.name] = tuple(leaders)
        self.updated_ms = now_ms
        self.update_requested = any(t not in self.leaders for t in self.wanted) and bool(self.wanted)
