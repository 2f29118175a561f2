"""Bytes written by a real Apache Kafka broker, for tests that must not only agree with kafkalab.

``KAFKA_WRITTEN_LOG`` is the whole ``00000000000000000000.log`` of a one-partition topic after one
console-producer message ("message1"), as published with ``hexdump -C`` on the
users@kafka.apache.org list in December 2015 ("Trying to understand the format of the LogSegment
file"), together with what that broker's ``DumpLogSegments`` printed for it::

    offset: 0 position: 0 isvalid: true payloadsize: 8 magic: 0 compresscodec: NoCompressionCodec crc: 3916773564
"""

from __future__ import annotations

KAFKA_WRITTEN_LOG = bytes.fromhex(
    "00000000 00000000"  # offset 0
    "00000016"  # message size 22
    "e97538bc"  # CRC-32 (IEEE) of magic..value
    "00 00"  # magic 0, attributes 0 (no compression)
    "ffffffff"  # key: null
    "00000008 6d65737361676531"  # value: "message1"
    .replace(" ", "")
)
KAFKAS_CRC = 3916773564  # as the broker's DumpLogSegments printed it
