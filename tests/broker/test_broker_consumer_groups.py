"""ConsumerGroupHeartbeat, ConsumerGroupDescribe and their neighbours through the sans-I/O broker."""

from __future__ import annotations

from kafkalab.protocol.api_keys import ApiKey
from tests.broker._harness import Harness

HB = ApiKey.CONSUMER_GROUP_HEARTBEAT


def _join(h: Harness, group: str = "g", **fields) -> object:
    body = {"group_id": group, "member_id": "", "member_epoch": 0, "rebalance_timeout_ms": 300_000,
            "subscribed_topic_names": ["t"], "topic_partitions": [], **fields}
    return h.call(HB, 0, body)


def test_advertised_versions(tmp_path):
    h = Harness(tmp_path)
    keys = {k.api_key: (k.min_version, k.max_version) for k in h.call(ApiKey.API_VERSIONS, 3, {}).api_keys}
    assert keys[HB] == (0, 0) and keys[ApiKey.CONSUMER_GROUP_DESCRIBE] == (0, 0)


def test_join_describe_list_and_offset_fetch(tmp_path):
    h = Harness(tmp_path)
    topic_id = h.create_topic("t", 3).topic_id
    joined = _join(h)
    assert (joined.error_code, joined.member_epoch, joined.heartbeat_interval_ms) == (0, 1, 5000)
    assert [(tp.topic_id, tp.partitions) for tp in joined.assignment.topic_partitions] == [(topic_id, (0, 1, 2))]
    described = h.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, {"group_ids": ["g", "nope"]}).groups
    g, nope = described
    assert (g.error_code, g.group_state, g.group_epoch, g.assignment_epoch, g.assignor_name) == \
        (0, "Stable", 1, 1, "uniform")
    [member] = g.members
    assert (member.member_id, member.member_epoch, member.client_id, member.subscribed_topic_names) == \
        (joined.member_id, 1, "test", ("t",))
    assert [(tp.topic_name, tp.partitions) for tp in member.assignment.topic_partitions] == [("t", (0, 1, 2))]
    assert (nope.error_code, nope.error_message) == (69, "Group nope not found.")
    listed = h.call(ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": []}).groups
    assert [(x.group_id, x.protocol_type, x.group_state, x.group_type) for x in listed] == \
        [("g", "consumer", "Stable", "consumer")]
    fetch = {"groups": [{"group_id": "g", "member_id": joined.member_id, "member_epoch": 0, "topics": None}],
             "require_stable": True}
    assert h.call(ApiKey.OFFSET_FETCH, 9, fetch).groups[0].error_code == 113  # STALE_MEMBER_EPOCH
    fetch["groups"][0]["member_epoch"] = 1
    assert h.call(ApiKey.OFFSET_FETCH, 9, fetch).groups[0].error_code == 0


def test_a_consumer_group_survives_a_restart(tmp_path):
    h = Harness(tmp_path)
    h.create_topic("t", 2)
    joined = _join(h)
    h.close()
    h = Harness(tmp_path)
    [g] = h.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, {"group_ids": ["g"]}).groups
    assert (g.group_state, g.group_epoch, [m.member_id for m in g.members]) == ("Stable", 1, [joined.member_id])
    again = h.call(HB, 0, {"group_id": "g", "member_id": joined.member_id, "member_epoch": 1})
    assert (again.error_code, again.member_epoch) == (0, 1)


def test_assignors_by_kafka_class_name_and_short_name(tmp_path):
    classes = ("org.apache.kafka.coordinator.group.assignor.RangeAssignor,"
               "org.apache.kafka.coordinator.group.assignor.UniformAssignor")
    h = Harness(tmp_path / "a", properties={"group.consumer.assignors": classes})
    assert h.broker.group_coordinator.consumer.settings.assignors == ("range", "uniform")
    h.create_topic("t", 4)
    _join(h)
    assert h.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, {"group_ids": ["g"]}).groups[0].assignor_name == "range"
    h.close()
    h = Harness(tmp_path / "b", properties={"group.consumer.assignors": "uniform",
                                            "group.consumer.session.timeout.ms": "2000"})
    h.create_topic("t", 4)
    joined = _join(h, server_assignor="range")
    assert joined.error_code == 112  # UNSUPPORTED_ASSIGNOR: range is not configured here
    member = _join(h).member_id
    h.advance(2001)  # the session ends on the broker's timer
    again = h.call(HB, 0, {"group_id": "g", "member_id": member, "member_epoch": 1})
    assert again.error_code == 25  # UNKNOWN_MEMBER_ID: fenced


def test_dump_log_prints_the_records_a_consumer_group_writes(tmp_path, capsys):
    from kafkalab.group.partitioner import OFFSETS_TOPIC, partition_for
    from kafkalab.tools.cli import main

    h = Harness(tmp_path)
    h.create_topic("t", 2)
    member = _join(h).member_id
    h.close()
    segment = tmp_path / f"{OFFSETS_TOPIC}-{partition_for('g', 50)}" / "00000000000000000000.log"
    assert main(["dump-log", "--files", str(segment), "--offsets-decoder"]) == 0
    out = capsys.readouterr().out
    keys = [line.split("key: ", 1)[1].split(" payload: ")[0] for line in out.splitlines() if " key: " in line]
    assert [k.split('"type":"')[1].split('"')[0] for k in keys] == ["5", "4", "3", "7", "6", "8"]
    assert "Unknown record type" not in out and "Error at offset" not in out
    assert f'"memberId":"{member}"' in out and '"subscribedTopicNames":["t"]' in out
    assert '"topicName":"t","numPartitions":2' in out and '"epoch":1' in out
