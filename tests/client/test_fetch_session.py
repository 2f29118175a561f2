"""The fetcher's session handler against the cases of Kafka's ``FetchSessionHandlerTest``."""

from __future__ import annotations

from typing import Any

from kafkalab.client.fetch_session import FetchSessionHandler
from kafkalab.errors import ErrorCode
from kafkalab.protocol.fetch_metadata import FetchMetadata
from kafkalab.protocol.messages.fetch import FETCH_REQUEST, FETCH_RESPONSE

_P = FETCH_REQUEST.cls.FetchTopic.FetchPartition
_R = FETCH_RESPONSE.cls
_T = _R.FetchableTopicResponse


def wanted(offsets: dict[tuple[str, int], int]) -> list[tuple[tuple[str, int], Any]]:
    return [(tp, _P(partition=tp[1], fetch_offset=o, partition_max_bytes=100)) for tp, o in offsets.items()]


def response(session_id: int, named: list[tuple[str, int]], error: int = 0) -> Any:
    topics = [_T(topic=t, partitions=(_T.PartitionData(partition_index=p, high_watermark=5, records=b""),))
              for t, p in named]
    return _R(error_code=error, session_id=session_id, responses=tuple(topics))


def test_full_then_incremental_then_additions_changes_and_removals() -> None:
    handler = FetchSessionHandler()
    first = handler.build(wanted({("foo", 0): 0, ("foo", 1): 10}))
    assert first.metadata == FetchMetadata(0, 0) and [tp for tp, _ in first.to_send] == [("foo", 0), ("foo", 1)]
    assert handler.handle_response(response(123, [("foo", 0), ("foo", 1)]))
    assert handler.next_metadata == FetchMetadata(123, 1)
    # Nothing changed: an incremental request naming nothing.
    idle = handler.build(wanted({("foo", 0): 0, ("foo", 1): 10}))
    assert idle.metadata == FetchMetadata(123, 1) and idle.to_send == () and idle.to_forget == ()
    assert handler.handle_response(response(123, []))
    # foo-1 moved, bar-0 is new, foo-0 is gone: new first, then changed; foo-0 forgotten.
    change = handler.build(wanted({("foo", 1): 20, ("bar", 0): 0}))
    assert change.metadata == FetchMetadata(123, 2)
    assert [tp for tp, _ in change.to_send] == [("bar", 0), ("foo", 1)] and change.to_forget == (("foo", 0),)
    assert [t.topic for t in change.topics()] == ["bar", "foo"]
    assert [(t.topic, t.partitions) for t in change.forgotten_topics()] == [("foo", (0,))]
    assert change.session_partitions == (("foo", 1), ("bar", 0))


def test_a_full_answer_must_name_every_partition() -> None:
    handler = FetchSessionHandler()
    handler.build(wanted({("foo", 0): 0, ("foo", 1): 0}))
    assert not handler.handle_response(response(123, [("foo", 0)]))
    assert handler.next_metadata == FetchMetadata(0, 0)


def test_an_incremental_answer_outside_the_session_closes_it() -> None:
    handler = FetchSessionHandler()
    handler.build(wanted({("foo", 0): 0}))
    handler.handle_response(response(123, [("foo", 0)]))
    handler.build(wanted({("foo", 0): 0}))
    assert not handler.handle_response(response(123, [("bar", 9)]))
    assert handler.next_metadata == FetchMetadata(123, 0)  # closes 123, asks for a new one


def test_session_errors_and_lost_answers_fall_back_to_full() -> None:
    handler = FetchSessionHandler()
    handler.build(wanted({("foo", 0): 0}))
    handler.handle_response(response(123, [("foo", 0)]))
    handler.build(wanted({("foo", 0): 0}))
    assert not handler.handle_response(response(0, [], ErrorCode.INVALID_FETCH_SESSION_EPOCH))
    assert handler.next_metadata == FetchMetadata(123, 0)
    again = handler.build(wanted({("foo", 0): 0}))
    assert again.metadata.is_full and len(again.to_send) == 1
    assert not handler.handle_response(response(0, [], ErrorCode.FETCH_SESSION_ID_NOT_FOUND))
    assert handler.next_metadata == FetchMetadata(0, 0)
    handler.build(wanted({("foo", 0): 0}))
    handler.handle_response(response(77, [("foo", 0)]))
    handler.handle_error()
    assert handler.next_metadata == FetchMetadata(77, 0)
    handler.notify_close()
    assert handler.next_metadata == FetchMetadata(77, -1)


def test_a_negative_session_id_is_refused_not_raised() -> None:
    handler = FetchSessionHandler()
    handler.build(wanted({("foo", 0): 0}))
    assert not handler.handle_response(response(-5, [("foo", 0)]))
    assert handler.next_metadata == FetchMetadata(0, 0) and handler.refused == 1


def test_the_broker_without_a_session_keeps_requests_full() -> None:
    handler = FetchSessionHandler()
    for _ in range(3):
        request = handler.build(wanted({("foo", 0): 0}))
        assert request.metadata == FetchMetadata(0, 0)
        assert handler.handle_response(response(0, [("foo", 0)]))
    assert (handler.full_requests, handler.incremental_requests) == (3, 0)
