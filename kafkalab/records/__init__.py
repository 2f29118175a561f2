"""Kafka's record formats: magic v0, v1 and v2, byte-exact.

Shallow access (headers only, no decompression) lives in :mod:`kafkalab.records.header`; the
full codec in :mod:`kafkalab.records.v2` and :mod:`kafkalab.records.legacy`.
"""

from kafkalab.records.header import (
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    V2_HEADER_SIZE,
    BatchHeader,
    Compression,
    HeaderWalker,
    TimestampType,
    compute_crc,
    iter_headers,
    patch_base_offset,
    patch_partition_leader_epoch,
    read_header,
    verify_crc,
)

__all__ = [
    "LOG_OVERHEAD",
    "MAGIC_OFFSET",
    "V2_HEADER_SIZE",
    "BatchHeader",
    "Compression",
    "HeaderWalker",
    "TimestampType",
    "compute_crc",
    "iter_headers",
    "patch_base_offset",
    "patch_partition_leader_epoch",
    "read_header",
    "verify_crc",
]
