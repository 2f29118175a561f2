"""Crash consistency: a child appends with a flush per batch and is SIGKILLed at seeded points.

After every kill the log must reopen with every acknowledged (flushed) record present, offsets
contiguous from 0, every record's value naming its own offset, and indexes that agree with
the log. Torn writes are whatever the kill leaves behind; on top of that some rounds damage
the tail on purpose (garbage appended, last bytes cut) before the next open.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

from kafka.record.memory_records import MemoryRecords

from kafkalab.clock import ManualClock
from kafkalab.records.header import iter_headers
from kafkalab.storage import Log

sys.path.insert(0, str(Path(__file__).parent))
from crash_child import CONFIG  # noqa: E402

KILLS = 55
SEED = 20240611
CHILD = Path(__file__).parent / "crash_child.py"
ACKS_PER_ROUND_MAX = 12


def run_round(directory: Path, seed: int, acks_wanted: int) -> int:
    """Start the child, wait for ``acks_wanted`` acknowledgements, SIGKILL it; return last ack."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    child = subprocess.Popen(
        [sys.executable, str(CHILD), str(directory), str(seed)], stdout=subprocess.PIPE, env=env, text=True
    )
    assert child.stdout is not None
    last_ack = -1
    try:
        start = child.stdout.readline()
        assert start.startswith("START"), start
        for _ in range(acks_wanted):
            line = child.stdout.readline()
            assert line.startswith("ACK"), line
            last_ack = int(line.split()[1])
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
    return last_ack


def damage_tail(directory: Path, rng: random.Random) -> None:
    logs = sorted(directory.glob("*.log"))
    if not logs:
        return
    path = logs[-1]
    size = path.stat().st_size
    with open(path, "r+b") as file:
        if rng.random() < 0.5 and size > 20:
            file.truncate(size - rng.randrange(1, 20))  # a torn last batch
        else:
            file.seek(size)
            file.write(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 80))))


def check_log(directory: Path, acked_last: int) -> int:
    log = Log.open(directory, CONFIG, ManualClock(0))
    try:
        assert log.log_end_offset >= acked_last + 1, (log.log_end_offset, acked_last)
        expected = 0
        for segment in log.segments:
            data = segment.log_path.read_bytes()
            headers = list(iter_headers(data))
            assert sum(h.size_bytes for h in headers) == len(data)
            for offset, position in segment.offset_index.raw_entries():
                match = [h for h in headers if h.position == position]
                assert match and match[0].last_offset == segment.base_offset + offset
            records = MemoryRecords(data)
            while records.has_next():
                for record in records.next_batch():
                    assert record.offset == expected
                    assert record.value.startswith(f"r{expected}:".encode())
                    expected += 1
        assert expected == log.log_end_offset
        for offset in range(0, log.log_end_offset, 7):
            found = log.lookup(offset)
            assert found is not None and found[1].base_offset <= offset <= found[1].last_offset
        return log.log_end_offset
    finally:
        for segment in log.segments:  # leave it as a crash would: no trimming
            segment.close_handlers()


def test_sigkill_campaign_keeps_every_acknowledged_record(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    directory = tmp_path / "crash-0"
    acked_last = -1
    for round_number in range(KILLS):
        acks = rng.randrange(1, ACKS_PER_ROUND_MAX)
        last = run_round(directory, rng.randrange(2**32), acks)
        acked_last = max(acked_last, last)
        end = check_log(directory, acked_last)
        if rng.random() < 0.2:
            # Deliberate damage may destroy acknowledged bytes too (a disk fault, not a crash):
            # then only the valid prefix before the damage must survive.
            damage_tail(directory, rng)
            end = check_log(directory, -1)
            acked_last = min(acked_last, end - 1)
        assert end >= 1, f"round {round_number} seed {SEED}"
