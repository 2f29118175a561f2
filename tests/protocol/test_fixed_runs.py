"""Runs of fixed-width fields are read and written with one struct, without losing precise errors."""

from __future__ import annotations

import struct

import pytest

from kafkalab.errors import ProtocolError
from kafkalab.protocol.messages import SCHEMAS
from kafkalab.protocol.messages.fetch import FETCH_REQUEST, FETCH_RESPONSE

BODY = {"replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 52_428_800, "isolation_level": 1,
        "session_id": 0, "session_epoch": -1, "topics": [{"topic": "orders", "partitions": [
            {"partition": 3, "fetch_offset": 41, "partition_max_bytes": 1 << 20}]}]}


def test_fetch_v12_opens_with_one_run_of_seven_ints():
    plan = FETCH_REQUEST.struct.plan(12, True)
    first = plan.steps[0]
    assert first.names == ("replica_id", "max_wait_ms", "min_bytes", "max_bytes", "isolation_level",
                           "session_id", "session_epoch")
    assert first.codec.format == ">iiiibii"
    # the run's bytes are exactly the fields' own big-endian encodings, one after another
    data = FETCH_REQUEST.encode(BODY, 12)
    assert data[:25] == struct.pack(">iiiibii", -1, 500, 1, 52_428_800, 1, 0, -1)


def test_a_body_cut_inside_a_run_names_the_field_and_byte_where_it_ends():
    data = FETCH_REQUEST.encode(BODY, 12)
    with pytest.raises(ProtocolError, match=r"truncated int32 at byte 8"):
        FETCH_REQUEST.decode(data[:10], 12)  # replica_id, max_wait_ms whole; min_bytes cut
    with pytest.raises(ProtocolError, match=r"truncated int8 at byte 16"):
        FETCH_REQUEST.decode(data[:16], 12)


def test_a_value_too_large_for_its_field_names_the_field():
    with pytest.raises(ProtocolError, match=r"2147483648 does not fit in an int32 \(field 'min_bytes'\)"):
        FETCH_REQUEST.encode({**BODY, "min_bytes": 1 << 31}, 12)
    with pytest.raises(ProtocolError, match=r"int8 \(field 'isolation_level'\)"):
        FETCH_REQUEST.encode({**BODY, "isolation_level": 300}, 12)


@pytest.mark.parametrize("version", range(FETCH_RESPONSE.valid[0], FETCH_RESPONSE.valid[1] + 1))
def test_fetch_response_partition_fields_round_trip_at_their_limits(version):
    response = FETCH_RESPONSE.cls
    partition = response.FetchableTopicResponse.PartitionData(
        partition_index=2**31 - 1, error_code=-(2**15), high_watermark=2**63 - 1,
        last_stable_offset=-(2**63), log_start_offset=0, aborted_transactions=(), records=b"\x01\x02")
    body = response(throttle_time_ms=7, error_code=0, session_id=-1, responses=(
        response.FetchableTopicResponse(topic="t", partitions=(partition,)),))
    decoded = FETCH_RESPONSE.decode(FETCH_RESPONSE.encode(body, version), version)
    got = decoded.responses[0].partitions[0]
    assert (got.partition_index, got.error_code, got.high_watermark, got.last_stable_offset) == (
        2**31 - 1, -(2**15), 2**63 - 1, -(2**63))
    assert decoded.throttle_time_ms == 7
    assert decoded.session_id == (-1 if version >= 7 else 0)  # session_id exists from v7


def test_every_schema_plan_keeps_its_fields_in_wire_order():
    """Merging runs must not reorder or drop a field: the steps spell out ``untagged``."""
    for request, response in SCHEMAS.values():
        for message in (request, response):
            for version in range(message.valid[0], message.valid[1] + 1):
                plan = message.struct.plan(version, message.is_flexible(version))
                names = [n for s in plan.steps for n in (s.names if hasattr(s, "names") else (s[0],))]
                assert names == [name for name, _, _ in plan.untagged]
