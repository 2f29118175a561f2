"""``meta.properties``: which cluster and node a log directory belongs to.

Theory of operation
-------------------
``kafka-storage.sh format`` writes one ``meta.properties`` into every log directory before a
KRaft node first starts (Kafka's ``MetaProperties``, version 1). The node refuses to start on a
directory without one, or whose file names another node or -- between its directories --
another cluster: data never wanders silently between clusters. The file is a Java properties
file, written by ``java.util.Properties.store`` with an empty comment, so it begins with ``#``
and a ``#<date>`` line; on Java 17 the keys come out in the order of the hash table that holds
them, which is always this one::

    #
    #Tue Nov 24 13:50:20 UTC 2026
    node.id=1
    directory.id=J8sV1VoYQ5mj9J3Bv2v9lA
    version=1
    cluster.id=MkU3OEVBNTcwNTJENDM2Qk

(Java 18 and later sort the keys instead; readers must not care, and this one does not.)
``cluster.id`` is whatever ``-t`` gave, normally ``kafka-storage.sh random-uuid``;
``directory.id`` (KIP-858) names this directory, a random UUID in Kafka's URL-safe base64 form
(22 characters, no padding) that is never one of the 100 reserved ids and never starts with
``-``. Version 0 files, written by ZooKeeper-era brokers, hold ``broker.id`` only.

Checking an ensemble (Kafka's ``MetaPropertiesEnsemble.verify``): every file must name the same
``cluster.id``, and the same ``node.id`` as the one configured, and no two directories may
share a ``directory.id``. Worked example: ``node.id=2`` configured over a directory whose file
says ``node.id=1`` fails with "Stored node id 1 doesn't match previous node id 2 in
/tmp/kl/meta.properties. If you moved your data, ...".
"""

from __future__ import annotations

import datetime
import random
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from kafkalab.errors import StorageError
from kafkalab.storage.checkpoints import write_atomically
from kafkalab.storage.partition_metadata import UUID_DRAWS_MAX, str_to_uuid, uuid_to_str

FILE_NAME = "meta.properties"
VERSION_0, VERSION_1 = 0, 1  # MetaPropertiesVersion: ZooKeeper-era, KRaft
META_PROPERTIES_BYTES_MAX = 64 * 1024  # four short lines; anything larger is not Kafka's file
RESERVED_DIRECTORY_IDS = 100  # DirectoryId.reserved: the UUIDs 0 .. 99 (UNASSIGNED, LOST, MIGRATING, ...)
# Characters that java.util.Properties would escape; a cluster id is kept free of them so the
# file reads back the same in Java and here.
_PLAIN_VALUE = re.compile(r"^[A-Za-z0-9_.\-]+$")
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


@dataclass(frozen=True, slots=True)
class MetaProperties:
    """One directory's ``meta.properties``. Immutable."""

    version: int
    cluster_id: str | None = None
    node_id: int | None = None
    directory_id: str | None = None

    def __post_init__(self) -> None:
        if self.version not in (VERSION_0, VERSION_1):
            raise StorageError(f"Unknown meta.properties version {self.version}; expected 0 or 1")
        if self.cluster_id is not None and not _PLAIN_VALUE.match(self.cluster_id):
            raise StorageError(f"cluster.id {self.cluster_id!r} must be letters, digits, '_', '-' or '.'")
        if self.directory_id is not None:
            try:
                str_to_uuid(self.directory_id)
            except StorageError:
                raise StorageError(f"directory.id {self.directory_id!r} is not a base64 UUID") from None

    def to_properties(self) -> dict[str, str]:
        """Kafka's ``MetaProperties.toProperties``: the keys in the order it sets them."""
        props = {"version": str(self.version)}
        if self.cluster_id is not None:
            props["cluster.id"] = self.cluster_id
        if self.node_id is not None:
            props["broker.id" if self.version == VERSION_0 else "node.id"] = str(self.node_id)
        if self.directory_id is not None:
            props["directory.id"] = self.directory_id
        return props


def read(directory: Path) -> MetaProperties | None:
    """``directory/meta.properties``, or None when there is none (an unformatted directory)."""
    path = Path(directory) / FILE_NAME
    if not path.is_file():
        return None
    if path.stat().st_size > META_PROPERTIES_BYTES_MAX:
        raise StorageError(f"{path} is {path.stat().st_size} bytes, more than {META_PROPERTIES_BYTES_MAX}")
    props: dict[str, str] = {}
    for line in path.read_text("utf-8", errors="replace").splitlines():
        stripped = line.strip()
        if stripped and stripped[0] not in "#!":
            key, _, value = _split(stripped)
            props[key] = value
    return _from_properties(props, path)


def _split(line: str) -> tuple[str, str, str]:
    """A properties line's key and value: separated by '=', ':' or whitespace."""
    match = re.match(r"^([^=:\s]+)\s*[=:\s]\s*(.*)$", line)
    if match is None:
        return line, "", ""
    return match.group(1), "=", match.group(2)


