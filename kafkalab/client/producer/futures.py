"""What ``send`` returns: a future for one record's :class:`RecordMetadata`, completed by the sender.

Theory of operation
-------------------
A Java ``KafkaProducer.send`` returns at once with a ``Future<RecordMetadata>``; the record is
written later, when the sender thread has sent its batch and the broker has answered. The three
ways to use it are the three *send modes*:

* fire-and-forget: ignore the future (and never learn of a failure);
* synchronous: ``send(record).get()`` waits for the answer and raises if the write failed;
* asynchronous: ``send(record, callback)``; ``callback(metadata, exception)`` runs once, with
  exactly one of the two set, when the batch is answered.

The future here holds no I/O. The sender completes it (:meth:`FutureRecordMetadata.complete` or
:meth:`~FutureRecordMetadata.fail`); ``get`` asks the adapter that owns the network to run until
the future is done (a socket loop, or the simulation's clock). Worked example: a record appended
as the third of a batch that the broker writes at base offset 40 completes with offset 42.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from kafkalab.errors import KafkaError


class RecordMetadata(NamedTuple):
    """Where a record was written (Kafka's ``RecordMetadata``); offset -1 when ``acks=0``.
    Immutable; a named tuple because one is built per acknowledged record."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    serialized_key_size: int
    serialized_value_size: int


Callback = Callable[[RecordMetadata | None, KafkaError | None], None]
Driver = Callable[[Callable[[], bool], int | None], bool]  # run until done() or the timeout (ms)


class FutureRecordMetadata:
    """One record's outcome. Completed once, by the sender; not thread-safe.

    As Kafka's ``FutureRecordMetadata``, it also carries what the record's metadata will report
    besides its offset: the serialized key and value sizes (-1 for null), and the timestamp the
    record was appended with (set by its batch)."""

    __slots__ = ("_callbacks", "_driver", "_error", "_metadata", "key_size", "timestamp", "value_size")

    def __init__(self, driver: Driver | None = None, callbacks: tuple[Callback, ...] = (),
                 key_size: int = -1, value_size: int = -1) -> None:
        self._metadata: RecordMetadata | None = None
        self._error: KafkaError | None = None
        self._callbacks = callbacks  # run in this order, once; () after

        self._driver = driver
        self.key_size, self.value_size = key_size, value_size
        self.timestamp = -1

    def done(self) -> bool:
        return self._metadata is not None or self._error is not None

    def add_callback(self, callback: Callback) -> None:
        """Run ``callback`` on completion (at once if already complete)."""
        if self._metadata is None and self._error is None:
            self._callbacks += (callback,)
        else:
            callback(self._metadata, self._error)

    def complete(self, metadata: RecordMetadata) -> None:
        assert not self.done(), f"record already completed: {self._metadata or self._error}"
        self._metadata = metadata
        if self._callbacks:
            self._run_callbacks()

    def complete_at(self, topic: str, partition: int, offset: int, log_append_time_ms: int) -> None:
        """Complete with this record's place in the log (-1: unknown, as with acks=0); the
        timestamp is the broker's LogAppendTime when it gives one, else the record's own.
        Called once per acknowledged record, so the metadata is built with ``tuple.__new__``
        (in C) rather than through the named tuple's Python ``__new__``."""
        assert not self.done(), f"record already completed: {self._metadata or self._error}"
        timestamp = self.timestamp if log_append_time_ms < 0 else log_append_time_ms
        metadata = self._metadata = tuple.__new__(RecordMetadata, (topic, partition, offset, timestamp,
                                                                   self.key_size, self.value_size))
        callbacks, self._callbacks = self._callbacks, ()
        for callback in callbacks:
            callback(metadata, None)

    def fail(self, error: KafkaError) -> None:
        assert not self.done(), f"record already completed: {self._metadata or self._error}"
        self._error = error
        self._run_callbacks()

    def _run_callbacks(self) -> None:
        callbacks, self._callbacks = self._callbacks, ()
        for callback in callbacks:
            callback(self._metadata, self._error)

    @property
    def exception(self) -> KafkaError | None:
        return self._error

    def get(self, timeout_ms: int | None = None) -> RecordMetadata:
        """The record's metadata; raises its error. Runs the adapter's I/O until it is known."""
        if not self.done() and self._driver is not None:
            self._driver(self.done, timeout_ms)
        if self._error is not None:
            raise self._error
        if self._metadata is None:
            raise KafkaError(f"the record was not acknowledged within {timeout_ms} ms")
        return self._metadata
