"""Console producer line parsing and console consumer output format, without a server."""

from __future__ import annotations

import pytest

from kafkalab.records import Header, Record
from kafkalab.tools.console_consumer import format_record
from kafkalab.tools.console_producer import LINE_BYTES_MAX, line_to_record, parse_properties


def test_line_without_parse_key_is_a_value_with_null_key() -> None:
    record = line_to_record("hello", 1, 1_000, parse_key=False, separator="\t")
    assert (record.key, record.value, record.timestamp) == (None, b"hello", 1_000)


def test_parse_key_splits_at_the_first_separator() -> None:
    record = line_to_record("user-1:a:b", 3, 5, parse_key=True, separator=":")
    assert (record.key, record.value) == (b"user-1", b"a:b")


def test_missing_separator_names_the_line() -> None:
    with pytest.raises(ValueError, match="No key separator found on line number 4: 'oops'"):
        line_to_record("oops", 4, 0, parse_key=True, separator=":")


def test_oversized_line_is_refused() -> None:
    with pytest.raises(ValueError, match=f"limit is {LINE_BYTES_MAX}"):
        line_to_record("x" * (LINE_BYTES_MAX + 1), 1, 0, parse_key=False, separator="\t")


def test_properties_must_be_key_value() -> None:
    assert parse_properties(["parse.key=true", "key.separator=="]) == {"parse.key": "true", "key.separator": "="}
    with pytest.raises(ValueError, match="not KEY=VALUE"):
        parse_properties(["parse.key"])


def test_format_matches_default_message_formatter() -> None:
    record = Record(42, 1_700_000_000_000, b"k", None, (Header("h", b"v"),))
    everything = {f"print.{f}": "true" for f in ("timestamp", "partition", "offset", "headers", "key")}
    assert format_record(record, 3, everything) == (
        "CreateTime:1700000000000\tPartition:3\tOffset:42\th:v\tk\tnull")
    assert format_record(record, 3, {}) == "null"
    assert format_record(Record(0, 0, None, b"v"), 0, {"print.key": "true", "key.separator": "|"}) == "null|v"


def test_partitioner_keyed_sticky_and_fixed() -> None:
    import random

    from kafkalab.partitioner import partition_for_key
    from kafkalab.tools.console_producer import Partitioner

    choose = Partitioner(None, 4, random.Random(7))
    choose.new_batch()
    assert choose.partition(b"user-1") == partition_for_key(b"user-1", 4)
    sticky = choose.partition(None)
    assert all(choose.partition(None) == sticky for _ in range(10))  # one partition per batch
    seen = set()
    for _ in range(50):
        choose.new_batch()
        seen.add(choose.partition(None))
    assert seen == {0, 1, 2, 3}  # new batches move on
    assert Partitioner(2, 0).partition(b"user-1") == 2
    with pytest.raises(ValueError):
        Partitioner(None, 0)
