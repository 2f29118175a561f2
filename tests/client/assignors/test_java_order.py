"""Java's hash and HashMap iteration order, against values printed by Java 17 (jshell)."""

from __future__ import annotations

from kafkalab.client.assignors.java_order import (
    compute_if_absent_order, hashmap_order, java_string_hash, java_string_key, table_size_for, topic_partition_hash,
)

# Printed by jshell: for (i in 0..39) m.put("consumer-" + (i * 7 % 40), i); m.keySet()
JAVA_KEYSET = (
    "consumer-31 consumer-30 consumer-11 consumer-33 consumer-32 consumer-10 consumer-39 consumer-6 "
    "consumer-17 consumer-16 consumer-38 consumer-5 consumer-4 consumer-19 consumer-18 consumer-3 "
    "consumer-35 consumer-2 consumer-13 consumer-34 consumer-1 consumer-12 consumer-0 consumer-37 "
    "consumer-15 consumer-14 consumer-36 consumer-20 consumer-22 consumer-21 consumer-28 consumer-27 "
    "consumer-29 consumer-24 consumer-23 consumer-26 consumer-25 consumer-9 consumer-8 consumer-7"
).split()


def test_string_hash_code() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("foobar") == -1268878963  # "foobar".hashCode()
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    # a character outside the BMP is two UTF-16 code units: "\uD83D\uDE00".hashCode() == 1772899
    assert java_string_hash("\U0001F600") == 1772899


def test_topic_partition_hash_code() -> None:
    # new TopicPartition("t", 3).hashCode() == 31 * (31 + 3) + "t".hashCode() == 1170
    assert topic_partition_hash("t", 3) == 1170
    assert topic_partition_hash("orders", 17) == -1008768843  # printed by jshell with kafka-clients


def test_hashmap_iteration_order_equals_javas() -> None:
    inserted = [f"consumer-{i * 7 % 40}" for i in range(40)]
    assert hashmap_order(inserted) == JAVA_KEYSET


def test_colliding_keys_keep_insertion_order() -> None:
    assert hashmap_order(["BB", "Aa"]) == ["BB", "Aa"]
    assert hashmap_order(["Aa", "BB"]) == ["Aa", "BB"]


def test_table_grows_past_three_quarters() -> None:
    assert [table_size_for(n) for n in (0, 12, 13, 24, 25, 1500)] == [16, 16, 32, 32, 64, 2048]


def test_string_order_is_by_utf16_code_unit() -> None:
    # Java orders U+FF61 after U+1F600 (surrogate 0xD83D < 0xFF61); code-point order says otherwise
    assert java_string_key("\U0001F600") < java_string_key("\uff61")
    assert "\U0001F600" > "\uff61"


def test_compute_if_absent_order_equals_javas() -> None:
    # Printed by jshell: CollectionUtils.groupPartitionsByTopic (HashMap.computeIfAbsent) over
    # partition 0 of each topic in this order; 13 keys stay in 16 slots, newest first per bucket.
    calls = ["topic-9", "topic-4", "topic-3", "topic-17", "topic-14", "topic-1", "topic-5", "topic-11",
             "topic-19", "topic-16", "topic-8", "topic-20", "topic-10"]
    assert compute_if_absent_order(calls) == [
        "topic-14", "topic-8", "topic-16", "topic-9", "topic-17", "topic-19", "topic-1", "topic-20",
        "topic-10", "topic-3", "topic-11", "topic-4", "topic-5"]
    # one more call, even for a key already present, grows the table to 32 first: a new order
    assert compute_if_absent_order(calls + ["topic-9"]) != compute_if_absent_order(calls)
