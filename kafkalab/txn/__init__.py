"""The transaction coordinator (KIP-98): transactional producers' ids, epochs and transactions.

* :mod:`.state` -- Kafka's eight transaction states and the table of what each request does.
* :mod:`.metadata` -- one transactional id's producer and transaction, and the epoch rules.
* :mod:`.coordinator` -- InitProducerId, AddPartitionsToTxn, EndTxn, timeouts, expiry, and the
  load and unload of a ``__transaction_state`` partition as its leadership comes and goes.
* :mod:`.markers` -- the seam through which COMMIT/ABORT markers reach partition leaders.
* :mod:`.records` -- the ``__transaction_state`` key and value schemas, written and replayed.

Nothing here does I/O: time enters as ``now_ms`` and through a scheduler on the broker's timer,
the log through :class:`~kafkalab.group.log.CoordinatorLog` (the same seam the group
coordinator writes ``__consumer_offsets`` through), the partition leaders through a
:class:`~kafkalab.txn.markers.MarkerChannel`.
"""
