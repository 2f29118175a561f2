"""ListGroups (16), DescribeGroups (15), DeleteGroups (42): looking at and removing groups.

ListGroups answers every group this coordinator holds, filtered by state from v4 (KIP-518) and
by type from v5 (KIP-848: "classic" or "consumer"). DescribeGroups answers, per group, its
state, protocol and members with their metadata and assignment bytes. DeleteGroups removes
groups without members (NON_EMPTY_GROUP otherwise) together with their committed offsets.

Worked example: a stable group ``g`` with one kafka-python consumer describes as
``group_state="Stable", protocol_type="consumer", protocol_data="range"`` and one member whose
``member_assignment`` is the ConsumerProtocol assignment the leader sent in SyncGroup.
"""

from __future__ import annotations

from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.schema import f, message

LIST_GROUPS_REQUEST = message(
    "ListGroupsRequest", api_key=ApiKey.LIST_GROUPS, valid="0-5", flexible="3+", fields=[
        f("states_filter", "[]string", "4+"),
        f("types_filter", "[]string", "5+"),
    ])

LIST_GROUPS_RESPONSE = message(
    "ListGroupsResponse", api_key=ApiKey.LIST_GROUPS, valid="0-5", flexible="3+", fields=[
        f("throttle_time_ms", "int32", "1+"),
        f("error_code", "int16"),
        f("groups", "[]ListedGroup", fields=[
            f("group_id", "string"),
            f("protocol_type", "string"),
            f("group_state", "string", "4+"),
            f("group_type", "string", "5+"),
        ]),
    ])

DESCRIBE_GROUPS_REQUEST = message(
    "DescribeGroupsRequest", api_key=ApiKey.DESCRIBE_GROUPS, valid="0-6", flexible="5+", fields=[
        f("groups", "[]string"),
        f("include_authorized_operations", "bool", "3+"),
    ])

DESCRIBE_GROUPS_RESPONSE = message(
    "DescribeGroupsResponse", api_key=ApiKey.DESCRIBE_GROUPS, valid="0-6", flexible="5+", fields=[
        f("throttle_time_ms", "int32", "1+"),
        f("groups", "[]DescribedGroup", fields=[
            f("error_code", "int16"),
            f("error_message", "string", "6+", nullable="6+"),
            f("group_id", "string"),
            f("group_state", "string"),
            f("protocol_type", "string"),
            f("protocol_data", "string"),
            f("members", "[]DescribedGroupMember", fields=[
                f("member_id", "string"),
                f("group_instance_id", "string", "4+", nullable="4+"),
                f("client_id", "string"),
                f("client_host", "string"),
                f("member_metadata", "bytes"),
                f("member_assignment", "bytes"),
            ]),
            f("authorized_operations", "int32", "3+", default=-2147483648),
        ]),
    ])

DELETE_GROUPS_REQUEST = message(
    "DeleteGroupsRequest", api_key=ApiKey.DELETE_GROUPS, valid="0-2", flexible="2+", fields=[
        f("groups_names", "[]string"),
    ])

DELETE_GROUPS_RESPONSE = message(
    "DeleteGroupsResponse", api_key=ApiKey.DELETE_GROUPS, valid="0-2", flexible="2+", fields=[
        f("throttle_time_ms", "int32"),
        f("results", "[]DeletableGroupResult", fields=[
            f("group_id", "string"),
            f("error_code", "int16"),
        ]),
    ])
