"""ApiVersions (key 18): how a client learns which versions of each API the broker speaks.

A client opens every connection with ApiVersions and then, per API, uses the highest version in
both its own range and the broker's. Two quirks (KIP-511): the response always uses response
header v0, because the client cannot yet know whether the broker understands flexible headers;
and a request at a version the broker does not know is answered with a v0-shaped body carrying
UNSUPPORTED_VERSION (35) and ApiVersions' own range, so the client can retry lower. Worked
example: kafka-python sends v4; a broker that speaks 0-3 replies ``error_code=35,
api_keys=[(18, 0, 3)]`` and kafka-python retries with v3.
"""

from __future__ import annotations

from kafkalab.protocol.api_keys import ApiKey
from kafkalab.protocol.schema import f, message

API_VERSIONS_REQUEST = message("ApiVersionsRequest", api_key=ApiKey.API_VERSIONS, valid="0-4", flexible="3+", fields=[
    f("client_software_name", "string", "3+"),
    f("client_software_version", "string", "3+"),
])

API_VERSIONS_RESPONSE = message("ApiVersionsResponse", api_key=ApiKey.API_VERSIONS, valid="0-4", flexible="3+", fields=[
    f("error_code", "int16"),
    f("api_keys", "[]ApiVersion", fields=[
        f("api_key", "int16"),
        f("min_version", "int16"),
        f("max_version", "int16"),
    ]),
    f("throttle_time_ms", "int32", "1+"),
    f("finalized_features_epoch", "int64", "3+", tag=1, default=-1),
])
