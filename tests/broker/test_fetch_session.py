"""The fetch session cache against KIP-227's rules and Kafka's ``FetchSessionTest`` cases."""

from __future__ import annotations

import random
from typing import Any

import pytest

from kafkalab.broker.fetch_session import SESSION_EVICTION_MS, ContextKind, FetchSessionCache
from kafkalab.errors import ErrorCode
from kafkalab.protocol.fetch_metadata import EPOCH_MAX, FetchMetadata, next_epoch
from kafkalab.protocol.messages.fetch import FETCH_REQUEST, FETCH_RESPONSE

_P = FETCH_REQUEST.cls.FetchTopic.FetchPartition
_D = FETCH_RESPONSE.cls.FetchableTopicResponse.PartitionData


def want(partition: int, offset: int = 0) -> Any:
    return _P(partition=partition, fetch_offset=offset, partition_max_bytes=1000)


def answer(partition: int, hw: int = 10, *, records: bytes | None = b"", error: int = 0, log_start: int = 0) -> Any:
    return _D(partition_index=partition, error_code=error, high_watermark=hw, log_start_offset=log_start,
              records=records)


def full(cache: FetchSessionCache, partitions: list[int], now_ms: int = 0, *, follower: bool = False,
         answers: list[Any] | None = None) -> int:
    """Open a session over ``foo-<partitions>`` and return its id (0: none made)."""
    context = cache.new_context(12, 0, 0, follower, [("foo", want(p)) for p in partitions], [], now_ms)
    assert context.kind is ContextKind.FULL
    got = cache.respond(context, [("foo", a) for a in (answers or [answer(p) for p in partitions])], now_ms)
    assert got.error_code == ErrorCode.NONE and len(got.partitions) == len(partitions)
    return got.session_id


def test_epochs_follow_fetch_metadata() -> None:
    assert [next_epoch(e) for e in (-1, 0, 1, EPOCH_MAX)] == [-1, 1, 2, 1]
    assert FetchMetadata(0, 0).is_full and FetchMetadata(5, -1).is_full and not FetchMetadata(5, 1).is_full


@pytest.mark.parametrize(("session_id", "epoch", "code"), [(-3, 4, ErrorCode.FETCH_SESSION_ID_NOT_FOUND),
                                                            (7, -9, ErrorCode.FETCH_SESSION_ID_NOT_FOUND)])
def test_nonsense_session_fields_are_session_errors(session_id: int, epoch: int, code: ErrorCode) -> None:
    cache = FetchSessionCache(10, random.Random(1))
    context = cache.new_context(12, session_id, epoch, False, [("foo", want(0))], [], 0)
    assert context.kind is ContextKind.SESSION_ERROR and context.error_code == code


def test_sessionless_request_makes_no_session() -> None:
    cache = FetchSessionCache(10, random.Random(1))
    context = cache.new_context(12, 0, -1, False, [("foo", want(0))], [], 0)
    got = cache.respond(context, [("foo", answer(0))], 0)
    assert context.kind is ContextKind.SESSIONLESS and got.session_id == 0 and len(cache) == 0


def test_incremental_answer_names_only_changed_partitions() -> None:
    cache = FetchSessionCache(10, random.Random(1))
    session_id = full(cache, [0, 1, 2])
    assert session_id != 0 and cache.sessions[session_id].epoch == 1
    context = cache.new_context(12, session_id, 1, False, [], [], 5)
    assert context.kind is ContextKind.INCREMENTAL and [w.partition for _, w in context.partitions] == [0, 1, 2]
    # 0: same HW, no records -- left out; 1: records; 2: the HW moved.
    got = cache.respond(context, [("foo", answer(0)), ("foo", answer(1, records=b"x")), ("foo", answer(2, hw=11))], 5)
    assert got.session_id == session_id and [a.partition_index for _, a in got.partitions] == [1, 2]
    # Partition 1 returned records: it moves to the end of the session's order.
    assert list(cache.sessions[session_id].partitions) == [("foo", 0), ("foo", 2), ("foo", 1)]
    assert cache.incremental_fetches == 1


def test_an_error_is_always_sent_and_the_recovery_after_it_too() -> None:
    cache = FetchSessionCache(10, random.Random(1))
    session_id = full(cache, [0])
    context = cache.new_context(12, session_id, 1, False, [], [], 0)
    got = cache.respond(context, [("foo", answer(0, error=ErrorCode.NOT_LEADER_OR_FOLLOWER))], 0)
    assert [a.error_code for _, a in got.partitions] == [ErrorCode.NOT_LEADER_OR_FOLLOWER]
    context = cache.new_context(12, session_id, 2, False, [], [], 0)
    got = cache.respond(context, [("foo", answer(0))], 0)  # same HW as before the error
    assert [a.partition_index for _, a in got.partitions] == [0]


