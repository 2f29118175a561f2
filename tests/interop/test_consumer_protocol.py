"""KIP-848 consumer groups with Kafka's own Java consumer 3.9.1 (``group.protocol=consumer``).

Each member is its own JVM (``tests/java/ConsumerProtocolMember.java``), so one can be killed
with SIGKILL. The member prints its assignment whenever it changes, every record it reads and
the outcome of each ``commitSync`` (OffsetCommit v9, checked against its member epoch). The
broker runs with ``group.consumer.heartbeat.interval.ms=500`` and
``group.consumer.session.timeout.ms=3000`` so that the tests take seconds, not the 45 s of
Kafka's default session.

* Three members split six partitions two each, and every record is read exactly once; Kafka's
  Java Admin reads the group back through ConsumerGroupDescribe and ListGroups v5.
* The server-side ``range`` assignor, chosen by the members (``group.remote.assignor``), hands
  out contiguous ranges.
* A static member (``group.instance.id``) that closes and comes back gets its partitions again
  while the other member's assignment does not move.
* A killed member's partitions move to the others once its session has timed out.
* Offsets committed before a broker restart are where the group resumes after it.
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka import KafkaProducer

from kafkalab.client.launcher import start_server
from kafkalab.protocol.api_keys import ApiKey
from tests.interop.conftest import EXTERNAL_BOOTSTRAP
from tests.interop.recording_proxy import RecordingProxy
from tests.interop.support import create_topic
from tests.java_client import JavaClient, java_client

PARTITIONS = 6
PER_PARTITION = 5
SESSION_TIMEOUT_MS = 3000
STATIC_SESSION_TIMEOUT_MS = 20_000
OVERRIDES = ["group.consumer.heartbeat.interval.ms=500", f"group.consumer.session.timeout.ms={SESSION_TIMEOUT_MS}"]
DEADLINE_S = 40.0  # JVM start-up and the first write to __consumer_offsets take a few seconds

pytestmark = pytest.mark.skipif(bool(EXTERNAL_BOOTSTRAP), reason="needs its own server with short sessions")


class Member:
    """One ConsumerProtocolMember JVM and what it has printed so far."""

    def __init__(self, client: JavaClient, bootstrap: str, topic: str, group: str, assignor: str | None = None,
                 instance_id: str | None = None):
        command = [client.java, "-cp", client.classpath, "ConsumerProtocolMember", bootstrap, topic, group,
                   str(PARTITIONS), assignor or "-", *([instance_id] if instance_id else [])]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, text=True)
        self.lines: list[tuple[float, str]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append((time.monotonic(), line.strip()))

    def assignment(self) -> set[int]:
        latest = [text for _, text in self.lines if text.startswith("assigned ")]
        if not latest or latest[-1] == "assigned -":
            return set()
        return set(map(int, latest[-1].split(" ", 1)[1].split(",")))

    def reads(self) -> list[tuple[int, int]]:
        return [(int(p), int(o)) for _, text in list(self.lines) if text.startswith("read ")
                for p, o in [text.split()[1:]]]

    def saw(self, prefix: str) -> list[str]:
        return [text for _, text in list(self.lines) if text.startswith(prefix)]

    def stop(self) -> None:
        """Ask it to finish (it prints what it committed, then leaves the group)."""
        assert self.process.stdin is not None
        self.process.stdin.write("stop\n")
        self.process.stdin.flush()
        self.process.wait(30)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)


@pytest.fixture(scope="module")
def proxied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, RecordingProxy]]:
    proxy = RecordingProxy()
    advertised = f"advertised.listeners=PLAINTEXT://127.0.0.1:{proxy.port}"
    server = start_server(tmp_path_factory.mktemp("kip848") / "data", overrides=[*OVERRIDES, advertised])
    proxy.upstream = (server.host, server.port)
    try:
        yield f"127.0.0.1:{proxy.port}", proxy
    finally:
        server.stop()
        proxy.close()


@pytest.fixture
def members() -> Iterator[list[Member]]:
    started: list[Member] = []
    yield started
    for member in started:
        member.kill()


def _until(condition, deadline_s: float = DEADLINE_S) -> bool:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def _split_evenly(group: list[Member], count: int) -> bool:
    owned = [m.assignment() for m in group]
    return all(len(o) == PARTITIONS // count for o in owned) and set().union(*owned) == set(range(PARTITIONS))


def _produce(bootstrap: str, topic: str, first: int = 0) -> set[tuple[int, int]]:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1)
    for partition in range(PARTITIONS):
        for i in range(PER_PARTITION):
            producer.send(topic, value=f"{partition}-{first + i}".encode(), partition=partition)
    producer.flush(10)
    producer.close(5)
    return {(p, first + i) for p in range(PARTITIONS) for i in range(PER_PARTITION)}


@pytest.mark.timeout(120)
def test_three_java_members_split_six_partitions(proxied, topic_name, members):
    client = java_client()
    bootstrap, proxy = proxied
    create_topic(bootstrap, topic_name, partitions=PARTITIONS)
    proxy.take()
    members += [Member(client, bootstrap, topic_name, "kip848-split") for _ in range(3)]
    assert _until(lambda: _split_evenly(members, 3)), [m.lines for m in members]
    split = [m.assignment() for m in members]
    _check_described(client, bootstrap, "kip848-split", split)
    expected = _produce(bootstrap, topic_name)
    assert _until(lambda: sum(len(m.reads()) for m in members) >= len(expected))
    every_read = [r for m in members for r in m.reads()]
    assert len(every_read) == len(set(every_read)), "a record was read twice"
    assert set(every_read) == expected
    for owned, member in zip(split, members):
        assert {p for p, _ in member.reads()} <= owned
    for member in members:
        member.stop()
        assert member.saw("commit failed") == []
        assert member.saw("closed") == ["closed"]
    assert members[0].saw("committed") == ["committed " + " ".join(f"{p}={PER_PARTITION}" for p in range(PARTITIONS))]
    seen = proxy.take()
    # Kafka's Java client 3.9 speaks ConsumerGroupHeartbeat/Describe v0 and OffsetCommit/OffsetFetch up to v9.
    assert (ApiKey.CONSUMER_GROUP_HEARTBEAT, 0) in seen
    assert (ApiKey.CONSUMER_GROUP_DESCRIBE, 0) in seen  # from the Admin client
    assert (ApiKey.LIST_GROUPS, 5) in seen
    assert max(v for k, v in seen if k == ApiKey.OFFSET_COMMIT) == 9
    assert max(v for k, v in seen if k == ApiKey.OFFSET_FETCH) == 9


def _check_described(client: JavaClient, bootstrap: str, group: str, split: list[set[int]]) -> None:
    """Kafka's Java Admin reads the group back: ConsumerGroupDescribe and ListGroups v5."""
    lines = client.run("GroupDescriber", "", bootstrap, group, timeout_s=60).splitlines()
    assert lines[0] == f"group {group} type Consumer state Stable assignor uniform", lines
    members = [line.split() for line in lines[1:4]]
    assert all(m[0] == "member" and m[3] == m[5] for m in members), lines  # assigned == target
    assert sorted(set(map(int, m[3].split(","))) for m in members) == sorted(split, key=sorted)
    assert f"listed {group} Consumer Stable" in lines, lines


