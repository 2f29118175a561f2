"""``kafkalab dump-log`` over a partition directory the broker wrote through the transaction
path: kafka-python-built transactional batches, markers from a kafka-python-encoded
WriteTxnMarkers request. The lines follow Kafka's ``DumpLogSegments`` (kafka-facts D)."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

from kafkalab.tools import dump_log
from tests.broker._harness import Harness
from tests.broker._txn import txn_batch, write_markers


def dump(*paths: Path, extra: tuple[str, ...] = ()) -> list[str]:
    parser = argparse.ArgumentParser()
    dump_log.add_arguments(parser)
    out = io.StringIO()
    status = dump_log.run(parser.parse_args(["--files", ",".join(str(p) for p in paths), *extra]), out=out, err=out)
    assert status == 0, out.getvalue()
    return out.getvalue().splitlines()


def test_markers_txnindex_and_open_transaction_in_the_snapshot(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.create_topic("t")
    h.produce("t", 0, txn_batch(7, 0, 0, [b"a", b"b"]))  # 0-1
    h.produce("t", 0, txn_batch(8, 1, 0, [b"c"]))  # 2
    write_markers(h, [(7, 0, False, 4, {"t": [0]})])  # 3: ABORT; 8 is still open
    h.produce("t", 0, txn_batch(9, 0, 0, [b"d"]))  # 4: open
    write_markers(h, [(8, 1, True, 4, {"t": [0]})])  # 5: COMMIT
    directory = h.log_store.get_log("t", 0).directory
    h.close()  # a clean shutdown writes the snapshot at the log end offset, 6
    lines = dump(directory / "00000000000000000000.log", extra=("--print-data-log",))
    markers = [line for line in lines if "endTxnMarker" in line]
    assert [m.split("headerKeys: [] ")[1] for m in markers] == [
        "endTxnMarker: ABORT coordinatorEpoch: 4", "endTxnMarker: COMMIT coordinatorEpoch: 4"]
    assert all("keySize: 4 valueSize: 6 sequence: -1" in m for m in markers)
    batch_lines = [line for line in lines if line.startswith("baseOffset: 3 ") or line.startswith("baseOffset: 5 ")]
    assert all("isTransactional: true isControl: true" in b and "size: 78" in b for b in batch_lines)
    assert "producerId: 8 producerEpoch: 1" in batch_lines[1]
    assert dump(directory / "00000000000000000000.txnindex")[1:] == [
        "version: 0 producerId: 7 firstOffset: 0 lastOffset: 3 lastStableOffset: 2"]
    snapshot = dump(directory / "00000000000000000006.snapshot")[1:]
    assert [line.split(" lastTimestamp")[0] for line in snapshot] == [
        "producerId: 7 producerEpoch: 0 coordinatorEpoch: 4 currentTxnFirstOffset: OptionalLong.empty",
        "producerId: 8 producerEpoch: 1 coordinatorEpoch: 4 currentTxnFirstOffset: OptionalLong.empty",
        "producerId: 9 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong[4]",
    ]
