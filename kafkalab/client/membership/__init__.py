"""A consumer's group membership: the classic protocol's client side, sans I/O.

:mod:`.state` is the state table, :mod:`.member` the member that produces requests and consumes
responses, :mod:`.sockets` a blocking adapter that runs one against a real broker. The
simulation runs members in :class:`kafkalab.sim.cluster.SimCluster`. :mod:`.heartbeat_member`
is the member of a KIP-848 consumer group, which only sends ConsumerGroupHeartbeat (run in the
simulation by :mod:`kafkalab.sim.heartbeat_members`).
"""

from kafkalab.client.membership.member import (
    DEFAULT_ASSIGNORS,
    Coordinator,
    GroupMember,
    MemberConfig,
    Notification,
    Outgoing,
    Transition,
)
from kafkalab.client.membership.state import MemberEvent, MemberState

__all__ = [
    "DEFAULT_ASSIGNORS", "Coordinator", "GroupMember", "MemberConfig", "MemberEvent", "MemberState",
    "Notification", "Outgoing", "Transition",
]
