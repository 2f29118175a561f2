"""The producer's typed failures, each with the Kafka error code a Java client would report.

``ProduceFailedError`` is a broker's refusal of a batch (``NOT_ENOUGH_REPLICAS`` after the
retries ran out, ``INVALID_RECORD``, ...); ``DeliveryTimeoutError`` is Kafka's
``TimeoutException`` for a record not acknowledged within ``delivery.timeout.ms``;
``BlockTimeoutError`` is the same exception raised by ``send`` itself after ``max.block.ms``
(no metadata for the topic, or no ``buffer.memory`` left). A record too large -- for
``max.request.size`` or ``buffer.memory`` at ``send``, or alone in a batch the broker refused
with ``MESSAGE_TOO_LARGE`` -- fails with :class:`kafkalab.errors.RecordTooLargeError`, Kafka's
``RecordTooLargeException``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkalab.errors import ErrorCode, KafkaError

if TYPE_CHECKING:
    from kafkalab.client.producer.accumulator import ProducerBatch


class ProduceFailedError(KafkaError):
    """The broker refused a batch with ``error_code``, and it was not (or no longer) retried."""

    @classmethod
    def of(cls, batch: ProducerBatch, code: ErrorCode) -> ProduceFailedError:
        return cls(f"Produce of {batch.record_count} record(s) to {batch.topic}-{batch.partition} failed "
                   f"with {code.name} ({int(code)}) after {batch.attempts} attempt(s)", error_code=code)


class DeliveryTimeoutError(KafkaError):
    """A record was not acknowledged within ``delivery.timeout.ms``."""

    error_code = ErrorCode.REQUEST_TIMED_OUT


class BlockTimeoutError(KafkaError):
    """``send`` waited ``max.block.ms`` for metadata or memory."""

    error_code = ErrorCode.REQUEST_TIMED_OUT