def _from_properties(props: Mapping[str, str], path: Path) -> MetaProperties:
    try:
        version = int(props.get("version", "0"))  # a missing version means 0 (ZooKeeper era)
        node_text = props.get("node.id" if version != VERSION_0 else "broker.id")
        node_id = int(node_text) if node_text is not None else None
    except ValueError:
        raise StorageError(f"Unable to read version or node id in {path} as a base-10 number") from None
    return MetaProperties(version, props.get("cluster.id"), node_id, props.get("directory.id"))


def render(meta: MetaProperties, now_ms: int) -> str:
    """The file as Java 17's ``Properties.store(writer, "")`` writes it."""
    stamp = datetime.datetime.fromtimestamp(now_ms / 1000, datetime.timezone.utc)
    date = (f"{_DAYS[stamp.weekday()]} {_MONTHS[stamp.month - 1]} {stamp.day:02d} "
            f"{stamp:%H:%M:%S} UTC {stamp.year}")
    lines = ["#", f"#{date}"] + [f"{k}={v}" for k, v in java17_properties_order(meta.to_properties())]
    return "\n".join(lines) + "\n"


def java17_properties_order(props: Mapping[str, str]) -> list[tuple[str, str]]:
    """The entries in the order Java 17's ``Properties`` iterates them: by bucket of its
    ``ConcurrentHashMap`` (16 buckets for fewer than 12 keys), insertion order within a bucket."""
    assert len(props) < 12, "a larger map resizes; meta.properties has at most four keys"
    keys = list(props)
    return [(k, props[k]) for k in sorted(keys, key=lambda k: (_bucket(k, 16), keys.index(k)))]


def _bucket(key: str, buckets: int) -> int:
    h = 0
    for char in key.encode("utf-16-be").decode("utf-16-be"):  # Java's String.hashCode over UTF-16 units
        h = (31 * h + ord(char)) & 0xFFFFFFFF
    return ((h ^ (h >> 16)) & 0x7FFFFFFF) & (buckets - 1)  # ConcurrentHashMap.spread


def write(directory: Path, meta: MetaProperties, now_ms: int) -> None:
    """Write ``directory/meta.properties`` atomically (tmp file, fsync, rename)."""
    write_atomically(Path(directory) / FILE_NAME, render(meta, now_ms).encode("utf-8"))


def random_directory_id(rng: random.Random, taken: Iterable[str] = ()) -> str:
    """A fresh ``directory.id``: not reserved, not starting with '-', not in ``taken``."""
    used = set(taken)
    for _ in range(UUID_DRAWS_MAX):
        value = rng.getrandbits(128)
        text = uuid_to_str(value.to_bytes(16, "big"))
        if value >= RESERVED_DIRECTORY_IDS and not text.startswith("-") and text not in used:
            return text
    raise StorageError(f"no usable directory id after {UUID_DRAWS_MAX} draws")  # pragma: no cover


def verify(found: Mapping[str, MetaProperties], expected_cluster_id: str | None, expected_node_id: int | None) -> None:
    """Kafka's ``MetaPropertiesEnsemble.verify``: one cluster, one node, distinct directory ids."""
    seen: dict[str, str] = {}
    for log_dir, meta in found.items():
        path = str(Path(log_dir) / FILE_NAME)
        if meta.cluster_id is None:
            if meta.version == VERSION_1:
                raise StorageError(f"cluster.id was not specified in the v1 file: {path}")
        elif expected_cluster_id is None:
            expected_cluster_id = meta.cluster_id
        elif meta.cluster_id != expected_cluster_id:
            raise StorageError(f"Invalid cluster.id in: {path}. Expected {expected_cluster_id}, "
                               f"but read {meta.cluster_id}")
        if meta.node_id is None:
            if meta.version == VERSION_1:
                raise StorageError(f"node.id was not specified in {path}")
        elif expected_node_id is None:
            expected_node_id = meta.node_id
        elif meta.node_id != expected_node_id:
            raise StorageError(
                f"Stored node id {meta.node_id} doesn't match previous node id {expected_node_id} in {path}. "
                "If you moved your data, make sure your configured node id matches. If you intend to "
                "create a new node, you should remove all data in your data directories.")
        if meta.directory_id is not None:
            if int.from_bytes(str_to_uuid(meta.directory_id), "big") < RESERVED_DIRECTORY_IDS:
                raise StorageError(f"Invalid reserved directory ID {meta.directory_id} found in {log_dir}")
            if meta.directory_id in seen:
                raise StorageError(f"Duplicate directory ID {meta.directory_id} found. It was the ID of "
                                   f"{seen[meta.directory_id]}, but also of {log_dir}")
            seen[meta.directory_id] = log_dir


__all__ = ["FILE_NAME", "MetaProperties", "random_directory_id", "read", "render", "verify", "write"]