@pytest.mark.timeout(120)
def test_members_choosing_the_server_range_assignor_get_contiguous_ranges(proxied, topic_name, members):
    client = java_client()
    bootstrap, _ = proxied
    create_topic(bootstrap, topic_name, partitions=PARTITIONS)
    members += [Member(client, bootstrap, topic_name, "kip848-range", assignor="range") for _ in range(3)]
    assert _until(lambda: _split_evenly(members, 3)), [m.lines for m in members]
    assert sorted(sorted(m.assignment()) for m in members) == [[0, 1], [2, 3], [4, 5]]


@pytest.mark.timeout(120)
def test_killed_member_partitions_move_after_its_session_timeout(proxied, topic_name, members):
    client = java_client()
    bootstrap, _ = proxied
    create_topic(bootstrap, topic_name, partitions=PARTITIONS)
    members += [Member(client, bootstrap, topic_name, "kip848-kill") for _ in range(3)]
    assert _until(lambda: _split_evenly(members, 3)), [m.lines for m in members]
    doomed, survivors = members[0], members[1:]
    doomed.kill()  # no leave heartbeat: only the session timeout can tell
    killed_at = time.monotonic()
    assert _until(lambda: _split_evenly(survivors, 2)), [m.lines for m in survivors]
    moved_at = max(t for m in survivors for t, text in m.lines if text.startswith("assigned "))
    assert moved_at - killed_at >= (SESSION_TIMEOUT_MS - 1000) / 1000, "partitions moved before the session ended"


