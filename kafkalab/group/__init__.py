"""The group coordinator: classic and KIP-848 consumer groups, rebalances and committed offsets.

* :mod:`.state` -- Kafka's five group states and the transition table.
* :mod:`.group` -- a group, its members and generations (Kafka's ``ClassicGroup``).
* :mod:`.coordinator` -- JoinGroup, SyncGroup, Heartbeat, LeaveGroup and the group admin APIs.
* :mod:`.offsets` -- OffsetCommit, OffsetFetch, OffsetDelete and offset expiration.
* :mod:`.records` -- the ``__consumer_offsets`` key and value schemas, written and replayed.
* :mod:`.log` -- the seam through which the coordinator appends to and replays its topic.
* :mod:`.partitioner` -- which ``__consumer_offsets`` partition owns a group.
* :mod:`.consumer` -- KIP-848 consumer groups (ConsumerGroupHeartbeat, server-side assignors),
  which share group ids, the log and committed offsets with the classic groups.

Nothing here does I/O: time enters as ``now_ms``, randomness as a ``random.Random``, and the
log is reached only through :class:`~kafkalab.group.log.CoordinatorLog`.
"""
