"""Delayed operations and the purgatory that holds them (Kafka's ``DelayedOperationPurgatory``).

* ``operation`` -- ``DelayedOperation``: try_complete / on_complete / on_expiration and the
  exactly-once ``force_complete``; the docstring shows how ``DelayedFetch`` and
  ``DelayedProduce`` plug in;
* ``purgatory`` -- ``DelayedOperationPurgatory``: watch keys, ``check_and_complete``, expiry
  through a timing wheel, purging of completed operations;
* ``delete``    -- ``DelayedDelete``, the ``file.delete.delay.ms`` wait before segment files go;
* ``events``    -- the trace events a purgatory emits to its listeners.
"""

from kafkalab.purgatory.delete import FILE_DELETE_DELAY_MS_DEFAULT, DelayedDelete
from kafkalab.purgatory.operation import DelayedOperation
from kafkalab.purgatory.purgatory import PURGE_INTERVAL_DEFAULT, DelayedOperationPurgatory

__all__ = [
    "FILE_DELETE_DELAY_MS_DEFAULT",
    "PURGE_INTERVAL_DEFAULT",
    "DelayedDelete",
    "DelayedOperation",
    "DelayedOperationPurgatory",
]
