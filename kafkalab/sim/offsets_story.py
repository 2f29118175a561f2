"""A consumer that processes and commits, in the simulated cluster: delivery semantics shown live.

Theory of operation
-------------------
:class:`ProcessingConsumer` reads one partition the way an ``assign()``-ing Java consumer does:
it fetches from its **position**, hands the records to a processing function, and commits
offsets to its group's coordinator with OffsetCommit (generation -1, no member id: a "simple"
group, which the coordinator accepts while no members have joined it). A committed offset is
the **next offset to read** -- the last processed record's offset + 1 -- and a restarted
consumer resumes from it. Where the commit sits against the processing decides what a crash
costs:

=================  ==========================================  ===========================
``commit``         order                                       a crash mid-batch ...
=================  ==========================================  ===========================
``"before"``       commit the batch's end, then process         loses the unprocessed rest
                                                                (at-most-once)
``"after"``        process the batch, then commit its end       repeats the processed part
                                                                (at-least-once)
``"auto"``         commit the position every                    repeats what was processed
                   ``auto.commit.interval.ms`` during poll()    since the last auto commit
=================  ==========================================  ===========================

``crash_after`` stops the consumer once it has processed that many records -- the process
dies, nothing more is committed -- and :meth:`ProcessingConsumer.restart` starts it again from
the committed offset, as a new process would.

Worked example: 10 records, batches of 4, ``commit="after"``, crash after 6 records: batch
0-3 is processed and committed (offset 4); records 4 and 5 are processed and the process dies;
the restart reads from 4, so records 4 and 5 are processed twice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafkalab.errors import ErrorCode
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.records import iter_batches
from kafkalab.sim.cluster import CLIENT, SimCluster

AUTO_COMMIT_INTERVAL_MS = 5_000  # auto.commit.interval.ms
COMMIT_VERSION = 8
FETCH_OFFSETS_VERSION = 5
WAIT_MS = 60_000
EMPTY_POLLS_MAX = 120  # a bug guard: a leader is elected well within two minutes
RETRY_BACKOFF_MS = 100  # retry.backoff.ms
FIND_COORDINATOR_TRIES_MAX = 50  # a bound: the offsets topic is known within a few fetches


def call(sim: SimCluster, node: int, api_key: int, version: int, body: dict[str, Any]) -> Any:
    """Send one request from the client to ``node`` and run until it is answered (or None)."""
    answers: list[Any] = []
    sim._send(CLIENT, node, api_key, version, body, answers.append)
    sim.run_until(lambda: bool(answers), WAIT_MS)
    return answers[0] if answers else None


def find_coordinator(sim: SimCluster, group: str) -> int:
    """FindCoordinator, asked of the lowest live broker; the coordinator's node id (-1: none).
    COORDINATOR_NOT_AVAILABLE -- the first ask creates ``__consumer_offsets``, which the brokers
    learn of a metadata fetch later -- is asked again after ``retry.backoff.ms``, as clients do."""
    for _ in range(FIND_COORDINATOR_TRIES_MAX):
        asked = min(n for n, node in sim.nodes.items() if node.alive)
        answer = call(sim, asked, ApiKey.FIND_COORDINATOR, 3, {"key": group, "key_type": 0})
        if answer is None or answer.error_code != ErrorCode.COORDINATOR_NOT_AVAILABLE:
            break
        sim.run_for(RETRY_BACKOFF_MS)
    return answer.node_id if answer is not None and answer.error_code == 0 else -1


def commit(sim: SimCluster, group: str, topic: str, offsets: dict[int, int]) -> int:
    """OffsetCommit of ``{partition: next offset to read}``; the first error code (0: committed)."""
    body = {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "topics": [
        {"name": topic, "partitions": [{"partition_index": p, "committed_offset": o} for p, o in offsets.items()]}]}
    answer = call(sim, find_coordinator(sim, group), ApiKey.OFFSET_COMMIT, COMMIT_VERSION, body)
    if answer is None:
        return -1
    return next((p.error_code for t in answer.topics for p in t.partitions if p.error_code), 0)


def committed(sim: SimCluster, group: str, topic: str, partitions: list[int]) -> dict[int, int]:
    """OffsetFetch: ``{partition: committed offset}``, -1 where nothing is committed."""
    body = {"group_id": group, "topics": [{"name": topic, "partition_indexes": partitions}]}
    answer = call(sim, find_coordinator(sim, group), ApiKey.OFFSET_FETCH, FETCH_OFFSETS_VERSION, body)
    return {p.partition_index: p.committed_offset for t in answer.topics for p in t.partitions}


@dataclass(slots=True)
class ProcessingConsumer:
    """Reads ``topic``-``partition`` for ``group``; see the module docstring. Not thread-safe."""

    sim: SimCluster
    group: str
    topic: str
    commit: str  # "before", "after" or "auto"
    batch_size: int = 4
    poll_interval_ms: int = 1_000
    processed: list[int] = field(default_factory=list)  # offsets, in processing order
    position: int = 0
    last_auto_commit_ms: int = 0

    def restart(self) -> None:
        """A new process: resume from the committed offset (0 if none: auto.offset.reset=earliest)."""
        found = committed(self.sim, self.group, self.topic, [0])[0]
        self.position = max(found, 0)
        self.last_auto_commit_ms = self.sim.clock.milliseconds()

    def run(self, process: Callable[[int], None], *, until_offset: int, crash_after: int | None = None) -> bool:
        """Consume until ``until_offset`` is reached; False if it crashed on the way."""
        self.restart()
        empty_polls = 0
        while self.position < until_offset:
            if self.commit == "auto":
                self._maybe_auto_commit()
            batch = self._poll()
            if not batch:  # no leader yet, or nothing new: poll again later
                empty_polls += 1
                assert empty_polls <= EMPTY_POLLS_MAX, f"nothing to read at {self.position} for a long time"
                self.sim.run_for(self.poll_interval_ms)
                continue
            if self.commit == "before":
                self._commit(batch[-1] + 1)
            for offset in batch:
                if crash_after is not None and len(self.processed) >= crash_after:
                    return False
                process(offset)
                self.processed.append(offset)
            self.position = batch[-1] + 1
            if self.commit == "after":
                self._commit(self.position)
            self.sim.run_for(self.poll_interval_ms)
        if self.commit == "auto":  # close() commits the position when auto commit is on
            self._commit(self.position)
        return True

    def _poll(self) -> list[int]:
        answer = self.sim.consume(self.topic, 0, self.position)
        if answer is None or answer.error_code:
            return []
        offsets = [r.offset for b in iter_batches(answer.records or b"") for r in b.records
                   if r.offset >= self.position]
        return offsets[:self.batch_size]

    def _maybe_auto_commit(self) -> None:
        """The Java consumer's poll(): once the interval passed, commit the current position --
        everything poll() returned before, whether or not the application finished with it."""
        now_ms = self.sim.clock.milliseconds()
        if now_ms - self.last_auto_commit_ms >= AUTO_COMMIT_INTERVAL_MS:
            self._commit(self.position)
            self.last_auto_commit_ms = now_ms

    def _commit(self, next_offset: int) -> None:
        error = commit(self.sim, self.group, self.topic, {0: next_offset})
        assert error == 0, f"commit of {next_offset} failed with error {error}"


__all__ = ["ProcessingConsumer", "commit", "committed", "find_coordinator"]
