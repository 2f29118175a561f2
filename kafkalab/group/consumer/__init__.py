"""KIP-848 consumer groups: the coordinator assigns, members only heartbeat.

* :mod:`.member` -- a member, its states (STABLE, UNREVOKED_PARTITIONS, UNRELEASED_PARTITIONS)
  as a table, and reconciliation: a partition moves only after its previous owner let it go.
* :mod:`.assignors` -- the server-side ``uniform`` and ``range`` assignors.
* :mod:`.group` -- a group: group epoch, assignment epoch, target assignment, partition epochs.
* :mod:`.coordinator` -- ConsumerGroupHeartbeat, session and rebalance timeouts, leaving,
  static members, and the checks OffsetCommit/OffsetFetch v9 make on member epochs.
* :mod:`.records` -- the ``__consumer_offsets`` records (types 3-8) in Kafka's schemas.
* :mod:`.replay` -- records applied to groups: the only way a consumer group changes.

A classic group and a consumer group never share a group id. Nothing here does I/O: time
arrives as ``now_ms`` and through the broker's timer, member ids come from a ``random.Random``.
"""
