"""The accumulator and the partitioner, driven with plain ``now_ms`` values (no I/O)."""

from __future__ import annotations

import random
from collections import Counter

from kafkalab.client.producer.accumulator import RecordAccumulator
from kafkalab.client.producer.config import producer_config
from kafkalab.client.producer.futures import FutureRecordMetadata
from kafkalab.client.producer.partitioner import BuiltInPartitioner
from kafkalab.records.codec import iter_batches

VALUE = b"x" * 1024


def leader_1(tp: tuple[str, int]) -> int:
    return 1


def never_muted(tp: tuple[str, int]) -> bool:
    return False


def append(acc: RecordAccumulator, partition: int, now_ms: int, value: bytes = VALUE) -> bool:
    result = acc.append(("orders", partition), now_ms, None, value, (), now_ms, FutureRecordMetadata())
    return result.new_batch


def test_linger_ms_holds_a_batch_until_it_ends() -> None:
    acc = RecordAccumulator(producer_config({"linger.ms": 5}))
    for now_ms in (0, 1, 2):
        append(acc, 0, now_ms)
    assert acc.ready(leader_1, 4, never_muted).nodes == frozenset()
    assert acc.ready(leader_1, 4, never_muted).next_check_ms == 5
    assert acc.ready(leader_1, 5, never_muted).nodes == {1}
    [batch] = acc.drain(leader_1, 1, 5, lambda b: True)
    assert batch.record_count == 3


def test_a_full_batch_is_ready_before_linger_ends() -> None:
    acc = RecordAccumulator(producer_config({"linger.ms": 1000}))
    new_batches = [append(acc, 0, 0) for _ in range(20)]
    assert new_batches.index(True, 1) == 15  # 15 records of 1,030 bytes fill 16 KB; the 16th opens a batch
    assert acc.ready(leader_1, 0, never_muted).nodes == {1}
    [batch] = acc.drain(leader_1, 1, 0, lambda b: True)
    assert batch.record_count == 15
    records = [r for b in iter_batches(batch.seal(0)) for r in b.records]
    assert [r.offset for r in records] == list(range(15)) and records[0].value == VALUE


def test_max_request_size_limits_one_drain() -> None:
    acc = RecordAccumulator(producer_config({"max.request.size": 5000, "batch.size": 4000}))
    for partition in range(3):
        for _ in range(3):
            append(acc, partition, 0)
    drained = acc.drain(leader_1, 1, 0, lambda b: True)
    assert len(drained) == 1  # a second 3 KB batch would pass 5000 bytes
    assert len(acc.drain(leader_1, 1, 0, lambda b: True)) == 1  # the next drain starts at the next partition
    assert drained[0].partition != acc.drain(leader_1, 1, 0, lambda b: True)[0].partition


def test_buffer_memory_blocks_appends_and_deallocate_frees_it() -> None:
    acc = RecordAccumulator(producer_config({"buffer.memory": 40_000, "batch.size": 16384}))
    assert append(acc, 0, 0) and append(acc, 1, 0)
    blocked = acc.append(("orders", 2), 0, None, VALUE, (), 0, FutureRecordMetadata())
    assert blocked.blocked and acc.available_bytes == 40_000 - 2 * 16384
    [batch] = acc.drain(leader_1, 1, 0, lambda b: True)[:1]
    acc.deallocate(batch)
    assert not acc.append(("orders", 2), 0, None, VALUE, (), 0, FutureRecordMetadata()).blocked


def test_keyed_records_use_murmur2() -> None:
    partitioner = BuiltInPartitioner(16384, random.Random(0))
    # Kafka's vector: murmur2("foobar") = -790332482 -> 1357151166 % 3 = 0
    assert partitioner.partition("t", b"foobar", None, 3, [0, 1, 2]) == 0
    assert partitioner.partition("t", b"foobar", 2, 3, [0, 1, 2]) == 2


def test_an_explicit_partition_out_of_range_is_refused_with_kafkas_message() -> None:
    partitioner = BuiltInPartitioner(16384, random.Random(0))
    try:
        partitioner.partition("t", None, 1, 1, [0])
    except Exception as error:  # noqa: BLE001 - checked below
        assert str(error) == "Invalid partition given with record: 1 is not in the range [0...1)."
    else:
        raise AssertionError("partition 1 of a one-partition topic was accepted")


def test_uniform_sticky_switches_after_batch_size_bytes_on_a_new_batch() -> None:
    """KIP-794 as the partitioner module's worked example says: 16 records, then a new draw."""
    config = producer_config({})
    acc = RecordAccumulator(config)
    partitioner = BuiltInPartitioner(config.batch_size, random.Random(3))
    switches_after = []
    for index in range(1, 41):
        partition = partitioner.partition("orders", None, None, 3, [0, 1, 2])
        before = partitioner.sticky["orders"]
        result = acc.append(("orders", partition), 0, None, VALUE, (), 0, FutureRecordMetadata())
        partitioner.on_append("orders", partition, result.appended_bytes, result.enable_switch, 3, [0, 1, 2])
        if partitioner.sticky["orders"] is not before:
            switches_after.append((index, result.new_batch))
    # the 16th record opens the partition's second batch with 16,480 bytes produced: a new draw
    assert switches_after[0] == (16, True)
    assert all(new_batch for _, new_batch in switches_after)


def test_keyless_records_spread_over_partitions() -> None:
    partitioner = BuiltInPartitioner(1024, random.Random(11))
    counts: Counter[int] = Counter()
    for _ in range(3000):
        partition = partitioner.partition("t", None, None, 3, [0, 1, 2])
        partitioner.on_append("t", partition, 1030, True, 3, [0, 1, 2])
        counts[partition] += 1
    assert set(counts) == {0, 1, 2} and min(counts.values()) > 700


def test_only_partitions_with_a_leader_are_chosen() -> None:
    partitioner = BuiltInPartitioner(1024, random.Random(5))
    for _ in range(50):
        partition = partitioner.partition("t", None, None, 4, [1, 3])
        partitioner.on_append("t", partition, 2048, True, 4, [1, 3])
        assert partition in (1, 3)
