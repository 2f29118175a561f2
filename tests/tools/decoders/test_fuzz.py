"""Random and truncated bytes never escape a decoder as an exception: each gives one text line."""

from __future__ import annotations

import random

from kafkalab.errors import KafkaError
from kafkalab.records import Record
from kafkalab.tools.decoders import parse_cluster_metadata, parse_offsets, parse_transactions
from kafkalab.tools.decoders.metadata import control_record_text

CASES = 1500


def _blob(rng: random.Random) -> bytes:
    return bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 40)))


def test_random_records_always_produce_text() -> None:
    rng = random.Random(20240611)
    for case in range(CASES):
        key = rng.choice([None, _blob(rng), bytes([0, rng.randrange(0, 10)]) + _blob(rng)])
        value = rng.choice([None, _blob(rng), bytes([0, rng.randrange(0, 5)]) + _blob(rng)])
        record = Record(case, 0, key, value)
        for parse in (parse_offsets, parse_transactions):
            text, _ = parse(record)
            assert isinstance(text, str), (case, key, value)
        meta_value = bytes([1, rng.randrange(0, 28), rng.randrange(0, 3)]) + _blob(rng)
        _, payload = parse_cluster_metadata(Record(case, 0, None, meta_value))
        assert isinstance(payload, str), (case, meta_value)
        try:
            control_record_text(rng.randrange(0, 8), _blob(rng))
        except KafkaError:
            pass
