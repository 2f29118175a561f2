"""kafkalab consumer-groups without a server: argument rules, time parsing, table layout.

The datetime and duration cases are checked against values Java's ``SimpleDateFormat`` and
``Duration.parse`` give for the same text (computed independently: epoch arithmetic by hand).
"""

from __future__ import annotations

import argparse

import pytest

from kafkalab.client.group_admin import GroupDescription, MemberDescription, Node
from kafkalab.tools import consumer_groups as cg


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cg.add_arguments(parser)
    return parser.parse_args(["--bootstrap-server", "127.0.0.1:9092", *argv])


@pytest.mark.parametrize("text, expected_ms", [
    ("2024-01-01T00:00:00.000", 1_704_067_200_000),  # no zone means UTC, as Kafka appends "Z"
    ("2024-01-01T00:00:00.000Z", 1_704_067_200_000),
    ("2024-01-01T02:00:00.250+02:00", 1_704_067_200_250),
    ("2024-01-01T02:00:00.250+0200", 1_704_067_200_250),
    ("2023-12-31T19:00:00.000-05", 1_704_067_200_000),
    ("1970-01-01T00:00:00.001", 1),
])
def test_parse_datetime_like_kafka_utils_get_date_time(text: str, expected_ms: int) -> None:
    assert cg.parse_datetime_ms(text) == expected_ms


@pytest.mark.parametrize("text", ["2024-01-01", "2024-01-01T00:00:00", "2024-13-01T00:00:00.000",
                                  "2024-01-01T00:00:00.0000", "yesterday"])
def test_parse_datetime_rejects_what_kafka_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        cg.parse_datetime_ms(text)


@pytest.mark.parametrize("text, expected_ms", [
    ("PT0S", 0), ("P1D", 86_400_000), ("P1DT2H", 93_600_000), ("PT15M", 900_000),
    ("PT1.5S", 1_500), ("pt2h30m", 9_000_000), ("-PT1H", -3_600_000), ("PT-1H", -3_600_000),
])
def test_parse_duration_like_java_duration_parse(text: str, expected_ms: int) -> None:
    assert cg.parse_duration_ms(text) == expected_ms


@pytest.mark.parametrize("text", ["P", "PT", "1D", "P1H", "PT1D", "P1DT"])
def test_parse_duration_rejects_what_java_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        cg.parse_duration_ms(text)


@pytest.mark.parametrize("argv, message", [
    (["--describe"], "takes one of these options: --all-groups, --group"),
    (["--describe", "--group", "g", "--all-groups"], "not allowed with --all-groups"),
    (["--describe", "--group", "g", "--members", "--offsets"], "at most one"),
    (["--describe", "--group", "g", "--state", "Stable"], "does not take a value"),
    (["--delete", "--group", "g", "--topic", "t"], "topic-specific offset deletion"),
    (["--delete-offsets", "--group", "g"], "--group, --topic"),
    (["--reset-offsets", "--group", "g", "--all-topics"], "requires one of the following scenarios"),
    (["--reset-offsets", "--group", "g", "--to-latest"], "--all-topics, --topic"),
    (["--reset-offsets", "--group", "g", "--all-topics", "--to-latest", "--dry-run", "--execute"],
     "only accepts one of --execute and --dry-run"),
])
def test_check_args_refuses_what_kafka_refuses(argv: list[str], message: str) -> None:
    with pytest.raises(cg.UsageError, match=message):
        cg.check_args(parse(*argv))


def test_two_reset_scenarios_are_refused_by_the_parser() -> None:
    with pytest.raises(SystemExit):
        parse("--reset-offsets", "--group", "g", "--all-topics", "--to-latest", "--to-earliest")


def test_offsets_table_has_kafkas_columns_widths_and_missing_values() -> None:
    rows = [cg.OffsetRow("g", "orders", 0, 4, 10, "consumer-1-abc", "/127.0.0.1", "consumer-1"),
            cg.OffsetRow("g", "orders", 1, None, 11)]
    assert [r.lag for r in rows] == [6, None]
    assert cg.format_offsets(rows) == (
        "\nGROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             "
        "CONSUMER-ID     HOST            CLIENT-ID"
        "\ng               orders          0          4               10              6               "
        "consumer-1-abc  /127.0.0.1      consumer-1"
        "\ng               orders          1          -               11              -               "
        "-               -               -\n")


def test_members_table_adds_group_instance_id_only_when_a_member_has_one() -> None:
    node = Node(0, "127.0.0.1", 9092)
    plain = MemberDescription("m-1", None, "c", "/10.0.0.1", (("t", 10), ("t", 2), ("u", 0)))
    group = GroupDescription("g", "Stable", "consumer", "range", (plain,), node)
    assert cg.format_members(group, verbose=True).splitlines() == [
        "",
        "GROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS     ASSIGNMENT",
        "g               m-1             /10.0.0.1       c               3               t(10,2), u(0)",
    ]
    static = MemberDescription("m-2", "i-2", "c", "/10.0.0.2", ())
    group = GroupDescription("g", "Stable", "consumer", "range", (plain, static), node)
    lines = cg.format_members(group, verbose=False).splitlines()
    assert lines[1] == ("GROUP           CONSUMER-ID     GROUP-INSTANCE-ID HOST            CLIENT-ID       "
                        "#PARTITIONS     ")
    assert lines[3] == "g               m-2             i-2               /10.0.0.2       c               0               "


def test_state_table_pads_group_to_the_coordinator_column() -> None:
    group = GroupDescription("g", "Stable", "consumer", "roundrobin", (), Node(3, "broker-3.example", 19092))
    assert cg.format_state(group) == (
        f"\n{'GROUP':<27} COORDINATOR (ID)          ASSIGNMENT-STRATEGY  STATE           #MEMBERS"
        f"\n{'g':<27} broker-3.example:19092  (3) roundrobin           Stable          0\n")


def test_reset_plan_table_sorted_by_partition() -> None:
    assert cg.format_reset_plan({"g": {("t", 1): 5, ("t", 0): 7}}).splitlines()[1:] == [
        f"{'GROUP':<30} {'TOPIC':<30} {'PARTITION':<10} {'NEW-OFFSET':<15}",
        f"{'g':<30} {'t':<30} {0:<10} {7:<15}",
        f"{'g':<30} {'t':<30} {1:<10} {5:<15}",
    ]
