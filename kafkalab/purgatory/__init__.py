"""Delayed operations and the purgatory that holds them (Kafka's ``DelayedOperationPurgatory``).

* ``operation`` -- ``DelayedOperation``: try_complete / on_complete / on_expiration and the
  exactly-once ``force_complete``; the docstring shows how ``DelayedFetch`` and
  ``DelayedProduce`` plug in;
* ``purgatory`` -- ``DelayedOperationPurgatory``: watch keys, ``check_and_complete``, expiry
  through a timing wheel, purging of completed operations;
* ``events``    -- the trace events a purgatory emits to its listeners.
"""

from kafkalab.purgatory.operation import DelayedOperation
from kafkalab.purgatory.purgatory import PURGE_INTERVAL_DEFAULT, DelayedOperationPurgatory

__all__ = [
    "PURGE_INTERVAL_DEFAULT",
    "DelayedOperation",
    "DelayedOperationPurgatory",
]
