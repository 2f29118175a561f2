"""The transaction fault campaign: committed transactions stay whole and visible, aborted ones
are never read, read_committed never passes the LSO -- through coordinator and leader crashes
and network cuts. The checker it feeds is tested on bad histories in ``test_txn_checker``; here
a broken marker channel shows the whole campaign can fail too."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

from kafkalab.broker.txn_channel import TxnMarkerChannelManager
from kafkalab.errors import ErrorCode
from kafkalab.sim.invariants import InvariantViolation
from kafkalab.sim.txn_campaign import run
from kafkalab.txn.markers import MarkerRequest, MarkerResults


def test_transactions_stay_whole_through_a_coordinator_crash_mid_commit(tmp_path: Path) -> None:
    result = run(2, tmp_path, steps=5)  # raises InvariantViolation naming each anomaly
    assert result.outcomes["committed"] >= 5 and result.outcomes["aborted"] > 0
    assert result.actions["crashed-on-commit"] >= 1  # a coordinator died with its markers in flight
    assert result.reads > 0 and result.records_read > 0


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(40))
def test_txn_campaign_more_seeds(tmp_path: Path, seed: int) -> None:
    run(seed, tmp_path)


@pytest.mark.slow
def test_the_campaign_catches_markers_that_never_reach_other_brokers(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A channel that claims success for partitions led elsewhere without sending anything:
    those partitions keep the transaction open (hanging) or miss committed records."""
    send = TxnMarkerChannelManager.send

    def local_only(self: TxnMarkerChannelManager, request: MarkerRequest,
                   on_complete: Callable[[MarkerResults], None]) -> None:
        here = tuple(tp for tp in request.partitions if self._leader(tp) == self.broker.settings.node_id)
        skipped = {tp: ErrorCode.NONE for tp in request.partitions if tp not in here}
        if not here:
            on_complete(skipped)
            return
        send(self, dataclasses.replace(request, partitions=here), lambda results: on_complete({**results, **skipped}))

    monkeypatch.setattr(TxnMarkerChannelManager, "send", local_only)
    with pytest.raises(InvariantViolation, match="hanging-txn|lost-write"):
        run(1, tmp_path, steps=5)