def test_log_start_change_diverging_epoch_and_preferred_replica_are_sent() -> None:
    cache = FetchSessionCache(10, random.Random(1))
    session_id = full(cache, [0, 1, 2])
    context = cache.new_context(12, session_id, 1, False, [], [], 0)
    diverging = _D.EpochEndOffset(epoch=3, end_offset=7)
    answers = [answer(0, log_start=4), _D(partition_index=1, high_watermark=10, log_start_offset=0, records=b"",
                                         diverging_epoch=diverging),
               _D(partition_index=2, high_watermark=10, log_start_offset=0, records=b"", preferred_read_replica=2)]
    got = cache.respond(context, [("foo", a) for a in answers], 0)
    assert [a.partition_index for _, a in got.partitions] == [0, 1, 2]


def test_added_changed_and_forgotten_partitions() -> None:
    cache = FetchSessionCache(10, random.Random(1))
    session_id = full(cache, [0, 1])
    context = cache.new_context(12, session_id, 1, False, [("foo", want(1, 50)), ("bar", want(0))],
                                [("foo", 0)], 0)
    assert [(t, w.partition, w.fetch_offset) for t, w in context.partitions] == [("foo", 1, 50), ("bar", 0, 0)]
    got = cache.respond(context, [("foo", answer(1)), ("bar", answer(0))], 0)
    assert [(t, a.partition_index) for t, a in got.partitions] == [("bar", 0)]  # new: HW unknown before
    # Forgetting every partition ends the session; the request is answered sessionless.
    context = cache.new_context(12, session_id, 2, False, [], [("foo", 1), ("bar", 0)], 0)
    assert context.kind is ContextKind.SESSIONLESS and session_id not in cache.sessions


def test_session_errors() -> None:
    cache = FetchSessionCache(10, random.Random(1))
    session_id = full(cache, [0])
    unknown = cache.new_context(12, session_id + 1, 1, False, [], [], 0)
    stale = cache.new_context(12, session_id, 5, False, [], [], 0)
    ids = cache.new_context(13, session_id, 1, False, [], [], 0)
    for context, code in ((unknown, ErrorCode.FETCH_SESSION_ID_NOT_FOUND),
                          (stale, ErrorCode.INVALID_FETCH_SESSION_EPOCH),
                          (ids, ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)):
        assert context.kind is ContextKind.SESSION_ERROR and context.partitions == ()
        got = cache.respond(context, [], 0)
        assert (got.error_code, got.session_id, got.partitions) == (code, 0, ())


def test_a_duplicate_request_in_flight_gets_invalid_epoch() -> None:
    """Two incremental requests with the same epoch: the second is refused when it arrives; a
    parked first one whose session moved on meanwhile is refused when it is answered."""
    cache = FetchSessionCache(10, random.Random(1))
    session_id = full(cache, [0])
    first = cache.new_context(12, session_id, 1, False, [], [], 0)
    second = cache.new_context(12, session_id, 2, False, [], [], 0)  # the session moved on to 3
    got = cache.respond(first, [("foo", answer(0))], 0)
    assert (got.error_code, got.session_id) == (ErrorCode.INVALID_FETCH_SESSION_EPOCH, session_id)
    assert cache.respond(second, [("foo", answer(0))], 0).error_code == ErrorCode.NONE


def test_full_request_closes_the_named_session() -> None:
    cache = FetchSessionCache(10, random.Random(1))
    session_id = full(cache, [0])
    context = cache.new_context(12, session_id, -1, False, [("foo", want(0))], [], 0)
    assert context.kind is ContextKind.SESSIONLESS and len(cache) == 0
    session_id = full(cache, [0])
    context = cache.new_context(12, session_id, 0, False, [("foo", want(0))], [], 0)
    new_id = cache.respond(context, [("foo", answer(0))], 0).session_id
    assert new_id not in (0, session_id) and list(cache.sessions) == [new_id]


def test_zero_slots_keep_no_session() -> None:
    assert full(FetchSessionCache(0, random.Random(1)), [0]) == 0


def test_eviction_privileged_beats_unprivileged_then_size() -> None:
    """Kafka's FetchSessionTest.testPrivilegedSessionHandling and testLastFetchedEpoch's cousins:
    a follower evicts a consumer at any age; a consumer evicts only old, smaller sessions."""
    cache = FetchSessionCache(2, random.Random(1))
    consumer_a = full(cache, [0, 1, 2], 0)
    consumer_b = full(cache, [0], 0)
    follower = full(cache, [0], 10, follower=True)  # evicts the smallest unprivileged: B
    assert set(cache.sessions) == {consumer_a, follower} and consumer_b not in cache.sessions
    assert cache.evictions == 1
    assert full(cache, [0, 1, 2, 3], 20) == 0  # nothing is old enough to be evicted by a consumer
    later = SESSION_EVICTION_MS + 100
    cache.new_context(12, consumer_a, 1, False, [], [], later)  # A used: old now, but recently used
    cache.new_context(12, follower, 1, True, [], [], later)
    assert full(cache, [0, 1], later) == 0  # A (3 partitions) is bigger than the newcomer
    assert full(cache, [0, 1, 2, 3], later) != 0  # bigger than A, which is old: A goes
    assert follower in cache.sessions and consumer_a not in cache.sessions


