"""InitProducerId (key 22): a producer asks for its producer id and epoch (KIP-98).

Idempotent producers (the default in kafka-python 3.0 and Kafka's Java client since 3.0) call
this before their first Produce and stamp every batch with (producer id, epoch, sequence).
v3+ lets a producer bump the epoch of an id it already holds. Worked example: a fresh
idempotent producer sends ``transactional_id=null, transaction_timeout_ms=60000`` and gets
``producer_id=1774000000000000, producer_epoch=0``.
"""

from __future__ import annotations

from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.schema import f, message

INIT_PRODUCER_ID_REQUEST = message(
    "InitProducerIdRequest", api_key=ApiKey.INIT_PRODUCER_ID, valid="0-4", flexible="2+", fields=[
        f("transactional_id", "string", nullable="0+"),
        f("transaction_timeout_ms", "int32"),
        f("producer_id", "int64", "3+", default=-1),
        f("producer_epoch", "int16", "3+", default=-1),
    ])

INIT_PRODUCER_ID_RESPONSE = message(
    "InitProducerIdResponse", api_key=ApiKey.INIT_PRODUCER_ID, valid="0-4", flexible="2+", fields=[
        f("throttle_time_ms", "int32"),
        f("error_code", "int16"),
        f("producer_id", "int64", default=-1),
        f("producer_epoch", "int16"),
    ])
