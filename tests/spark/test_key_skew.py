"""Lab 08's key distributions and murmur2 placement, checked against kafka-python and by hand."""

from __future__ import annotations

import uuid

import numpy as np
import pandas as pd
import pytest
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from kafkalab.spark import key_skew


def keys(distribution: str, count: int = 500, seed: int = 1) -> list[bytes]:
    return key_skew.make_keys(distribution, np.arange(count), np.random.default_rng(seed)).to_pylist()


def test_uuid_keys_are_version_4_text() -> None:
    drawn = keys("uuid")
    parsed = [uuid.UUID(k.decode()) for k in drawn]
    assert all(u.version == 4 and u.variant == uuid.RFC_4122 for u in parsed)
    assert all(str(u).encode() == k for u, k in zip(parsed, drawn))
    assert len(set(drawn)) == len(drawn)


def test_the_other_distributions() -> None:
    assert keys("sequential", 3) == [b"order-0", b"order-1", b"order-2"]
    assert set(keys("regions")) <= set(key_skew.REGIONS)
    zipf = keys("zipf", 20_000)
    top = zipf.count(b"customer-0") / len(zipf)
    assert top == pytest.approx(key_skew.zipf_top_share(), rel=0.1)
    assert keys("zipf", 100, seed=3) == keys("zipf", 100, seed=3)
    with pytest.raises(ValueError, match="distribution"):
        key_skew.keys_frame(None, "gaussian", 10)


def test_imbalance_by_hand() -> None:
    sizes = pd.DataFrame({"partitions": [2, 2, 4, 4, 4, 4], "partition": [0, 1, 0, 1, 2, 3],
                          "records": [3, 1, 4, 0, 0, 0]})
    table = key_skew.imbalance(sizes).set_index("partitions")
    assert table.loc[2, "max_over_mean"] == 1.5 and table.loc[2, "empty"] == 0
    assert table.loc[4, "max_over_mean"] == 4.0 and table.loc[4, "empty"] == 3


@pytest.mark.spark
def test_spark_hash_and_sizes_agree_with_kafka_python(spark) -> None:
    hashed = key_skew.with_murmur2(key_skew.keys_frame(spark, "zipf", 5_000, slices=3))
    rows = [(bytes(r.key), r.murmur2_positive) for r in hashed.collect()]
    assert all(kafka_python_murmur2(k) & 0x7FFFFFFF == h for k, h in rows)
    sizes = key_skew.partition_sizes(hashed, [1, 7])
    for p in (1, 7):
        expected = pd.Series([kafka_python_murmur2(k) & 0x7FFFFFFF for k, _ in rows]).mod(p).value_counts()
        got = sizes[sizes["partitions"] == p].set_index("partition")["records"]
        assert len(got) == p and got.sum() == 5_000
        assert all(got[i] == expected.get(i, 0) for i in range(p))
