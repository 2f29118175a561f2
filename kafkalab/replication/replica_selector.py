"""Fetching from the closest replica (KIP-392): which replica a consumer should read from.

Theory of operation
-------------------
In a cluster spread over racks (or cloud availability zones), a consumer reading from a leader
in another zone pays for cross-zone traffic on every byte. KIP-392 lets the consumer read from a
follower in its own rack instead. Three pieces make it work:

* the consumer names its rack (``client.rack``) in every Fetch (v11+, ``rack_id``);
* the leader, when ``replica.selector.class`` is set, picks a *preferred read replica* for that
  consumer and answers the fetch with no records and ``preferred_read_replica`` = that broker;
  the consumer then sends its fetches for the partition there (until an error or its metadata
  refresh sends it back to the leader);
* a follower serves consumer fetches from Fetch v11 on, up to its own high watermark, which it
  learns from its leader's fetch answers (so it may be a little behind the leader's).

The leader only offers replicas that can serve the fetch right now: in the ISR, with the fetch
offset between their log start and log end offsets. Kafka's one built-in selector,
``org.apache.kafka.common.replica.RackAwareReplicaSelector``, keeps the leader when the client
names no rack, when no candidate shares the client's rack, or when the leader itself does;
otherwise it takes the same-rack replica with the highest log end offset, then the one caught up
most recently, then the highest broker id. A selection of the leader is never sent: the answer
carries ``preferred_read_replica`` -1 and the records, as for any fetch.

Worked example: leader 1 in rack ``a``, followers 2 (``b``) and 3 (``c``), all in the ISR with
log end offset 50. A consumer in rack ``b`` fetches offset 40 from broker 1 and is answered
``preferred_read_replica=2`` with no records; it fetches from broker 2 and reads up to broker 2's
high watermark. A consumer in rack ``a``, or with no rack, keeps reading from broker 1.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from kafkalab.errors import ConfigError

RACK_AWARE_REPLICA_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
NO_PREFERRED_REPLICA = -1  # the Fetch response's default: read from the broker you asked


@dataclass(frozen=True, slots=True)
class ReplicaView:
    """One replica a selector may choose: Kafka's ``ReplicaView`` with the rack of its endpoint."""

    broker_id: int
    rack: str | None
    log_end_offset: int
    time_since_last_caught_up_ms: int


Selector = Callable[[str, Sequence[ReplicaView], ReplicaView], ReplicaView]


def rack_aware(client_rack: str, replicas: Sequence[ReplicaView], leader: ReplicaView) -> ReplicaView:
    """``RackAwareReplicaSelector.select``: the leader unless a same-rack replica is better placed."""
    if not client_rack:
        return leader
    same_rack = [r for r in replicas if r.rack == client_rack]
    if not same_rack or leader in same_rack:
        return leader
    return max(same_rack, key=lambda r: (r.log_end_offset, -r.time_since_last_caught_up_ms, r.broker_id))


SELECTORS: dict[str, Selector] = {RACK_AWARE_REPLICA_SELECTOR: rack_aware}


def selector_named(class_name: str | None) -> Selector | None:
    """The selector ``replica.selector.class`` names; None (not set) means consumers read leaders."""
    if not class_name:
        return None
    try:
        return SELECTORS[class_name]
    except KeyError:
        raise ConfigError(f"replica.selector.class {class_name!r}: kafkalab knows only "
                          f"{RACK_AWARE_REPLICA_SELECTOR}") from None


@dataclass(frozen=True, slots=True)
class Candidate:
    """What the leader knows of one follower when a consumer's fetch arrives."""

    broker_id: int
    in_sync: bool
    log_start_offset: int
    log_end_offset: int
    last_caught_up_time_ms: int


def preferred_read_replica(select: Selector, client_rack: str, leader_id: int, leader_end_offset: int,
                           followers: Sequence[Candidate], racks: Mapping[int, str | None], fetch_offset: int,
                           now_ms: int) -> int:
    """Kafka's ``ReplicaManager.findPreferredReadReplica`` for a consumer's fetch at the leader:
    the broker to send the consumer to, or :data:`NO_PREFERRED_REPLICA` to serve it here."""
    views = [ReplicaView(f.broker_id, racks.get(f.broker_id), f.log_end_offset, now_ms - f.last_caught_up_time_ms)
             for f in followers
             if f.in_sync and f.log_start_offset <= fetch_offset <= f.log_end_offset and f.broker_id in racks]
    leader = ReplicaView(leader_id, racks.get(leader_id), leader_end_offset, 0)
    chosen = select(client_rack, [*views, leader], leader)
    return NO_PREFERRED_REPLICA if chosen == leader else chosen.broker_id


__all__ = ["Candidate", "NO_PREFERRED_REPLICA", "RACK_AWARE_REPLICA_SELECTOR", "ReplicaView", "preferred_read_replica",
           "rack_aware", "selector_named"]
