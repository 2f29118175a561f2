"""``ApiKey`` against the ``apiKey`` of every request spec Kafka ships (via kafka-python 3.0)."""

from __future__ import annotations

import json
import os
import re

import kafka.protocol.schemas as kafka_schemas

from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.messages import SCHEMAS

SPECS = os.path.join(os.path.dirname(kafka_schemas.__file__), "resources")


def _kafka_request_keys() -> dict[str, int]:
    keys = {}
    for name in os.listdir(SPECS):
        if not name.endswith("Request.json"):
            continue
        with open(os.path.join(SPECS, name), encoding="utf-8") as spec_file:
            text = "\n".join(line for line in spec_file if not line.lstrip().startswith("//"))
        spec = json.loads(text)
        snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", spec["name"][: -len("Request")]).upper()
        keys[snake] = spec["apiKey"]
    return keys


def test_every_key_kafka_python_ships_has_kafkas_number() -> None:
    kafka_keys = _kafka_request_keys()
    assert len(kafka_keys) > 40  # the resources really were found
    for name, number in kafka_keys.items():
        if number <= max(ApiKey):
            assert ApiKey[name] == number, name


def test_every_implemented_api_has_a_name() -> None:
    for api_key in SCHEMAS:
        assert ApiKey(api_key).value == api_key


def test_schemas_handlers_and_advertised_ranges_use_the_enum() -> None:
    from kafkalab.broker.broker import HANDLERS
    from kafkalab.protocol.versions import ADVERTISED, is_implemented

    for table in (SCHEMAS, HANDLERS, ADVERTISED):
        assert all(type(key) is ApiKey for key in table)
    assert set(HANDLERS) == set(SCHEMAS) == set(ADVERTISED)
    for key, (request, response) in SCHEMAS.items():
        assert request.api_key is key and response.api_key is key
    # Produce is advertised from v0 for librdkafka, but only v3+ is implemented.
    assert ADVERTISED[ApiKey.PRODUCE][0] == 0 and not is_implemented(ApiKey.PRODUCE, 2)
    assert is_implemented(ApiKey.PRODUCE, 3) and is_implemented(ApiKey.ADD_PARTITIONS_TO_TXN, 0)
    # Transaction version 2 (KIP-890 part 2) is not implemented, so its versions are not advertised.
    assert not is_implemented(ApiKey.END_TXN, 5) and not is_implemented(ApiKey.TXN_OFFSET_COMMIT, 5)