@pytest.mark.timeout(120)
def test_a_static_member_comes_back_to_its_partitions_without_a_rebalance(tmp_path: Path, topic_name, members):
    # The returning member is a new JVM, which may take longer than the 3 s session of the other
    # tests to start on a loaded machine: this server keeps a static member's session 20 s.
    server = start_server(tmp_path / "data", overrides=[
        "group.consumer.heartbeat.interval.ms=500", f"group.consumer.session.timeout.ms={STATIC_SESSION_TIMEOUT_MS}"])
    try:
        client, bootstrap = java_client(), server.bootstrap
        create_topic(bootstrap, topic_name, partitions=PARTITIONS)
        group = "kip848-static"
        members += [Member(client, bootstrap, topic_name, group, instance_id=f"instance-{i}") for i in range(2)]
        assert _until(lambda: _split_evenly(members, 2)), [m.lines for m in members]
        first, other = members
        before, changes = first.assignment(), len(other.saw("assigned"))
        first.stop()  # close(): a static member leaves with member epoch -2 and keeps its partitions
        left_at = time.monotonic()
        back = Member(client, bootstrap, topic_name, group, instance_id="instance-0")
        members.append(back)
        assert _until(lambda: back.assignment() == before), back.lines
        assert back.lines[0][0] - left_at < STATIC_SESSION_TIMEOUT_MS / 1000, "the member came back too late"
        time.sleep(1)
        assert len(other.saw("assigned")) == changes, "the other member's assignment moved"
    finally:
        server.stop()


@pytest.mark.timeout(180)
def test_commits_survive_a_broker_restart(tmp_path: Path, members):
    client = java_client()
    data_dir, topic, group = tmp_path / "data", "restart-topic", "kip848-restart"
    server = start_server(data_dir, overrides=OVERRIDES)
    try:
        create_topic(server.bootstrap, topic, partitions=PARTITIONS)
        first = Member(client, server.bootstrap, topic, group)
        members.append(first)
        assert _until(lambda: len(first.assignment()) == PARTITIONS), first.lines
        expected = _produce(server.bootstrap, topic)
        assert _until(lambda: set(first.reads()) == expected), first.lines
        first.stop()
        assert first.saw("committed") == ["committed " + " ".join(f"{p}={PER_PARTITION}" for p in range(PARTITIONS))]
    finally:
        server.stop()
    server = start_server(data_dir, overrides=OVERRIDES)
    try:
        later = _produce(server.bootstrap, topic, first=PER_PARTITION)
        second = Member(client, server.bootstrap, topic, group)
        members.append(second)
        assert _until(lambda: set(second.reads()) >= later), second.lines
        time.sleep(1)  # anything read from before the restart would show up by now
        assert set(second.reads()) == later, "the group did not resume from its committed offsets"
        second.stop()
        assert second.saw("committed") == [
            "committed " + " ".join(f"{p}={2 * PER_PARTITION}" for p in range(PARTITIONS))]
    finally:
        server.stop()
