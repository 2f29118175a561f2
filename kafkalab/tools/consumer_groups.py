"""``kafkalab consumer-groups``: list, describe, reset and delete consumer groups (kafka-consumer-groups.sh).

Flags, columns and layout are those of Kafka's ``ConsumerGroupCommand``, so the commands of
Kafka's operations guide work unchanged::

    $ kafkalab consumer-groups --bootstrap-server 127.0.0.1:9092 --describe --group orders-app

    GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID                                  HOST            CLIENT-ID
    orders-app      orders          0          40              42              2               kafka-python-1-3b7c9c1e-…                    /127.0.0.1      kafka-python-1
    orders-app      orders          1          -               17              -               kafka-python-1-3b7c9c1e-…                    /127.0.0.1      kafka-python-1

CURRENT-OFFSET is the group's committed offset (OffsetFetch), LOG-END-OFFSET what ListOffsets
answers for "latest" (the high watermark, what a consumer can read), and LAG their difference;
"-" stands for a partition nobody has committed. Committed partitions no member owns are listed
with CONSUMER-ID, HOST and CLIENT-ID "-".

``--reset-offsets`` computes new offsets (``--to-earliest``, ``--to-latest``, ``--to-current``,
``--to-offset N``, ``--shift-by N``, ``--to-datetime``, ``--by-duration``), prints them, and with
``--execute`` commits them from outside the group. Like Kafka's tool it refuses a group that
has members (state other than Empty or Dead): a live member would overwrite the reset with its
next commit. ``--to-datetime`` and ``--by-duration`` ask ListOffsets for the first offset whose
timestamp is at or after the time (the time index lookup); an empty answer falls back to the
latest offset, with Kafka's warning. Offsets outside [log start, log end] are clamped, as Kafka
clamps them.

Differences from Kafka's tool, each deliberate: rows and partitions print sorted (Kafka's order
follows Java hash maps); the verbose ASSIGNMENT column names each topic, ``orders(0,1)``, as
Kafka's tool did before its move from Scala to Java; a missing group is "Dead" whatever
DescribeGroups version answers; and a command that printed ``Error:`` exits with status 1.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from kafkalab.client.connection import bootstrap
from kafkalab.client.group_admin import GroupAdmin, GroupDescription
from kafkalab.clock import SystemClock
from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.protocol.messages.list_offsets import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from kafkalab.storage.checkpoints import TopicPartition

MISSING = "-"  # ConsumerGroupCommand.MISSING_COLUMN_VALUE
ACTIONS = ("list", "describe", "delete", "reset_offsets", "delete_offsets")
SCENARIOS = ("to_earliest", "to_latest", "to_current", "to_offset", "shift_by", "to_datetime", "by_duration")
RESETTABLE_STATES = ("Empty", "Dead")
REBALANCING_STATES = ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling")


class UsageError(ValueError):
    """A combination of flags Kafka's tool rejects before it connects."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT")
    actions = parser.add_mutually_exclusive_group(required=True)
    actions.add_argument("--list", action="store_true", help="list all consumer groups")
    actions.add_argument("--describe", action="store_true", help="describe groups and their lag")
    actions.add_argument("--delete", action="store_true", help="delete groups (they must be empty)")
    actions.add_argument("--reset-offsets", action="store_true", help="reset the offsets of inactive groups")
    actions.add_argument("--delete-offsets", action="store_true", help="delete offsets of one group's topics")
    parser.add_argument("--group", action="append", default=[], help="a group to act on; repeat for several")
    parser.add_argument("--all-groups", action="store_true", help="act on every consumer group")
    parser.add_argument("--topic", action="append", default=[], metavar="TOPIC[:P,P]",
                        help="a topic (optionally with partitions) to reset or delete offsets of")
    parser.add_argument("--all-topics", action="store_true", help="reset every partition the group committed")
    parser.add_argument("--members", action="store_true", help="describe the group's members")
    parser.add_argument("--verbose", action="store_true", help="with --members: each member's partitions")
    parser.add_argument("--offsets", action="store_true", help="describe committed offsets and lag (the default)")
    parser.add_argument("--state", nargs="?", const="", default=None, metavar="STATES",
                        help="--describe: the group's state; --list: show (or filter by) states")
    parser.add_argument("--dry-run", action="store_true", help="show the reset without committing it")
    parser.add_argument("--execute", action="store_true", help="commit the reset")
    scenarios = parser.add_mutually_exclusive_group()
    scenarios.add_argument("--to-earliest", action="store_true", help="reset to the log start offset")
    scenarios.add_argument("--to-latest", action="store_true", help="reset to the log end offset")
    scenarios.add_argument("--to-current", action="store_true", help="reset to the committed offset")
    scenarios.add_argument("--to-offset", type=int, metavar="N", help="reset to offset N")
    scenarios.add_argument("--shift-by", type=int, metavar="N", help="move the committed offset by N")
    scenarios.add_argument("--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss",
                           help="reset to the first offset at or after this time (UTC unless a zone is given)")
    scenarios.add_argument("--by-duration", metavar="PnDTnHnMnS",
                           help="reset to the first offset at or after now minus this ISO-8601 duration")
    parser.add_argument("--timeout", type=int, default=5000, metavar="MS", help="request timeout")


