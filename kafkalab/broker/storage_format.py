"""Formatting a KRaft node's directories, and checking them when the node starts.

Theory of operation
-------------------
A KRaft node does not invent its identity: ``kafka-storage.sh format -t <cluster id> -c
server.properties`` writes it into every directory first (Kafka's ``Formatter``), and start-up
checks it (Kafka's ``KafkaRaftServer.initializeLogDirs``). :func:`format_storage` and
:func:`initialize_log_dirs` are those two halves, over :mod:`kafkalab.storage.meta_properties`:

* format: every directory of ``log.dirs`` plus ``metadata.log.dir`` gets a ``meta.properties``
  (version 1, node.id, cluster.id, a fresh directory.id) and a ``bootstrap.checkpoint`` -- the
  first metadata records the controller replays, here one ``FeatureLevelRecord`` for
  ``metadata.version``, framed as a snapshot (header, records, footer). A directory already
  formatted stops the command unless ``--ignore-formatted``; one formatted for another cluster
  or node stops it always.
* info (:func:`storage_info`): what ``kafka-storage.sh info`` prints -- the directories, the
  metadata they hold, and what is wrong with them;
* start: a directory without ``meta.properties`` stops the node ("have you run ... format?"),
  as do files that disagree with each other or with ``node.id``; ``__cluster_metadata-0``
  outside the metadata directory is refused too.

Worked example: ``format -t MkU3OEVBNTcwNTJENDM2Qk`` with ``node.id=1`` and
``log.dirs=/tmp/a,/tmp/b`` prints::

    Formatting metadata directory /tmp/a with metadata.version 3.6-IV2.
    Formatting data directory /tmp/b with metadata.version 3.6-IV2.

and a second run fails with "Log directory /tmp/a is already formatted. Use --ignore-formatted
to ignore this directory and format the others."

With ``--standalone`` or ``--initial-controllers`` (a dynamic quorum, KIP-853, found through
``controller.quorum.bootstrap.servers``) the metadata directory of an initial controller also gets
the bootstrap snapshot naming the first voters (:mod:`kafkalab.metadata.dynamic_voters`) and,
as a voter's, the directory id the voter set records for it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from kafkalab.config.kraft import KRaftConfig
from kafkalab.errors import StorageError
from kafkalab.metadata.dynamic_voters import (
    BOOTSTRAP_SNAPSHOT_NAME, DynamicVoter, parse_dynamic_voters, voters_snapshot_bytes,
)
from kafkalab.metadata.image import MetadataImage
from kafkalab.metadata.records import METADATA_VERSION, METADATA_VERSION_FEATURE, METADATA_VERSION_LEVEL
from kafkalab.metadata.snapshot import snapshot_bytes
from kafkalab.storage import meta_properties
from kafkalab.storage.checkpoints import write_atomically
from kafkalab.storage.meta_properties import MetaProperties

BOOTSTRAP_FILE_NAME = "bootstrap.checkpoint"  # BootstrapDirectory.BINARY_BOOTSTRAP_FILENAME
METADATA_PARTITION_DIR = "__cluster_metadata-0"
DATA_DIRECTORY, VOTER_DIRECTORY = "data directory", "dynamic metadata voter directory"
STORAGE_TOOL = "kafkalab storage"  # named in messages where Kafka names kafka-storage.sh


class FormatterError(StorageError):
    """A format that cannot proceed (Kafka's ``FormatterException`` / ``TerseFailure``)."""


@dataclass(frozen=True, slots=True)
class NodeIdentity:
    """What a started node learnt from its directories. Immutable."""

    cluster_id: str
    node_id: int
    directory_ids: dict[str, str]


@dataclass(frozen=True, slots=True)
class FormatOptions:
    """The ``format`` command's options beyond the config. Immutable."""

    cluster_id: str
    ignore_formatted: bool = False
    standalone: bool = False
    initial_controllers: str | None = None
    no_initial_controllers: bool = False


def bootstrap_bytes(now_ms: int) -> bytes:
    """``bootstrap.checkpoint``: the bootstrap metadata records, framed as a snapshot."""
    image = MetadataImage(features={METADATA_VERSION_FEATURE: METADATA_VERSION_LEVEL})
    return snapshot_bytes(image, 0, now_ms)


def format_storage(config: KRaftConfig, options: FormatOptions, rng: random.Random, now_ms: int) -> list[str]:
    """Format every directory of ``config``; returns the lines Kafka's tool prints."""
    _check_format_request(config, options)
    found = _read_all(config.directories)
    meta_properties.verify(found, options.cluster_id, config.node_id)
    if found and not options.ignore_formatted:
        raise FormatterError(f"Log directory {next(iter(found))} is already formatted. Use --ignore-formatted "
                             "to ignore this directory and format the others.")
    empty = [d for d in config.directories if d not in found]
    if not empty:
        return ["All of the log directories are already formatted."]
    voters = _initial_voters(config, options, rng)
    lines, taken = [], [m.directory_id for m in found.values() if m.directory_id]
    bootstrap = bootstrap_bytes(now_ms)
    for directory in empty:
        kind = _directory_kind(directory, config, voters)
        if kind == VOTER_DIRECTORY:
            assert voters is not None
            directory_id = voters[config.node_id].directory_id
        else:
            directory_id = meta_properties.random_directory_id(rng, taken)
        taken.append(directory_id)
        lines.append(f"Formatting {kind} {directory} with metadata.version {METADATA_VERSION}.")
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        write_atomically(path / BOOTSTRAP_FILE_NAME, bootstrap)
        if voters is not None and kind != DATA_DIRECTORY:
            (path / METADATA_PARTITION_DIR).mkdir(exist_ok=True)
            write_atomically(path / METADATA_PARTITION_DIR / BOOTSTRAP_SNAPSHOT_NAME,
                             voters_snapshot_bytes(voters, config.controller_listener_names[0], now_ms))
        meta = MetaProperties(meta_properties.VERSION_1, options.cluster_id, config.node_id, directory_id)
        meta_properties.write(path, meta, now_ms)
    return lines


def _directory_kind(directory: str, config: KRaftConfig, voters: dict[int, DynamicVoter] | None) -> str:
    """Kafka's ``Formatter.DirectoryType``, as its description."""
    if directory != config.metadata_log_dir:
        return DATA_DIRECTORY
    if voters is None:
        return "metadata directory"
    return VOTER_DIRECTORY if config.node_id in voters else "dynamic metadata directory"


def _initial_voters(config: KRaftConfig, options: FormatOptions, rng: random.Random) -> dict[int, DynamicVoter] | None:
    """The dynamic quorum's first voters, from --initial-controllers or --standalone."""
    if options.initial_controllers is not None:
        return parse_dynamic_voters(options.initial_controllers)
    if not options.standalone:
        return None
    if not config.advertised_controller_listeners:
        raise FormatterError("No controller listeners found.")
    listener = config.advertised_controller_listeners[0]
    directory_id = meta_properties.random_directory_id(rng)
    return {config.node_id: DynamicVoter(config.node_id, listener.host or "localhost", listener.port, directory_id)}


def _check_format_request(config: KRaftConfig, options: FormatOptions) -> None:
    if not config.process_roles:
        raise FormatterError("The kafka configuration file appears to be for a legacy cluster. "
                             "Formatting is only supported for clusters in KRaft mode.")
    if options.standalone and not config.is_controller:
        raise FormatterError("You can only use --standalone on a controller.")
    dynamic = options.standalone or options.initial_controllers is not None
    if config.is_controller and not config.voters and not options.no_initial_controllers and not dynamic:
        raise FormatterError("Because controller.quorum.voters is not set on this controller, you must specify "
                             "one of the following: --standalone, --initial-controllers, or --no-initial-controllers.")
    if config.node_id < 0:
        raise FormatterError("You must specify a valid non-negative node ID.")
    if not options.cluster_id:
        raise FormatterError("You must specify the cluster id.")
    MetaProperties(meta_properties.VERSION_1, options.cluster_id)  # a cluster id the file can hold


def _read_all(directories: tuple[str, ...]) -> dict[str, MetaProperties]:
    found = {}
    for directory in directories:
        meta = meta_properties.read(Path(directory))
        if meta is not None:
            found[directory] = meta
    return found


def initialize_log_dirs(config: KRaftConfig, rng: random.Random, now_ms: int) -> NodeIdentity:
    """Check the node's directories before it starts; give directories formatted before
    KIP-858 a directory id, as Kafka does. Raises ``StorageError`` with Kafka's message."""
    found = _read_all(config.directories)
    if not found:
        raise StorageError("No readable meta.properties files found.")
    meta_properties.verify(found, None, config.node_id)
    for directory in config.directories:
        if directory != config.metadata_log_dir and (Path(directory) / METADATA_PARTITION_DIR).exists():
            raise StorageError(f"Found unexpected metadata location in data directory "
                               f"`{Path(directory) / METADATA_PARTITION_DIR}` (the configured metadata "
                               f"directory is {config.metadata_log_dir}).")
    directory_ids: dict[str, str] = {}
    for directory in config.directories:
        meta = found.get(directory)
        if meta is None:
            raise StorageError(f"No `meta.properties` found in {directory} (have you run `{STORAGE_TOOL} "
                               "format` to format the directory?)")
        if meta.node_id is None:
            raise StorageError(f"Error: node ID not found in {directory}")
        if meta.cluster_id is None:
            raise StorageError(f"Error: cluster ID not found in {directory}")
        if meta.directory_id is None:
            taken = [m.directory_id for m in found.values() if m.directory_id] + list(directory_ids.values())
            meta = MetaProperties(meta_properties.VERSION_1, meta.cluster_id, meta.node_id, meta_properties.random_directory_id(rng, taken))
            meta_properties.write(Path(directory), meta, now_ms)
        assert meta.directory_id is not None
        directory_ids[directory] = meta.directory_id
    first = found[config.directories[0]]
    assert first.cluster_id is not None
    return NodeIdentity(first.cluster_id, config.node_id, directory_ids)


def storage_info(config: KRaftConfig) -> tuple[list[str], int]:
    """``storage info``: the directories, the metadata they hold and any problem, as Kafka's
    ``StorageTool.infoCommand`` prints them; the exit status is 1 when there is a problem."""
    problems: list[str] = []
    found: list[str] = []
    first: MetaProperties | None = None
    for directory in config.directories:
        path = Path(directory)
        if not path.is_dir():
            problems.append(f"{directory} {'is not a directory' if path.exists() else 'does not exist'}")
            continue
        found.append(directory)
        try:
            meta = meta_properties.read(path)
        except StorageError as error:
            problems.append(f"Error loading {path / meta_properties.FILE_NAME}: {error}")
            continue
        if meta is None:
            problems.append(f"{directory} is not formatted.")
        elif first is None:
            first = meta
        elif meta.cluster_id != first.cluster_id:
            problems.append("Mismatched cluster IDs between storage directories.")
        elif meta.node_id != first.node_id:
            problems.append("Mismatched node IDs between storage directories.")
    if first is not None and config.process_roles and first.version == meta_properties.VERSION_0:
        problems.append("The kafka configuration file appears to be for a cluster in KRaft mode, but the "
                        "directories are formatted for legacy mode.")
    elif first is not None and not config.process_roles and first.version == meta_properties.VERSION_1:
        problems.append("The kafka configuration file appears to be for a legacy cluster, but the "
                        "directories are formatted for a cluster in KRaft mode.")
    lines: list[str] = []
    if found:
        lines += ["Found log directory:" if len(found) == 1 else "Found log directories:"]
        lines += [f"  {d}" for d in found] + [""]
    if first is not None:  # a Java TreeMap's toString: sorted keys
        lines += ["Found metadata: {" + ", ".join(f"{k}={v}" for k, v in sorted(first.to_properties().items())) + "}", ""]
    if problems:
        lines += ["Found problem:" if len(problems) == 1 else "Found problems:"]
        lines += [f"  {p}" for p in problems] + [""]
    return lines, 1 if problems else 0


__all__ = ["FormatOptions", "FormatterError", "NodeIdentity", "bootstrap_bytes", "format_storage",
           "initialize_log_dirs", "storage_info"]
