"""What a partition leader knows about one follower: its log end offset and when it last caught up.

Theory of operation
-------------------
A leader never asks a follower how far it got. It learns it from the follower's own Fetch
requests: a follower that asks for offset 120 has every offset below 120, so its log end offset
(LEO) is 120. Each fetch updates one :class:`ReplicaState`, mirroring Kafka's ``Replica``:

* ``log_end_offset`` -- the fetch offset, the follower's LEO as far as the leader knows;
* ``last_caught_up_time_ms`` -- the latest time ``t`` at which the follower had everything the
  leader had at ``t``. The ISR rule is built on it (KIP-537, ``replica.lag.time.max.ms``).

A fetch at ``now`` for offset ``o`` proves one of two things. If ``o`` reaches the leader's LEO
*now*, the follower is caught up now. Otherwise, if ``o`` reaches the leader's LEO at the time of
the *previous* fetch, the follower was caught up as of that previous fetch. Worked example, with
the leader's LEO in brackets::

    t=1000  fetch(o=100) [LEO 100]  -> caught up at 1000 (o >= LEO now)
    t=1500  leader appends to 130
    t=1600  fetch(o=100) [LEO 130]  -> still 1000: 100 < 130, and 100 >= 100 proves only t=1000
    t=1700  fetch(o=130) [LEO 160]  -> 1600: 130 < 160 now, but 130 >= 130, the LEO at t=1600

A follower is *caught up* while its LEO equals the leader's, or while
``now - last_caught_up_time_ms <= replica.lag.time.max.ms``. A follower that is fetching but
cannot keep up and one that stopped fetching both drift out of that window, which is the point
of measuring time rather than offsets (the offset-lag rule that KIP-16 removed punished bursts).

States are immutable values; the leader replaces a follower's state on each fetch.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

UNKNOWN_OFFSET = -1  # Kafka's UnifiedLog.UnknownOffset: no fetch seen yet


@dataclass(frozen=True, slots=True)
class ReplicaState:
    """One follower as its leader sees it. Immutable; owned by one :class:`Partition`."""

    log_start_offset: int = UNKNOWN_OFFSET
    log_end_offset: int = UNKNOWN_OFFSET
    last_fetch_leader_log_end_offset: int = 0  # the leader's LEO when the last fetch arrived
    last_fetch_time_ms: int = 0
    last_caught_up_time_ms: int = 0
    broker_epoch: int | None = None  # from the follower's fetch; None until one arrives

    def is_caught_up(self, leader_end_offset: int, now_ms: int, max_lag_ms: int) -> bool:
        """Kafka's ``ReplicaState.isCaughtUp``: same LEO, or caught up within the lag window."""
        return leader_end_offset == self.log_end_offset or now_ms - self.last_caught_up_time_ms <= max_lag_ms

    def after_fetch(
        self, fetch_offset: int, log_start_offset: int, now_ms: int, leader_end_offset: int,
        broker_epoch: int,
    ) -> ReplicaState:
        """The state after a follower's fetch for ``fetch_offset`` while the leader's LEO is
        ``leader_end_offset`` (see the worked example in the module docstring)."""
        if fetch_offset >= leader_end_offset:
            caught_up_ms = max(self.last_caught_up_time_ms, now_ms)
        elif fetch_offset >= self.last_fetch_leader_log_end_offset:
            caught_up_ms = max(self.last_caught_up_time_ms, self.last_fetch_time_ms)
        else:
            caught_up_ms = self.last_caught_up_time_ms
        return ReplicaState(
            log_start_offset=log_start_offset,
            log_end_offset=fetch_offset,
            last_fetch_leader_log_end_offset=max(leader_end_offset, self.last_fetch_leader_log_end_offset),
            last_fetch_time_ms=now_ms,
            last_caught_up_time_ms=caught_up_ms,
            broker_epoch=broker_epoch,
        )

    def reset(self, now_ms: int, leader_end_offset: int, *, is_new_leader: bool, in_sync: bool) -> ReplicaState:
        """The state when this node becomes leader in a new leader epoch, mirroring
        ``Replica.resetReplicaState``.

        An ISR member starts its lag window now, so a new leader does not shrink the ISR before
        the followers had a chance to fetch; an out-of-sync one starts at 0, so it can neither
        hold the high watermark back nor rejoin before it fetches. A node that was a follower
        until now knew nothing about the other followers and starts from scratch; a leader that
        stays leader keeps each follower's offsets."""
        caught_up_ms = now_ms if in_sync else 0
        if is_new_leader:
            return ReplicaState(last_fetch_leader_log_end_offset=UNKNOWN_OFFSET,
                                last_caught_up_time_ms=caught_up_ms)
        return replace(
            self, last_fetch_leader_log_end_offset=leader_end_offset,
            last_fetch_time_ms=now_ms if in_sync else 0, last_caught_up_time_ms=caught_up_ms,
        )


__all__ = ["UNKNOWN_OFFSET", "ReplicaState"]
