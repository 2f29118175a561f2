"""``storage format`` and the start-up check of a KRaft node's directories (Kafka's Formatter and
KafkaRaftServer.initializeLogDirs): files, printed lines and Kafka's refusals.

``bootstrap.checkpoint`` is read back with kafka-python's record batch decoder (an independent
reader) and its one record is compared byte for byte with the FeatureLevelRecord layout of
Kafka's JSON spec (metadata/src/main/resources/common/metadata/FeatureLevelRecord.json).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatch

from kafkalab.broker.storage_format import (
    FormatOptions, FormatterError, format_storage, initialize_log_dirs,
)
from kafkalab.config.kraft import kraft_config
from kafkalab.errors import ConfigError, StorageError
from kafkalab.metadata.dynamic_voters import parse_dynamic_voter, read_bootstrap_voters
from kafkalab.storage import meta_properties
from kafkalab.storage.meta_properties import MetaProperties
from kafkalab.storage.partition_metadata import str_to_uuid

NOW_MS = 1_795_528_538_000
CLUSTER = "MkU3OEVBNTcwNTJENDM2Qk"


def _config(tmp_path: Path, **extra: str):  # type: ignore[no-untyped-def]
    props = {
        "process.roles": "broker,controller", "node.id": "1",
        "listeners": "PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093",
        "controller.listener.names": "CONTROLLER", "controller.quorum.voters": "1@localhost:9093",
        "log.dirs": f"{tmp_path / 'a'},{tmp_path / 'b'}", **extra,
    }
    return kraft_config({k: v for k, v in props.items() if v})


def _format(config, **options: object) -> list[str]:  # type: ignore[no-untyped-def]
    return format_storage(config, FormatOptions(CLUSTER, **options), random.Random(1), NOW_MS)  # type: ignore[arg-type]


def test_format_writes_meta_properties_and_bootstrap_in_every_directory(tmp_path: Path) -> None:
    config = _config(tmp_path)
    assert _format(config) == [
        f"Formatting metadata directory {tmp_path / 'a'} with metadata.version 3.6-IV2.",
        f"Formatting data directory {tmp_path / 'b'} with metadata.version 3.6-IV2.",
    ]
    metas = [meta_properties.read(tmp_path / name) for name in ("a", "b")]
    assert all(m is not None and (m.version, m.cluster_id, m.node_id) == (1, CLUSTER, 1) for m in metas)
    assert metas[0] is not None and metas[1] is not None and metas[0].directory_id != metas[1].directory_id
    assert (tmp_path / "a" / "meta.properties").read_text().splitlines()[2].startswith("node.id=")


def test_bootstrap_checkpoint_decodes_with_kafka_python(tmp_path: Path) -> None:
    _format(_config(tmp_path))
    data = (tmp_path / "a" / "bootstrap.checkpoint").read_bytes()
    batches, position = [], 0
    while position < len(data):
        size = 12 + int.from_bytes(data[position + 8:position + 12], "big")
        batch = DefaultRecordBatch(data[position:position + size])
        assert batch.validate_crc()
        batches.append((batch.is_control_batch, [r.value for r in batch]))
        position += size
    assert [control for control, _ in batches] == [True, False, True]  # header, records, footer
    # FeatureLevelRecord: frame version 1 (AbstractApiMessageSerde), api key 12, version 0, name "metadata.version"
    # (compact string), feature_level int16 14 (3.6-IV2), no tagged fields.
    assert batches[1][1] == [b"\x01\x0c\x00" + b"\x11metadata.version" + b"\x00\x0e" + b"\x00"]


def test_second_format_is_refused_unless_ignore_formatted(tmp_path: Path) -> None:
    config = _config(tmp_path)
    _format(config)
    with pytest.raises(FormatterError, match=f"Log directory {tmp_path / 'a'} is already formatted. "
                                             "Use --ignore-formatted to ignore this directory"):
        _format(config)
    assert _format(config, ignore_formatted=True) == ["All of the log directories are already formatted."]


def test_ignore_formatted_formats_only_the_new_directory(tmp_path: Path) -> None:
    _format(_config(tmp_path, **{"log.dirs": str(tmp_path / "a")}))
    lines = _format(_config(tmp_path), ignore_formatted=True)
    assert lines == [f"Formatting data directory {tmp_path / 'b'} with metadata.version 3.6-IV2."]


def test_format_refuses_directories_of_another_cluster_or_node(tmp_path: Path) -> None:
    _format(_config(tmp_path))
    with pytest.raises(StorageError, match="Invalid cluster.id in: .*Expected OtherCluster, but read " + CLUSTER):
        format_storage(_config(tmp_path), FormatOptions("OtherCluster", ignore_formatted=True), random.Random(), NOW_MS)
    other_node = _config(tmp_path, **{"node.id": "2", "controller.quorum.voters": "2@localhost:9093"})
    with pytest.raises(StorageError, match="Stored node id 1 doesn't match previous node id 2"):
        _format(other_node, ignore_formatted=True)


def test_format_refusals_of_kafkas_storage_tool(tmp_path: Path) -> None:
    legacy = kraft_config({"listeners": "PLAINTEXT://localhost:9092", "log.dirs": str(tmp_path)})
    with pytest.raises(FormatterError, match="appears to be for a legacy cluster"):
        _format(legacy)
    no_voters = _config(tmp_path, **{"controller.quorum.voters": "",
                                     "controller.quorum.bootstrap.servers": "localhost:9093"})
    with pytest.raises(FormatterError, match="Because controller.quorum.voters is not set on this controller, you "
                                             "must specify one of the following: --standalone"):
        _format(no_voters)
    assert len(_format(no_voters, no_initial_controllers=True)) == 2
    broker_only = kraft_config({"process.roles": "broker", "node.id": "2", "controller.listener.names": "CONTROLLER",
                                "controller.quorum.bootstrap.servers": "localhost:9093", "log.dirs": str(tmp_path / "c")})
    with pytest.raises(FormatterError, match="You can only use --standalone on a controller."):
        _format(broker_only, standalone=True)


def test_start_refuses_unformatted_directories(tmp_path: Path) -> None:
    config = _config(tmp_path)
    with pytest.raises(StorageError, match="No readable meta.properties files found."):
        initialize_log_dirs(config, random.Random(), NOW_MS)
    _format(_config(tmp_path, **{"log.dirs": str(tmp_path / "a")}))
    with pytest.raises(StorageError, match=f"No `meta.properties` found in {tmp_path / 'b'} "
                                           r"\(have you run `kafkalab storage format` to format the directory\?\)"):
        initialize_log_dirs(config, random.Random(), NOW_MS)


def test_start_refuses_another_nodes_directories(tmp_path: Path) -> None:
    _format(_config(tmp_path))
    other = _config(tmp_path, **{"node.id": "3", "controller.quorum.voters": "3@localhost:9093"})
    with pytest.raises(StorageError, match="Stored node id 1 doesn't match previous node id 3"):
        initialize_log_dirs(other, random.Random(), NOW_MS)


def test_start_refuses_metadata_log_outside_the_metadata_directory(tmp_path: Path) -> None:
    config = _config(tmp_path)
    _format(config)
    (tmp_path / "b" / "__cluster_metadata-0").mkdir()
    with pytest.raises(StorageError, match="Found unexpected metadata location in data directory"):
        initialize_log_dirs(config, random.Random(), NOW_MS)


def test_start_gives_a_pre_kip_858_directory_its_id(tmp_path: Path) -> None:
    config = _config(tmp_path, **{"log.dirs": str(tmp_path / "a")})
    (tmp_path / "a").mkdir()
    meta_properties.write(tmp_path / "a", MetaProperties(1, CLUSTER, 1), NOW_MS)
    identity = initialize_log_dirs(config, random.Random(3), NOW_MS)
    assert identity.cluster_id == CLUSTER and identity.node_id == 1
    written = meta_properties.read(tmp_path / "a")
    assert written is not None and written.directory_id == identity.directory_ids[str(tmp_path / "a")]


def _dynamic_config(tmp_path: Path, node_id: int):  # type: ignore[no-untyped-def]
    return kraft_config({
        "process.roles": "broker,controller", "node.id": str(node_id),
        "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093", "controller.listener.names": "CONTROLLER",
        "advertised.listeners": "PLAINTEXT://localhost:9092", "controller.quorum.bootstrap.servers": "localhost:9093",
        "log.dirs": str(tmp_path / f"n{node_id}"),
    })


def _batches(data: bytes) -> list[tuple[bool, list[tuple[bytes, bytes]]]]:
    """(is control, [(key, value)]) per batch, read with kafka-python."""
    batches, position = [], 0
    while position < len(data):
        size = 12 + int.from_bytes(data[position + 8:position + 12], "big")
        batch = DefaultRecordBatch(data[position:position + size])
        assert batch.validate_crc()
        batches.append((batch.is_control_batch, [(r.key, r.value) for r in batch]))
        position += size
    return batches


def test_standalone_writes_the_voter_snapshot_kafka_reads(tmp_path: Path) -> None:
    """Laid out from Kafka's VotersRecord.json / KRaftVersionRecord.json (version 0, flexible)."""
    config = _dynamic_config(tmp_path, 1)
    assert _format(config, standalone=True) == [
        f"Formatting dynamic metadata voter directory {tmp_path / 'n1'} with metadata.version 3.6-IV2."]
    meta = meta_properties.read(tmp_path / "n1")
    voters = read_bootstrap_voters(tmp_path / "n1")
    assert meta is not None and voters is not None and list(voters) == [1]
    assert voters[1].directory_id == meta.directory_id and (voters[1].host, voters[1].port) == ("localhost", 9093)
    data = (tmp_path / "n1" / "__cluster_metadata-0" / "00000000000000000000-0000000000.checkpoint").read_bytes()
    (first_control, first), (last_control, last) = _batches(data)
    assert first_control and last_control
    # control record keys: version int16 0, type int16 (3 header, 5 kraft.version, 6 voters, 4 footer)
    assert [k for k, _ in first] == [b"\x00\x00\x00\x03", b"\x00\x00\x00\x05", b"\x00\x00\x00\x06"]
    assert [k for k, _ in last] == [b"\x00\x00\x00\x04"]
    assert first[1][1] == b"\x00\x00" + b"\x00\x01" + b"\x00"  # Version 0, KRaftVersion 1, no tags
    directory = str_to_uuid(meta.directory_id)
    endpoint = b"\x0bCONTROLLER" + b"\x0alocalhost" + (9093).to_bytes(2, "big") + b"\x00"
    voter = (1).to_bytes(4, "big") + directory + b"\x02" + endpoint + b"\x00\x00" + b"\x00\x01" + b"\x00" + b"\x00"
    assert first[2][1] == b"\x00\x00" + b"\x02" + voter + b"\x00"