def test_eviction_of_a_stale_session_comes_first() -> None:
    cache = FetchSessionCache(1, random.Random(1))
    follower = full(cache, [0, 1, 2], 0, follower=True)
    assert full(cache, [0], SESSION_EVICTION_MS) == 0  # unused for exactly the limit: not stale
    new = full(cache, [0], SESSION_EVICTION_MS + 1)
    assert new != 0 and list(cache.sessions) == [new] and follower not in cache.sessions


# --- the broker serving sessions ------------------------------------------------------------------

def _fetch_v7(session_id: int, epoch: int, partitions: dict[int, int], *, forgotten: tuple[int, ...] = (),
              max_wait_ms: int = 0) -> dict:
    return {"max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
            "session_id": session_id, "session_epoch": epoch,
            "topics": [{"topic": "foo", "partitions": [
                {"partition": p, "fetch_offset": o, "partition_max_bytes": 1 << 20} for p, o in partitions.items()]}]
            if partitions else [],
            "forgotten_topics_data": [{"topic": "foo", "partitions": list(forgotten)}] if forgotten else []}


def _named(response: Any) -> list[int]:
    return [p.partition_index for t in response.responses for p in t.partitions]


def test_broker_serves_a_session_from_full_to_incremental_to_closed(tmp_path: Any) -> None:
    from tests.broker._harness import Harness, batch

    h = Harness(tmp_path)
    try:
        h.create_topic("foo", 3)
        h.produce("foo", 1, batch([b"a"]))
        full_answer = h.call(1, 7, _fetch_v7(0, 0, {0: 0, 1: 0, 2: 0}))
        session_id = full_answer.session_id
        assert session_id != 0 and _named(full_answer) == [0, 1, 2]
        # Incremental, partition 1 moved on to 1: nothing changed anywhere, so the fetch parks.
        h.send(1, 7, _fetch_v7(session_id, 1, {1: 1}, max_wait_ms=500))
        assert h.outgoing() == []
        h.send(0, 7, {"acks": 1, "timeout_ms": 1000, "topic_data": [
            {"name": "foo", "partition_data": [{"index": 2, "records": batch([b"b"])}]}]}, connection_id=2)
        out = {o.connection_id: o for o in h.outgoing()}
        parked = h.decode(out[1], 1, 7)
        assert (parked.error_code, parked.session_id, _named(parked)) == (0, session_id, [2])
        assert h.broker.fetch_sessions.incremental_fetches == 1
        # An idle incremental fetch with no wait: an empty answer in the session.
        idle = h.call(1, 7, _fetch_v7(session_id, 2, {2: 1}))
        assert (idle.error_code, idle.session_id, _named(idle)) == (0, session_id, [])
        # A replayed epoch is refused at once, with no partitions.
        stale = h.call(1, 7, _fetch_v7(session_id, 2, {}, max_wait_ms=500))
        assert (stale.error_code, stale.session_id, _named(stale)) == (ErrorCode.INVALID_FETCH_SESSION_EPOCH, 0, [])
        # Forgetting every partition closes the session.
        closed = h.call(1, 7, _fetch_v7(session_id, 3, {}, forgotten=(0, 1, 2)))
        assert (closed.error_code, closed.session_id) == (0, 0) and len(h.broker.fetch_sessions) == 0
        gone = h.call(1, 7, _fetch_v7(session_id, 4, {}))
        assert gone.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    finally:
        h.close()


def test_sessionless_clients_keep_full_answers(tmp_path: Any) -> None:
    from tests.broker._harness import Harness

    h = Harness(tmp_path, properties={"max.incremental.fetch.session.cache.slots": "0"})
    try:
        h.create_topic("foo", 2)
        assert h.broker.fetch_sessions.slots == 0
        for epoch in (-1, 0):  # kafka-python's (0, -1); a full request the full cache cannot serve
            answer = h.call(1, 7, _fetch_v7(0, epoch, {0: 0, 1: 0}))
            assert (answer.session_id, _named(answer)) == (0, [0, 1])
    finally:
        h.close()


def test_the_worked_example_of_the_module_docstring() -> None:
    cache = FetchSessionCache(1, random.Random(1))
    consumer = full(cache, [0, 1, 2], 0)
    follower = full(cache, list(range(10)), 1_000, follower=True)
    assert list(cache.sessions) == [follower]
    refused = cache.new_context(12, consumer, 1, False, [], [], 2_000)
    assert refused.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert full(cache, [0, 1, 2], 2_000) == 0 and list(cache.sessions) == [follower]
