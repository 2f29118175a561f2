"""``kafkalab reassign-partitions``' files and plans against Kafka's documented examples: the
operations guide's JSON files (docs/ops.html, "Automatically migrating data to new machines"),
``AdminUtils``' worked assignments, and ``ReassignPartitionsUnitTest``'s move map and throttles."""

from __future__ import annotations

import json
import random

import pytest

from kafkalab.tools import reassignment_plan as plan
from kafkalab.tools.reassignment_plan import PartitionMove, ReassignmentFileError

# docs/ops.html: topics-to-move.json and custom-reassignment.json, as printed there.
TOPICS_TO_MOVE = '{\n  "topics": [\n    { "topic": "foo1" },\n    { "topic": "foo2" }\n  ],\n  "version": 1\n}'
CUSTOM = ('{"version":1,"partitions":[{"topic":"foo1","partition":0,"replicas":[5,6]},'
          '{"topic":"foo2","partition":1,"replicas":[2,3]}]}')
# The guide's "Current partition replica assignment" (pretty-printed there; Jackson prints it compact).
CURRENT = ('{"version":1,"partitions":[{"topic":"foo1","partition":0,"replicas":[2,1],"log_dirs":["any"]},'
           '{"topic":"foo1","partition":1,"replicas":[1,3],"log_dirs":["any"]},'
           '{"topic":"foo1","partition":2,"replicas":[3,4],"log_dirs":["any"]},'
           '{"topic":"foo2","partition":0,"replicas":[4,2],"log_dirs":["any"]},'
           '{"topic":"foo2","partition":1,"replicas":[2,1],"log_dirs":["any"]},'
           '{"topic":"foo2","partition":2,"replicas":[1,3],"log_dirs":["any"]}]}')


def test_the_guides_files_parse() -> None:
    assert plan.parse_topics(TOPICS_TO_MOVE) == ["foo1", "foo2"]
    assert plan.parse_reassignment(CUSTOM) == [(("foo1", 0), [5, 6]), (("foo2", 1), [2, 3])]


def test_format_is_jacksons_compact_json_sorted_by_partition() -> None:
    # The guide's file lists one log dir for two replicas, which Kafka's own parser would refuse;
    # only its topics, partitions and replicas are used here.
    parsed = {(e["topic"], e["partition"]): e["replicas"] for e in json.loads(CURRENT)["partitions"]}
    shuffled = dict(sorted(parsed.items(), key=lambda item: random.Random(4).random()))
    text = plan.format_reassignment(shuffled)
    # Field values as the guide shows them; each partition names one log dir per replica.
    expected = json.loads(CURRENT)
    for entry in expected["partitions"]:
        entry["log_dirs"] = ["any"] * len(entry["replicas"])
    assert text == json.dumps(expected, separators=(",", ":"))


def test_the_guides_proposal_for_brokers_5_and_6() -> None:
    # The guide's proposal is one random draw: foo1 started at index 1, foo2 at index 0.
    brokers: dict[int, str | None] = {5: None, 6: None}
    foo1 = plan.assign_replicas_to_brokers(3, 2, brokers, random.Random(0), fixed_start_index=1)
    foo2 = plan.assign_replicas_to_brokers(3, 2, brokers, random.Random(0), fixed_start_index=0)
    assert foo1 == {0: [6, 5], 1: [5, 6], 2: [6, 5]}
    assert foo2 == {0: [5, 6], 1: [6, 5], 2: [5, 6]}


def test_admin_utils_rack_unaware_table() -> None:
    # AdminUtils' javadoc: 5 brokers, 10 partitions, 3 replicas, start 0.
    placed = plan.assign_replicas_to_brokers(10, 3, dict.fromkeys(range(5)), random.Random(0), fixed_start_index=0)
    columns = {b: [p for p in range(10) if placed[p][0] == b] for b in range(5)}
    seconds = {b: [p for p in range(10) if placed[p][1] == b] for b in range(5)}
    thirds = {b: [p for p in range(10) if placed[p][2] == b] for b in range(5)}
    assert columns == {0: [0, 5], 1: [1, 6], 2: [2, 7], 3: [3, 8], 4: [4, 9]}
    assert seconds == {0: [4, 8], 1: [0, 9], 2: [1, 5], 3: [2, 6], 4: [3, 7]}
    assert thirds == {0: [3, 7], 1: [4, 8], 2: [0, 9], 3: [1, 5], 4: [2, 6]}


