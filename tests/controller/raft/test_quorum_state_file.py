"""The quorum-state file against the format Kafka writes (FileQuorumStateStore, QuorumStateData)."""

from __future__ import annotations

import pytest

from kafkalab.controller.raft.quorum_state_file import (
    FILE_NAME, CorruptQuorumStateError, QuorumStateFile, QuorumStateRecord, decode, encode,
)
from kafkalab.controller.raft.state import ElectionState

# Written by a Kafka 3.x controller (kraft.version 0) with static voters 1, 2, 3 after it voted
# for 2 in epoch 3 -- the shape of QuorumStateDataJsonConverter's output plus data_version.
KAFKA_V0 = (b'{"clusterId":"","leaderId":-1,"leaderEpoch":3,"votedId":2,"appliedOffset":0,'
            b'"currentVoters":[{"voterId":1},{"voterId":2},{"voterId":3}],"data_version":0}')
# The literal from Kafka's FileQuorumStateStoreTest.testCantReadVersionQuorumState, which must
# fail (data_version 2 is unsupported), and the same content at version 0, which must load.
KAFKA_TEST_V2 = (b'{"leaderId":9990,"leaderEpoch":3012,"votedId":-1,"appliedOffset": 0,'
                 b'"currentVoters":[{"voterId":9990},{"voterId":9991},{"voterId":9992}],"data_version":2}')


def test_encode_is_byte_for_byte_kafkas_v0():
    record = QuorumStateRecord(ElectionState(3, -1, 2), (1, 2, 3))
    assert encode(record) == KAFKA_V0
    assert decode(KAFKA_V0) == record


def test_version_1_round_trip():
    record = QuorumStateRecord(ElectionState(5, 2, 2), (), data_version=1)
    data = encode(record)
    assert data == (b'{"leaderId":2,"leaderEpoch":5,"votedId":2,'
                    b'"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}')
    assert decode(data) == record


def test_kafkas_unsupported_version_literal_is_rejected():
    with pytest.raises(CorruptQuorumStateError, match="data_version 2"):
        decode(KAFKA_TEST_V2)


def test_kafkas_literal_at_a_supported_version_lacks_cluster_id():
    # Kafka's JSON converter requires every v0 field; that literal has no clusterId.
    with pytest.raises(CorruptQuorumStateError, match="clusterId"):
        decode(KAFKA_TEST_V2.replace(b'"data_version":2', b'"data_version":0'))


@pytest.mark.parametrize("data", [
    b"", b"not json", b"[1,2]", b'{"leaderId":1}', b'{"data_version":"0"}',
    KAFKA_V0.replace(b'"leaderEpoch":3', b'"leaderEpoch":"3"'),
    KAFKA_V0.replace(b'"leaderEpoch":3', b'"leaderEpoch":-5'),
    KAFKA_V0.replace(b'{"voterId":1}', b'{"id":1}'),
    b"\xff\xfe",
])
def test_corrupt_files_raise_typed_errors(data):
    with pytest.raises(CorruptQuorumStateError) as info:
        decode(data)
    assert info.value.error_code == 56  # KAFKA_STORAGE_ERROR


def test_file_round_trip_is_atomic(tmp_path):
    store = QuorumStateFile(tmp_path / FILE_NAME)
    assert store.read() is None
    record = QuorumStateRecord(ElectionState(7, 1, 1), (1, 2, 3))
    store.write(record)
    assert store.read() == record
    assert not (tmp_path / (FILE_NAME + ".tmp")).exists()
    assert (tmp_path / FILE_NAME).read_bytes().count(b"\n") == 0  # one line, as Kafka writes it
