"""``meta.properties`` as Kafka writes and checks it.

Oracles: Java's own ``java.util.Properties.store`` (the call Kafka's ``PropertiesUtils`` makes)
and Kafka's ``org.apache.kafka.common.Uuid`` from its client jar, run through
``tests/java/MetaPropertiesOracle.java``; and the file a Kafka 3.7 node wrote, kept in
``tests/broker/test_kafka_data_dir.py``.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from kafkalab.errors import StorageError
from kafkalab.storage import meta_properties
from kafkalab.storage.meta_properties import MetaProperties
from kafkalab.storage.partition_metadata import str_to_uuid
from tests.java_client import java_client

NOW_MS = 1_795_528_538_000  # Tue Nov 24 13:55:38 UTC 2026
META = MetaProperties(1, "MkU3OEVBNTcwNTJENDM2Qk", 1, "J8sV1VoYQ5mj9J3Bv2v9lA")


def test_file_matches_java_properties_store_and_kafka_uuid() -> None:
    ids = [meta_properties.random_directory_id(random.Random(seed)) for seed in range(20)]
    stdin = "".join(f"{k}={v}\n" for k, v in META.to_properties().items()) + "\n" + "\n".join(ids) + "\n"
    out = java_client().run("MetaPropertiesOracle", stdin)
    version, rest = out.split("\n", 1)
    java_file, uuids = rest.split("---\n")
    ours = meta_properties.render(META, NOW_MS)
    java_lines, our_lines = java_file.splitlines(), ours.splitlines()
    assert java_lines[0] == our_lines[0] == "#"
    assert java_lines[1].startswith("#") and java_lines[1].endswith(our_lines[1][-8:])  # "UTC 2026" style date
    if version == "17":  # Java 18+ sorts the keys; 17 iterates its hash table, as we write
        assert java_lines[2:] == our_lines[2:]
    else:
        assert sorted(java_lines[2:]) == sorted(our_lines[2:])
    for line, ours_id in zip(uuids.splitlines(), ids, strict=True):
        text, msb, lsb = line.split()
        assert text == ours_id  # Kafka's Uuid reads our id and writes it back unchanged
        raw = str_to_uuid(ours_id)
        assert int(msb) == int.from_bytes(raw[:8], "big", signed=True)
        assert int(lsb) == int.from_bytes(raw[8:], "big", signed=True)


def test_date_line_is_javas_date_to_string() -> None:
    assert meta_properties.render(META, NOW_MS).splitlines()[1] == "#Tue Nov 24 13:55:38 UTC 2026"


def test_reads_the_file_a_kafka_node_wrote(tmp_path: Path) -> None:
    (tmp_path / "meta.properties").write_text(
        "#\n#Tue Nov 19 10:00:00 UTC 2024\nnode.id=1\ndirectory.id=AbCdEfGhIjKlMnOpQrStUw\n"
        "version=1\ncluster.id=Mk3OEYBSD34fcwNTJENDM2Qk\n")
    assert meta_properties.read(tmp_path) == MetaProperties(1, "Mk3OEYBSD34fcwNTJENDM2Qk", 1, "AbCdEfGhIjKlMnOpQrStUw")


def test_reads_a_zookeeper_era_file(tmp_path: Path) -> None:
    (tmp_path / "meta.properties").write_text("#\nversion=0\nbroker.id=0\n")
    assert meta_properties.read(tmp_path) == MetaProperties(0, None, 0, None)


def test_round_trip_and_absent_file(tmp_path: Path) -> None:
    assert meta_properties.read(tmp_path) is None
    meta_properties.write(tmp_path, META, NOW_MS)
    assert meta_properties.read(tmp_path) == META


def test_directory_ids_avoid_reserved_taken_and_dash() -> None:
    rng = random.Random(7)
    taken: list[str] = []
    for _ in range(200):
        new = meta_properties.random_directory_id(rng, taken)
        assert new not in taken and not new.startswith("-") and len(new) == 22
        assert int.from_bytes(str_to_uuid(new), "big") >= meta_properties.RESERVED_DIRECTORY_IDS
        taken.append(new)


def test_verify_refuses_another_node() -> None:
    with pytest.raises(StorageError, match=r"Stored node id 1 doesn't match previous node id 2 in /d/meta.properties"):
        meta_properties.verify({"/d": META}, None, 2)


def test_verify_refuses_two_clusters() -> None:
    other = MetaProperties(1, "OtherClusterAAAAAAAAAAA", 1, "ZZsV1VoYQ5mj9J3Bv2v9lA")
    with pytest.raises(StorageError, match="Invalid cluster.id in: /b/meta.properties. Expected MkU3OEVBNTcwNTJENDM2Qk, "
                                           "but read OtherClusterAAAAAAAAAAA"):
        meta_properties.verify({"/a": META, "/b": other}, None, 1)


def test_verify_refuses_duplicate_and_reserved_directory_ids() -> None:
    with pytest.raises(StorageError, match="Duplicate directory ID"):
        meta_properties.verify({"/a": META, "/b": META}, None, 1)
    reserved = MetaProperties(1, "c", 1, "AAAAAAAAAAAAAAAAAAAAAQ")  # DirectoryId.UNASSIGNED
    with pytest.raises(StorageError, match="reserved directory ID AAAAAAAAAAAAAAAAAAAAAQ"):
        meta_properties.verify({"/a": reserved}, None, 1)


def test_v1_file_without_cluster_id_is_refused() -> None:
    with pytest.raises(StorageError, match="cluster.id was not specified in the v1 file"):
        meta_properties.verify({"/a": MetaProperties(1, None, 1)}, None, 1)


@pytest.mark.parametrize("text", ["version=2\n", "version=one\n", "version=1\nnode.id=x\n"])
def test_malformed_files_raise_storage_errors(tmp_path: Path, text: str) -> None:
    (tmp_path / "meta.properties").write_text(text)
    with pytest.raises(StorageError):
        meta_properties.read(tmp_path)
