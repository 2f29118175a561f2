"""Commits after ``assign()``: the consumer finds its group's coordinator itself and commits
outside any generation, as Kafka's ``ConsumerCoordinator.sendOffsetCommitRequest`` does for a
consumer without auto-assigned partitions (generation -1, member id "", no group.instance.id).
Without a group.id, commits raise Kafka's InvalidGroupIdException (error code 24).
The same path against brokers is in tests/interop/test_kafkalab_consumer.py."""

from __future__ import annotations

from types import SimpleNamespace as NS
from typing import Any

import pytest

from kafkalab.client.consumer import ConsumerConfig, ConsumerCore
from kafkalab.client.consumer.core import InvalidGroupIdError, Request
from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.protocol.api_keys import ApiKey

TP = ("orders", 0)


def by_api(requests: list[Request]) -> dict[int, Request]:
    return {r.api_key: r for r in requests}


def coordinator_answer(error: ErrorCode = ErrorCode.NONE) -> Any:
    return NS(error_code=int(error), node_id=7, host="coordinator.example", port=9093, coordinators=())


def commit_answer(error: ErrorCode = ErrorCode.NONE) -> Any:
    return NS(topics=[NS(name="orders", partitions=[NS(partition_index=0, error_code=int(error))])])


def metadata_answer() -> Any:
    return NS(brokers=[NS(node_id=1, host="broker.example", port=9092)],
              topics=[NS(name="orders", partitions=[NS(partition_index=0, leader_id=1, error_code=0)])])


def assigned(**settings: Any) -> tuple[ConsumerCore, dict[int, Request]]:
    """An assign()-ing consumer of group "g" whose Metadata request has been answered."""
    core = ConsumerCore(ConsumerConfig(group_id="g", group_instance_id="static-1", **settings))
    core.assign([TP], now_ms=0)
    first = by_api(core.poll_requests(0))
    core.on_response(first.pop(ApiKey.METADATA).request_id, metadata_answer(), 0)
    return core, first


def test_without_a_group_id_commits_raise_invalid_group_id() -> None:
    core = ConsumerCore(ConsumerConfig())
    core.assign([TP])
    for call in (lambda: core.commit_async({TP: 3}, None), lambda: core.subscribe(["orders"], 0)):
        with pytest.raises(InvalidGroupIdError) as raised:
            call()
        assert raised.value.error_code is ErrorCode.INVALID_GROUP_ID and "group.id" in str(raised.value)
    assert ApiKey.FIND_COORDINATOR not in by_api(core.poll_requests(0))  # no group: no coordinator


def test_assign_with_a_group_id_finds_the_coordinator_and_commits_outside_any_generation() -> None:
    core, first = assigned()
    find = first[ApiKey.FIND_COORDINATOR]
    assert find.destination is None and find.body.key == "g" and find.body.key_type == 0
    answers: list[tuple[dict[Any, int], KafkaError | None]] = []
    core.commit_async({TP: 3}, lambda offsets, error: answers.append((offsets, error)))
    assert ApiKey.OFFSET_COMMIT not in by_api(core.poll_requests(1))  # waits for the coordinator
    core.on_response(find.request_id, coordinator_answer(), 2)
    assert core.coordinator is not None and (core.coordinator.host, core.coordinator.port) == ("coordinator.example", 9093)
    second = by_api(core.poll_requests(2))
    commit, fetch = second[ApiKey.OFFSET_COMMIT], second[ApiKey.OFFSET_FETCH]
    assert commit.destination == fetch.destination == 7
    body = commit.body
    assert (body.group_id, body.generation_id_or_member_epoch, body.member_id, body.group_instance_id) == ("g", -1, "", None)
    assert [(t.name, [(p.partition_index, p.committed_offset) for p in t.partitions]) for t in body.topics] == \
        [("orders", [(0, 3)])]
    assert not core.closed  # close() waits for the answer
    core.on_response(commit.request_id, commit_answer(), 3)
    assert answers == [({TP: 3}, None)] and core.closed


def test_the_committed_offset_is_where_an_assigned_partition_starts() -> None:
    core, first = assigned()
    core.on_response(first[ApiKey.FIND_COORDINATOR].request_id, coordinator_answer(), 1)
    fetch = by_api(core.poll_requests(1))[ApiKey.OFFSET_FETCH]
    core.on_response(fetch.request_id, NS(error_code=0, topics=[NS(name="orders", partitions=[
        NS(partition_index=0, committed_offset=42, error_code=0)])]), 2)
    assert core.position(TP) == 42


def test_not_coordinator_forgets_the_coordinator_and_looks_again_after_the_backoff() -> None:
    core, first = assigned()
    core.on_response(first[ApiKey.FIND_COORDINATOR].request_id, coordinator_answer(), 1)
    answers: list[KafkaError | None] = []
    core.commit_async({TP: 3}, lambda offsets, error: answers.append(error))
    commit = by_api(core.poll_requests(1))[ApiKey.OFFSET_COMMIT]
    core.on_response(commit.request_id, commit_answer(ErrorCode.NOT_COORDINATOR), 10)
    assert answers[0] is not None and answers[0].error_code is ErrorCode.NOT_COORDINATOR
    assert core.coordinator is None
    assert ApiKey.FIND_COORDINATOR not in by_api(core.poll_requests(50))  # retry.backoff.ms is 100
    assert ApiKey.FIND_COORDINATOR in by_api(core.poll_requests(110))


def test_auto_commit_after_assign_commits_positions_every_interval() -> None:
    core, first = assigned(auto_commit_interval_ms=1_000)
    core.on_response(first[ApiKey.FIND_COORDINATOR].request_id, coordinator_answer(), 1)
    core.seek(TP, 5)
    core.take_records(999)
    assert ApiKey.OFFSET_COMMIT not in by_api(core.poll_requests(999))
    core.take_records(1_000)
    commit = by_api(core.poll_requests(1_000))[ApiKey.OFFSET_COMMIT]
    assert commit.body.topics[0].partitions[0].committed_offset == 5
