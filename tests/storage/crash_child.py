"""Child process for the crash-consistency campaign (run by test_crash.py, killed with SIGKILL).

Usage: ``python crash_child.py <partition dir> <seed>``. Opens the log (recovering it), then
appends batches forever; after each append has been flushed (``flush.messages=1``) it prints
``ACK <last offset>`` on stdout. Every record's value names its own offset, so the parent can
check that what survives is exactly the acknowledged prefix plus possibly more.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkalab.clock import SystemClock
from kafkalab.storage import Log, LogConfig

CONFIG = LogConfig(segment_bytes=4096, index_interval_bytes=256, segment_index_bytes=4096, flush_messages=1)


def batch(first_offset: int, count: int, rng: random.Random) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=False, producer_id=-1,
        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20,
    )
    for i in range(count):
        value = f"r{first_offset + i}:".encode() + b"x" * rng.randrange(0, 120)
        builder.append(i, timestamp=1_000 + first_offset + i, key=None, value=value, headers=[])
    return bytes(builder.build())


def main() -> None:
    directory, seed = Path(sys.argv[1]), int(sys.argv[2])
    rng = random.Random(seed)
    log = Log.open(directory, CONFIG, SystemClock(), recovery_point=0)
    print(f"START {log.log_end_offset}", flush=True)
    while True:
        info = log.append_as_leader(batch(log.log_end_offset, rng.randrange(1, 8), rng), leader_epoch=1)
        print(f"ACK {info.last_offset}", flush=True)


if __name__ == "__main__":
    main()
