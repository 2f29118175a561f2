"""The ``quorum-state`` file: a voter's election state, as Kafka's ``FileQuorumStateStore`` keeps it.

Theory of operation
-------------------
A KRaft voter must never forget whom it voted for, nor go back to an older epoch, even across a
crash (see :mod:`kafkalab.controller.raft.state`). So before it answers a vote or acts as
candidate, leader or follower, it writes ``(epoch, leader id, voted id)`` to
``<metadata log dir>/__cluster_metadata-0/quorum-state``. The file is one line of JSON -- the
``QuorumStateData`` message (raft/src/main/resources/common/message/QuorumStateData.json) in
Kafka's JSON form, plus a ``data_version`` key -- with no newline at the end. With static voters
(``controller.quorum.voters``, kraft.version 0) Kafka writes data version 0::

    {"clusterId":"","leaderId":2,"leaderEpoch":7,"votedId":-1,"appliedOffset":0,
     "currentVoters":[{"voterId":1},{"voterId":2},{"voterId":3}],"data_version":0}

(here on two lines; on disk it is one). Version 1 (KIP-853, dynamic voters) drops
``clusterId``, ``appliedOffset`` and ``currentVoters`` and adds ``votedDirectoryId``, a base64
UUID. Both versions are read; a file that is not such an object, lacks a field its version
requires, or names another version is a :class:`CorruptQuorumStateError`.

The write is atomic (temporary file, fsync, rename, directory fsync), so after a crash the file
holds either the old state or the new one, never a torn mix.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkalab.controller.raft.state import ElectionState
from kafkalab.errors import StorageError
from kafkalab.storage.checkpoints import write_atomically

FILE_NAME = "quorum-state"  # FileQuorumStateStore.DEFAULT_FILE_NAME
DATA_VERSION_KEY = "data_version"
VERSION_MIN, VERSION_MAX = 0, 1  # FileQuorumStateStore's LOWEST/HIGHEST_SUPPORTED_VERSION
NO_DIRECTORY_ID = "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid.ZERO_UUID in Kafka's base64 form
FILE_BYTES_MAX = 1024 * 1024  # one line naming a few voters; anything larger is not this file
_REQUIRED = {
    0: ("clusterId", "leaderId", "leaderEpoch", "votedId", "appliedOffset", "currentVoters"),
    1: ("leaderId", "leaderEpoch", "votedId", "votedDirectoryId"),
}


class CorruptQuorumStateError(StorageError):
    """A ``quorum-state`` file that is not Kafka's QuorumStateData JSON."""


@dataclass(frozen=True, slots=True)
class QuorumStateRecord:
    """The file's content: the election state and the static voter set (version 0 only)."""

    election: ElectionState
    voters: tuple[int, ...] = ()
    data_version: int = 0


def encode(record: QuorumStateRecord) -> bytes:
    """The file's bytes, field for field in QuorumStateData's order, as Jackson prints them."""
    election = record.election
    body: dict[str, Any]
    if record.data_version == 0:
        body = {
            "clusterId": "", "leaderId": election.leader_id, "leaderEpoch": election.epoch,
            "votedId": election.voted_id, "appliedOffset": 0,
            "currentVoters": [{"voterId": voter} for voter in record.voters],
        }
    elif record.data_version == 1:
        body = {
            "leaderId": election.leader_id, "leaderEpoch": election.epoch,
            "votedId": election.voted_id, "votedDirectoryId": NO_DIRECTORY_ID,
        }
    else:
        raise ValueError(f"quorum-state data version {record.data_version} is not in "
                         f"{VERSION_MIN}-{VERSION_MAX}")
    body[DATA_VERSION_KEY] = record.data_version
    return json.dumps(body, separators=(",", ":")).encode("utf-8")


def decode(data: bytes, where: str = "quorum-state") -> QuorumStateRecord:
    """Parse the file's first line; raise :class:`CorruptQuorumStateError` on anything else."""
    line = data.split(b"\n", 1)[0]
    try:
        body = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptQuorumStateError(f"{where}: not one line of JSON ({exc})") from None
    if not isinstance(body, dict):
        raise CorruptQuorumStateError(f"{where}: {line[:80]!r} is not a JSON object")
    version = body.get(DATA_VERSION_KEY)
    if not isinstance(version, int) or not VERSION_MIN <= version <= VERSION_MAX:
        raise CorruptQuorumStateError(
            f"{where}: data_version {version!r} is not within {VERSION_MIN}-{VERSION_MAX}")
    missing = [name for name in _REQUIRED[version] if name not in body]
    if missing:
        raise CorruptQuorumStateError(f"{where}: version {version} lacks field(s) {missing}")
    try:
        election = ElectionState(
            _int(body, "leaderEpoch", where), _int(body, "leaderId", where), _int(body, "votedId", where))
    except ValueError as exc:
        raise CorruptQuorumStateError(f"{where}: {exc}") from None
    voters = tuple(_voter(v, where) for v in body.get("currentVoters") or ()) if version == 0 else ()
    return QuorumStateRecord(election, voters, version)


def _int(body: dict[str, Any], name: str, where: str) -> int:
    value = body[name]
    if not isinstance(value, int) or isinstance(value, bool) or not -(2**31) <= value < 2**31:
        raise CorruptQuorumStateError(f"{where}: {name} {value!r} is not an int32")
    return value


def _voter(entry: Any, where: str) -> int:
    if not isinstance(entry, dict) or "voterId" not in entry:
        raise CorruptQuorumStateError(f"{where}: voter entry {entry!r} has no voterId")
    return _int(entry, "voterId", where)


class QuorumStateFile:
    """Reads and atomically rewrites one ``quorum-state`` file. Not thread-safe; owned by one
    Raft node."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def read(self) -> QuorumStateRecord | None:
        """The stored state, or None when the file does not exist (a fresh voter)."""
        if not self.path.exists():
            return None
        size_bytes = self.path.stat().st_size
        if size_bytes > FILE_BYTES_MAX:
            raise CorruptQuorumStateError(
                f"{self.path}: {size_bytes} bytes exceeds the {FILE_BYTES_MAX}-byte bound")
        return decode(self.path.read_bytes(), str(self.path))

    def write(self, record: QuorumStateRecord) -> None:
        data = encode(record)
        assert decode(data) == record, "the quorum-state encoding must read back as written"
        write_atomically(self.path, data)


__all__ = [
    "FILE_NAME", "CorruptQuorumStateError", "QuorumStateFile", "QuorumStateRecord", "decode", "encode",
]