def run(args: argparse.Namespace, *, now_ms: Callable[[], int] = SystemClock().milliseconds) -> int:
    try:
        action = check_args(args)
    except UsageError as error:
        print(error, file=sys.stderr)
        return 1
    out = Output()
    try:
        with bootstrap(args.bootstrap_server, request_timeout_ms=args.timeout) as conn:
            admin = GroupAdmin(conn)
            try:
                HANDLERS[action](admin, args, out, now_ms)
            finally:
                admin.close()
    except (KafkaError, ValueError) as error:
        out.error(f"Executing consumer group command failed due to {error}")
    return 1 if out.failed else 0


def check_args(args: argparse.Namespace) -> str:
    """The action, after Kafka's ``ConsumerGroupCommandOptions.checkArgs`` rules."""
    action = next(a for a in ACTIONS if getattr(args, a))
    if args.group and args.all_groups:
        raise UsageError("Option --group is not allowed with --all-groups")
    if action in ("describe", "delete", "reset_offsets") and not (args.group or args.all_groups):
        raise UsageError(f"Option --{action.replace('_', '-')} takes one of these options: --all-groups, --group")
    if action == "describe" and sum(map(bool, (args.members, args.offsets, args.state is not None))) > 1:
        raise UsageError("Option --describe takes at most one of these options: --members, --offsets, --state")
    if action == "describe" and args.state:
        raise UsageError("Option --describe does not take a value for --state")
    if action == "delete" and args.topic:
        raise UsageError("The consumer does not support topic-specific offset deletion from a consumer group.")
    if action == "delete_offsets" and (len(args.group) != 1 or not args.topic):
        raise UsageError("Option --delete-offsets takes the following options: --group, --topic")
    if action == "reset_offsets":
        _check_reset_args(args)
    return action


def _check_reset_args(args: argparse.Namespace) -> None:
    if args.dry_run and args.execute:
        raise UsageError("Option --reset-offsets only accepts one of --execute and --dry-run")
    if not any(getattr(args, s) not in (None, False) for s in SCENARIOS):
        raise UsageError("Option --reset-offsets requires one of the following scenarios: "
                         + ", ".join("--" + s.replace("_", "-") for s in SCENARIOS))
    if not args.topic and not args.all_topics:
        raise UsageError("One of the reset scopes should be defined: --all-topics, --topic.")
    if not args.dry_run and not args.execute:
        print("WARN: No action will be performed as the --execute option is missing. "
              "Add --dry-run to say so explicitly.", file=sys.stderr)


class Output:
    """Where the command prints; remembers whether it printed an error."""

    def __init__(self) -> None:
        self.failed = False

    def error(self, message: str) -> None:
        """Kafka's ``printError``: a blank line, then ``Error: ...`` on standard output."""
        self.failed = True
        print(f"\nError: {message}")


# -- --list ------------------------------------------------------------------------------------

def handle_list(admin: GroupAdmin, args: argparse.Namespace, out: Output, now_ms: Callable[[], int]) -> None:
    listings = admin.list_groups()
    if args.state is None:
        for listing in listings:
            print(listing.group_id)
        return
    wanted = {s.strip().lower() for s in args.state.split(",") if s.strip()}
    rows = [(g.group_id, g.state) for g in listings if not wanted or g.state.lower() in wanted]
    print(format_list_with_state(rows), end="")


