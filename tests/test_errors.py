from __future__ import annotations

from kafkalab import errors
from kafkalab.errors import CorruptRecordError, ErrorCode, KafkaError


def test_codes_match_kafka() -> None:
    # A few anchors from Kafka's Errors.java; clients depend on these exact numbers.
    assert ErrorCode.CORRUPT_MESSAGE == 2
    assert ErrorCode.UNKNOWN_TOPIC_OR_PARTITION == 3
    assert ErrorCode.MESSAGE_TOO_LARGE == 10
    assert ErrorCode.UNSUPPORTED_VERSION == 35
    assert ErrorCode.INVALID_REQUEST == 42
    assert ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER == 45
    assert ErrorCode.PRODUCER_FENCED == 90


def test_codes_are_unique() -> None:
    values = [code.value for code in ErrorCode]
    assert len(values) == len(set(values))


def test_corrupt_record_error_carries_position_reason_and_code() -> None:
    error = CorruptRecordError("CRC mismatch", position=61)
    assert error.position == 61 and error.reason == "CRC mismatch"
    assert error.error_code is ErrorCode.CORRUPT_MESSAGE
    assert "byte 61" in str(error)
    assert isinstance(error, KafkaError)


def test_every_exception_class_has_a_code() -> None:
    classes = [
        value
        for value in vars(errors).values()
        if isinstance(value, type) and issubclass(value, KafkaError)
    ]
    assert len(classes) > 5
    for cls in classes:
        assert isinstance(cls.error_code, ErrorCode), cls


# kafka-python names these ten differently from Errors.java; the numbers are what must agree.
KAFKA_PYTHON_RENAMED = {
    2: "CorruptRecordError", 4: "InvalidFetchRequestError", 6: "NotLeaderForPartitionError",
    10: "MessageSizeTooLargeError", 13: "NetworkExceptionError", 17: "InvalidTopicError",
    39: "InvalidReplicationAssignmentError", 40: "InvalidConfigurationError", 56: "KafkaStorageError",
    106: "FetchSessionTopicIdError",
}


def test_every_code_matches_kafka_python() -> None:
    # kafka-python's error classes carry Kafka's numbers too: an oracle nobody here wrote.
    import kafka.errors as kafka_errors

    for code in ErrorCode:
        if code.value <= 0:
            continue
        theirs = kafka_errors.for_code(code.value).__name__
        expected = KAFKA_PYTHON_RENAMED.get(code.value)
        if expected is None:
            assert theirs.lower().removesuffix("error") == code.name.replace("_", "").lower(), code
        else:
            assert theirs == expected, code
