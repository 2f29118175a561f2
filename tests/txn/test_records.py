"""``__transaction_state`` records: the worked example's bytes, round trips, the dump tool's
reading of what the coordinator writes, and the declarations against Kafka's own JSON specs
(``transaction-coordinator/src/main/resources/common/message/``)."""

from __future__ import annotations

import json
import subprocess

import pytest

from kafkalab.errors import CorruptRecordError
from kafkalab.protocol.schema import parse_versions
from kafkalab.records import Record
from kafkalab.tools.decoders.transactions import parse_transactions
from kafkalab.txn.records import (
    TRANSACTION_LOG_KEY,
    TRANSACTION_LOG_VALUE,
    TxnRecord,
    decode_key,
    decode_value,
    transaction_log_key,
    transaction_log_value,
)
from tests.group.test_records import KAFKA_GIT, _in, _kafka_fields, _our_fields, _snake

ONGOING = TxnRecord(producer_id=1000, producer_epoch=2, timeout_ms=60_000, status=1,
                    partitions=frozenset({("orders", 3), ("orders", 0)}), last_update_ms=7, start_ms=5)


def test_worked_example_bytes():
    key = transaction_log_key("app-1")
    value = transaction_log_value(ONGOING)
    assert key.hex() == "0000" "0005" + b"app-1".hex()
    assert value.hex() == ("0000" "00000000000003e8" "0002" "0000ea60" "01" "00000001" "0006" + b"orders".hex()
                           + "00000002" "00000000" "00000003" "0000000000000007" "0000000000000005")
    assert (len(key), len(value)) == (9, 57)
    assert decode_key(key) == "app-1" and decode_value(value) == ONGOING


def test_empty_transaction_stores_null_partitions_and_the_dump_tool_reads_it():
    empty = TxnRecord(1000, 0, 60_000, 0, frozenset(), 10, -1)
    key, payload = parse_transactions(Record(0, 0, transaction_log_key("app-1"), transaction_log_value(empty)))
    assert key == '{"type":"0","data":{"transactionalId":"app-1"}}'
    assert payload == ('{"version":"0","data":{"producerId":1000,"producerEpoch":0,"transactionTimeoutMs":60000,'
                       '"transactionStatus":0,"transactionPartitions":null,"transactionLastUpdateTimestampMs":10,'
                       '"transactionStartTimestampMs":-1}}')


@pytest.mark.parametrize("data", [b"", b"\x00", b"\x00\x01\x00\x01x", b"\x00\x00\x00\x09ab"])
def test_bad_keys_are_typed_errors(data):
    with pytest.raises(CorruptRecordError):
        decode_key(data)


def _kafka_spec(name: str) -> dict:
    if not KAFKA_GIT.exists():
        pytest.skip(f"no Apache Kafka source at {KAFKA_GIT}")
    path = f"transaction-coordinator/src/main/resources/common/message/{name}.json"
    text = subprocess.run(["git", "-C", str(KAFKA_GIT), "show", f"HEAD:{path}"],
                          capture_output=True, text=True, check=True).stdout
    return json.loads("\n".join(line for line in text.splitlines() if not line.strip().startswith("//")))


@pytest.mark.parametrize("ours", [TRANSACTION_LOG_KEY, TRANSACTION_LOG_VALUE], ids=lambda m: m.name)
def test_declarations_match_kafkas_spec(ours):
    spec = _kafka_spec(ours.name)
    assert ours.valid == parse_versions(spec["validVersions"])
    untagged = [f for f in spec["fields"] if "tag" not in f]
    for version in range(ours.valid[0], ours.valid[1] + 1):
        assert ours.is_flexible(version) == _in(spec["flexibleVersions"], version)
        ours_untagged = [f for f in ours.struct.fields if f.tag is None]
        assert _our_fields(ours_untagged, version) == _kafka_fields(spec, untagged, version), version
    kafka_tags = {_snake(f["name"]): (f["tag"], parse_versions(f["taggedVersions"]), f["type"])
                  for f in spec["fields"] if "tag" in f}
    assert kafka_tags == {f.name: (f.tag, f.versions, f.type) for f in ours.struct.fields if f.tag is not None}
