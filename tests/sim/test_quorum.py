"""SimQuorum: a KRaft election on the simulation -- one leader per epoch, a new epoch after the
leader crashes (not before controller.quorum.fetch.timeout.ms), a restarted voter follows."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab.sim.quorum import SimQuorum

FETCH_TIMEOUT_MS = 2_000  # controller.quorum.fetch.timeout.ms default
ELECTION_TIMEOUT_MS = 1_000  # controller.quorum.election.timeout.ms default
FETCH_MAX_WAIT_MS = 500  # a follower's last answered fetch may have been parked this long


def _leaders_by_epoch(quorum: SimQuorum) -> dict[int, set[int]]:
    found: dict[int, set[int]] = {}
    for event in quorum.events:
        if event.state == "LEADER":
            found.setdefault(event.epoch, set()).add(event.node_id)
    return found


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_election_crash_and_restart(tmp_path: Path, seed: int) -> None:
    quorum = SimQuorum(tmp_path, voters=3, seed=seed)
    try:
        first = quorum.run_until_leader()
        assert first is not None and first.epoch >= 1
        assert ELECTION_TIMEOUT_MS <= quorum.clock.milliseconds() <= 4 * ELECTION_TIMEOUT_MS
        offset = quorum.append([b"record"])
        quorum.run_for(1_500)  # followers learn the high watermark on their next fetch
        assert all(n is not None and n.high_watermark > offset for n in quorum.nodes.values())
        crashed_at = quorum.clock.milliseconds()
        quorum.crash(first.local_id)
        second = quorum.run_until_leader()
        assert second is not None and second.local_id != first.local_id and second.epoch > first.epoch
        # A follower stands only once its last answered fetch is fetch.timeout.ms old.
        assert quorum.clock.milliseconds() - crashed_at >= FETCH_TIMEOUT_MS - FETCH_MAX_WAIT_MS - 10
        assert second.log.high_watermark > offset  # the committed record survived
        quorum.start(first.local_id)
        quorum.run_for(3_000)
        back = quorum.nodes[first.local_id]
        assert back is not None and back.kind.name == "FOLLOWER" and back.leader_id == second.local_id
        assert all(len(ids) == 1 for ids in _leaders_by_epoch(quorum).values())
    finally:
        quorum.close()
