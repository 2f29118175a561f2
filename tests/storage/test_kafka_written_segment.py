"""A segment file written by a real Apache Kafka broker opens, reads, dumps and grows in kafkalab.

The bytes (``tests/kafka_written.py``) are a 2015 broker's one-message segment, published with the
CRC its ``DumpLogSegments`` printed. kafkalab did not produce them, so reading them back checks
the magic-0 path against Kafka itself rather than against kafkalab's own encoder. The broker wrote
no index entries for a file this small (the first batch is never indexed), so the directory has
only the ``.log``; kafkalab must rebuild empty indexes, serve offset 0 from the file as-is, and
append new v2 batches after it.
"""

from __future__ import annotations

import argparse
import io
from pathlib import Path

from kafka.record.memory_records import MemoryRecords
from storage_helpers import build_batch

from kafkalab.clock import ManualClock
from kafkalab.storage import Log, LogConfig
from kafkalab.tools import dump_log
from tests.kafka_written import KAFKA_WRITTEN_LOG, KAFKAS_CRC


def _partition_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "sample-topic-0"
    directory.mkdir()
    (directory / "00000000000000000000.log").write_bytes(KAFKA_WRITTEN_LOG)
    return directory


def test_the_published_bytes_are_what_kafka_python_reads() -> None:
    batch = MemoryRecords(KAFKA_WRITTEN_LOG).next_batch()
    (record,) = list(batch)
    assert (record.offset, record.key, record.value) == (0, None, b"message1")
    assert batch.validate_crc() and record.checksum == KAFKAS_CRC


def test_kafka_written_segment_opens_reads_and_grows(tmp_path: Path) -> None:
    directory = _partition_dir(tmp_path)
    log = Log.open(directory, LogConfig(), ManualClock(1_449_162_000_000))
    assert (log.log_start_offset, log.log_end_offset) == (0, 1)
    assert log.read(0, 1 << 20).read_bytes() == KAFKA_WRITTEN_LOG  # served byte for byte
    info = log.append_as_leader(build_batch(3), 0)  # new data arrives as v2 after the v0 entry
    assert (info.first_offset, log.log_end_offset) == (1, 4)
    log.close()

    reopened = Log.open(directory, LogConfig(), ManualClock(1_449_162_000_000), had_clean_shutdown=True)
    data = reopened.read(0, 1 << 20).read_bytes()
    assert data.startswith(KAFKA_WRITTEN_LOG)  # the old broker's bytes are never rewritten
    records = MemoryRecords(data)
    offsets = []
    while records.has_next():
        offsets += [r.offset for r in records.next_batch()]
    assert offsets == [0, 1, 2, 3]
    reopened.close()


def test_dump_log_agrees_with_what_kafka_printed(tmp_path: Path) -> None:
    segment = _partition_dir(tmp_path) / "00000000000000000000.log"
    out, err = io.StringIO(), io.StringIO()
    parser = argparse.ArgumentParser()
    dump_log.add_arguments(parser)
    assert dump_log.run(parser.parse_args(["--files", str(segment)]), out, err) == 0
    batch_line = out.getvalue().splitlines()[2]
    # Kafka's line for this batch today; the 2015 broker printed the same offset, position, size,
    # magic, codec (then named NoCompressionCodec), CRC and validity.
    assert batch_line == (f"offset: 0 position: 0 NoTimestampType: -1 size: 34 magic: 0 "
                          f"compresscodec: none crc: {KAFKAS_CRC} isvalid: true")