def format_list_with_state(rows: list[tuple[str, str]]) -> str:
    width = max([15, *(len(g) for g, _ in rows)]) + 10
    lines = [f"{'GROUP':<{width}} {'STATE':<20}"] + [f"{g:<{width}} {s:<20}" for g, s in rows]
    return "".join(line + "\n" for line in lines)


# -- --describe --------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class OffsetRow:
    """One line of ``--describe --offsets`` (Kafka's ``PartitionAssignmentState``)."""

    group: str
    topic: str
    partition: int
    offset: int | None
    log_end_offset: int | None
    consumer_id: str = MISSING
    host: str = MISSING
    client_id: str = MISSING

    @property
    def lag(self) -> int | None:
        if self.offset is None or self.offset == -1 or self.log_end_offset is None:
            return None
        return self.log_end_offset - self.offset


def handle_describe(admin: GroupAdmin, args: argparse.Namespace, out: Output, now_ms: Callable[[], int]) -> None:
    groups = sorted(args.group) if args.group else [g.group_id for g in admin.list_groups()]
    for group_id in groups:
        group = admin.describe_group(group_id)
        if args.members:
            if should_print(group, len(group.members), out):
                print(format_members(group, verbose=args.verbose), end="")
        elif args.state is not None:
            if should_print(group, 1, out):
                print(format_state(group), end="")
        else:
            rows = collect_offset_rows(admin, group) if group.state != "Dead" else []
            if should_print(group, len(rows), out):
                print(format_offsets(rows), end="")


def should_print(group: GroupDescription, row_count: int, out: Output) -> bool:
    """Kafka's ``shouldPrintMemberState``: say why a group prints nothing, or that it is moving."""
    if group.state == "Dead":
        out.error(f"Consumer group '{group.group_id}' does not exist.")
        return False
    if group.state == "Empty":
        print(f"\nConsumer group '{group.group_id}' has no active members.", file=sys.stderr)
    elif group.state in REBALANCING_STATES:
        print(f"\nWarning: Consumer group '{group.group_id}' is rebalancing.", file=sys.stderr)
    return row_count > 0


def collect_offset_rows(admin: GroupAdmin, group: GroupDescription) -> list[OffsetRow]:
    """Rows for each member's partitions (members with most partitions first), then committed
    partitions nobody owns."""
    committed = admin.committed_offsets(group.group_id)
    members = sorted((m for m in group.members if m.assignment), key=lambda m: -len(m.assignment))
    assigned = {tp for m in members for tp in m.assignment}
    end_offsets = admin.list_offsets(assigned | set(committed), LATEST_TIMESTAMP)
    rows: list[OffsetRow] = []
    for m in members:
        rows.extend(OffsetRow(group.group_id, t, p, committed.get((t, p)), end_offsets.get((t, p)),
                              m.member_id, m.host, m.client_id) for t, p in sorted(m.assignment))
    rows.extend(OffsetRow(group.group_id, t, p, committed[(t, p)], end_offsets.get((t, p)))
                for t, p in sorted(set(committed) - assigned))
    return rows


def _text(value: int | None) -> str:
    return MISSING if value is None else str(value)


