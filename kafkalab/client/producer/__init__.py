"""kafkalab's teaching producer: a sans-I/O core with a socket adapter and a simulation adapter.

Read it in the order a record travels: :mod:`.producer` (interceptors, serializers, the
partitioner of :mod:`.partitioner`), :mod:`.accumulator` (batches per partition),
:mod:`.sender` (Produce requests, retries, idempotence), then an adapter: :mod:`.network` (TCP)
or :mod:`kafkalab.sim.producer` (the simulated cluster, which sits a layer above). Settings are in :mod:`.config`.
"""

from kafkalab.client.producer.config import ProducerConfig, producer_config
from kafkalab.client.producer.futures import FutureRecordMetadata, RecordMetadata
from kafkalab.client.producer.producer import Producer, ProducerInterceptor, ProducerRecord

__all__ = ["FutureRecordMetadata", "Producer", "ProducerConfig", "ProducerInterceptor", "ProducerRecord",
           "RecordMetadata", "producer_config"]
