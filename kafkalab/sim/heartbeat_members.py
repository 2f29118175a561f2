"""KIP-848 consumer group members in the simulated cluster, with every message they exchange.

Theory of operation
-------------------
:class:`HeartbeatMembers` runs kafkalab's sans-I/O
:class:`~kafkalab.client.membership.heartbeat_member.HeartbeatMember` inside a
:class:`~kafkalab.sim.cluster.SimCluster`: it is one of the cluster's clients, ticked every step
and woken at its members' deadlines, so a member's FindCoordinator and ConsumerGroupHeartbeat
requests are encoded, carried by the seeded network and answered by a real broker, like any
other client's. Each request and answer is kept as a :class:`HeartbeatMessage` -- the member
epoch it carried, the partitions the member reported owning, and the assignment an answer gave
-- which is what the book prints message by message and the KIP-848 timeline draws.

A member can close (:meth:`HeartbeatMembers.leave`: it revokes everything and heartbeats at
epoch -1) or be killed (:meth:`HeartbeatMembers.kill`: it goes silent, and the coordinator
notices when ``group.consumer.session.timeout.ms`` passes without a heartbeat). A killed
member's last partitions are nobody's to consume from the moment it died; ``killed_ms`` keeps
that moment so a timeline can end its ownership there.

Worked example: ``members = HeartbeatMembers(sim)``; ``members.add("m1",
HeartbeatMemberConfig("g", ("orders",)))``; ``sim.run_for(1_000)`` -- the messages are
FindCoordinator (answered COORDINATOR_NOT_AVAILABLE while ``__consumer_offsets`` is being
created), FindCoordinator again after ``retry.backoff.ms``, then a heartbeat at epoch 0 answered
with epoch 1 and every partition, and at once a heartbeat at epoch 1 reporting them owned.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from kafkalab.client.membership import Outgoing
from kafkalab.client.membership.heartbeat_member import HeartbeatMember, HeartbeatMemberConfig, HeartbeatState
from kafkalab.errors import ErrorCode
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.sim.cluster import START_MS, SimCluster

MESSAGES_MAX = 200_000  # a bug guard: a chapter's story sends a few hundred
API_NAMES: dict[int, str] = {ApiKey.FIND_COORDINATOR: "FindCoordinator", ApiKey.CONSUMER_GROUP_HEARTBEAT: "ConsumerGroupHeartbeat"}


@dataclass(frozen=True, slots=True)
class HeartbeatMessage:
    """One request (``kind="request"``) or answer (``"response"``) of one member, ``time_ms``
    after the simulation started. ``partitions`` is what a heartbeat reported owning, or the
    assignment an answer carried (None: the field was null, "unchanged")."""

    time_ms: int
    member: str
    api: str
    kind: str
    member_epoch: int | None = None
    partitions: tuple[int, ...] | None = None
    error: str | None = None


class HeartbeatMembers:
    """KIP-848 members of one simulated cluster, by name. Not thread-safe; owned by one simulation."""

    def __init__(self, sim: SimCluster) -> None:
        self.sim = sim
        self.members: dict[str, HeartbeatMember] = {}
        self.killed_ms: dict[str, int] = {}  # name -> when it died (time since the start)
        self.messages: list[HeartbeatMessage] = []
        sim.add_client(self)

    def add(self, name: str, config: HeartbeatMemberConfig) -> HeartbeatMember:
        assert name not in self.members, f"{name!r} is taken"
        member = HeartbeatMember(config, self._topic_name)
        self.members[name] = member
        return member

    def leave(self, name: str) -> None:
        self.members[name].leave(self.sim.clock.milliseconds())

    def kill(self, name: str) -> None:
        self.killed_ms[name] = self.sim.clock.milliseconds() - START_MS

    def running(self) -> list[str]:
        """Members neither killed nor gone."""
        return [n for n, m in self.members.items() if n not in self.killed_ms
                and m.state not in (HeartbeatState.LEAVING, HeartbeatState.LEFT, HeartbeatState.FATAL)]

    # --- SimClient ---------------------------------------------------------------------------------

    def next_deadline_ms(self) -> int | None:
        deadlines = [m.next_deadline_ms() for n, m in self.members.items() if n not in self.killed_ms]
        found = [d for d in deadlines if d is not None]
        return min(found) if found else None

    def on_tick(self, now_ms: int) -> None:
        for name, member in self.members.items():
            if name not in self.killed_ms:
                for out in member.poll(now_ms):
                    self._send(name, member, out)

    def _send(self, name: str, member: HeartbeatMember, out: Outgoing) -> None:
        alive = [n for n, node in self.sim.nodes.items() if node.alive]
        destination = out.destination if out.destination is not None else (min(alive) if alive else -1)
        self._record(name, out.api_key, "request", out.body)

        def answered(body: Any) -> None:
            if name in self.killed_ms:
                return  # a dead process reads no answers
            self._record(name, out.api_key, "response", body)
            member.on_response(out.api_key, body, self.sim.clock.milliseconds(), out.request_id)

        def timed_out() -> None:
            if name not in self.killed_ms:
                member.on_failure(out.api_key, self.sim.clock.milliseconds(), out.request_id)

        self.sim.send_request(destination, out.api_key, out.version, out.body, answered,
                              timeout_ms=out.timeout_ms, on_timeout=timed_out)

    def _record(self, name: str, api_key: int, kind: str, body: Any) -> None:
        if len(self.messages) >= MESSAGES_MAX:
            raise OverflowError(f"{len(self.messages)} heartbeat messages recorded, the limit is {MESSAGES_MAX}")
        at_ms = self.sim.clock.milliseconds() - START_MS
        api = API_NAMES[api_key]
        error_code = getattr(body, "error_code", None)
        if api_key == ApiKey.FIND_COORDINATOR and getattr(body, "coordinators", None):
            error_code = body.coordinators[0].error_code
        error = None if error_code is None else ErrorCode(error_code).name
        if api_key != ApiKey.CONSUMER_GROUP_HEARTBEAT:
            self.messages.append(HeartbeatMessage(at_ms, name, api, kind, error=error))
            return
        listed = body.topic_partitions if kind == "request" else (
            None if body.assignment is None else body.assignment.topic_partitions)
        partitions = None if listed is None else tuple(sorted(p for entry in listed for p in entry.partitions))
        self.messages.append(HeartbeatMessage(at_ms, name, api, kind, body.member_epoch,
                                              partitions, error))

    def _topic_name(self, topic_id: uuid.UUID) -> str:
        for name, topic in self.sim.controller.image.topics.items():
            if topic.topic_id == topic_id:
                return name
        return str(topic_id)


__all__ = ["HeartbeatMembers", "HeartbeatMessage"]