def format_offsets(rows: list[OffsetRow]) -> str:
    """The ``--describe --offsets`` table: each line starts with a newline, one more at the end."""
    group_w = max([15, *(len(r.group) for r in rows)])
    topic_w = max([15, *(len(r.topic) for r in rows)])
    consumer_w = max([15, *(len(r.consumer_id) for r in rows)])
    host_w = max([15, *(len(r.host) for r in rows)])

    def line(*cells: str) -> str:
        g, t, p, cur, end, lag, c, h, cl = cells
        return (f"\n{g:<{group_w}} {t:<{topic_w}} {p:<10} {cur:<15} {end:<15} {lag:<15} "
                f"{c:<{consumer_w}} {h:<{host_w}} {cl}")

    text = line("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                "CONSUMER-ID", "HOST", "CLIENT-ID")
    for r in rows:
        text += line(r.group, r.topic, str(r.partition), _text(r.offset), _text(r.log_end_offset),
                     _text(r.lag), r.consumer_id, r.host, r.client_id)
    return text + "\n"


def format_members(group: GroupDescription, *, verbose: bool) -> str:
    """The ``--describe --members`` table; GROUP-INSTANCE-ID appears once any member has one."""
    members = group.members
    with_instance = any(m.group_instance_id for m in members)
    widths = [max([15, len(group.group_id)]), max([15, *(len(m.member_id) for m in members)]),
              max([17, *(len(m.group_instance_id or "") for m in members)]),
              max([15, *(len(m.host) for m in members)]), max([15, *(len(m.client_id) for m in members)]), 15]
    if not with_instance:
        del widths[2]

    def cells(*values: str) -> str:
        return "".join(f"{v:<{w}} " for v, w in zip(values, widths))

    header = ["GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
    if not with_instance:
        del header[2]
    text = "\n" + cells(*header) + ("ASSIGNMENT" if verbose else "") + "\n"
    for m in members:
        values = [group.group_id, m.member_id, m.group_instance_id or "", m.host, m.client_id, str(len(m.assignment))]
        if not with_instance:
            del values[2]
        text += cells(*values) + (format_assignment(m.assignment) if verbose else "") + "\n"
    return text


def format_assignment(partitions: tuple[TopicPartition, ...]) -> str:
    """``orders(0,1), payments(2)``; partition numbers sort as text ("10" before "2"), as Kafka's do."""
    if not partitions:
        return MISSING
    by_topic: dict[str, list[str]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(str(partition))
    return ", ".join(sorted(f"{t}({','.join(sorted(ps))})" for t, ps in by_topic.items()))


def format_state(group: GroupDescription) -> str:
    """The ``--describe --state`` table (the GROUP column is as wide as the coordinator's)."""
    node = group.coordinator
    coordinator = f"{node.host}:{node.port}  ({node.node_id})"
    width = max(25, len(coordinator))

    def line(*cells: str) -> str:
        g, c, a, s, n = cells
        return f"\n{g:<{width}} {c:<25} {a:<20} {s:<15} {n}"

    return (line("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS")
            + line(group.group_id, coordinator, group.protocol, group.state, str(len(group.members))) + "\n")


# -- --delete and --delete-offsets -------------------------------------------------------------

def handle_delete(admin: GroupAdmin, args: argparse.Namespace, out: Output, now_ms: Callable[[], int]) -> None:
    groups = args.group or [g.group_id for g in admin.list_groups()]
    results = {g: admin.delete_group(g) for g in groups}
    failed = {g: code for g, code in results.items() if code != ErrorCode.NONE}
    deleted = [g for g in groups if g not in failed]
    if not failed:
        print(f"Deletion of requested consumer groups ('{', '.join(deleted)}') was successful.")
        return
    out.error("Deletion of some consumer groups failed:")
    for group, code in failed.items():
        print(f"* Group '{group}' could not be deleted due to: {code.name} ({int(code)})")
    if deleted:
        print(f"\nThese consumer groups were deleted successfully: '{', '.join(deleted)}'")


DELETE_OFFSETS_ERRORS = {
    ErrorCode.INVALID_GROUP_ID: "'{g}' is not valid.",
    ErrorCode.GROUP_ID_NOT_FOUND: "'{g}' does not exist.",
    ErrorCode.NON_EMPTY_GROUP: "Deleting offsets of a consumer group '{g}' is forbidden if the group is not empty.",
    ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC: "Encounter some partition level error, see the follow-up details:",
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "Encounter some partition level error, see the follow-up details:",
}


def handle_delete_offsets(admin: GroupAdmin, args: argparse.Namespace, out: Output,
                          now_ms: Callable[[], int]) -> None:
    (group_id,) = args.group
    partitions = resolve_partitions(admin, args.topic)
    top, results = admin.delete_offsets(group_id, partitions)
    if top == ErrorCode.NONE and all(code == ErrorCode.NONE for code in results.values()):
        print(f"Request succeed for deleting offsets with topic {', '.join(args.topic)} group {group_id}")
    else:
        first: ErrorCode = top if top != ErrorCode.NONE else next(c for c in results.values() if c != ErrorCode.NONE)
        out.error(DELETE_OFFSETS_ERRORS.get(first, f"Encounter some unknown error: {first.name}").format(g=group_id))
    text = f"\n{'TOPIC':<30} {'PARTITION':<15} {'STATUS':<15}"
    for (topic, partition), code in sorted(results.items(), key=lambda item: f"{item[0][0]}{item[0][1]}"):
        status = "Successful" if code == ErrorCode.NONE else f"Error: :{code.name}"
        text += f"\n{topic:<30} {partition:<15} {status:<15}"
    print(text)


def resolve_partitions(admin: GroupAdmin, topic_args: list[str]) -> list[TopicPartition]:
    """``["orders:0,2", "payments"]`` -> orders-0, orders-2 and every partition of payments."""
    named: list[TopicPartition] = []
    whole: list[str] = []
    for arg in topic_args:
        topic, sep, partitions = arg.partition(":")
        if not sep:
            whole.append(arg)
            continue
        if not topic or ":" in partitions:
            raise ValueError(f"Invalid topic arg '{arg}', expected topic name and partitions")
        for text in partitions.split(","):
            if not text.strip().lstrip("-").isdigit():
                raise ValueError(f"Invalid partition '{text}' specified in topic arg '{arg}'")
            named.append((topic, int(text)))
    return sorted(set(named) | set(admin.partitions_of(whole) if whole else []))


# -- --reset-offsets ---------------------------------------------------------------------------

def handle_reset_offsets(admin: GroupAdmin, args: argparse.Namespace, out: Output,
                         now_ms: Callable[[], int]) -> None:
    groups = args.group or [g.group_id for g in admin.list_groups()]
    plans: dict[str, dict[TopicPartition, int]] = {}
    for group_id in groups:
        state = admin.describe_group(group_id).state
        if state not in RESETTABLE_STATES:
            out.error(f"Assignments can only be reset if the group '{group_id}' is inactive, "
                      f"but the current state is {state}.")
            plans[group_id] = {}
            continue
        partitions = (sorted(admin.committed_offsets(group_id)) if args.all_topics
                      else resolve_partitions(admin, args.topic))
        plans[group_id] = plan_reset(admin, group_id, partitions, args, now_ms)
        if args.execute:
            admin.alter_offsets(group_id, plans[group_id])
    print(format_reset_plan(plans), end="")


def plan_reset(admin: GroupAdmin, group_id: str, partitions: list[TopicPartition],
               args: argparse.Namespace, now_ms: Callable[[], int]) -> dict[TopicPartition, int]:
    """New offsets per partition for the chosen scenario (Kafka's ``prepareOffsetsToReset``)."""
    if args.to_earliest:
        return admin.list_offsets(partitions, EARLIEST_TIMESTAMP)
    if args.to_latest:
        return admin.list_offsets(partitions, LATEST_TIMESTAMP)
    if args.to_offset is not None:
        return clamp(admin, {tp: args.to_offset for tp in partitions})
    if args.to_datetime is not None:
        return offsets_for_time(admin, partitions, parse_datetime_ms(args.to_datetime))
    if args.by_duration is not None:
        return offsets_for_time(admin, partitions, now_ms() - parse_duration_ms(args.by_duration))
    committed = admin.committed_offsets(group_id)
    if args.shift_by is not None:
        missing = [tp for tp in partitions if tp not in committed]
        if missing:
            raise ValueError(f"Cannot shift offset for partition {missing[0][0]}-{missing[0][1]} "
                             "since there is no current committed offset")
        return clamp(admin, {tp: committed[tp] + args.shift_by for tp in partitions})
    latest = admin.list_offsets([tp for tp in partitions if tp not in committed], LATEST_TIMESTAMP)
    return {tp: committed[tp] if tp in committed else latest[tp] for tp in partitions}  # --to-current


def clamp(admin: GroupAdmin, wanted: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
    """Keep each offset within [log start offset, log end offset], warning as Kafka does."""
    earliest = admin.list_offsets(wanted, EARLIEST_TIMESTAMP)
    latest = admin.list_offsets(wanted, LATEST_TIMESTAMP)
    result = {}
    for tp, offset in wanted.items():
        bounded = min(max(offset, earliest[tp]), latest[tp])
        if bounded != offset:
            side = "higher than latest" if offset > latest[tp] else "lower than earliest"
            print(f"WARN: New offset ({offset}) is {side} offset for topic partition {tp[0]}-{tp[1]}. "
                  f"Value will be set to {bounded}", file=sys.stderr)
        result[tp] = bounded
    return result


def offsets_for_time(admin: GroupAdmin, partitions: list[TopicPartition], timestamp_ms: int) -> dict[TopicPartition, int]:
    """ListOffsets by timestamp; a partition with nothing that late falls back to its latest offset."""
    found = admin.list_offsets(partitions, timestamp_ms)
    empty = [tp for tp in partitions if found[tp] == -1]
    for topic, partition in empty:
        print(f"\nWarn: Partition {partition} from topic {topic} is empty. Falling back to latest known offset.")
    found.update(admin.list_offsets(empty, LATEST_TIMESTAMP))
    return found


def format_reset_plan(plans: dict[str, dict[TopicPartition, int]]) -> str:
    if not plans:
        return "\n"
    text = f"\n{'GROUP':<30} {'TOPIC':<30} {'PARTITION':<10} {'NEW-OFFSET':<15}"
    for group_id, plan in plans.items():
        for (topic, partition), offset in sorted(plan.items()):
            text += f"\n{group_id:<30} {topic:<30} {partition:<10} {offset:<15}"
    return text + "\n"


_DATETIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})(Z|[+-]\d{2}(?::?\d{2})?)")


def parse_datetime_ms(text: str) -> int:
    """``2024-05-01T12:00:00.000`` (UTC) or with a zone (``Z``, ``+02``, ``+02:00``) -> epoch ms,
    as Kafka's ``Utils.getDateTime`` reads it."""
    date, sep, time_part = text.partition("T")
    if not sep:
        raise ValueError("Error parsing timestamp. It does not contain a 'T' according to ISO8601 format")
    if not any(c in time_part for c in "+-Z"):
        text += "Z"
    match = _DATETIME.fullmatch(text)
    if match is None:
        raise ValueError(f"Unparseable date: {text!r}; expected YYYY-MM-DDTHH:mm:SS.sss")
    year, month, day, hour, minute, second, millis = (int(g) for g in match.groups()[:7])
    zone = match.group(8)
    offset = timedelta(0)
    if zone != "Z":
        digits = zone[1:].replace(":", "")
        offset = timedelta(hours=int(digits[:2]), minutes=int(digits[2:] or 0))
        offset = -offset if zone[0] == "-" else offset
    moment = datetime(year, month, day, hour, minute, second, millis * 1000, tzinfo=timezone(offset))
    return (moment - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(milliseconds=1)


_DURATION = re.compile(r"([-+]?)P(?:([-+]?\d+)D)?(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?"
                       r"(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?", re.IGNORECASE)


def parse_duration_ms(text: str) -> int:
    """``PnDTnHnMnS`` (Java's ``Duration.parse``) -> milliseconds: ``P1DT2H`` -> 93600000."""
    match = _DURATION.fullmatch(text)
    if match is None or text.upper().endswith("T") or not any(match.groups()[1:5]):
        raise ValueError(f"Text cannot be parsed to a Duration: {text}")
    sign, days, hours, minutes, seconds, fraction = match.groups()
    total = timedelta(days=int(days or 0), hours=int(hours or 0), minutes=int(minutes or 0),
                      seconds=int(seconds or 0))
    if fraction:
        millis = int((fraction + "000")[:3])
        total += timedelta(milliseconds=-millis if (seconds or "").startswith("-") else millis)
    result = total // timedelta(milliseconds=1)
    return -result if sign == "-" else result


HANDLERS: dict[str, Callable[[GroupAdmin, argparse.Namespace, Output, Callable[[], int]], None]] = {
    "list": handle_list, "describe": handle_describe, "delete": handle_delete,
    "reset_offsets": handle_reset_offsets, "delete_offsets": handle_delete_offsets,
}


if __name__ == "__main__":  # pragma: no cover
    parser = argparse.ArgumentParser(prog="kafkalab consumer-groups")
    add_arguments(parser)
    sys.exit(run(parser.parse_args()))
