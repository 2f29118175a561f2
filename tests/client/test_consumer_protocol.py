"""Consumer protocol bytes against kafka-python's encoder and Kafka's JSON specs."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment as KpAssignment
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription as KpSubscription

from kafkalab.client.consumer_protocol import (
    CONSUMER_PROTOCOL_VERSION_MAX, Assignment, Subscription, decode_assignment, decode_subscription,
    encode_assignment, encode_subscription,
)
from kafkalab.errors import ProtocolError

KAFKA_SPECS = Path(__import__("kafka.protocol.schemas", fromlist=["x"]).__file__).parent / "resources"


def _spec(name: str) -> dict:
    text = (KAFKA_SPECS / f"{name}.json").read_text()
    return json.loads("\n".join(line for line in text.splitlines() if not line.strip().startswith("//")))


def test_versions_match_kafka_specs() -> None:
    for name in ("ConsumerProtocolSubscription", "ConsumerProtocolAssignment"):
        spec = _spec(name)
        assert spec["validVersions"] == f"0-{CONSUMER_PROTOCOL_VERSION_MAX}"
        assert spec["flexibleVersions"] == "none"


def test_worked_example_is_kafka_pythons_bytes() -> None:
    ours = encode_subscription(Subscription(("b", "a"), (("a", 1), ("a", 0)), 5, "r1"))
    tp = KpSubscription.TopicPartition
    theirs = KpSubscription(version=3, topics=["a", "b"], user_data=None,
                            owned_partitions=[tp(topic="a", partitions=[0, 1])], generation_id=5,
                            rack_id="r1").encode()
    assert ours == theirs
    assert len(ours) == 43


def _random_subscription(rng: random.Random) -> Subscription:
    topics = tuple(sorted({f"t{rng.randint(0, 20)}" for _ in range(rng.randint(0, 4))}))
    owned = tuple(sorted({(rng.choice(topics), rng.randint(0, 50)) for _ in range(rng.randint(0, 5))})) if topics else ()
    return Subscription(
        topics, owned, rng.choice([-1, 0, 7, 2**31 - 1]),
        rng.choice([None, "rack-a", "europe-west1-b"]),
        rng.choice([None, b"", bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 9)))]),
    )


@pytest.mark.parametrize("version", range(CONSUMER_PROTOCOL_VERSION_MAX + 1))
def test_subscription_bytes_equal_kafka_pythons(version: int) -> None:
    rng = random.Random(version)
    tp = KpSubscription.TopicPartition
    for _ in range(200):
        sub = _random_subscription(rng)
        by_topic: dict[str, list[int]] = {}
        for t, p in sub.owned_partitions:
            by_topic.setdefault(t, []).append(p)
        theirs = KpSubscription(
            version=version, topics=list(sub.topics), user_data=sub.user_data,
            owned_partitions=[tp(topic=t, partitions=ps) for t, ps in by_topic.items()],
            generation_id=sub.generation_id, rack_id=sub.rack_id,
        ).encode()
        ours = encode_subscription(sub, version)
        assert ours == theirs
        back = decode_subscription(theirs)
        assert back.topics == sub.topics and back.user_data == sub.user_data
        assert back.owned_partitions == (sub.owned_partitions if version >= 1 else ())
        assert back.generation_id == (sub.generation_id if version >= 2 else -1)
        assert back.rack_id == (sub.rack_id if version >= 3 else None)


@pytest.mark.parametrize("version", range(CONSUMER_PROTOCOL_VERSION_MAX + 1))
def test_assignment_bytes_equal_kafka_pythons(version: int) -> None:
    rng = random.Random(100 + version)
    tp = KpAssignment.TopicPartition
    for _ in range(200):
        partitions = tuple((f"t{rng.randint(0, 3)}", rng.randint(0, 40)) for _ in range(rng.randint(0, 8)))
        user_data = rng.choice([None, b"", b"\x00\x01"])
        by_topic: dict[str, list[int]] = {}
        for t, p in partitions:
            by_topic.setdefault(t, []).append(p)
        theirs = KpAssignment(version=version, user_data=user_data, assigned_partitions=[
            tp(topic=t, partitions=ps) for t, ps in by_topic.items()]).encode()
        assert encode_assignment(Assignment(partitions, user_data), version) == theirs
        back = decode_assignment(theirs)
        assert sorted(back.partitions) == sorted(partitions) and back.user_data == user_data


def test_newer_version_reads_as_v3_and_ignores_trailing_bytes() -> None:
    v3 = encode_subscription(Subscription(("a",), (("a", 0),), 4, "r"))
    v9 = b"\x00\x09" + v3[2:] + b"future fields"
    assert decode_subscription(v9) == decode_subscription(v3)


def test_empty_rack_id_means_no_rack() -> None:
    assert decode_subscription(encode_subscription(Subscription(("a",), rack_id=""))).rack_id is None


@pytest.mark.parametrize("data", [b"", b"\x00", b"\xff\xff\x00\x00\x00\x00", b"\x00\x03\x00\x00\x00\x05",
                                  b"\x00\x00\x7f\xff\xff\xff"])
def test_bad_bytes_raise_protocol_error(data: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_subscription(data)
    with pytest.raises(ProtocolError):
        decode_assignment(data)


def test_encode_rejects_unknown_version() -> None:
    with pytest.raises(ProtocolError):
        encode_subscription(Subscription(("a",)), 4)


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")


def _flatten(fields: list[dict], prefix: str = "") -> list[tuple[str, str, str, str | None]]:
    rows = []
    for fld in fields:
        name = prefix + _snake(fld["name"])
        rows.append((name, fld["type"].split("[]")[-1] if "fields" in fld else fld["type"],
                     fld["versions"], fld.get("nullableVersions")))
        rows += _flatten(fld.get("fields", []), name + ".")
    return rows


def _ours(struct, prefix: str = "") -> list[tuple[str, str, str, str | None]]:
    from kafkalab.protocol.schema import VERSION_MAX

    def text(versions: tuple[int, int] | None) -> str | None:
        if versions is None:
            return None
        return f"{versions[0]}+" if versions[1] == VERSION_MAX else f"{versions[0]}-{versions[1]}"

    rows = []
    for fld in struct.fields:
        name = prefix + fld.name
        type_ = fld.struct.name if fld.struct is not None else fld.type
        rows.append((name, type_, text(fld.versions), text(fld.nullable)))
        if fld.struct is not None:
            rows += _ours(fld.struct, name + ".")
    return rows


def test_fields_match_kafkas_json_specs() -> None:
    from kafkalab.client import consumer_protocol

    ours = {"ConsumerProtocolSubscription": consumer_protocol.CONSUMER_PROTOCOL_SUBSCRIPTION.struct,
            "ConsumerProtocolAssignment": consumer_protocol.CONSUMER_PROTOCOL_ASSIGNMENT.struct}
    for name, struct in ours.items():
        assert _ours(struct) == _flatten(_spec(name)["fields"]), name
