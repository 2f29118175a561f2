"""Payload decoders for ``kafkalab dump-log``: Kafka's internal topics and the KRaft metadata log.

Each decoder turns one record into the ``(key, payload)`` text ``kafka-dump-log.sh`` prints:
:mod:`.offsets` (``--offsets-decoder``, ``__consumer_offsets``), :mod:`.transactions`
(``--transaction-log-decoder``, ``__transaction_state``) and :mod:`.metadata`
(``--cluster-metadata-decoder``, ``__cluster_metadata``, plus KRaft control records). They share
:mod:`.schema`, a small reader of Kafka's JSON message specs.
"""

from kafkalab.tools.decoders.metadata import control_record_text, parse_cluster_metadata
from kafkalab.tools.decoders.offsets import parse_offsets
from kafkalab.tools.decoders.transactions import parse_transactions

__all__ = ["control_record_text", "parse_cluster_metadata", "parse_offsets", "parse_transactions"]
