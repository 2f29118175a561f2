"""A dynamic controller quorum's first voters (KIP-853), as ``storage format`` records them.

Theory of operation
-------------------
A static quorum is named in every node's ``controller.quorum.voters``. A dynamic one is not
configured at all: nodes find the controllers through ``controller.quorum.bootstrap.servers``,
and the voter set lives in the metadata log itself, as KRaft control records. Its first value
is written by ``kafka-storage.sh format`` (Kafka's ``Formatter.writeDynamicQuorumSnapshot``)
into the metadata directory of each initial controller, as a snapshot with id (0, 0)::

    __cluster_metadata-0/00000000000000000000-0000000000.checkpoint

    one control batch, offsets 0..2:  SnapshotHeader {version 0, lastContainedLogTimestamp 0}
                                      KRaftVersion   {version 0, kraft.version 1}
                                      Voters         {version 0, [{id, directory id,
                                                      [{listener, host, port}], kraft.version 0..1}]}
    one control batch, offset 3:      SnapshotFooter {version 0}

``--standalone`` makes the node the only voter, at its advertised controller listener (host
``localhost`` when the listener names none) and with a fresh directory id; ``--initial-controllers
1@host:9093:<dir id>,...`` names every voter and the directory id each must have, so the
formatted directory of voter 1 takes that id.

Worked example: ``format --standalone`` on node 1 with ``CONTROLLER://:9093`` gives the voter
``1@localhost:9093:<22-character id>``, its metadata directory that ``directory.id``, and the
snapshot above with one voter whose endpoint is ``CONTROLLER localhost 9093``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

from kafkalab.errors import ConfigError, StorageError
from kafkalab.metadata.records import MetadataRecordError
from kafkalab.metadata.snapshot import snapshot_name
from kafkalab.records.codec import iter_batches
from kafkalab.records.control import ControlRecordType, control_key
from kafkalab.records.kraft_control import (
    CONTROL_MESSAGE_VERSION, KRAFT_VERSION_RECORD, SNAPSHOT_FOOTER_RECORD, SNAPSHOT_HEADER_RECORD, VOTERS_RECORD,
)
from kafkalab.records.model import Record
from kafkalab.records.v2 import build_v2_batch
from kafkalab.storage.partition_metadata import str_to_uuid, uuid_to_str

SNAPSHOT_EPOCH = 0  # the bootstrap snapshot's id is (end offset 0, epoch 0): Snapshots.BOOTSTRAP_SNAPSHOT_ID
BOOTSTRAP_SNAPSHOT_NAME = snapshot_name(0, SNAPSHOT_EPOCH)
KRAFT_VERSION_DYNAMIC = 1  # kraft.version 1: reconfigurable quorums (KIP-853)
SUPPORTED_KRAFT_VERSIONS = (0, 1)  # what each initial voter is recorded as supporting
PORT_MAX = 65_535


@dataclass(frozen=True, slots=True)
class DynamicVoter:
    """One initial voter: ``id@host:port:directory-id``. Immutable."""

    node_id: int
    host: str
    port: int
    directory_id: str

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.node_id}@{host}:{self.port}:{self.directory_id}"


def parse_dynamic_voters(text: str) -> dict[int, DynamicVoter]:
    """``--initial-controllers`` to voters by id (Kafka's ``DynamicVoters.parse``)."""
    voters: dict[int, DynamicVoter] = {}
    for entry in (e for e in text.split(",") if e.strip()):
        voter = parse_dynamic_voter(entry)
        if voter.node_id in voters:
            raise ConfigError(f"Node id {voter.node_id} was specified more than once.")
        voters[voter.node_id] = voter
    if not voters:
        raise ConfigError("No voters given.")
    return voters


def parse_dynamic_voter(entry: str) -> DynamicVoter:
    """One ``id@host:port:directory-id``, with Kafka's ``DynamicVoter.parse`` messages."""
    text = entry.strip()
    node_text, at, rest = text.partition("@")
    if not at:
        raise ConfigError("No @ found in dynamic voter string.")
    if not node_text:
        raise ConfigError("Invalid @ at beginning of dynamic voter string.")
    try:
        node_id = int(node_text)
    except ValueError:
        raise ConfigError("Failed to parse node id in dynamic voter string.") from None
    if node_id < 0:
        raise ConfigError(f"Invalid negative node id {node_id} in dynamic voter string.")
    if not rest:
        raise ConfigError("No hostname found after node id.")
    if rest.startswith("["):
        host, bracket, rest = rest[1:].partition("]")
        if not bracket:
            raise ConfigError("Hostname began with left bracket, but no right bracket was found.")
    else:
        host, colon, rest = rest.partition(":")
        if not colon:
            raise ConfigError("No colon following hostname could be found.")
        rest = ":" + rest
    if not rest.startswith(":"):
        raise ConfigError("Port section must start with a colon.")
    port_text, colon, directory_id = rest[1:].partition(":")
    if not colon:
        raise ConfigError("No colon following port could be found.")
    try:
        port = int(port_text)
    except ValueError:
        raise ConfigError("Failed to parse port in dynamic voter string.") from None
    if not 0 <= port <= PORT_MAX:
        raise ConfigError(f"Invalid port {port} in dynamic voter string.")
    try:
        str_to_uuid(directory_id)
    except StorageError as error:
        raise ConfigError(f"Failed to parse directory ID in dynamic voter string: {error}") from None
    return DynamicVoter(node_id, host, port, directory_id)


def voters_snapshot_bytes(voters: dict[int, DynamicVoter], listener_name: str, now_ms: int) -> bytes:
    """The bootstrap snapshot file naming ``voters`` (reached at ``listener_name``)."""
    voter_struct = next(f.struct for f in VOTERS_RECORD.struct.fields if f.name == "Voters")
    assert voter_struct is not None
    parts = {f.name: f.struct for f in voter_struct.fields if f.struct is not None}
    feature = parts["KRaftVersionFeature"].cls(*SUPPORTED_KRAFT_VERSIONS)
    records = VOTERS_RECORD.cls(CONTROL_MESSAGE_VERSION, tuple(
        voter_struct.cls(v.node_id, uuid.UUID(bytes=str_to_uuid(v.directory_id)),
                         (parts["Endpoints"].cls(listener_name, v.host, v.port),), feature)
        for _, v in sorted(voters.items())))
    header = SNAPSHOT_HEADER_RECORD.cls(CONTROL_MESSAGE_VERSION, 0)
    kraft = KRAFT_VERSION_RECORD.cls(CONTROL_MESSAGE_VERSION, KRAFT_VERSION_DYNAMIC)
    first = build_v2_batch([
        Record(0, now_ms, control_key(ControlRecordType.SNAPSHOT_HEADER),
               SNAPSHOT_HEADER_RECORD.encode(header, CONTROL_MESSAGE_VERSION)),
        Record(1, now_ms, control_key(ControlRecordType.KRAFT_VERSION),
               KRAFT_VERSION_RECORD.encode(kraft, CONTROL_MESSAGE_VERSION)),
        Record(2, now_ms, control_key(ControlRecordType.KRAFT_VOTERS), VOTERS_RECORD.encode(records, CONTROL_MESSAGE_VERSION)),
    ], is_control=True, partition_leader_epoch=SNAPSHOT_EPOCH)
    footer = SNAPSHOT_FOOTER_RECORD.cls(CONTROL_MESSAGE_VERSION)
    last = build_v2_batch([Record(3, now_ms, control_key(ControlRecordType.SNAPSHOT_FOOTER),
                                  SNAPSHOT_FOOTER_RECORD.encode(footer, CONTROL_MESSAGE_VERSION))],
                          is_control=True, partition_leader_epoch=SNAPSHOT_EPOCH)
    return first + last


def read_bootstrap_voters(metadata_dir: Path) -> dict[int, DynamicVoter] | None:
    """The voters the bootstrap snapshot in ``metadata_dir`` names; None without one."""
    path = Path(metadata_dir) / "__cluster_metadata-0" / BOOTSTRAP_SNAPSHOT_NAME
    if not path.exists():
        return None
    voters_key = control_key(ControlRecordType.KRAFT_VOTERS)
    for batch in iter_batches(path.read_bytes()):
        for record in batch.records:
            if batch.header.is_control and record.key == voters_key and record.value is not None:
                body = VOTERS_RECORD.decode(record.value, CONTROL_MESSAGE_VERSION)
                return {v.VoterId: DynamicVoter(v.VoterId, v.Endpoints[0].Host, v.Endpoints[0].Port,
                                                uuid_to_str(v.VoterDirectoryId.bytes))
                        for v in body.Voters}
    raise MetadataRecordError(f"{path} holds no VotersRecord")


__all__ = ["BOOTSTRAP_SNAPSHOT_NAME", "DynamicVoter", "parse_dynamic_voter", "parse_dynamic_voters",
           "read_bootstrap_voters", "voters_snapshot_bytes"]
