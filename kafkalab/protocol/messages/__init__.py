"""Every API kafkalab speaks: request and response schema per API key.

Each module holds one API group. :data:`SCHEMAS` maps an API key to its (request, response)
schema pair; the broker, the header decoder and the tests all look APIs up here, so adding an
API (consumer groups, transactions) means adding a module and one line below.
"""

from __future__ import annotations

from kafkalab.protocol.messages.api_versions import API_VERSIONS_REQUEST, API_VERSIONS_RESPONSE
from kafkalab.protocol.messages.configs import (
    ALTER_CONFIGS_REQUEST,
    ALTER_CONFIGS_RESPONSE,
    DESCRIBE_CONFIGS_REQUEST,
    DESCRIBE_CONFIGS_RESPONSE,
    INCREMENTAL_ALTER_CONFIGS_REQUEST,
    INCREMENTAL_ALTER_CONFIGS_RESPONSE,
)
from kafkalab.protocol.messages.delete_records import DELETE_RECORDS_REQUEST, DELETE_RECORDS_RESPONSE
from kafkalab.protocol.messages.fetch import FETCH_REQUEST, FETCH_RESPONSE
from kafkalab.protocol.messages.find_coordinator import (
    FIND_COORDINATOR_REQUEST,
    FIND_COORDINATOR_RESPONSE,
)
from kafkalab.protocol.messages.init_producer_id import (
    INIT_PRODUCER_ID_REQUEST,
    INIT_PRODUCER_ID_RESPONSE,
)
from kafkalab.protocol.messages.list_offsets import LIST_OFFSETS_REQUEST, LIST_OFFSETS_RESPONSE
from kafkalab.protocol.messages.offset_for_leader_epoch import (
    OFFSET_FOR_LEADER_EPOCH_REQUEST,
    OFFSET_FOR_LEADER_EPOCH_RESPONSE,
)
from kafkalab.protocol.messages.metadata import METADATA_REQUEST, METADATA_RESPONSE
from kafkalab.protocol.messages.produce import PRODUCE_REQUEST, PRODUCE_RESPONSE
from kafkalab.protocol.messages.topics import (
    CREATE_PARTITIONS_REQUEST,
    CREATE_PARTITIONS_RESPONSE,
    CREATE_TOPICS_REQUEST,
    CREATE_TOPICS_RESPONSE,
    DELETE_TOPICS_REQUEST,
    DELETE_TOPICS_RESPONSE,
)
from kafkalab.protocol.schema import Message

SCHEMAS: dict[int, tuple[Message, Message]] = {
    0: (PRODUCE_REQUEST, PRODUCE_RESPONSE),
    1: (FETCH_REQUEST, FETCH_RESPONSE),
    2: (LIST_OFFSETS_REQUEST, LIST_OFFSETS_RESPONSE),
    3: (METADATA_REQUEST, METADATA_RESPONSE),
    10: (FIND_COORDINATOR_REQUEST, FIND_COORDINATOR_RESPONSE),
    18: (API_VERSIONS_REQUEST, API_VERSIONS_RESPONSE),
    19: (CREATE_TOPICS_REQUEST, CREATE_TOPICS_RESPONSE),
    20: (DELETE_TOPICS_REQUEST, DELETE_TOPICS_RESPONSE),
    21: (DELETE_RECORDS_REQUEST, DELETE_RECORDS_RESPONSE),
    22: (INIT_PRODUCER_ID_REQUEST, INIT_PRODUCER_ID_RESPONSE),
    23: (OFFSET_FOR_LEADER_EPOCH_REQUEST, OFFSET_FOR_LEADER_EPOCH_RESPONSE),
    32: (DESCRIBE_CONFIGS_REQUEST, DESCRIBE_CONFIGS_RESPONSE),
    33: (ALTER_CONFIGS_REQUEST, ALTER_CONFIGS_RESPONSE),
    37: (CREATE_PARTITIONS_REQUEST, CREATE_PARTITIONS_RESPONSE),
    44: (INCREMENTAL_ALTER_CONFIGS_REQUEST, INCREMENTAL_ALTER_CONFIGS_RESPONSE),
}

__all__ = ["SCHEMAS"]
