"""The coordinator's delayed operations: waiting for members to join, and session timeouts.

Theory of operation
-------------------
Three operations sit in purgatories on the broker's shared timer (Kafka's ``DelayedJoin``,
``InitialDelayedJoin`` and ``DelayedHeartbeat``):

* :class:`DelayedJoin` -- a rebalance in progress. It completes as soon as every member has
  rejoined (``check_and_complete(group_id)`` after each JoinGroup or departure), or when the
  rebalance timeout (the largest ``rebalance_timeout_ms`` of the members) runs out; then the
  coordinator drops the dynamic members that did not rejoin and starts the next generation.
* :class:`InitialDelayedJoin` -- the first rebalance of an empty group waits
  ``group.initial.rebalance.delay.ms`` (3000) so that consumers starting together land in one
  generation instead of one each. Each time the delay passes with a new member added, it waits
  again, never longer in total than the rebalance timeout.
* :class:`DelayedSync` -- after a join completes, every member must send SyncGroup within the
  rebalance timeout; those that have not by then are removed and the group rebalances again
  (Kafka's pending-sync expiration), so a member that vanished between JoinGroup and SyncGroup
  cannot hold the group in CompletingRebalance for as long as its session lasts.
* :class:`DelayedHeartbeat` -- a member's session. Every heartbeat (or JoinGroup/SyncGroup)
  replaces it with a fresh one ``session_timeout_ms`` long; if it ever runs out, the member is
  removed and the group rebalances.

Worked example: with the initial delay at 3000 ms and a rebalance timeout of 300000 ms, a first
member at t=0 and a second at t=2000 make the join wait until t=3000, then (a member was added)
again until t=6000, and complete with both members.
"""

from __future__ import annotations

from collections.abc import Callable

from kafkalab.purgatory.operation import DelayedOperation


class DelayedJoin(DelayedOperation):
    """A rebalance waiting for members to rejoin. Owned by the rebalance purgatory."""

    __slots__ = ("_all_joined", "_complete", "_on_timeout")

    def __init__(self, group_id: str, delay_ms: int, all_joined: Callable[[], bool],
                 complete: Callable[[], None], on_timeout: Callable[[], None] = lambda: None) -> None:
        super().__init__(delay_ms, f"join-{group_id}")
        self._all_joined = all_joined
        self._complete = complete
        self._on_timeout = on_timeout

    def try_complete(self) -> bool:
        return self._all_joined() and self.force_complete()

    def run(self) -> None:
        """The rebalance timeout: note the time before the join completes without the laggards."""
        if not self.is_completed:
            self._on_timeout()
        super().run()

    def on_complete(self) -> None:
        self._complete()

    def on_expiration(self) -> None:
        pass


class InitialDelayedJoin(DelayedOperation):
    """The first rebalance of an empty group: wait for more members before completing."""

    __slots__ = ("_expire",)

    def __init__(self, group_id: str, delay_ms: int, expire: Callable[[], None]) -> None:
        super().__init__(delay_ms, f"initial-join-{group_id}")
        self._expire = expire

    def try_complete(self) -> bool:
        return False  # only time ends the initial delay

    def on_complete(self) -> None:
        pass

    def on_expiration(self) -> None:
        self._expire()


class DelayedSync(DelayedOperation):
    """The deadline for every member of a new generation to send SyncGroup."""

    __slots__ = ("_expire",)

    def __init__(self, group_id: str, rebalance_timeout_ms: int, expire: Callable[[], None]) -> None:
        super().__init__(rebalance_timeout_ms, f"sync-{group_id}")
        self._expire = expire

    def try_complete(self) -> bool:
        return False  # the coordinator completes it when the last member syncs

    def on_complete(self) -> None:
        pass

    def on_expiration(self) -> None:
        self._expire()


class DelayedHeartbeat(DelayedOperation):
    """A member's session: expires unless replaced by the member's next heartbeat."""

    __slots__ = ("_expire",)

    def __init__(self, name: str, session_timeout_ms: int, expire: Callable[[], None]) -> None:
        super().__init__(session_timeout_ms, f"heartbeat-{name}")
        self._expire = expire

    def try_complete(self) -> bool:
        return False

    def on_complete(self) -> None:
        pass

    def on_expiration(self) -> None:
        self._expire()