def test_admin_utils_rack_aware_example() -> None:
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    placed = plan.assign_replicas_to_brokers(7, 3, racks, random.Random(0), fixed_start_index=0)
    assert placed == {0: [0, 3, 1], 1: [3, 1, 5], 2: [1, 5, 4], 3: [5, 4, 2], 4: [4, 2, 0], 5: [2, 0, 3],
                      6: [0, 4, 2]}


def test_move_map_and_throttles_of_the_unit_test() -> None:
    ongoing = {("foo", 0): ([1, 2, 3, 4], [4]), ("foo", 1): ([4, 5, 6, 7, 8], [7, 8])}
    ongoing.update({("foo", p): ([1, 2, 3, 4], [3, 4]) for p in (2, 3, 4, 5)})
    proposed = {("foo", 0): [1, 2, 5], ("foo", 2): [3, 4], ("foo", 3): [5, 6], ("foo", 4): [3],
                ("foo", 5): [3, 4, 5, 6], ("bar", 0): [1, 2, 3]}
    current = {("bar", 0): [2, 3, 4], ("baz", 0): [1, 2, 3]}
    moves = plan.move_map(ongoing, proposed, current)
    assert moves[("foo", 0)] == PartitionMove(frozenset({1, 2, 3}), frozenset({5}))
    assert moves[("foo", 1)] == PartitionMove(frozenset({4, 5, 6}), frozenset({7, 8}))
    assert moves[("bar", 0)] == PartitionMove(frozenset({2, 3, 4}), frozenset({1}))
    assert plan.throttled_replicas(moves) == {
        "foo": ("0:1,0:2,0:3,1:4,1:5,1:6,2:1,2:2,3:1,3:2,4:1,4:2,5:1,5:2",
                "0:5,1:7,1:8,2:3,2:4,3:5,3:6,4:3,5:3,5:4,5:5,5:6"),
        "bar": ("0:2,0:3,0:4", "0:1"),
    }


def test_verify_lines() -> None:
    states = {("foo", 1): ([1, 2], [3, 4], False), ("foo", 0): ([5, 6], [5, 6], True),
              ("bar", 0): ([1], [2], True)}
    assert plan.verify_lines(states) == [
        "Status of partition reassignment:",
        "There is no active reassignment of partition bar-0, but replica set is 1 rather than 2.",
        "Reassignment of partition foo-0 is completed.",
        "Reassignment of partition foo-1 is still in progress.",
    ]


@pytest.mark.parametrize(("text", "message"), [
    ('{"version":2,"partitions":[]}', "Not supported version field value 2"),
    ("[1, 2", "The input string is not a valid JSON"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any"]}]}',
     "Size of replicas list \\[1, 2\\] is different from size of log dirs list"),
    ('{"partitions":[{"topic":"t","partition":0}]}', "Invalid reassignment file"),
])
def test_bad_reassignment_files(text, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ReassignmentFileError, match=message):
        plan.parse_reassignment(text)


@pytest.mark.parametrize(("targets", "message"), [
    ([], "Partition reassignment list cannot be empty"),
    ([(("t", 0), [])], "Partition replica list cannot be empty"),
    ([(("t", 0), [1]), (("t", 0), [2])], "Partition reassignment contains duplicate topic partitions: t-0"),
    ([(("t", 0), [1, 1])], "Partition replica lists may not contain duplicate entries: t-0 contains multiple entries for 1"),
])
def test_execute_checks(targets, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ReassignmentFileError, match=message):
        plan.check_execute(targets)
