"""``partition.metadata``: the topic id a partition directory belongs to.

Mirrors Kafka's ``PartitionMetadataFile``. The file is two ``key: value`` lines with no trailing
newline; the topic id is a 128-bit UUID written as URL-safe base64 without padding (Kafka's
``Uuid.toString``)::

    version: 0
    topic_id: LoTk6cjeRYiVjkX1Zy8hpA

The id is drawn from an injected ``random.Random`` so simulations replay exactly. Like Kafka's
``Uuid.randomUuid`` it sets the version-4 bits and never returns an id whose text starts with
``-`` (it would read as a command-line flag) or the reserved all-zero id.
"""

from __future__ import annotations

import base64
import random
from pathlib import Path

from kafkalab.errors import StorageError
from kafkalab.storage.checkpoints import write_atomically

FILE_NAME = "partition.metadata"
CURRENT_VERSION = 0
# Rejection sampling stops after this many draws; the chance of needing more than 2 is 1/64.
UUID_DRAWS_MAX = 64
PARTITION_METADATA_BYTES_MAX = 4096


def uuid_to_str(uuid_bytes: bytes) -> str:
    return base64.urlsafe_b64encode(uuid_bytes).decode("ascii").rstrip("=")


def str_to_uuid(text: str) -> bytes:
    if len(text) != 22:
        raise StorageError(f"topic id {text!r} must be 22 base64url characters, got {len(text)}")
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except ValueError as exc:
        raise StorageError(f"topic id {text!r} is not base64url: {exc}") from None
    return raw


def random_topic_id(rng: random.Random) -> str:
    for _ in range(UUID_DRAWS_MAX):
        value = rng.getrandbits(128)
        value = (value & ~(0xF << 76)) | (0x4 << 76)  # version 4
        value = (value & ~(0x3 << 62)) | (0x2 << 62)  # IETF variant
        text = uuid_to_str(value.to_bytes(16, "big"))
        if not text.startswith("-") and value != 0:
            return text
    raise StorageError(f"no usable topic id after {UUID_DRAWS_MAX} draws")  # pragma: no cover


def write(directory: Path, topic_id: str) -> None:
    str_to_uuid(topic_id)
    text = f"version: {CURRENT_VERSION}\ntopic_id: {topic_id}"
    write_atomically(Path(directory) / FILE_NAME, text.encode("utf-8"))


def read(directory: Path) -> str | None:
    """The topic id in ``directory/partition.metadata``, or None when the file is absent."""
    path = Path(directory) / FILE_NAME
    if not path.exists():
        return None
    if path.stat().st_size > PARTITION_METADATA_BYTES_MAX:
        raise StorageError(f"{path} is larger than {PARTITION_METADATA_BYTES_MAX} bytes")
    lines = path.read_text("utf-8", errors="replace").split("\n")
    fields = dict(line.split(": ", 1) for line in lines if ": " in line)
    if len(lines) != 2 or set(fields) != {"version", "topic_id"}:
        raise StorageError(f"malformed {path}: expected 'version: 0' and 'topic_id: <id>' lines")
    if fields["version"].strip() != str(CURRENT_VERSION):
        raise StorageError(f"unrecognised version {fields['version']!r} in {path}")
    topic_id = fields["topic_id"].strip()
    str_to_uuid(topic_id)
    return topic_id
