"""``kafkalab metadata-quorum``'s layout, cell by cell as Kafka's MetadataQuorumCommand prints it:
prettyPrintTable's padding and tabs, Uuid's base64, the lag columns and the flag rules."""

from __future__ import annotations

import io
import uuid
from argparse import Namespace
from types import SimpleNamespace as NS

from kafkalab.tools import metadata_quorum as mq


def _replica(replica_id: int, log_end: int, fetched: int, caught_up: int) -> NS:
    return NS(replica_id=replica_id, replica_directory_id=uuid.UUID(int=0), log_end_offset=log_end,
              last_fetch_timestamp=fetched, last_caught_up_timestamp=caught_up)


PARTITION = NS(leader_id=2, leader_epoch=7, high_watermark=40,
               current_voters=(_replica(1, 38, 990, 900), _replica(2, 41, 1000, 1000), _replica(3, 41, 995, 995)),
               observers=(_replica(101, 40, 998, -1),))
NODES = (NS(node_id=2, listeners=(NS(name="CONTROLLER", host="h2", port=9093),)),)


def test_the_table_pads_like_kafkas_pretty_print() -> None:
    table = mq.pretty_table(("NodeId", "Lag"), [["1", "12345"], ["102", "0"]])
    assert table == "NodeId\tLag  \t\n1     \t12345\t\n102   \t0    \t\n"


def test_replication_rows_leader_first_then_followers_then_observers() -> None:
    rows = mq.replication_rows(PARTITION)
    assert [r[0] for r in rows] == ["2", "1", "3", "101"]
    assert [r[6] for r in rows] == ["Leader", "Follower", "Follower", "Observer"]
    assert [r[3] for r in rows] == ["0", "3", "0", "1"]  # lag behind the leader's log end offset
    assert rows[0][1] == "AAAAAAAAAAAAAAAAAAAAAA" and rows[3][5] == "-1"
    assert mq.replication_rows(PARTITION, human=True, now_ms=1_010)[1][4:6] == ["20 ms ago", "110 ms ago"]


def test_status_names_the_furthest_follower() -> None:
    text = mq.status_text("c1", PARTITION, NODES).splitlines()
    assert text[:6] == ["ClusterId:              c1", "LeaderId:               2", "LeaderEpoch:            7",
                        "HighWatermark:          40", "MaxFollowerLag:         3", "MaxFollowerLagTimeMs:   100"]
    assert text[6] == ('CurrentVoters:          [{"id": 1, "directoryId": null}, {"id": 2, "directoryId": null, '
                       '"endpoints": ["CONTROLLER://h2:9093"]}, {"id": 3, "directoryId": null}]')
    assert text[7] == 'CurrentObservers:       [{"id": 101, "directoryId": null}]'


def test_java_uuid_is_url_safe_base64_without_padding() -> None:
    assert mq.java_uuid(uuid.UUID("f" * 32)) == "_____________________w"


def test_status_and_replication_exclude_each_other() -> None:
    err = io.StringIO()
    args = Namespace(bootstrap_server="localhost:1", subcommand="describe", status=True, replication=True,
                     human_readable=False)
    assert mq.run(args, io.StringIO(), err) == 1
    assert err.getvalue() == "Only one of --status or --replication should be specified with describe sub-command\n"
