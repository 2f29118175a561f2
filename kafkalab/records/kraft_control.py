"""The values of KRaft's control records: leader changes, snapshot header and footer, voters.

Theory of operation
-------------------
Besides metadata records, KRaft writes control batches into ``__cluster_metadata`` and into its
snapshots (:mod:`kafkalab.records.control` names the types by the record key). Each value is a
message of Kafka's ``clients/src/main/resources/common/message/`` specs that starts with its own
int16 ``Version`` field and is flexible:

* LEADER_CHANGE (2): the first batch of every Raft epoch -- leader id, voters, granting voters;
* SNAPSHOT_HEADER (3) and SNAPSHOT_FOOTER (4): first and last batch of a ``.checkpoint`` file;
* KRAFT_VERSION (5) and KRAFT_VOTERS (6): dynamic quorums (KIP-853).

The field names are Kafka's, so Kafka's JSON converter spelling (``kRaftVersionFeature``) comes
out of the same rule as every other message.

Worked example: the header of a snapshot taken at a record of time 1700000000000 is
``00 00 | 00 00 01 8b cf e5 68 00 | 00`` -- version 0, the timestamp, no tagged fields: 11 bytes.
"""

from __future__ import annotations

from typing import Any

from kafkalab.protocol.schema import Message, f, message
from kafkalab.records.control import ControlRecordType, control_key
from kafkalab.records.model import Record
from kafkalab.records.v2 import build_v2_batch

CONTROL_MESSAGE_VERSION = 0  # every KRaft control message kafkalab writes is version 0


def _control(name: str, *fields: Any) -> Message:
    return message(name, valid="0", flexible="0+", fields=fields)


_VOTER = (f("VoterId", "int32"),)
LEADER_CHANGE_MESSAGE = _control(
    "LeaderChangeMessage", f("Version", "int16"), f("LeaderId", "int32"),
    f("Voters", "[]Voter", fields=_VOTER), f("GrantingVoters", "[]Voter", fields=_VOTER))
SNAPSHOT_HEADER_RECORD = _control(
    "SnapshotHeaderRecord", f("Version", "int16"), f("LastContainedLogTimestamp", "int64"))
SNAPSHOT_FOOTER_RECORD = _control("SnapshotFooterRecord", f("Version", "int16"))
KRAFT_VERSION_RECORD = _control("KRaftVersionRecord", f("Version", "int16"), f("KRaftVersion", "int16"))
VOTERS_RECORD = _control(
    "VotersRecord", f("Version", "int16"),
    f("Voters", "[]Voter", fields=(
        f("VoterId", "int32"),
        f("VoterDirectoryId", "uuid"),
        f("Endpoints", "[]Endpoint", fields=(f("Name", "string"), f("Host", "string"), f("Port", "uint16"))),
        f("KRaftVersionFeature", "KRaftVersionFeature", fields=(
            f("MinSupportedVersion", "int16"), f("MaxSupportedVersion", "int16"))))))

# control type id -> (label kafka-dump-log.sh prints before the JSON, message)
CONTROL_MESSAGES: dict[int, tuple[str, Message]] = {
    ControlRecordType.LEADER_CHANGE: ("LeaderChange:", LEADER_CHANGE_MESSAGE),
    ControlRecordType.SNAPSHOT_HEADER: ("SnapshotHeader", SNAPSHOT_HEADER_RECORD),
    ControlRecordType.SNAPSHOT_FOOTER: ("SnapshotFooter", SNAPSHOT_FOOTER_RECORD),
    ControlRecordType.KRAFT_VERSION: ("KRaftVersion", KRAFT_VERSION_RECORD),
    ControlRecordType.KRAFT_VOTERS: ("KRaftVoters", VOTERS_RECORD),
}


def control_batch(type_id: ControlRecordType, value: bytes, now_ms: int) -> bytes:
    """A one-record control batch (offsets are assigned when it is appended or laid out)."""
    return build_v2_batch([Record(0, now_ms, control_key(type_id), value)], is_control=True)


__all__ = [
    "CONTROL_MESSAGES", "CONTROL_MESSAGE_VERSION", "KRAFT_VERSION_RECORD", "LEADER_CHANGE_MESSAGE",
    "SNAPSHOT_FOOTER_RECORD", "SNAPSHOT_HEADER_RECORD", "VOTERS_RECORD", "control_batch",
]
