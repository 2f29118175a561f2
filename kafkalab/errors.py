"""Kafka's error codes and kafkalab's typed exceptions.

Two kinds of failure run through kafkalab (STYLE.md rule 8):

* Operating errors -- a corrupt file, a malformed request, a bad config value -- raise a
  subclass of :class:`KafkaError`. Each carries the Kafka error code a broker would put in a
  response (``CORRUPT_MESSAGE`` is 2, ``UNSUPPORTED_VERSION`` is 35), so the server maps an
  exception to a response field without a lookup table of its own.
* Programmer errors are ``assert`` statements. Input is never validated with ``assert``,
  because ``python -O`` strips them.

The numeric codes are Kafka's own (``org.apache.kafka.common.protocol.Errors``), all of them up
to 120, so a handler names a code by Kafka's name wherever the broker grows.
"""

from __future__ import annotations

import enum


class ErrorCode(enum.IntEnum):
    """Kafka's wire error codes, numbered as in ``Errors.java``."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    SECURITY_DISABLED = 54
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    LOG_DIR_NOT_FOUND = 57
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    REASSIGNMENT_IN_PROGRESS = 60
    DELEGATION_TOKEN_AUTH_DISABLED = 61
    DELEGATION_TOKEN_NOT_FOUND = 62
    DELEGATION_TOKEN_OWNER_MISMATCH = 63
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65
    DELEGATION_TOKEN_EXPIRED = 66
    INVALID_PRINCIPAL_TYPE = 67
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    LISTENER_NOT_FOUND = 72
    TOPIC_DELETION_DISABLED = 73
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    STALE_BROKER_EPOCH = 77
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    THROTTLING_QUOTA_EXCEEDED = 89
    PRODUCER_FENCED = 90
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    INCONSISTENT_VOTER_SET = 94
    INVALID_UPDATE_VERSION = 95
    FEATURE_UPDATE_FAILED = 96
    PRINCIPAL_DESERIALIZATION_FAILURE = 97
    SNAPSHOT_NOT_FOUND = 98
    POSITION_OUT_OF_RANGE = 99
    UNKNOWN_TOPIC_ID = 100
    DUPLICATE_BROKER_REGISTRATION = 101
    BROKER_ID_NOT_REGISTERED = 102
    INCONSISTENT_TOPIC_ID = 103
    INCONSISTENT_CLUSTER_ID = 104
    TRANSACTIONAL_ID_NOT_FOUND = 105
    FETCH_SESSION_TOPIC_ID_ERROR = 106
    INELIGIBLE_REPLICA = 107
    NEW_LEADER_ELECTED = 108
    OFFSET_MOVED_TO_TIERED_STORAGE = 109
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    MISMATCHED_ENDPOINT_TYPE = 114
    UNSUPPORTED_ENDPOINT_TYPE = 115
    UNKNOWN_CONTROLLER_ID = 116
    UNKNOWN_SUBSCRIPTION_ID = 117
    TELEMETRY_TOO_LARGE = 118
    INVALID_REGISTRATION = 119
    TRANSACTION_ABORTABLE = 120


class KafkaError(Exception):
    """Base of every operating error in kafkalab; carries a Kafka error code."""

    error_code: ErrorCode = ErrorCode.UNKNOWN_SERVER_ERROR

    def __init__(self, message: str, *, error_code: ErrorCode | None = None) -> None:
        super().__init__(message)
        if error_code is not None:
            self.error_code = error_code


class CorruptRecordError(KafkaError):
    """Bytes that do not decode as Kafka records.

    ``position`` is the byte offset (within the buffer being decoded) where decoding stopped,
    and ``reason`` says which rule was broken, e.g. ``"CRC mismatch: stored 0x1234abcd,
    computed 0x0badf00d"``.
    """

    error_code = ErrorCode.CORRUPT_MESSAGE

    def __init__(self, reason: str, *, position: int) -> None:
        super().__init__(f"corrupt record data at byte {position}: {reason}")
        self.reason = reason
        self.position = position


class InvalidTimestampError(KafkaError):
    """A record's CreateTime lies outside what the topic accepts (``message.timestamp.*.max.ms``)."""

    error_code = ErrorCode.INVALID_TIMESTAMP


class InvalidRecordError(KafkaError):
    """Well-formed records that a broker must refuse (e.g. bad offsets, bad timestamps)."""

    error_code = ErrorCode.INVALID_RECORD


class UnsupportedCompressionError(KafkaError):
    """A codec id that Kafka does not define, or a codec the message format cannot carry."""

    error_code = ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


class RecordTooLargeError(KafkaError):
    """A batch larger than ``max.message.bytes`` / ``message.max.bytes``."""

    error_code = ErrorCode.MESSAGE_TOO_LARGE


class ConfigError(KafkaError):
    """A configuration key or value that breaks a rule; names the key, the value and the rule."""

    error_code = ErrorCode.INVALID_CONFIG


class StorageError(KafkaError):
    """A log directory or segment file that cannot be read or written as Kafka expects."""

    error_code = ErrorCode.KAFKA_STORAGE_ERROR


class CorruptIndexError(StorageError):
    """An index file that fails Kafka's sanity checks (mirrors ``CorruptIndexException``)."""


class LogDirFailureError(StorageError):
    """An I/O error in a log directory, which takes the whole directory offline (Kafka's
    ``KafkaStorageException`` raised after ``LogDirFailureChannel.maybeAddOfflineLogDir``).
    ``log_dir`` is the directory's path as the log manager knows it."""

    def __init__(self, message: str, *, log_dir: str) -> None:
        super().__init__(message)
        self.log_dir = log_dir


class OffsetOutOfRangeError(KafkaError):
    """A fetch or lookup for an offset outside [log start offset, log end offset]."""

    error_code = ErrorCode.OFFSET_OUT_OF_RANGE


class ProtocolError(KafkaError):
    """A malformed or unsupported request on the wire."""

    error_code = ErrorCode.INVALID_REQUEST


class UnsupportedVersionError(ProtocolError):
    """An API version the broker does not implement."""

    error_code = ErrorCode.UNSUPPORTED_VERSION


class InvalidPartitionsError(KafkaError):
    """A partition count or partition number outside what the topic has (e.g. 0 partitions)."""

    error_code = ErrorCode.INVALID_PARTITIONS


class UnsupportedForMessageFormatError(KafkaError):
    """A request the log's message format cannot serve, e.g. a v0/v1 append on a Kafka 4 log."""

    error_code = ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT


class TimerError(KafkaError):
    """A timer task or timing-wheel parameter out of bounds (negative delay, zero tick)."""

    error_code = ErrorCode.INVALID_REQUEST


class InvalidRequestError(KafkaError):
    """A request (or a tool's input file) whose content breaks a rule, e.g. a DeleteRecords
    offsets file with a duplicate partition."""

    error_code = ErrorCode.INVALID_REQUEST


class NetworkError(KafkaError):
    """A connection that could not be made, was closed, or timed out mid-request."""

    error_code = ErrorCode.NETWORK_EXCEPTION


class BrokerResponseError(KafkaError):
    """A broker answered a request with a non-zero error code (carried as ``error_code``)."""