def test_initial_controllers_give_each_voter_its_directory_id(tmp_path: Path) -> None:
    ids = ["J8sV1VoYQ5mj9J3Bv2v9lA", "MvDxzVmcRsaTz33bUuRU6A", "07R5amHmR32VDA6jHkGbTA"]
    text = ",".join(f"{i + 1}@localhost:{9093 + i}:{d}" for i, d in enumerate(ids))
    lines = _format(_dynamic_config(tmp_path, 2), initial_controllers=text)
    assert lines[0].startswith("Formatting dynamic metadata voter directory")
    meta = meta_properties.read(tmp_path / "n2")
    assert meta is not None and meta.directory_id == ids[1]
    voters = read_bootstrap_voters(tmp_path / "n2")
    assert voters is not None and [str(v) for v in voters.values()] == text.split(",")
    observer = _format(_dynamic_config(tmp_path, 4), initial_controllers=text)
    assert observer[0].startswith(f"Formatting dynamic metadata directory {tmp_path / 'n4'}")


@pytest.mark.parametrize("entry, message", [
    ("localhost:9093:J8sV1VoYQ5mj9J3Bv2v9lA", "No @ found in dynamic voter string."),
    ("@localhost:9093:J8sV1VoYQ5mj9J3Bv2v9lA", "Invalid @ at beginning of dynamic voter string."),
    ("-1@localhost:9093:J8sV1VoYQ5mj9J3Bv2v9lA", "Invalid negative node id -1 in dynamic voter string."),
    ("1@localhost", "No colon following hostname could be found."),
    ("1@[::1:9093:J8sV1VoYQ5mj9J3Bv2v9lA", "Hostname began with left bracket, but no right bracket was found."),
    ("1@localhost:9093", "No colon following port could be found."),
    ("1@localhost:99999:J8sV1VoYQ5mj9J3Bv2v9lA", "Invalid port 99999 in dynamic voter string."),
    ("1@localhost:9093:nope", "Failed to parse directory ID in dynamic voter string"),
])
def test_dynamic_voter_parse_errors(entry: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_dynamic_voter(entry)
    assert message in str(raised.value)


def test_ipv6_dynamic_voter() -> None:
    voter = parse_dynamic_voter("3@[::1]:9093:J8sV1VoYQ5mj9J3Bv2v9lA")
    assert (voter.node_id, voter.host, voter.port) == (3, "::1", 9093)
    assert str(voter) == "3@[::1]:9093:J8sV1VoYQ5mj9J3Bv2v9lA"
