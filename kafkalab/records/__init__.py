"""Kafka's record formats: magic v0, v1 and v2, byte-exact.

* :mod:`~kafkalab.records.header` -- shallow access: walk entries, read batch headers, check
  CRCs, patch offsets in place; no decompression.
* :mod:`~kafkalab.records.v2`, :mod:`~kafkalab.records.legacy` -- the full codecs;
  :mod:`~kafkalab.records.codec` picks one by magic (:func:`build_batch`, :func:`iter_batches`).
* :mod:`~kafkalab.records.control` -- transaction markers and other control records.
* :mod:`~kafkalab.records.columnar` -- a numba fast path decoding many v2 batches into numpy
  columns (imported lazily: it pulls in numpy and numba).
"""

from kafkalab.records.codec import BatchWalker, build_batch, decode_batch, decode_records, iter_batches
from kafkalab.records.compression import DECOMPRESSED_BYTES_MAX, compress, decompress
from kafkalab.records.control import (
    ControlRecord,
    ControlRecordType,
    build_end_txn_marker,
    parse_control_record,
)
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
from kafkalab.records.model import Header, Record, RecordBatch

__all__ = [
    "DECOMPRESSED_BYTES_MAX",
    "LOG_OVERHEAD",
    "MAGIC_OFFSET",
    "V2_HEADER_SIZE",
    "BatchHeader",
    "BatchWalker",
    "Compression",
    "ControlRecord",
    "ControlRecordType",
    "Header",
    "HeaderWalker",
    "Record",
    "RecordBatch",
    "TimestampType",
    "build_batch",
    "build_end_txn_marker",
    "compress",
    "compute_crc",
    "decode_batch",
    "decode_records",
    "decompress",
    "iter_batches",
    "iter_headers",
    "parse_control_record",
    "patch_base_offset",
    "patch_partition_leader_epoch",
    "read_header",
    "verify_crc",
]
