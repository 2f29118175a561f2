"""The admin requests the active controller decides: CreateTopics, DeleteTopics, CreatePartitions,
AlterConfigs, IncrementalAlterConfigs, ElectLeaders and the two reassignment APIs.

Theory of operation
-------------------
Mirrors Kafka's ``ControllerApis``. In KRaft a broker decides none of these: it forwards each to
the active controller inside an Envelope (:mod:`kafkalab.broker.forwarding`), the controller's
node unwraps it (:mod:`kafkalab.controller.controller_node`) and :meth:`ControllerApis.handle`
turns the request body into the response body. A lone node, its own controller, calls the same
method in process -- so every rule (topic names, replication factor against the registered
brokers, manual assignments, config keys and values, validate_only) exists once, here and in
:class:`~kafkalab.controller.local.LocalController`, whichever way the request arrived.

Each topic, config resource or partition succeeds or fails on its own, with Kafka's error
code and message; the decisions are metadata records (TopicRecord, PartitionRecord,
ConfigRecord, RemoveTopicRecord, PartitionChangeRecord) that every broker replays. Where the
configs live is the :class:`~kafkalab.controller.config_home.ConfigHome`'s business.

Worked example: in a cluster of brokers 1, 2 and 3, ``CreateTopics{orders, 3 partitions,
replication factor 3, configs {min.insync.replicas: 2}}`` answers ``orders: error 0, 3
partitions, replication factor 3`` and appends TopicRecord, three PartitionRecords and
``ConfigRecord(2, "orders", "min.insync.replicas", "2")`` as one batch; replication factor 4
answers INVALID_REPLICATION_FACTOR (38), "Unable to replicate the partition 4 time(s): The
target replication factor of 4 cannot be reached because only 3 broker(s) are registered.".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafkalab.config import DEFAULT_ENTITY
from kafkalab.config.definitions import TOPIC_KEYS
from kafkalab.config.resolve import describe_topic_config, topic_value, validate_broker_configs, validate_topic_configs
from kafkalab.controller.config_home import ConfigHome
from kafkalab.controller.local import LocalController, TopicError, validate_topic_name
from kafkalab.controller.partition_change import Election
from kafkalab.errors import ErrorCode, KafkaError
from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.messages.configs import (
    ALTER_CONFIGS_RESPONSE,
    INCREMENTAL_ALTER_CONFIGS_RESPONSE,
    OP_APPEND,
    OP_DELETE,
    OP_SET,
    OP_SUBTRACT,
    RESOURCE_BROKER,
    RESOURCE_TOPIC,
)
from kafkalab.protocol.messages.elect_leaders import ELECT_LEADERS_RESPONSE, PREFERRED, UNCLEAN
from kafkalab.protocol.messages.reassignments import (
    ALTER_PARTITION_REASSIGNMENTS_RESPONSE,
    LIST_PARTITION_REASSIGNMENTS_RESPONSE,
)
from kafkalab.protocol.messages.topics import (
    CREATE_PARTITIONS_RESPONSE,
    CREATE_TOPICS_RESPONSE,
    DELETE_TOPICS_RESPONSE,
)

# The admin APIs the controller decides (ControllerApis), and every API a KRaft broker forwards
# to the controller (ApiKeys.forwardable) that kafkalab serves: those and DescribeQuorum, which
# the quorum answers (kafkalab.controller.describe_quorum).
ADMIN_APIS = frozenset({
    ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.CREATE_PARTITIONS, ApiKey.ALTER_CONFIGS,
    ApiKey.INCREMENTAL_ALTER_CONFIGS, ApiKey.ELECT_LEADERS, ApiKey.ALTER_PARTITION_REASSIGNMENTS,
    ApiKey.LIST_PARTITION_REASSIGNMENTS,
})
FORWARDABLE = ADMIN_APIS | {ApiKey.DESCRIBE_QUORUM}
TOPIC_CONFIG_SOURCES = {  # kafkalab.config's sources -> Kafka's DescribeConfigs source ids
    "DYNAMIC_TOPIC_CONFIG": 1, "DYNAMIC_BROKER_CONFIG": 2, "DYNAMIC_DEFAULT_BROKER_CONFIG": 3,
    "STATIC_BROKER_CONFIG": 4, "DEFAULT_CONFIG": 5,
}
ELECTIONS = {PREFERRED: Election.PREFERRED, UNCLEAN: Election.UNCLEAN}  # ElectionType value -> rule
_CT = CREATE_TOPICS_RESPONSE.cls
_CTR = _CT.CreatableTopicResult


class ResourceError(KafkaError):
    """A config resource that does not exist or cannot be changed."""


@dataclass(frozen=True, slots=True)
class TopicDefaults:
    """What ``-1`` means in a CreateTopics (KIP-464): ``num.partitions`` and
    ``default.replication.factor`` of the controller."""

    num_partitions: int = 1
    replication_factor: int = 1


class ControllerApis:
    """The controller's admin request handlers. Not thread-safe; owned by the active
    controller's node, or by a lone broker. ``node`` names the broker whose per-broker configs
    resolve topic values (a lone broker), None for a cluster's controller."""

    def __init__(self, controller: LocalController, configs: ConfigHome, defaults: TopicDefaults,
                 node: str | None = None) -> None:
        self.controller = controller
        self.configs = configs
        self.defaults = defaults
        self.node = node
        self._handlers: dict[int, Callable[[Any], Any]] = {
            ApiKey.CREATE_TOPICS: self.create_topics,
            ApiKey.DELETE_TOPICS: self.delete_topics,
            ApiKey.CREATE_PARTITIONS: self.create_partitions,
            ApiKey.ALTER_CONFIGS: self.alter_configs,
            ApiKey.INCREMENTAL_ALTER_CONFIGS: self.incremental_alter_configs,
            ApiKey.ELECT_LEADERS: self.elect_leaders,
            ApiKey.ALTER_PARTITION_REASSIGNMENTS: self.alter_partition_reassignments,
            ApiKey.LIST_PARTITION_REASSIGNMENTS: self.list_partition_reassignments,
        }
        assert set(self._handlers) == ADMIN_APIS

    def handle(self, api_key: int, body: Any) -> Any:
        """The response body for one admin request's body (an API of :data:`ADMIN_APIS`)."""
        return self._handlers[api_key](body)

    # --- CreateTopics ------------------------------------------------------------------------

    def create_topics(self, body: Any) -> Any:
        return _CT(topics=tuple(self._create_one(topic, body.validate_only) for topic in body.topics))

    def _create_one(self, topic: Any, validate_only: bool) -> Any:
        configs = {c.name: c.value for c in topic.configs if c.value is not None}
        try:
            partitions, factor, assignment = self._shape(topic, configs)
            if validate_only:
                self.controller.create_topic(topic.name, partitions, factor, assignment=assignment,
                                             validate_only=True)
                return _CTR(name=topic.name, error_code=0, num_partitions=partitions, replication_factor=factor)
            created = self.configs.create_topic(self.controller, topic.name, partitions, factor, assignment, configs)
        except KafkaError as error:
            return _CTR(name=topic.name, error_code=error.error_code, error_message=str(error))
        return _CTR(name=topic.name, topic_id=created.topic_id, error_code=0, num_partitions=partitions,
                    replication_factor=factor, configs=self._created_configs(topic.name))

    def _shape(self, topic: Any, configs: dict[str, str]) -> tuple[int, int, list[tuple[int, ...]] | None]:
        """(partitions, replication factor, manual assignment or None), checked in the order
        of Kafka's ``ReplicationControlManager.createTopics``: the name, whether the topic
        exists, its configs, then the partitions and their replicas."""
        validate_topic_name(topic.name)
        if topic.name in self.controller.image.topics:
            raise TopicError(f"Topic '{topic.name}' already exists.", error_code=ErrorCode.TOPIC_ALREADY_EXISTS)
        validate_topic_configs(configs)
        if topic.assignments:
            for field, value in (("replication factor", topic.replication_factor),
                                 ("numPartitions", topic.num_partitions)):
                if value != -1:
                    raise TopicError(f"A manual partition assignment was specified, but {field} was not set to -1.",
                                     error_code=ErrorCode.INVALID_REQUEST)
            by_index = {a.partition_index: tuple(a.broker_ids) for a in topic.assignments}
            if len(by_index) != len(topic.assignments):
                raise TopicError("Found multiple manual partition assignments for a partition.",
                                 error_code=ErrorCode.INVALID_REPLICA_ASSIGNMENT)
            if sorted(by_index) != list(range(len(by_index))):
                raise TopicError("partitions should be a consecutive 0-based integer sequence",
                                 error_code=ErrorCode.INVALID_REPLICA_ASSIGNMENT)
            assignment = [by_index[i] for i in range(len(by_index))]
            return len(assignment), len(assignment[0]), assignment
        if topic.replication_factor < -1 or topic.replication_factor == 0:
            raise TopicError("Replication factor must be larger than 0, or -1 to use the default value.",
                             error_code=ErrorCode.INVALID_REPLICATION_FACTOR)
        if topic.num_partitions < -1 or topic.num_partitions == 0:
            raise TopicError("Number of partitions was set to an invalid non-positive value.",
                             error_code=ErrorCode.INVALID_PARTITIONS)
        partitions = self.defaults.num_partitions if topic.num_partitions == -1 else topic.num_partitions
        factor = self.defaults.replication_factor if topic.replication_factor == -1 else topic.replication_factor
        return partitions, factor, None

    def _created_configs(self, topic: str) -> tuple[Any, ...]:
        layers = self.configs.layers()
        entries = (describe_topic_config(layers, topic, name, self.node) for name in sorted(TOPIC_KEYS))
        return tuple(
            _CTR.CreatableTopicConfigs(
                name=e.name, value=None if e.sensitive else e.value, read_only=e.read_only,
                config_source=TOPIC_CONFIG_SOURCES[e.source.value], is_sensitive=e.sensitive)
            for e in entries)

    # --- DeleteTopics, CreatePartitions --------------------------------------------------------

    def delete_topics(self, body: Any) -> Any:
        R = DELETE_TOPICS_RESPONSE.cls
        results = []
        for name in body.topic_names:
            try:
                self.controller.delete_topic(name)
            except KafkaError as error:
                results.append(R.DeletableTopicResult(name=name, error_code=error.error_code, error_message=str(error)))
                continue
            self.configs.topic_deleted(name)
            results.append(R.DeletableTopicResult(name=name, error_code=0))
        return R(responses=tuple(results))

    def create_partitions(self, body: Any) -> Any:
        R = CREATE_PARTITIONS_RESPONSE.cls
        results = []
        for topic in body.topics:
            assignment = None if topic.assignments is None else [tuple(a.broker_ids) for a in topic.assignments]
            try:
                self.controller.create_partitions(topic.name, topic.count, assignment,
                                                  validate_only=body.validate_only)
            except KafkaError as error:
                results.append(R.CreatePartitionsTopicResult(topic.name, error.error_code, str(error)))
                continue
            results.append(R.CreatePartitionsTopicResult(topic.name, 0, None))
        return R(results=tuple(results))

    # --- AlterConfigs, IncrementalAlterConfigs -------------------------------------------------

    def alter_configs(self, body: Any) -> Any:
        def change(current: dict[str, str], resource: Any) -> dict[str, str]:
            return {c.name: c.value for c in resource.configs if c.value is not None}

        return self._alter_all(body, change, ALTER_CONFIGS_RESPONSE.cls)

    def incremental_alter_configs(self, body: Any) -> Any:
        def change(current: dict[str, str], resource: Any) -> dict[str, str]:
            updated = dict(current)
            for config in resource.configs:
                apply_operation(updated, config)
            return updated

        return self._alter_all(body, change, INCREMENTAL_ALTER_CONFIGS_RESPONSE.cls)

    def _alter_all(self, body: Any, change: Callable[[dict[str, str], Any], dict[str, str]], response_cls: Any) -> Any:
        R = response_cls.AlterConfigsResourceResponse
        results = []
        for resource in body.resources:
            try:
                self._alter_one(resource, change, body.validate_only)
            except KafkaError as error:
                results.append(R(error.error_code, str(error), resource.resource_type, resource.resource_name))
                continue
            results.append(R(0, None, resource.resource_type, resource.resource_name))
        return response_cls(responses=tuple(results))

    def _alter_one(self, resource: Any, change: Callable[[dict[str, str], Any], dict[str, str]],
                   validate_only: bool) -> None:
        entity_type, name = self.entity(resource.resource_type, resource.resource_name)
        current = self.configs.get(entity_type, name)
        wanted = change(current, resource)
        if entity_type == "topics":
            validate_topic_configs(wanted)
        else:
            validate_broker_configs(wanted, dynamic=True, per_broker=name != DEFAULT_ENTITY)
        if validate_only:
            return
        add = {k: v for k, v in wanted.items() if current.get(k) != v}
        delete = [k for k in current if k not in wanted]
        if add or delete:
            self.configs.alter(entity_type, name, add=add, delete=delete)

    def entity(self, resource_type: int, name: str) -> tuple[str, str]:
        """(store entity type, entity name) of a config resource, or ResourceError."""
        if resource_type == RESOURCE_TOPIC:
            if name not in self.controller.image.topics:
                raise ResourceError(f"Topic {name} does not exist", error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            return "topics", name
        if resource_type == RESOURCE_BROKER:
            if name == "":
                return "brokers", DEFAULT_ENTITY
            if not name.isdigit() or int(name) not in self.controller.image.brokers:
                raise ResourceError(f"broker {name!r} is not a registered broker "
                                    f"({sorted(self.controller.image.brokers)})", error_code=ErrorCode.INVALID_REQUEST)
            return "brokers", name
        raise ResourceError(f"config resource type {resource_type} is not supported", error_code=ErrorCode.INVALID_REQUEST)

    # --- ElectLeaders, reassignments -----------------------------------------------------------

    def elect_leaders(self, body: Any) -> Any:
        """Version 0 knows only preferred elections. An unknown election type fails the whole
        request with INVALID_REQUEST, as Kafka's controller does."""
        R = ELECT_LEADERS_RESPONSE.cls
        election = ELECTIONS.get(body.election_type)
        if election is None:
            return R(error_code=ErrorCode.INVALID_REQUEST)
        wanted = None if body.topic_partitions is None else [
            (t.topic, p) for t in body.topic_partitions for p in t.partitions]
        # Every topic asked for (or, for all partitions, every topic) is answered, even if empty.
        names = sorted(self.controller.image.topics) if wanted is None else [t.topic for t in body.topic_partitions]
        by_topic: dict[str, list[Any]] = {name: [] for name in names}
        for topic, partition, error, message in self.controller.elect_leaders(election, wanted):
            by_topic.setdefault(topic, []).append(R.ReplicaElectionResult.PartitionResult(
                partition_id=partition, error_code=error, error_message=message))
        return R(replica_election_results=tuple(
            R.ReplicaElectionResult(topic=topic, partition_result=tuple(results))
            for topic, results in by_topic.items()))

    def alter_partition_reassignments(self, body: Any) -> Any:
        """Whether a cancelled reassignment may need an unclean election is the topic's
        ``unclean.leader.election.enable``."""
        R = ALTER_PARTITION_REASSIGNMENTS_RESPONSE.cls

        def unclean(name: str) -> bool:
            return bool(topic_value(self.configs.layers(), name, "unclean.leader.election.enable", self.node))
        targets = [(t.name, p.partition_index, p.replicas) for t in body.topics for p in t.partitions]
        outcome = {(t, i): (error, message) for t, i, error, message in self.controller.alter_partition_reassignments(
            targets, unclean, allow_replication_factor_change=body.allow_replication_factor_change)}
        P = R.ReassignableTopicResponse.ReassignablePartitionResponse
        return R(responses=tuple(
            R.ReassignableTopicResponse(name=topic.name, partitions=tuple(
                P(partition_index=p.partition_index, error_code=outcome[(topic.name, p.partition_index)][0],
                  error_message=outcome[(topic.name, p.partition_index)][1])
                for p in topic.partitions))
            for topic in body.topics))

    def list_partition_reassignments(self, body: Any) -> Any:
        R = LIST_PARTITION_REASSIGNMENTS_RESPONSE.cls
        wanted = None if body.topics is None else [(t.name, t.partition_indexes) for t in body.topics]
        by_topic: dict[str, list[Any]] = {}
        for name, index, registration in self.controller.list_partition_reassignments(wanted):
            by_topic.setdefault(name, []).append(R.OngoingTopicReassignment.OngoingPartitionReassignment(
                partition_index=index, replicas=registration.replicas, adding_replicas=registration.adding_replicas,
                removing_replicas=registration.removing_replicas))
        return R(topics=tuple(R.OngoingTopicReassignment(name=name, partitions=tuple(partitions))
                              for name, partitions in by_topic.items()))


def apply_operation(updated: dict[str, str], config: Any) -> None:
    """One IncrementalAlterConfigs operation on a resource's configs: SET, DELETE, APPEND or
    SUBTRACT (the last two on comma-separated lists)."""
    operation, name, value = config.config_operation, config.name, config.value
    if operation == OP_SET:
        if value is None:
            raise ResourceError(f"SET {name} needs a value", error_code=ErrorCode.INVALID_REQUEST)
        updated[name] = value
    elif operation == OP_DELETE:
        updated.pop(name, None)
    elif operation in (OP_APPEND, OP_SUBTRACT):
        items = [i for i in updated.get(name, "").split(",") if i]
        given = [i for i in (value or "").split(",") if i]
        if operation == OP_APPEND:
            items += [i for i in given if i not in items]
        else:
            items = [i for i in items if i not in given]
        updated[name] = ",".join(items)
    else:
        raise ResourceError(f"unknown config operation {operation} for {name}", error_code=ErrorCode.INVALID_REQUEST)


__all__ = ["ADMIN_APIS", "ControllerApis", "ELECTIONS", "FORWARDABLE", "ResourceError", "TOPIC_CONFIG_SOURCES", "TopicDefaults",
           "apply_operation"]
