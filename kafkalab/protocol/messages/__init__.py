"""Every API kafkalab speaks: request and response schema per API key.

Each module holds one API group. :data:`SCHEMAS` maps an API key to its (request, response)
schema pair; the broker, the header decoder and the tests all look APIs up here, so adding an
API (consumer groups, transactions) means adding a module and one line below.
"""

from __future__ import annotations

from kafkalab.protocol.api_keys import ApiKey
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
    ApiKey.PRODUCE: (PRODUCE_REQUEST, PRODUCE_RESPONSE),
    ApiKey.FETCH: (FETCH_REQUEST, FETCH_RESPONSE),
    ApiKey.LIST_OFFSETS: (LIST_OFFSETS_REQUEST, LIST_OFFSETS_RESPONSE),
    ApiKey.METADATA: (METADATA_REQUEST, METADATA_RESPONSE),
    ApiKey.FIND_COORDINATOR: (FIND_COORDINATOR_REQUEST, FIND_COORDINATOR_RESPONSE),
    ApiKey.API_VERSIONS: (API_VERSIONS_REQUEST, API_VERSIONS_RESPONSE),
    ApiKey.CREATE_TOPICS: (CREATE_TOPICS_REQUEST, CREATE_TOPICS_RESPONSE),
    ApiKey.DELETE_TOPICS: (DELETE_TOPICS_REQUEST, DELETE_TOPICS_RESPONSE),
    ApiKey.DELETE_RECORDS: (DELETE_RECORDS_REQUEST, DELETE_RECORDS_RESPONSE),
    ApiKey.INIT_PRODUCER_ID: (INIT_PRODUCER_ID_REQUEST, INIT_PRODUCER_ID_RESPONSE),
    ApiKey.DESCRIBE_CONFIGS: (DESCRIBE_CONFIGS_REQUEST, DESCRIBE_CONFIGS_RESPONSE),
    ApiKey.ALTER_CONFIGS: (ALTER_CONFIGS_REQUEST, ALTER_CONFIGS_RESPONSE),
    ApiKey.CREATE_PARTITIONS: (CREATE_PARTITIONS_REQUEST, CREATE_PARTITIONS_RESPONSE),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (INCREMENTAL_ALTER_CONFIGS_REQUEST, INCREMENTAL_ALTER_CONFIGS_RESPONSE),
}
assert all(request.api_key == response.api_key == key for key, (request, response) in SCHEMAS.items())

__all__ = ["SCHEMAS"]
