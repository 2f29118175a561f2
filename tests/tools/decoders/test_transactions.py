"""``--transaction-log-decoder`` on __transaction_state records built from Kafka's specs."""

from __future__ import annotations

import struct

from kafkalab.protocol.types import Writer
from kafkalab.records import Record
from kafkalab.tools.decoders.transactions import TRANSACTION_STATES, parse_transactions

KEY = struct.pack(">hh", 0, 5) + b"app-1"  # record type 0, TransactionLogKey "app-1"


def _parse(key: bytes, value: bytes | None) -> tuple[str | None, str | None]:
    return parse_transactions(Record(3, 0, key, value))


def test_value_v0_with_partitions() -> None:
    value = (struct.pack(">hqhib", 0, 1000, 2, 60000, 1)      # version, pid, epoch, timeout, Ongoing
             + struct.pack(">i", 1) + struct.pack(">h", 6) + b"orders"
             + struct.pack(">iii", 2, 0, 3)                   # partition ids [0, 3]
             + struct.pack(">qq", 1_700_000_001_000, 1_700_000_000_000))
    key, payload = _parse(KEY, value)
    assert key == '{"type":"0","data":{"transactionalId":"app-1"}}'
    assert payload == (
        '{"version":"0","data":{"producerId":1000,"producerEpoch":2,"transactionTimeoutMs":60000,'
        '"transactionStatus":1,"transactionPartitions":[{"topic":"orders","partitionIds":[0,3]}],'
        '"transactionLastUpdateTimestampMs":1700000001000,"transactionStartTimestampMs":1700000000000}}')
    assert TRANSACTION_STATES[1] == "Ongoing"


def test_value_v1_flexible_with_tagged_producer_ids() -> None:
    w = Writer()
    w.int16(1)
    w.int64(1001)                                 # ProducerId
    w.int16(0)                                    # ProducerEpoch
    w.int32(60000)                                # TransactionTimeoutMs
    w.int8(0)                                     # TransactionStatus: Empty
    w.length(-1, compact=True)                    # TransactionPartitions: null
    w.int64(10)                                   # TransactionLastUpdateTimestampMs
    w.int64(-1)                                   # TransactionStartTimestampMs
    w.uvarint(2)                                  # tagged: PreviousProducerId, ClientTransactionVersion
    w.uvarint(0)
    w.uvarint(8)
    w.int64(1000)
    w.uvarint(2)
    w.uvarint(2)
    w.int16(2)
    _, payload = _parse(KEY, w.to_bytes())
    assert payload == (
        '{"version":"1","data":{"producerId":1001,"previousProducerId":1000,"producerEpoch":0,'
        '"transactionTimeoutMs":60000,"transactionStatus":0,"transactionPartitions":null,'
        '"transactionLastUpdateTimestampMs":10,"transactionStartTimestampMs":-1,'
        '"clientTransactionVersion":2}}')


def test_tombstone_and_errors() -> None:
    assert _parse(KEY, None)[1] == "<DELETE>"
    assert _parse(struct.pack(">h", 1) + b"x", None) == ("Unknown record type 1 at offset 3, skipping.", None)
    text, payload = _parse(KEY, struct.pack(">h", 2) + b"\x00" * 40)
    assert payload is None and text == (
        "Error at offset 3, skipping. Could not read record with version 2 from value's buffer due to: "
        "Can't read version 2 of TransactionLogValue.")


def test_tagged_field_with_wrong_size_is_an_error() -> None:
    w = Writer()
    w.int16(1)
    w.int64(1)
    w.int16(0)
    w.int32(1)
    w.int8(0)
    w.length(-1, compact=True)
    w.int64(0)
    w.int64(0)
    w.uvarint(1)
    w.uvarint(0)
    w.uvarint(4)                                  # declares 4 bytes for an int64
    w.int64(5)
    text, _ = _parse(KEY, w.to_bytes())
    assert text is not None and "declared 4 bytes but its value took 8" in text
