"""Every config key kafkalab knows: type, default, valid values, a one-line doc.

Kafka defines its broker keys in ``KafkaConfig`` (spread over ``ServerLogConfigs``,
``ServerConfigs``, ``SocketServerConfigs``, ``ReplicationConfigs``, ``GroupCoordinatorConfig``,
``TransactionLogConfig``, ``CleanerConfig``) and its topic keys in ``TopicConfig``/``LogConfig``.
kafkalab keeps one table for each scope, with Kafka's current (4.x) defaults and ranges:

* ``BROKER_KEYS`` -- what ``server.properties`` and ``--entity-type brokers`` accept;
* ``TOPIC_KEYS`` -- what ``--entity-type topics`` and ``LogConfig.from_properties`` accept;
* ``TOPIC_TO_BROKER`` -- the one explicit map from a topic key to the broker keys that supply
  its default, in precedence order (``retention.ms`` <- ``log.retention.ms``,
  ``log.retention.minutes``, ``log.retention.hours``), each with the factor that converts the
  broker key's unit to the topic key's unit.

Worked example: a topic without overrides on a broker whose ``server.properties`` sets only
``log.retention.hours=24`` gets ``retention.ms = 24 * 3_600_000 = 86_400_000``; setting
``log.retention.minutes=30`` as well gives ``1_800_000`` because minutes outrank hours.

One deliberate difference from Kafka 4.x: ``segment.bytes`` / ``log.segment.bytes`` accept any
value from 14 bytes (Kafka's pre-4.0 floor, one legacy record) instead of 1 MiB, so learners can
roll segments after a handful of records.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from kafkalab.config.types import (
    DOUBLE_MAX,
    INT_MAX,
    LONG_MAX,
    ConfigType,
    ConfigValue,
    Range,
    ValidList,
    ValidString,
    Validator,
    format_value,
    parse_value,
)
from kafkalab.errors import ConfigError

I, L, S, D, B = ConfigType.INT, ConfigType.LONG, ConfigType.SHORT, ConfigType.DOUBLE, ConfigType.BOOLEAN
STR, LIST, CLASS, PASSWORD = ConfigType.STRING, ConfigType.LIST, ConfigType.CLASS, ConfigType.PASSWORD

MS_PER_MINUTE = 60_000
MS_PER_HOUR = 3_600_000
SEGMENT_BYTES_MIN = 14  # one legacy v0 record's overhead; Kafka's floor before 4.0 (see above)


class UpdateMode(enum.Enum):
    """How a broker key may change at runtime (Kafka's ``DynamicBrokerConfig`` modes)."""

    READ_ONLY = "read-only"  # only in server.properties; a restart applies it
    PER_BROKER = "per-broker"  # dynamic, for one broker id only
    CLUSTER_WIDE = "cluster-wide"  # dynamic, per broker or as the cluster default


@dataclass(frozen=True, slots=True)
class ConfigKey:
    """One key's definition. Immutable; shared by every resolver."""

    name: str
    type: ConfigType
    default: ConfigValue
    doc: str
    validator: Validator | None = None
    update_mode: UpdateMode = UpdateMode.READ_ONLY

    def __post_init__(self) -> None:
        assert self.doc and len(self.doc) < 200, self.name
        if self.default is not None and self.validator is not None:
            self.validator.check(self.name, self.default)

    @property
    def sensitive(self) -> bool:
        return self.type is ConfigType.PASSWORD

    def parse(self, raw: str) -> ConfigValue:
        """Text to a validated value; raises ``ConfigError`` naming the key, value and rule."""
        value = parse_value(self.name, self.type, raw)
        if self.validator is not None:
            self.validator.check(self.name, value)
        return value

    def default_text(self) -> str | None:
        return format_value(self.default)


def at_least(n: float) -> Range:
    return Range(min_value=n)


def between(low: float, high: float) -> Range:
    return Range(min_value=low, max_value=high)


RO, PB, CW = UpdateMode.READ_ONLY, UpdateMode.PER_BROKER, UpdateMode.CLUSTER_WIDE
CLEANUP_POLICIES = ValidList(("compact", "delete"))
TIMESTAMP_TYPES = ValidString(("CreateTime", "LogAppendTime"))
COMPRESSION_TYPES = ValidString(("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"))
GZIP_LEVEL = Range(min_value=-1, max_value=9)  # -1 means the codec's own default (Kafka: 1..9 or -1)
LZ4_LEVEL = between(1, 17)
ZSTD_LEVEL = between(-131072, 22)

_BROKER_ROWS: tuple[ConfigKey, ...] = (
    # --- identity, listeners, request path ---------------------------------------------------
    ConfigKey("broker.id", I, -1, "This broker's id in the cluster; -1 means use node.id.", at_least(-1)),
    ConfigKey("node.id", I, -1, "This node's id in a KRaft cluster (also the broker id).", at_least(-1)),
    ConfigKey("listeners", STR, "PLAINTEXT://:9092", "Addresses this broker binds and accepts connections on.", None, PB),
    ConfigKey("advertised.listeners", STR, None, "Addresses handed to clients in metadata; 0.0.0.0 is not advertisable.", None, PB),
    ConfigKey("listener.security.protocol.map", STR, "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL", "Security protocol of each named listener.", None, PB),
    # --- KRaft: roles, the controller quorum, the listeners between nodes (KRaftConfigs, QuorumConfig)
    ConfigKey("process.roles", LIST, [], "broker, controller, or both (combined mode); empty means not KRaft.", ValidList(("broker", "controller"), allow_empty=True)),
    ConfigKey("controller.listener.names", STR, None, "Listener names the controller uses; a broker connects to the first.", None),
    ConfigKey("inter.broker.listener.name", STR, None, "Listener brokers use to reach each other; default: the PLAINTEXT listener.", None),
    ConfigKey("controller.quorum.voters", LIST, [], "Static controller quorum, as id@host:port entries.", None),
    ConfigKey("controller.quorum.bootstrap.servers", LIST, [], "host:port of controllers to discover a dynamic quorum from (KIP-853).", None),
    ConfigKey("metadata.log.dir", STR, None, "Directory of __cluster_metadata-0; default: the first of log.dirs.", None),
    ConfigKey("socket.request.max.bytes", I, 104857600, "Largest request frame the broker accepts, in bytes.", at_least(1)),
    ConfigKey("socket.send.buffer.bytes", I, 102400, "SO_SNDBUF of the broker's sockets; -1 uses the OS default.", None),
    ConfigKey("socket.receive.buffer.bytes", I, 102400, "SO_RCVBUF of the broker's sockets; -1 uses the OS default.", None),
    ConfigKey("queued.max.requests", I, 500, "Requests the network threads may queue for the I/O threads before blocking.", at_least(1)),
    ConfigKey("num.network.threads", I, 3, "Threads that read requests from and write responses to sockets.", at_least(1), CW),
    ConfigKey("num.io.threads", I, 8, "Threads that handle requests, including disk I/O.", at_least(1), CW),
    ConfigKey("background.threads", I, 10, "Threads for background work such as deleting files.", at_least(1), CW),
    ConfigKey("message.max.bytes", I, 1048588, "Largest record batch the broker accepts (topic key: max.message.bytes).", at_least(0), CW),
    # --- topics and partitions ----------------------------------------------------------------
    ConfigKey("num.partitions", I, 1, "Partition count of an automatically created topic.", at_least(1)),
    ConfigKey("default.replication.factor", I, 1, "Replication factor of an automatically created topic.", at_least(1)),
    ConfigKey("auto.create.topics.enable", B, True, "Create a topic when a client asks for metadata of a missing one."),
    ConfigKey("delete.topic.enable", B, True, "Allow deleting topics through the admin API."),
    ConfigKey("min.insync.replicas", I, 1, "Fewest in-sync replicas for an acks=all write to succeed.", at_least(1), CW),
    ConfigKey("unclean.leader.election.enable", B, False, "Allow an out-of-sync replica to become leader, losing data.", None, CW),
    ConfigKey("compression.type", STR, "producer", "Codec for stored batches; producer keeps the producer's codec.", COMPRESSION_TYPES, CW),
    ConfigKey("compression.gzip.level", I, -1, "Gzip level when the broker recompresses.", GZIP_LEVEL, CW),
    ConfigKey("compression.lz4.level", I, 9, "LZ4 level when the broker recompresses.", LZ4_LEVEL, CW),
    ConfigKey("compression.zstd.level", I, 3, "Zstandard level when the broker recompresses.", ZSTD_LEVEL, CW),
    # --- log layout ---------------------------------------------------------------------------
    ConfigKey("log.dir", STR, "/tmp/kafka-logs", "The data directory, used when log.dirs is not set."),
    ConfigKey("log.dirs", LIST, None, "Data directories, comma separated; partitions are spread over them."),
    ConfigKey("num.recovery.threads.per.data.dir", I, 2, "Threads per data directory for recovery at start and flush at stop.", at_least(1), CW),
    ConfigKey("log.segment.bytes", I, 1073741824, "Roll a new segment when the active one reaches this size.", at_least(SEGMENT_BYTES_MIN), CW),
    ConfigKey("log.roll.ms", L, None, "Roll a segment this long after its first record; outranks log.roll.hours.", at_least(1), CW),
    ConfigKey("log.roll.hours", I, 168, "Roll a segment this many hours after its first record.", at_least(1)),
    ConfigKey("log.roll.jitter.ms", L, None, "Random slack subtracted from the roll time; outranks log.roll.jitter.hours.", at_least(0), CW),
    ConfigKey("log.roll.jitter.hours", I, 0, "Random slack, in hours, subtracted from the roll time.", at_least(0)),
    ConfigKey("log.index.size.max.bytes", I, 10485760, "Largest offset or time index; a full index rolls the segment.", at_least(4), CW),
    ConfigKey("log.index.interval.bytes", I, 4096, "Bytes of log between two offset index entries.", at_least(0), CW),
    ConfigKey("log.preallocate", B, False, "Preallocate the file when creating a segment.", None, CW),
    ConfigKey("log.message.timestamp.type", STR, "CreateTime", "Whether batches keep the producer's time or get the broker's append time.", TIMESTAMP_TYPES, CW),
    ConfigKey("log.message.timestamp.before.max.ms", L, LONG_MAX, "How far in the past a CreateTime timestamp may be.", at_least(0), CW),
    ConfigKey("log.message.timestamp.after.max.ms", L, 3600000, "How far in the future a CreateTime timestamp may be.", at_least(0), CW),
    # --- flushing -----------------------------------------------------------------------------
    ConfigKey("log.flush.interval.messages", L, LONG_MAX, "Fsync after this many records; the default leaves it to the OS.", at_least(1), CW),
    ConfigKey("log.flush.interval.ms", L, None, "Fsync a log when its data is this old; outranks the scheduler interval.", None, CW),
    ConfigKey("log.flush.scheduler.interval.ms", L, LONG_MAX, "How often the flusher checks whether a log needs an fsync."),
    ConfigKey("log.flush.offset.checkpoint.interval.ms", I, 60000, "How often the recovery-point checkpoint is written.", at_least(0)),
    ConfigKey("log.flush.start.offset.checkpoint.interval.ms", I, 60000, "How often the log-start-offset checkpoint is written.", at_least(0)),
    # --- retention ----------------------------------------------------------------------------
    ConfigKey("log.retention.ms", L, None, "Delete segments older than this; -1 keeps them forever. Outranks minutes and hours.", None, CW),
    ConfigKey("log.retention.minutes", I, None, "Retention in minutes; outranks log.retention.hours."),
    ConfigKey("log.retention.hours", I, 168, "Retention in hours, used when neither ms nor minutes is set."),
    ConfigKey("log.retention.bytes", L, -1, "Delete the oldest segments while a partition's log is larger; -1 is unlimited.", None, CW),
    ConfigKey("log.retention.check.interval.ms", L, 300000, "How often the retention check runs.", at_least(1)),
    ConfigKey("log.segment.delete.delay.ms", L, 60000, "Wait this long before removing a .deleted file.", at_least(0), CW),
    ConfigKey("log.cleanup.policy", LIST, ["delete"], "What happens to old segments: delete, compact, or both.", CLEANUP_POLICIES, CW),
    # --- the log cleaner (compaction) ---------------------------------------------------------
    ConfigKey("log.cleaner.enable", B, True, "Run the log cleaner so that compacted topics are compacted."),
    ConfigKey("log.cleaner.threads", I, 1, "Cleaner threads (kafkalab cleans on explicit calls; kept for fidelity).", at_least(0), CW),
    ConfigKey("log.cleaner.dedupe.buffer.size", L, 134217728, "Memory for the offset map of keys, over all cleaner threads.", None, CW),
    ConfigKey("log.cleaner.io.buffer.size", I, 524288, "I/O buffer memory for reading and writing during a clean.", at_least(0), CW),
    ConfigKey("log.cleaner.io.buffer.load.factor", D, 0.9, "How full the offset map may get before a clean stops adding segments.", None, CW),
    ConfigKey("log.cleaner.io.max.bytes.per.second", D, DOUBLE_MAX, "Throttle on the cleaner's reads plus writes.", None, CW),
    ConfigKey("log.cleaner.backoff.ms", L, 15000, "Sleep when there is no log to clean.", at_least(0), CW),
    ConfigKey("log.cleaner.min.cleanable.ratio", D, 0.5, "Clean a log when dirty bytes / total bytes reach this ratio.", between(0, 1), CW),
    ConfigKey("log.cleaner.delete.retention.ms", L, 86400000, "Keep tombstones this long after their segment was cleaned.", at_least(0), CW),
    ConfigKey("log.cleaner.min.compaction.lag.ms", L, 0, "Never compact a record younger than this.", at_least(0), CW),
    ConfigKey("log.cleaner.max.compaction.lag.ms", L, LONG_MAX, "Make a record eligible for compaction once it is this old.", at_least(1), CW),
    # --- replication --------------------------------------------------------------------------
    ConfigKey("replica.lag.time.max.ms", L, 30000, "A follower that has not caught up for this long leaves the ISR.", None),
    ConfigKey("replica.fetch.max.bytes", I, 1048576, "Bytes a follower asks for per partition per fetch.", at_least(0)),
    ConfigKey("replica.fetch.wait.max.ms", I, 500, "Longest a follower's fetch waits at the leader for data.", None),
    ConfigKey("replica.socket.timeout.ms", I, 30000, "Socket timeout of the followers' fetch requests.", None),
    ConfigKey("replica.high.watermark.checkpoint.interval.ms", L, 5000, "How often the high watermarks are written to disk.", None),
    ConfigKey("num.replica.fetchers", I, 1, "Fetcher threads per source broker.", at_least(1), CW),
    ConfigKey("broker.rack", STR, None, "The rack (or availability zone) of this broker, for placement and KIP-392."),
    ConfigKey("replica.selector.class", CLASS, None, "Picks a consumer's preferred read replica (KIP-392); unset, consumers read leaders."),
    ConfigKey("max.incremental.fetch.session.cache.slots", I, 1000, "Incremental fetch sessions (KIP-227) the broker keeps.", at_least(0)),
    ConfigKey("auto.leader.rebalance.enable", B, True, "Move leadership back to the preferred replica in the background."),
    ConfigKey("leader.imbalance.check.interval.seconds", L, 300, "How often the controller checks leader balance.", at_least(1)),
    ConfigKey("leader.imbalance.per.broker.percentage", I, 10, "Leader imbalance per broker that triggers a rebalance.", at_least(0)),
    ConfigKey("leader.replication.throttled.rate", L, LONG_MAX, "Replication bytes/s a leader may send to throttled replicas.", at_least(0), CW),
    ConfigKey("follower.replication.throttled.rate", L, LONG_MAX, "Replication bytes/s a follower may fetch for throttled replicas.", at_least(0), CW),
    ConfigKey("replica.alter.log.dirs.io.max.bytes.per.second", L, LONG_MAX, "Bytes/s for moving replicas between log directories.", at_least(0), CW),
    ConfigKey("broker.session.timeout.ms", I, 9000, "The controller fences a broker it has not heard a heartbeat from for this long.", at_least(1)),
    ConfigKey("broker.heartbeat.interval.ms", I, 2000, "How often a broker heartbeats to the active controller.", at_least(1)),
    ConfigKey("metadata.log.max.record.bytes.between.snapshots", L, 20971520, "Metadata log bytes appended before the controller writes a new snapshot.", at_least(1)),
    # --- consumer groups and __consumer_offsets -----------------------------------------------
    ConfigKey("offsets.topic.num.partitions", I, 50, "Partitions of __consumer_offsets; do not change after it exists.", at_least(1)),
    ConfigKey("offsets.topic.replication.factor", S, 3, "Replication factor of __consumer_offsets.", at_least(1)),
    ConfigKey("offsets.topic.segment.bytes", I, 104857600, "Segment size of __consumer_offsets.", at_least(1)),
    ConfigKey("offsets.topic.compression.codec", I, 0, "Codec id for batches written to __consumer_offsets.", None),
    ConfigKey("offsets.load.buffer.size", I, 5242880, "Read size when loading offsets into the coordinator's cache.", at_least(1)),
    ConfigKey("offsets.retention.minutes", I, 10080, "Keep a committed offset this long after its group becomes empty.", at_least(1)),
    ConfigKey("offsets.retention.check.interval.ms", L, 600000, "How often stale offsets are looked for.", at_least(1)),
    ConfigKey("offset.metadata.max.bytes", I, 4096, "Largest metadata string an offset commit may carry.", at_least(0)),
    ConfigKey("offsets.commit.timeout.ms", I, 5000, "Wait this long for an offset commit to replicate.", at_least(1)),
    ConfigKey("group.initial.rebalance.delay.ms", I, 3000, "Wait for more members before the first rebalance of a new group.", None),
    ConfigKey("group.min.session.timeout.ms", I, 6000, "Smallest session timeout a classic group member may ask for.", None),
    ConfigKey("group.max.session.timeout.ms", I, 1800000, "Largest session timeout a classic group member may ask for.", None),
    ConfigKey("group.max.size", I, INT_MAX, "Most members a classic group may have.", at_least(1)),
    ConfigKey("group.coordinator.rebalance.protocols", LIST, ["classic", "consumer"], "Group protocols the coordinator serves.", ValidList(("classic", "consumer", "share", "streams"))),
    ConfigKey("group.consumer.session.timeout.ms", I, 45000, "Session timeout of consumer-protocol group members.", at_least(1)),
    ConfigKey("group.consumer.heartbeat.interval.ms", I, 5000, "Heartbeat interval of consumer-protocol group members.", at_least(1)),
    ConfigKey("group.consumer.assignors", LIST, ["uniform", "range"], "Server-side assignors of consumer-protocol groups; the first is the default.", None),
    ConfigKey("group.consumer.max.size", I, INT_MAX, "Most members a consumer-protocol group may have.", at_least(1)),
    ConfigKey("group.consumer.migration.policy", STR, "bidirectional", "Online conversion between classic and consumer groups: disabled, upgrade, downgrade or bidirectional.", ValidString(("disabled", "upgrade", "downgrade", "bidirectional"))),
    # --- transactions and __transaction_state -------------------------------------------------
    ConfigKey("transaction.state.log.num.partitions", I, 50, "Partitions of __transaction_state.", at_least(1)),
    ConfigKey("transaction.state.log.replication.factor", S, 3, "Replication factor of __transaction_state.", at_least(1)),
    ConfigKey("transaction.state.log.segment.bytes", I, 104857600, "Segment size of __transaction_state.", at_least(1)),
    ConfigKey("transaction.state.log.min.isr", I, 2, "min.insync.replicas of __transaction_state.", at_least(1)),
    ConfigKey("transaction.state.log.load.buffer.size", I, 5242880, "Read size when loading transaction state.", at_least(1)),
    ConfigKey("transaction.max.timeout.ms", I, 900000, "Largest transaction timeout a producer may ask for.", at_least(1)),
    ConfigKey("transactional.id.expiration.ms", I, 604800000, "Forget a transactional id idle for this long.", at_least(1)),
    ConfigKey("transaction.partition.verification.enable", B, True,
              "Ask the coordinator before a transaction's first batch in a partition (KIP-890).", None, CW),
    ConfigKey("transactions.remove.expired.transaction.cleanup.interval.ms", I, 3600000,
              "How often the transaction coordinator looks for expired transactional ids.", at_least(1)),
    ConfigKey("producer.id.expiration.ms", I, 86400000, "Forget an idempotent producer idle for this long.", at_least(1), CW),
    ConfigKey("producer.id.expiration.check.interval.ms", I, 600000, "How often partition leaders look for producer ids past producer.id.expiration.ms.", at_least(1)),
    # --- authentication (for the password type) -----------------------------------------------
    ConfigKey("ssl.keystore.password", PASSWORD, None, "Password of the listener's keystore.", None, PB),
    ConfigKey("principal.builder.class", CLASS, "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder", "Class that builds a principal from a session.", None),
)

_TOPIC_ROWS: tuple[ConfigKey, ...] = (
    ConfigKey("cleanup.policy", LIST, ["delete"], "delete, compact, or both for this topic's old segments.", CLEANUP_POLICIES),
    ConfigKey("segment.bytes", I, 1073741824, "Roll a new segment when the active one reaches this size.", at_least(SEGMENT_BYTES_MIN)),
    ConfigKey("segment.ms", L, 604800000, "Roll a segment this long after its first record.", at_least(1)),
    ConfigKey("segment.jitter.ms", L, 0, "Random slack subtracted from segment.ms.", at_least(0)),
    ConfigKey("segment.index.bytes", I, 10485760, "Largest offset or time index of a segment.", at_least(4)),
    ConfigKey("index.interval.bytes", I, 4096, "Bytes of log between two offset index entries.", at_least(0)),
    ConfigKey("flush.messages", L, LONG_MAX, "Fsync after this many records.", at_least(1)),
    ConfigKey("flush.ms", L, LONG_MAX, "Fsync when data is this old.", at_least(0)),
    ConfigKey("retention.ms", L, 604800000, "Delete segments whose newest record is older than this; -1 keeps them.", at_least(-1)),
    ConfigKey("retention.bytes", L, -1, "Delete oldest segments while the partition is larger; -1 is unlimited.", None),
    ConfigKey("delete.retention.ms", L, 86400000, "Keep tombstones this long after cleaning reached them.", at_least(0)),
    ConfigKey("min.compaction.lag.ms", L, 0, "Never compact a record younger than this.", at_least(0)),
    ConfigKey("max.compaction.lag.ms", L, LONG_MAX, "Compact a record at the latest once it is this old.", at_least(1)),
    ConfigKey("min.cleanable.dirty.ratio", D, 0.5, "Clean when dirty bytes / total bytes reach this.", between(0, 1)),
    ConfigKey("file.delete.delay.ms", L, 60000, "Wait this long before removing a .deleted segment.", at_least(0)),
    ConfigKey("max.message.bytes", I, 1048588, "Largest record batch this topic accepts.", at_least(0)),
    ConfigKey("min.insync.replicas", I, 1, "Fewest in-sync replicas for an acks=all write.", at_least(1)),
    ConfigKey("unclean.leader.election.enable", B, False, "Allow an out-of-sync replica to lead, losing data."),
    ConfigKey("compression.type", STR, "producer", "Codec for stored batches; producer keeps the producer's.", COMPRESSION_TYPES),
    ConfigKey("compression.gzip.level", I, -1, "Gzip level when recompressing.", GZIP_LEVEL),
    ConfigKey("compression.lz4.level", I, 9, "LZ4 level when recompressing.", LZ4_LEVEL),
    ConfigKey("compression.zstd.level", I, 3, "Zstandard level when recompressing.", ZSTD_LEVEL),
    ConfigKey("preallocate", B, False, "Preallocate the file of a new segment."),
    ConfigKey("message.timestamp.type", STR, "CreateTime", "CreateTime keeps the producer's time; LogAppendTime stamps the broker's.", TIMESTAMP_TYPES),
    ConfigKey("message.timestamp.before.max.ms", L, LONG_MAX, "How far in the past a CreateTime timestamp may be.", at_least(0)),
    ConfigKey("message.timestamp.after.max.ms", L, 3600000, "How far in the future a CreateTime timestamp may be.", at_least(0)),
    ConfigKey("leader.replication.throttled.replicas", LIST, [], "partition:broker pairs (or *) whose leader side is throttled.", None),
    ConfigKey("follower.replication.throttled.replicas", LIST, [], "partition:broker pairs (or *) whose follower side is throttled.", None),
)

BROKER_KEYS: dict[str, ConfigKey] = {key.name: key for key in _BROKER_ROWS}
TOPIC_KEYS: dict[str, ConfigKey] = {key.name: key for key in _TOPIC_ROWS}


@dataclass(frozen=True, slots=True)
class Synonym:
    """A broker key that supplies a topic key's default, and the factor to the topic's unit."""

    broker_key: str
    to_topic_factor: int = 1


# The one table between the two scopes: topic key -> broker synonyms, highest precedence first.
# Mirrors Kafka's LogConfig.TopicConfigSynonyms plus KafkaConfig's ms > minutes > hours rule.
TOPIC_TO_BROKER: dict[str, tuple[Synonym, ...]] = {
    "cleanup.policy": (Synonym("log.cleanup.policy"),),
    "segment.bytes": (Synonym("log.segment.bytes"),),
    "segment.ms": (Synonym("log.roll.ms"), Synonym("log.roll.hours", MS_PER_HOUR)),
    "segment.jitter.ms": (Synonym("log.roll.jitter.ms"), Synonym("log.roll.jitter.hours", MS_PER_HOUR)),
    "segment.index.bytes": (Synonym("log.index.size.max.bytes"),),
    "index.interval.bytes": (Synonym("log.index.interval.bytes"),),
    "flush.messages": (Synonym("log.flush.interval.messages"),),
    "flush.ms": (Synonym("log.flush.interval.ms"), Synonym("log.flush.scheduler.interval.ms")),
    "retention.ms": (
        Synonym("log.retention.ms"),
        Synonym("log.retention.minutes", MS_PER_MINUTE),
        Synonym("log.retention.hours", MS_PER_HOUR),
    ),
    "retention.bytes": (Synonym("log.retention.bytes"),),
    "delete.retention.ms": (Synonym("log.cleaner.delete.retention.ms"),),
    "min.compaction.lag.ms": (Synonym("log.cleaner.min.compaction.lag.ms"),),
    "max.compaction.lag.ms": (Synonym("log.cleaner.max.compaction.lag.ms"),),
    "min.cleanable.dirty.ratio": (Synonym("log.cleaner.min.cleanable.ratio"),),
    "file.delete.delay.ms": (Synonym("log.segment.delete.delay.ms"),),
    "max.message.bytes": (Synonym("message.max.bytes"),),
    "min.insync.replicas": (Synonym("min.insync.replicas"),),
    "unclean.leader.election.enable": (Synonym("unclean.leader.election.enable"),),
    "compression.type": (Synonym("compression.type"),),
    "compression.gzip.level": (Synonym("compression.gzip.level"),),
    "compression.lz4.level": (Synonym("compression.lz4.level"),),
    "compression.zstd.level": (Synonym("compression.zstd.level"),),
    "preallocate": (Synonym("log.preallocate"),),
    "message.timestamp.type": (Synonym("log.message.timestamp.type"),),
    "message.timestamp.before.max.ms": (Synonym("log.message.timestamp.before.max.ms"),),
    "message.timestamp.after.max.ms": (Synonym("log.message.timestamp.after.max.ms"),),
    "leader.replication.throttled.replicas": (),  # topic-only, as in Kafka's QuotaConfig
    "follower.replication.throttled.replicas": (),
}

# Broker keys that stand for the same setting, highest precedence first (Kafka's
# DynamicBrokerConfig.brokerConfigSynonyms). The first one with a value wins.
BROKER_SYNONYMS: dict[str, tuple[str, ...]] = {}
for _synonyms in TOPIC_TO_BROKER.values():
    _names = tuple(s.broker_key for s in _synonyms)
    for _name in _names:
        BROKER_SYNONYMS[_name] = _names

# Quota keys for --entity-type users / clients (Kafka's QuotaConfig).
QUOTA_KEYS: dict[str, ConfigKey] = {
    key.name: key
    for key in (
        ConfigKey("producer_byte_rate", L, None, "Bytes per second a user or client may produce.", at_least(1)),
        ConfigKey("consumer_byte_rate", L, None, "Bytes per second a user or client may fetch.", at_least(1)),
        ConfigKey("request_percentage", D, None, "Share of one request-handler thread, in percent.", at_least(1)),
        ConfigKey("controller_mutation_rate", D, None, "Partition mutations per second (create, delete).", at_least(0)),
    )
}


def _check_tables() -> None:
    for topic_key, synonyms in TOPIC_TO_BROKER.items():
        assert topic_key in TOPIC_KEYS, topic_key
        for synonym in synonyms:
            assert synonym.broker_key in BROKER_KEYS, synonym.broker_key
    assert set(TOPIC_KEYS) == set(TOPIC_TO_BROKER), set(TOPIC_KEYS) ^ set(TOPIC_TO_BROKER)


_check_tables()


def topic_default(name: str) -> Any:
    """Kafka's default for the topic key ``name``. Every component that needs a Kafka default
    (``LogConfig``, the delayed file deletion) reads it here, so the tables above are the only
    place a default is written down."""
    return TOPIC_KEYS[name].default


def broker_default(name: str) -> Any:
    """Kafka's default for the broker key ``name`` (``BrokerSettings``, the periodic tasks'
    intervals)."""
    return BROKER_KEYS[name].default


def suggest(name: str, known: dict[str, ConfigKey]) -> str:
    """`` Did you mean 'x'?`` for a misspelt key, or an empty string."""
    import difflib

    close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.6)
    if not close:
        return ""
    return " Did you mean " + " or ".join(repr(c) for c in close) + "?"


def lookup(name: str, known: dict[str, ConfigKey], scope: str) -> ConfigKey:
    """The definition of ``name`` in ``known``; an unknown key raises ``ConfigError``."""
    key = known.get(name)
    if key is None:
        raise ConfigError(f"Unknown {scope} config {name!r}.{suggest(name, known)}")
    return key
