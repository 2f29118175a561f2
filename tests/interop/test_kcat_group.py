"""kcat as a balanced consumer group member (``kcat -G group topic``) against a kafkalab server.

Two kcat processes join one group over a four-partition topic; once the group is Stable with
both, records go to every partition, and each partition is read by exactly one of them. Both
stop with SIGTERM, which makes kcat close its consumer and commit what it read (librdkafka's
auto commit). A third kcat in the same group then reads only the records produced after that:
it resumes from the committed offsets, although it asks for ``auto.offset.reset=earliest``.

The server runs with ``group.initial.rebalance.delay.ms=300`` and
``group.min.session.timeout.ms=1000`` so the test finishes in seconds. Skips when kcat is not
installed.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka.admin import KafkaAdminClient

from kafkalab.client.launcher import start_server
from tests.interop.conftest import EXTERNAL_BOOTSTRAP
from tests.interop.support import CLIENT_TIMEOUT_MS, DEADLINE_S, create_topic

KCAT = shutil.which("kcat")
pytestmark = [pytest.mark.skipif(KCAT is None, reason="kcat is not installed (apt-get install kcat)"),
              pytest.mark.skipif(bool(EXTERNAL_BOOTSTRAP), reason="needs a server with short group delays")]
OVERRIDES = ["group.initial.rebalance.delay.ms=300", "group.min.session.timeout.ms=1000"]
PARTITIONS = 4
PER_PARTITION = 3
GROUP = "kcat-group"
STOP_TIMEOUT_S = 15.0  # kcat's close: leave the group, commit


@pytest.fixture
def bootstrap_fast(tmp_path: Path) -> Iterator[str]:
    server = start_server(tmp_path / "data", overrides=OVERRIDES)
    try:
        yield server.bootstrap
    finally:
        server.stop()


class Member:
    """A ``kcat -G`` process printing ``partition offset value`` per record, unbuffered (-u),
    into a file the test can read while it runs."""

    def __init__(self, bootstrap: str, topic: str, out_path: Path, *extra: str) -> None:
        assert KCAT is not None
        self.out_path = out_path
        with open(out_path, "w") as out:
            self.process = subprocess.Popen(
                [KCAT, "-b", bootstrap, "-G", GROUP, "-u", "-f", "%p %o %s\\n",
                 "-X", "auto.offset.reset=earliest", "-X", "session.timeout.ms=6000",
                 "-X", "heartbeat.interval.ms=500", *extra, topic],
                stdout=out, stderr=subprocess.PIPE, text=True)

    def rows(self) -> list[tuple[int, int, str]]:
        lines = self.out_path.read_text().splitlines()
        return [(int(p), int(o), v) for p, o, v in (line.split(" ", 2) for line in lines if line.count(" ") >= 2)]

    def stop(self) -> list[tuple[int, int, str]]:
        """SIGTERM (kcat closes its consumer, which commits what it read), then its rows."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        _, err = self.process.communicate(timeout=STOP_TIMEOUT_S)
        assert self.process.returncode == 0, f"kcat exited {self.process.returncode}: {err}"
        return self.rows()


def produce(bootstrap: str, topic: str, round_: int) -> set[str]:
    """PER_PARTITION records to each partition; returns their values."""
    assert KCAT is not None
    values = set()
    for partition in range(PARTITIONS):
        lines = [f"r{round_}-p{partition}-{i}" for i in range(PER_PARTITION)]
        subprocess.run([KCAT, "-b", bootstrap, "-P", "-t", topic, "-p", str(partition)],
                       input="\n".join(lines) + "\n", text=True, check=True, timeout=DEADLINE_S)
        values.update(lines)
    return values


def wait_for_members(bootstrap: str, count: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=CLIENT_TIMEOUT_MS)
    try:
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            group = admin.describe_groups([GROUP])[GROUP]
            if group["group_state"] == "Stable" and len(group["members"]) == count:
                return
            time.sleep(0.1)
        raise AssertionError(f"group {GROUP} did not become Stable with {count} members: {group}")
    finally:
        admin.close()


def test_two_kcat_members_split_partitions_and_resume_from_commits(bootstrap_fast: str, topic_name: str,
                                                                    tmp_path: Path) -> None:
    create_topic(bootstrap_fast, topic_name, PARTITIONS)
    members = [Member(bootstrap_fast, topic_name, tmp_path / f"member-{i}.out") for i in range(2)]
    try:
        wait_for_members(bootstrap_fast, 2)
        produced = produce(bootstrap_fast, topic_name, 0)
        deadline = time.monotonic() + DEADLINE_S
        while sum(len(m.rows()) for m in members) < len(produced) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        rows = [m.stop() for m in members]
    partitions = [{p for p, _o, _v in member_rows} for member_rows in rows]
    assert partitions[0] and partitions[1] and not partitions[0] & partitions[1], partitions
    assert partitions[0] | partitions[1] == set(range(PARTITIONS))
    assert sorted(v for member_rows in rows for _p, _o, v in member_rows) == sorted(produced)

    later = produce(bootstrap_fast, topic_name, 1)
    resumed = Member(bootstrap_fast, topic_name, tmp_path / "resumed.out", "-e")  # exits at every partition's end
    resumed.process.wait(timeout=DEADLINE_S)
    rows_after = resumed.stop()
    assert sorted(v for _p, _o, v in rows_after) == sorted(later)  # nothing read twice
    assert {o for _p, o, _v in rows_after} == set(range(PER_PARTITION, 2 * PER_PARTITION))
