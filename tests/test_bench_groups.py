"""The group benchmark's rebalance count matches the classic protocol's message budget."""

from __future__ import annotations

import pytest

from kafkalab.bench.bench_groups import rebalance_requests


@pytest.mark.parametrize("members", [1, 5, 12])
def test_a_newcomer_costs_three_requests_per_old_member_plus_five(members: int) -> None:
    # Per old member: a Heartbeat answered REBALANCE_IN_PROGRESS, a JoinGroup and a SyncGroup;
    # the leader's Metadata; the newcomer's FindCoordinator, two JoinGroups (KIP-394), SyncGroup.
    assert rebalance_requests(members) == 3 * members + 5
