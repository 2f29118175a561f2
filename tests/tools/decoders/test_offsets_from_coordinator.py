"""``dump-log --offsets-decoder`` reading a ``__consumer_offsets`` segment the group coordinator wrote.

The decoder (kafkalab.tools.decoders.offsets) prints the coordinator's own record schemas
(kafkalab.group.records, checked against Kafka's JSON specs in tests/group/test_records.py), so
this is an end-to-end check of the JSON, against literal expectations. The ConsumerProtocol bytes
inside the group metadata come from kafka-python's encoder.
"""

from __future__ import annotations

import argparse
import io
import json

from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from kafkalab.group.partitioner import OFFSETS_TOPIC, partition_for
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.tools import dump_log
from tests.broker._harness import Harness


def _dump(path) -> list[str]:
    parser = argparse.ArgumentParser()
    dump_log.add_arguments(parser)
    out, err = io.StringIO(), io.StringIO()
    assert dump_log.run(parser.parse_args(["--files", str(path), "--offsets-decoder"]), out, err) == 0
    return out.getvalue().splitlines()


def _payloads(lines: list[str]) -> list[tuple[dict, dict | None]]:
    out = []
    for line in lines:
        if line.startswith("| offset:"):
            key = json.loads(line.split(" key: ", 1)[1].split(" payload: ", 1)[0])
            payload = line.split(" payload: ", 1)[1]
            out.append((key, None if payload == "<DELETE>" else json.loads(payload)))
    return out


def test_dump_log_decodes_what_the_coordinator_wrote(tmp_path):
    h = Harness(tmp_path, properties={"group.initial.rebalance.delay.ms": "0"})
    subscription = ConsumerProtocolSubscription(version=0, topics=["orders"], user_data=None).encode()
    assignment = ConsumerProtocolAssignment(version=0, assigned_partitions=[("orders", [0, 1])],
                                            user_data=None).encode()
    join = {"group_id": "app", "session_timeout_ms": 10_000, "rebalance_timeout_ms": 10_000, "member_id": "",
            "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": subscription}]}
    member_id = h.call(ApiKey.JOIN_GROUP, 4, join).member_id
    h.send(ApiKey.JOIN_GROUP, 4, {**join, "member_id": member_id})
    h.advance(1)
    h.outgoing()
    h.call(ApiKey.SYNC_GROUP, 3, {"group_id": "app", "generation_id": 1, "member_id": member_id,
                                  "assignments": [{"member_id": member_id, "assignment": assignment}]})
    h.call(ApiKey.OFFSET_COMMIT, 8, {"group_id": "app", "generation_id_or_member_epoch": 1, "member_id": member_id,
                                     "topics": [{"name": "orders", "partitions": [
                                         {"partition_index": 1, "committed_offset": 7, "committed_metadata": "x"}]}]})
    h.call(ApiKey.OFFSET_DELETE, 0, {"group_id": "app", "topics": [{"name": "other", "partitions": []}]})
    segment = tmp_path / f"{OFFSETS_TOPIC}-{partition_for('app')}" / "00000000000000000000.log"
    h.close()
    records = _payloads(_dump(segment))
    (group_key, group_value), (offset_key, offset_value) = records
    assert group_key == {"type": "2", "data": {"group": "app"}}
    assert group_value["version"] == "3"
    data = group_value["data"]
    assert (data["protocolType"], data["generation"], data["protocol"], data["leader"]) == (
        "consumer", 1, "range", member_id)
    [member] = data["members"]
    assert member["subscription"]["topics"] == ["orders"]
    assert member["assignment"]["assignedPartitions"] == [{"topic": "orders", "partitions": [0, 1]}]
    assert (member["clientId"], member["sessionTimeout"], member["rebalanceTimeout"]) == ("test", 10_000, 10_000)
    assert offset_key == {"type": "1", "data": {"group": "app", "topic": "orders", "partition": 1}}
    assert offset_value["version"] == "3"
    assert {k: offset_value["data"][k] for k in ("offset", "leaderEpoch", "metadata")} == {
        "offset": 7, "leaderEpoch": -1, "metadata": "x"}
