"""Metadata log replay at start-up against ``dump-log --cluster-metadata-decoder`` on the same log.

What is measured: a ``__cluster_metadata-0`` log of 100,000 PartitionRecords (1,000 topics of
100 partitions, replication factor 3, each topic one batch of a TopicRecord and its partitions,
as a CreateTopics decision is appended) is built once in a scratch directory. Then, side by side
in each run:

* **replay** -- what a restarting node does (:func:`~kafkalab.metadata.record_log.replay_metadata_log`):
  read the segment, decode every record into its dataclass, replay it through one
  ``MetadataDelta`` and build the image;
* **dump-log** -- ``kafkalab dump-log --cluster-metadata-decoder --files <segment>``: read the
  same segment and print every record as Kafka's JSON, into a sink that discards the text.

Both are counted in partition records per second; the issue's target is replay >= 0.5x the dump
rate. Five runs alternate the two (:func:`~kafkalab.bench.report.alternate`) and the median run
is printed with the spread. ``--full`` changes nothing: 100k records is the issue's size.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
import uuid
from pathlib import Path
from typing import TextIO

from kafkalab.bench.report import Reporter, alternate
from kafkalab.metadata.record_log import replay_metadata_log
from kafkalab.clock import ManualClock
from kafkalab.metadata import records as r
from kafkalab.metadata.record_log import StorageRecordLog
from kafkalab.metadata.records import encode_record
from kafkalab.sim.campaign import scratch_root
from kafkalab.storage.log import Log
from kafkalab.storage.log_config import LogConfig
from kafkalab.tools import dump_log

TOPICS = 1_000
PARTITIONS_PER_TOPIC = 100  # 100,000 PartitionRecords in all
BROKERS = 5
REPLICATION_FACTOR = 3
RUNS = 5
SEED = 14


def _discard() -> TextIO:
    """A text sink that drops what it is given, so printing costs formatting, not storage."""
    return open(os.devnull, "w", encoding="utf-8")


def build_log(directory: Path) -> Path:
    """Write the benchmark's metadata log; return its segment file."""
    rng = random.Random(SEED)
    log = Log.open(directory, LogConfig(), ManualClock(1_700_000_000_000), rng=random.Random(0))
    sink = StorageRecordLog(log)
    for t in range(TOPICS):
        topic_id = uuid.UUID(int=rng.getrandbits(128), version=4)
        values = [encode_record(r.TOPIC_RECORD.cls(name=f"topic-{t:04d}", topic_id=topic_id))]
        start = rng.randrange(BROKERS)
        for p in range(PARTITIONS_PER_TOPIC):
            replicas = tuple((start + p + k) % BROKERS for k in range(REPLICATION_FACTOR))
            values.append(encode_record(r.PARTITION_RECORD.cls(
                partition_id=p, topic_id=topic_id, replicas=replicas, isr=replicas, leader=replicas[0],
                leader_epoch=0, partition_epoch=0)))
        sink.append(values, 1_700_000_000_000)
    log.close()
    return directory / "00000000000000000000.log"


def _replay_rate(directory: Path) -> float:
    log = Log.open(directory, LogConfig(), ManualClock(1_700_000_000_000), rng=random.Random(0))
    try:
        start = time.perf_counter()
        image = replay_metadata_log(log)
        elapsed = time.perf_counter() - start
    finally:
        log.close()
    partitions = sum(len(t.partitions) for t in image.topics.values())
    assert partitions == TOPICS * PARTITIONS_PER_TOPIC, partitions
    return partitions / elapsed


def _dump_rate(segment: Path) -> float:
    parser = argparse.ArgumentParser()
    dump_log.add_arguments(parser)
    args = parser.parse_args(["--files", str(segment), "--cluster-metadata-decoder"])
    with _discard() as sink:
        start = time.perf_counter()
        status = dump_log.run(args, sink, sink)
        elapsed = time.perf_counter() - start
    assert status == 0
    return TOPICS * PARTITIONS_PER_TOPIC / elapsed


def run(reporter: Reporter, *, full: bool = False) -> None:
    with tempfile.TemporaryDirectory(prefix="kafkalab-bench-metadata-", dir=scratch_root()) as tmp:
        directory = Path(tmp) / "__cluster_metadata-0"
        directory.mkdir()
        segment = build_log(directory)
        rates = alternate({"replay": lambda: _replay_rate(directory), "dump": lambda: _dump_rate(segment)}, RUNS)
    reporter.report_runs("metadata.replay_100k_partition_records_vs_dump_log", rates["replay"],
                         "records/s", rates["dump"], ">=0.5")


__all__ = ["build_log", "run"]
